/* Loading a Hugging Face tokenizer.json (+ tokenizer_config.json): the BPE
 * model, added tokens, normalizer, pre-tokenizer and decoder. Anything we
 * cannot reproduce exactly is refused with a message naming file and field. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "tok/tok_impl.h"

/* GPT-2 pattern used by ByteLevel when use_regex is true. */
static const char k_gpt2_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const char *jstr(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jbool(json_t *o, const char *key, int dflt) {
    json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* Register id -> piece, growing the id tables as needed. */
static int set_piece(tok_tokenizer *t, int32_t id, char *s, uint32_t len, int kind) {
    if (id >= t->nids) {
        int n = t->nids ? t->nids : 1024;
        while (n <= id) n *= 2;
        char **p = realloc(t->piece, n * sizeof *p);
        if (p) t->piece = p;
        uint32_t *l = realloc(t->piece_len, n * sizeof *l);
        if (l) t->piece_len = l;
        uint8_t *k = realloc(t->added_kind, n);
        if (k) t->added_kind = k;
        if (!p || !l || !k) return dl_err("tokenizer: out of memory");
        for (int i = t->nids; i < n; i++) {
            t->piece[i] = NULL;
            t->piece_len[i] = 0;
            t->added_kind[i] = 0;
        }
        t->nids = n;
    }
    t->piece[id] = s;
    t->piece_len[id] = len;
    t->added_kind[id] = (uint8_t)kind;
    return 0;
}

static int parse_model(tok_tokenizer *t, json_t *m) {
    const char *f = t->path;
    if (!json_is_object(m)) return dl_err("%s: field 'model' is missing or not an object", f);
    const char *type = jstr(m, "type");
    if (type && strcmp(type, "BPE"))
        return dl_err("%s: model.type '%s' is not supported (only byte-level BPE)", f, type);
    if (jbool(m, "byte_fallback", 0))
        return dl_err("%s: model.byte_fallback=true (sentencepiece-style BPE) is not supported", f);
    json_t *drop = json_object_get(m, "dropout");
    if (json_is_number(drop) && json_number_value(drop) > 0)
        return dl_err("%s: model.dropout is not supported", f);
    const char *pfx = jstr(m, "continuing_subword_prefix"), *sfx = jstr(m, "end_of_word_suffix");
    if ((pfx && *pfx) || (sfx && *sfx))
        return dl_err("%s: model.continuing_subword_prefix/end_of_word_suffix are not supported", f);
    t->ignore_merges = jbool(m, "ignore_merges", 0);
    t->fuse_unk = jbool(m, "fuse_unk", 0);

    json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges");
    if (!json_is_object(vocab)) return dl_err("%s: field 'model.vocab' is missing or not an object", f);
    if (!json_is_array(merges)) return dl_err("%s: field 'model.merges' is missing or not an array", f);

    size_t total = 0;
    const char *key;
    json_t *val;
    json_object_foreach(vocab, key, val) total += strlen(key) + 1;
    t->arena = malloc(total ? total : 1);
    if (!t->arena || tok_smap_init(&t->vocab, json_object_size(vocab)) < 0)
        return dl_err("tokenizer: out of memory");
    size_t off = 0;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= (1 << 30))
            return dl_err("%s: model.vocab['%s'] is not a valid id", f, key);
        size_t len = strlen(key);
        char *s = t->arena + off;
        memcpy(s, key, len + 1);
        off += len + 1;
        int32_t id = (int32_t)json_integer_value(val);
        if (tok_smap_put(&t->vocab, s, (uint32_t)len, id) < 0 || set_piece(t, id, s, (uint32_t)len, 0) < 0)
            return -1;
    }

    size_t nm = json_array_size(merges);
    if (tok_pmap_init(&t->merges, nm) < 0) return -1;
    char *cat = NULL;
    size_t catcap = 0;
    for (size_t i = 0; i < nm; i++) {
        json_t *mg = json_array_get(merges, i);
        const char *a, *b;
        size_t la, lb;
        if (json_is_string(mg)) { /* "a b" */
            a = json_string_value(mg);
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                free(cat);
                return dl_err("%s: model.merges[%zu] is not of the form \"a b\"", f, i);
            }
            la = (size_t)(sp - a);
            b = sp + 1;
            lb = strlen(b);
        } else if (json_is_array(mg) && json_array_size(mg) == 2 && json_is_string(json_array_get(mg, 0)) &&
                   json_is_string(json_array_get(mg, 1))) {
            a = json_string_value(json_array_get(mg, 0));
            b = json_string_value(json_array_get(mg, 1));
            la = strlen(a);
            lb = strlen(b);
        } else {
            free(cat);
            return dl_err("%s: model.merges[%zu] is neither \"a b\" nor [a, b]", f, i);
        }
        if (la + lb + 1 > catcap) {
            catcap = (la + lb + 1) * 2;
            char *nc = realloc(cat, catcap);
            if (!nc) { free(cat); return dl_err("tokenizer: out of memory"); }
            cat = nc;
        }
        memcpy(cat, a, la);
        memcpy(cat + la, b, lb);
        int32_t ia = tok_smap_get(&t->vocab, a, la), ib = tok_smap_get(&t->vocab, b, lb);
        int32_t in = tok_smap_get(&t->vocab, cat, la + lb);
        if (ia < 0 || ib < 0 || in < 0) {
            free(cat);
            return dl_err("%s: model.merges[%zu] uses a token that is not in model.vocab", f, i);
        }
        if (tok_pmap_put(&t->merges, ia, ib, (int32_t)i, in) < 0) { free(cat); return -1; }
    }
    free(cat);

    t->unk_id = -1;
    const char *unk = jstr(m, "unk_token");
    if (unk) {
        t->unk_id = tok_smap_get(&t->vocab, unk, strlen(unk));
        if (t->unk_id < 0) return dl_err("%s: model.unk_token '%s' is not in model.vocab", f, unk);
    }
    for (int b = 0; b < 256; b++) {
        char u[4];
        int n = tok_utf8_put(tok_byte_cp((unsigned)b), u);
        t->byte_id[b] = tok_smap_get(&t->vocab, u, (size_t)n);
    }
    return 0;
}

static int cmp_added_len(const void *a, const void *b) {
    const tok_added *x = a, *y = b;
    return x->len != y->len ? (x->len < y->len ? 1 : -1) : (x->id > y->id) - (x->id < y->id);
}

static int parse_added(tok_tokenizer *t, json_t *arr) {
    const char *f = t->path;
    if (tok_smap_init(&t->added_map, 16) < 0) return -1;
    if (!arr || json_is_null(arr)) return 0;
    if (!json_is_array(arr)) return dl_err("%s: field 'added_tokens' is not an array", f);
    size_t n = json_array_size(arr);
    int32_t max_added = -1;
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return dl_err("tokenizer: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        json_t *id = json_object_get(o, "id");
        const char *content = jstr(o, "content");
        if (!content || !*content || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= (1 << 30))
            return dl_err("%s: added_tokens[%zu] needs a non-empty 'content' and a valid 'id'", f, i);
        size_t clen = strlen(content);
        if (tok_smap_get(&t->added_map, content, clen) >= 0) continue; /* duplicate content */
        tok_added *a = &t->added[t->nadded++];
        a->len = a->orig_len = (uint32_t)clen;
        a->content = a->orig = strdup(content);
        if (!a->orig || tok_smap_put(&t->added_map, a->orig, a->orig_len, -1) < 0)
            return dl_err("tokenizer: out of memory");
        /* HF re-assigns ids on load: the vocabulary id when the content is in
         * the model vocabulary, else the next id after the vocabulary and the
         * added tokens so far; the file's id is only checked. */
        int32_t fid = (int32_t)json_integer_value(id), vid = tok_smap_get(&t->vocab, content, clen);
        int32_t nv = (int32_t)t->vocab.n;
        a->id = vid >= 0 ? vid : max_added < 0 ? nv : max_added >= nv ? max_added + 1 : nv;
        if (a->id > max_added) max_added = a->id;
        if (a->id != fid)
            LOGW("%s: added token '%s' has id %d in the file; HF tokenizers assigns %d, used here", f, content,
                 fid, a->id);
        a->special = jbool(o, "special", 0);
        a->lstrip = jbool(o, "lstrip", 0);
        a->rstrip = jbool(o, "rstrip", 0);
        a->single_word = jbool(o, "single_word", 0);
        a->normalized = jbool(o, "normalized", !a->special);
    }
    return 0;
}

/* After the normalizer is known: register added tokens and normalize the
 * content of those matched on normalized text. */
static int finish_added(tok_tokenizer *t) {
    for (int i = 0; i < t->nadded; i++) {
        tok_added *a = &t->added[i];
        if (set_piece(t, a->id, a->orig, a->orig_len, a->special ? 2 : 1) < 0 ||
            tok_smap_put(&t->added_map, a->orig, a->orig_len, a->id) < 0)
            return -1;
    }
    for (int i = 0; i < t->nadded; i++) {
        tok_added *a = &t->added[i];
        if (!a->normalized) continue;
        t->any_normalized_added = 1;
        char *norm;
        size_t nn;
        if (tok_normalize(t, a->content, a->len, &norm, &nn) < 0) return -1;
        a->content = norm;
        a->len = (uint32_t)nn;
        /* HF keeps the normalized form as the token's text (what decode shows);
         * when that differs from the original, its skip_special no longer
         * recognizes the token as special (kind 3: special, never skipped) */
        int changed = nn != a->orig_len || memcmp(norm, a->orig, nn);
        if (set_piece(t, a->id, a->content, a->len, a->special ? (changed ? 3 : 2) : 1) < 0 ||
            tok_smap_put(&t->added_map, a->content, a->len, a->id) < 0)
            return -1;
    }
    qsort(t->added, (size_t)t->nadded, sizeof *t->added, cmp_added_len);
    return 0;
}

static int parse_norm_one(tok_tokenizer *t, json_t *n, int depth) {
    const char *f = t->path;
    if (!n || json_is_null(n)) return 0;
    const char *type = jstr(n, "type");
    if (!type) return dl_err("%s: field 'normalizer.type' is missing", f);
    if (!strcmp(type, "Sequence") && depth == 0) {
        json_t *arr = json_object_get(n, "normalizers");
        if (!json_is_array(arr)) return dl_err("%s: field 'normalizer.normalizers' is not an array", f);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_norm_one(t, json_array_get(arr, i), 1) < 0) return -1;
        return 0;
    }
    static const char *names[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(type, names[k])) {
            if (t->nnorm == 8) return dl_err("%s: too many normalizers", f);
            t->norm[t->nnorm++] = k;
            return 0;
        }
    return dl_err("%s: normalizer type '%s' is not supported (NFC, NFD, NFKC, NFKD and Sequence are)", f, type);
}

static int parse_pre_one(tok_tokenizer *t, json_t *p, int depth) {
    const char *f = t->path;
    const char *type = jstr(p, "type");
    if (!type) return dl_err("%s: field 'pre_tokenizer.type' is missing", f);
    if (!strcmp(type, "Sequence") && depth == 0) {
        json_t *arr = json_object_get(p, "pretokenizers");
        if (!json_is_array(arr)) return dl_err("%s: field 'pre_tokenizer.pretokenizers' is not an array", f);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (parse_pre_one(t, json_array_get(arr, i), 1) < 0) return -1;
        return 0;
    }
    if (t->npre == 8) return dl_err("%s: too many pre-tokenizers", f);
    tok_pretok *pt = &t->pre[t->npre];
    char err[256];
    if (!strcmp(type, "Split")) {
        json_t *pat = json_object_get(p, "pattern");
        const char *re = jstr(pat, "Regex"), *lit = jstr(pat, "String");
        if (!re && !lit) return dl_err("%s: pre_tokenizer Split.pattern needs 'Regex' or 'String'", f);
        const char *beh = jstr(p, "behavior");
        static const char *bnames[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
        pt->behavior = -1;
        for (int k = 0; k < 5; k++)
            if (beh && !strcmp(beh, bnames[k])) pt->behavior = k;
        if (pt->behavior < 0)
            return dl_err("%s: pre_tokenizer Split.behavior '%s' is not supported", f, beh ? beh : "(missing)");
        pt->invert = jbool(p, "invert", 0);
        pt->kind = TOK_PRE_SPLIT;
        pt->re = tok_re_compile(re ? re : lit, !re, err, sizeof err);
        if (!pt->re) return dl_err("%s: pre_tokenizer Split.pattern: %s", f, err);
    } else if (!strcmp(type, "ByteLevel")) {
        pt->kind = TOK_PRE_BYTELEVEL;
        pt->add_prefix_space = jbool(p, "add_prefix_space", 1);
        pt->use_regex = jbool(p, "use_regex", 1);
        if (pt->use_regex) {
            pt->re = tok_re_compile(k_gpt2_re, 0, err, sizeof err);
            if (!pt->re) return dl_err("%s: ByteLevel regex: %s", f, err);
        }
    } else
        return dl_err("%s: pre_tokenizer type '%s' is not supported (Split, ByteLevel and Sequence are)", f, type);
    t->npre++;
    return 0;
}

static int parse_decoder(tok_tokenizer *t, json_t *d) {
    if (!d || json_is_null(d)) return 0;
    const char *type = jstr(d, "type");
    if (type && !strcmp(type, "ByteLevel")) {
        t->dec_bytelevel = 1;
        return 0;
    }
    return dl_err("%s: decoder type '%s' is not supported (only ByteLevel)", t->path, type ? type : "(missing)");
}

/* bos_token / eos_token are a string or {"content": ...}. */
static char *config_token(json_t *cfg, const char *key) {
    json_t *v = json_object_get(cfg, key);
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static void load_config(tok_tokenizer *t, const char *dir) {
    size_t n = strlen(dir) + 32;
    char *p = malloc(n);
    if (!p) return;
    snprintf(p, n, "%s/tokenizer_config.json", dir);
    json_t *cfg = json_load_file(p, JSON_DECODE_INT_AS_REAL, NULL); /* model_max_length can be huge */
    free(p);
    if (!json_is_object(cfg)) { json_decref(cfg); return; }
    t->bos_str = config_token(cfg, "bos_token");
    t->eos_str = config_token(cfg, "eos_token");
    if (t->bos_str) t->bos_id = tok_find(t, t->bos_str);
    if (t->eos_str) t->eos_id = tok_find(t, t->eos_str);
    json_t *ct = json_object_get(cfg, "chat_template");
    if (json_is_string(ct)) t->chat_template = strdup(json_string_value(ct));
    else if (json_is_array(ct)) /* [{name, template}]: take "default" */
        for (size_t i = 0; i < json_array_size(ct); i++) {
            json_t *e = json_array_get(ct, i);
            const char *name = jstr(e, "name"), *tpl = jstr(e, "template");
            if (name && tpl && !strcmp(name, "default")) t->chat_template = strdup(tpl);
        }
    json_decref(cfg);
}

tok_tokenizer *tok_load(const char *dir) {
    tok_tokenizer *t = calloc(1, sizeof *t);
    if (!t) { dl_err("tokenizer: out of memory"); return NULL; }
    pthread_mutex_init(&t->cache_mu, NULL);
    t->bos_id = t->eos_id = t->unk_id = -1;
    size_t n = strlen(dir) + 32;
    t->path = malloc(n);
    if (!t->path) { free(t); dl_err("tokenizer: out of memory"); return NULL; }
    snprintf(t->path, n, "%s/tokenizer.json", dir);
    json_error_t je;
    json_t *root = json_load_file(t->path, 0, &je);
    if (!root) {
        dl_err("%s: %s (line %d)", t->path, je.text, je.line);
        tok_free(t);
        return NULL;
    }
    int rc = -1;
    if (!json_is_object(root)) { dl_err("%s: top level is not an object", t->path); goto done; }
    if (parse_model(t, json_object_get(root, "model")) < 0) goto done;
    if (parse_added(t, json_object_get(root, "added_tokens")) < 0) goto done;
    if (parse_norm_one(t, json_object_get(root, "normalizer"), 0) < 0) goto done;
    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (!pre || json_is_null(pre)) {
        dl_err("%s: field 'pre_tokenizer' is null; only byte-level BPE (with a ByteLevel pre-tokenizer) is supported",
               t->path);
        goto done;
    }
    if (parse_pre_one(t, pre, 0) < 0) goto done;
    int has_bl = 0;
    for (int i = 0; i < t->npre; i++) has_bl |= t->pre[i].kind == TOK_PRE_BYTELEVEL;
    if (!has_bl) {
        dl_err("%s: field 'pre_tokenizer' has no ByteLevel step; only byte-level BPE is supported", t->path);
        goto done;
    }
    if (parse_decoder(t, json_object_get(root, "decoder")) < 0) goto done;
    if (finish_added(t) < 0) goto done;
    for (int i = 0; i < t->nids; i++)
        if (t->piece[i]) t->vsize = i + 1;
    t->cache = calloc(TOK_CACHE_SLOTS, sizeof *t->cache);
    if (!t->cache) { dl_err("tokenizer: out of memory"); goto done; }
    load_config(t, dir);
    rc = 0;
done:
    json_decref(root);
    if (rc < 0) {
        tok_free(t);
        return NULL;
    }
    return t;
}

void tok_free(tok_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->nadded; i++) {
        if (t->added[i].content != t->added[i].orig) free(t->added[i].content);
        free(t->added[i].orig);
    }
    free(t->added);
    for (int i = 0; i < t->npre; i++) pcre2_code_free(t->pre[i].re);
    tok_smap_free(&t->vocab);
    tok_smap_free(&t->added_map);
    tok_pmap_free(&t->merges);
    free(t->piece);
    free(t->piece_len);
    free(t->added_kind);
    free(t->arena);
    free(t->cache);
    free(t->bos_str);
    free(t->eos_str);
    free(t->chat_template);
    free(t->path);
    pthread_mutex_destroy(&t->cache_mu);
    free(t);
}
