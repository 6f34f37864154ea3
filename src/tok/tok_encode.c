/* Encoding entry point: split added/special tokens out of the text (longest
 * match at the leftmost position, as HF's AddedVocabulary does), normalize
 * and pre-tokenize the rest, BPE each word. Also the small lookup API. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/err.h"
#include "tok/tok_impl.h"

static int is_word_cp(uint32_t cp) {
    if (cp == '_') return 1;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

static int is_space_cp(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

/* Code point that ends right before s[i] (i > 0). */
static uint32_t cp_before(const char *s, size_t i) {
    size_t j = i - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    uint32_t cp;
    tok_utf8_next((const unsigned char *)s + j, i - j, &cp);
    return cp;
}

/* Longest added token (of the given normalized class) at s[i], or NULL. */
static const tok_added *match_at(const tok_tokenizer *t, const char *s, size_t n, size_t i, int normalized) {
    for (int k = 0; k < t->nadded; k++) { /* sorted longest first */
        const tok_added *a = &t->added[k];
        if ((a->normalized != 0) != normalized || a->len > n - i) continue;
        if (a->content[0] == s[i] && !memcmp(a->content, s + i, a->len)) return a;
    }
    return NULL;
}

typedef int (*seg_fn)(const tok_tokenizer *t, const char *s, size_t n, tok_ids *ids);

/* Split s at added tokens of one class; gaps go to fn, tokens to ids. */
static int split_added(const tok_tokenizer *t, const char *s, size_t n, int normalized, seg_fn fn, tok_ids *ids) {
    uint8_t first[256] = {0};
    int any = 0;
    for (int k = 0; k < t->nadded; k++)
        if ((t->added[k].normalized != 0) == normalized) {
            first[(unsigned char)t->added[k].content[0]] = 1;
            any = 1;
        }
    size_t gap = 0, i = 0;
    while (any && i < n) {
        if (!first[(unsigned char)s[i]]) { i++; continue; }
        const tok_added *a = match_at(t, s, n, i, normalized);
        if (!a) { i++; continue; }
        size_t ms = i, me = i + a->len;
        if (a->single_word) {
            uint32_t cp;
            int before = ms > 0 && is_word_cp(cp_before(s, ms));
            int after = me < n && (tok_utf8_next((const unsigned char *)s + me, n - me, &cp), is_word_cp(cp));
            if (before || after) { i = me; continue; }
        }
        if (a->lstrip)
            while (ms > gap && is_space_cp(cp_before(s, ms))) {
                size_t j = ms - 1;
                while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
                ms = j;
            }
        if (a->rstrip)
            while (me < n) {
                uint32_t cp;
                int l = tok_utf8_next((const unsigned char *)s + me, n - me, &cp);
                if (!is_space_cp(cp)) break;
                me += (size_t)l;
            }
        if (ms > gap && fn(t, s + gap, ms - gap, ids) < 0) return -1;
        if (tok_ids_push(ids, a->id) < 0) return -1;
        gap = i = me;
    }
    if (n > gap && fn(t, s + gap, n - gap, ids) < 0) return -1;
    return 0;
}

/* A gap between non-normalized added tokens: normalize, then split at the
 * normalized added tokens, then pre-tokenize + BPE. */
static int encode_gap(const tok_tokenizer *t, const char *s, size_t n, tok_ids *ids) {
    char *norm;
    size_t nn;
    if (tok_normalize(t, s, n, &norm, &nn) < 0) return -1;
    int rc = t->any_normalized_added ? split_added(t, norm, nn, 1, tok_encode_segment, ids)
                                     : tok_encode_segment(t, norm, nn, ids);
    free(norm);
    return rc;
}

int tok_encode(const tok_tokenizer *t, const char *text, size_t len, int32_t **out) {
    *out = NULL;
    size_t bad = tok_utf8_check((const unsigned char *)text, len);
    if (bad < len) return dl_err("tokenizer: input is not valid UTF-8 (byte offset %zu)", bad);
    tok_ids ids = {0};
    if (split_added(t, text, len, 0, encode_gap, &ids) < 0) {
        free(ids.p);
        return -1;
    }
    if (!ids.p) {
        ids.p = malloc(sizeof *ids.p);
        if (!ids.p) return dl_err("tokenizer: out of memory");
    }
    *out = ids.p;
    return (int)ids.n;
}

int tok_vocab_size(const tok_tokenizer *t) {
    return t->vsize;
}

const char *tok_piece(const tok_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->nids ? t->piece[id] : NULL;
}

int32_t tok_find(const tok_tokenizer *t, const char *piece) {
    size_t n = strlen(piece);
    int32_t id = tok_smap_get(&t->added_map, piece, n);
    return id >= 0 ? id : tok_smap_get(&t->vocab, piece, n);
}

int tok_is_special(const tok_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->nids && t->added_kind[id] >= 2;
}

int32_t tok_bos_id(const tok_tokenizer *t) { return t->bos_id; }
int32_t tok_eos_id(const tok_tokenizer *t) { return t->eos_id; }
const char *tok_bos_str(const tok_tokenizer *t) { return t->bos_str; }
const char *tok_eos_str(const tok_tokenizer *t) { return t->eos_str; }
const char *tok_chat_template(const tok_tokenizer *t) { return t->chat_template; }
