/* Normalization (utf8proc) and pre-tokenization (PCRE2 Split + ByteLevel):
 * one text segment -> list of words in the byte-level alphabet -> BPE ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/err.h"
#include "tok/tok_impl.h"

/* Unicode White_Space: Oniguruma's \s (HF's regex engine). PCRE2 10.42's \s
 * also matches U+180E, so \s and \S are rewritten to this explicit set. */
static const char k_ws[] =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

/* Rewrite \s / \S outside and \s inside character classes, and widen
 * \p{L} / \p{N} / \d (\D outside classes) to Oniguruma's sets. Returns malloc'd
 * pattern or NULL when it meets a construct it cannot rewrite (\S in a class). */
static char *rewrite_ws(const char *pat) {
    tok_buf b = {0};
    int in_class = 0;
    for (size_t i = 0; pat[i]; i++) {
        char c = pat[i];
        if (c == '\\' && pat[i + 1]) {
            char d = pat[++i];
            if (d == 's') {
                if (!in_class) tok_buf_put(&b, "[", 1);
                tok_buf_put(&b, k_ws, sizeof k_ws - 1);
                if (!in_class) tok_buf_put(&b, "]", 1);
            } else if (d == 'p' && (!strncmp(pat + i + 1, "{L}", 3) || !strncmp(pat + i + 1, "{N}", 3))) {
                /* Oniguruma's Unicode tables are newer than PCRE2's: add the difference */
                const char *extra = pat[i + 2] == 'L' ? tok_unidata_L_extra : tok_unidata_N_extra;
                if (!in_class) tok_buf_put(&b, "[", 1);
                tok_buf_put(&b, pat + i - 1, 5);
                tok_buf_put(&b, extra, strlen(extra));
                if (!in_class) tok_buf_put(&b, "]", 1);
                i += 3;
            } else if (d == 'd' || (d == 'D' && !in_class)) { /* \d is \p{Nd} in both engines */
                if (!in_class) tok_buf_put(&b, d == 'd' ? "[" : "[^", d == 'd' ? 1 : 2);
                tok_buf_put(&b, "\\d", 2);
                tok_buf_put(&b, tok_unidata_Nd_extra, strlen(tok_unidata_Nd_extra));
                if (!in_class) tok_buf_put(&b, "]", 1);
            } else if (d == 'S') {
                if (in_class) { tok_buf_free(&b); return NULL; }
                tok_buf_put(&b, "[^", 2);
                tok_buf_put(&b, k_ws, sizeof k_ws - 1);
                tok_buf_put(&b, "]", 1);
            } else {
                char e[2] = {c, d};
                tok_buf_put(&b, e, 2);
            }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = 1;
            tok_buf_put(&b, "[", 1);
            if (pat[i + 1] == '^') tok_buf_put(&b, &pat[++i], 1);
            if (pat[i + 1] == ']') tok_buf_put(&b, &pat[++i], 1); /* literal ] first */
            continue;
        }
        if (c == '[' && in_class && pat[i + 1] == ':') { /* POSIX [:name:] */
            const char *end = strstr(pat + i, ":]");
            if (end) {
                tok_buf_put(&b, pat + i, (size_t)(end + 2 - (pat + i)));
                i = (size_t)(end + 1 - pat);
                continue;
            }
        }
        if (c == ']' && in_class) in_class = 0;
        tok_buf_put(&b, &c, 1);
    }
    if (!b.p) tok_buf_put(&b, "", 0);
    return b.p;
}

pcre2_code *tok_re_compile(const char *pattern, int literal, char *err, size_t errcap) {
    char *pat = literal ? strdup(pattern) : rewrite_ws(pattern);
    if (!pat) {
        snprintf(err, errcap, "cannot translate \\S inside a character class");
        return NULL;
    }
    int ec;
    PCRE2_SIZE eo;
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &ec, &eo, NULL);
    free(pat);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(err, errcap, "regex error at offset %zu: %s", (size_t)eo, (const char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is absent */
    return re;
}

static int is_inert(uint32_t cp) {
    int lo = 0, hi = tok_unidata_norm_inert_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (tok_unidata_norm_inert[mid] == cp) return 1;
        if (tok_unidata_norm_inert[mid] < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return 0;
}

/* Normalize one run that contains no inert code point. */
static int normalize_run(const tok_tokenizer *t, const char *s, size_t n, tok_buf *out) {
    int ascii = 1;
    for (size_t i = 0; i < n && ascii; i++) ascii = (unsigned char)s[i] < 0x80;
    char *cur = malloc(n + 1);
    if (!cur) return dl_err("tokenizer: out of memory");
    memcpy(cur, s, n);
    cur[n] = 0;
    size_t len = n;
    for (int k = 0; k < t->nnorm && !ascii; k++) { /* all four forms leave ASCII unchanged */
        static const int opts[] = {
            UTF8PROC_STABLE | UTF8PROC_COMPOSE, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
            UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
            UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT};
        utf8proc_uint8_t *r = NULL;
        utf8proc_ssize_t rl = utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)len, &r,
                                           (utf8proc_option_t)opts[t->norm[k]]);
        free(cur);
        if (rl < 0) return dl_err("tokenizer: normalization failed: %s", utf8proc_errmsg(rl));
        cur = (char *)r;
        len = (size_t)rl;
    }
    int rc = tok_buf_put(out, cur, len);
    free(cur);
    return rc;
}

/* HF normalizes with Unicode 9 tables: a code point they do not know is a
 * starter with no decomposition, so the text is normalized in runs split at
 * such code points (normalization never crosses a starter that cannot
 * compose), which reproduces HF on text newer than its tables. */
int tok_normalize(const tok_tokenizer *t, const char *s, size_t n, char **out, size_t *outn) {
    tok_buf b = {0};
    size_t run = 0;
    for (size_t i = 0; i < n && t->nnorm;) {
        uint32_t cp;
        int l = tok_utf8_next((const unsigned char *)s + i, n - i, &cp);
        if (cp >= 0x7FD && is_inert(cp)) {
            if (normalize_run(t, s + run, i - run, &b) < 0 || tok_buf_put(&b, s + i, (size_t)l) < 0) goto fail;
            run = i + (size_t)l;
        }
        i += (size_t)l;
    }
    if (normalize_run(t, s + run, n - run, &b) < 0) goto fail;
    *out = b.p;
    *outn = b.n;
    return 0;
fail:
    tok_buf_free(&b);
    return -1;
}

/* A list of pieces: spans into one text buffer. */
typedef struct {
    size_t off, len;
} span;
typedef struct {
    tok_buf text;
    span *sp;
    size_t n, cap;
} plist;

static int pl_add(plist *p, const char *s, size_t len) {
    if (!len) return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        span *ns = realloc(p->sp, cap * sizeof *ns);
        if (!ns) return dl_err("tokenizer: out of memory");
        p->sp = ns;
        p->cap = cap;
    }
    p->sp[p->n++] = (span){p->text.n, len};
    return tok_buf_put(&p->text, s, len);
}

static void pl_free(plist *p) {
    tok_buf_free(&p->text);
    free(p->sp);
    memset(p, 0, sizeof *p);
}

/* Regex matching state for one encode call (the JIT stack is per call so that
 * encoding is thread-safe). */
typedef struct {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
} rx_state;

/* (start, end, is_match) ranges of HF's Split over s, empty ones included. */
typedef struct {
    size_t s, e;
    int m;
} range;

static int add_range(range **r, size_t *n, size_t *cap, size_t s, size_t e, int m) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        range *nr = realloc(*r, c * sizeof *nr);
        if (!nr) return dl_err("tokenizer: out of memory");
        *r = nr;
        *cap = c;
    }
    (*r)[(*n)++] = (range){s, e, m};
    return 0;
}

/* Split s by re with the given behavior (HF SplitDelimiterBehavior) and
 * append the resulting non-empty pieces to out. */
static int split_piece(rx_state *rx, const pcre2_code *re, int behavior, int invert, const char *s, size_t n,
                       plist *out) {
    range *r = NULL;
    size_t nr = 0, cap = 0, prev = 0, pos = 0;
    int rc = 0;
    while (pos <= n) {
        int m = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, rx->md, rx->mc);
        if (m == PCRE2_ERROR_NOMATCH) break;
        if (m < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(m, msg, sizeof msg);
            rc = dl_err("tokenizer: regex match failed: %s", (const char *)msg);
            goto out;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(rx->md);
        size_t ms = ov[0], me = ov[1];
        if (prev != ms && add_range(&r, &nr, &cap, prev, ms, 0) < 0) { rc = -1; goto out; }
        if (add_range(&r, &nr, &cap, ms, me, 1) < 0) { rc = -1; goto out; }
        prev = me;
        if (me > ms) pos = me;
        else { /* empty match: step one character */
            if (ms >= n) break;
            uint32_t cp;
            pos = ms + (size_t)tok_utf8_next((const unsigned char *)s + ms, n - ms, &cp);
        }
    }
    if (prev != n && add_range(&r, &nr, &cap, prev, n, 0) < 0) { rc = -1; goto out; }
    if (invert)
        for (size_t i = 0; i < nr; i++) r[i].m = !r[i].m;

    /* Apply the behavior; merged ranges are written back into r[0..k). */
    size_t k = 0;
    switch (behavior) {
    case TOK_SPLIT_ISOLATED: k = nr; break;
    case TOK_SPLIT_REMOVED:
        for (size_t i = 0; i < nr; i++)
            if (!r[i].m) r[k++] = r[i];
        break;
    case TOK_SPLIT_PREV: {
        int pm = 0;
        for (size_t i = 0; i < nr; i++) {
            int im = r[i].m;
            if (im && !pm && k) r[k - 1].e = r[i].e;
            else r[k++] = r[i];
            pm = im;
        }
        break;
    }
    case TOK_SPLIT_NEXT: { /* walk backwards, then the kept ones are in reverse */
        int pm = 0;
        size_t w = nr; /* write from the end */
        for (size_t i = nr; i-- > 0;) {
            int im = r[i].m;
            if (im && !pm && w < nr) r[w].s = r[i].s;
            else r[--w] = r[i];
            pm = im;
        }
        memmove(r, r + w, (nr - w) * sizeof *r);
        k = nr - w;
        break;
    }
    case TOK_SPLIT_CONTIG: {
        int pm = -1;
        for (size_t i = 0; i < nr; i++) {
            int im = r[i].m;
            if (im == pm && k) r[k - 1].e = r[i].e;
            else r[k++] = r[i];
            pm = im;
        }
        break;
    }
    }
    for (size_t i = 0; i < k; i++)
        if (pl_add(out, s + r[i].s, r[i].e - r[i].s) < 0) { rc = -1; goto out; }
out:
    free(r);
    return rc;
}

/* Map the bytes of s to the GPT-2 byte-level alphabet and append as a piece. */
static int bytelevel_map(const char *s, size_t n, plist *out, tok_buf *tmp) {
    tmp->n = 0;
    for (size_t i = 0; i < n; i++) {
        char u[4];
        int l = tok_utf8_put(tok_byte_cp((unsigned char)s[i]), u);
        if (tok_buf_put(tmp, u, (size_t)l) < 0) return -1;
    }
    return pl_add(out, tmp->p, tmp->n);
}

int tok_encode_segment(const tok_tokenizer *t, const char *s, size_t n, tok_ids *ids) {
    if (!n) return 0;
    rx_state rx = {0};
    plist a = {0}, b = {0};
    tok_buf tmp = {0}, pre = {0};
    int rc = -1;
    rx.md = pcre2_match_data_create(4, NULL);
    rx.mc = pcre2_match_context_create(NULL);
    rx.js = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, NULL);
    if (!rx.md || !rx.mc) { dl_err("tokenizer: out of memory"); goto out; }
    if (rx.js) pcre2_jit_stack_assign(rx.mc, NULL, rx.js);
    if (pl_add(&a, s, n) < 0) goto out;
    for (int k = 0; k < t->npre; k++) {
        const tok_pretok *pt = &t->pre[k];
        b.n = 0;
        b.text.n = 0;
        for (size_t i = 0; i < a.n; i++) {
            const char *ps = a.text.p + a.sp[i].off;
            size_t pn = a.sp[i].len;
            if (pt->kind == TOK_PRE_SPLIT) {
                if (split_piece(&rx, pt->re, pt->behavior, pt->invert, ps, pn, &b) < 0) goto out;
                continue;
            }
            /* ByteLevel: optional prefix space, optional GPT-2 split, byte mapping */
            if (pt->add_prefix_space && ps[0] != ' ') {
                pre.n = 0;
                if (tok_buf_put(&pre, " ", 1) < 0 || tok_buf_put(&pre, ps, pn) < 0) goto out;
                ps = pre.p;
                pn = pre.n;
            }
            if (pt->use_regex) {
                plist c = {0};
                if (split_piece(&rx, pt->re, TOK_SPLIT_ISOLATED, 0, ps, pn, &c) < 0) { pl_free(&c); goto out; }
                for (size_t j = 0; j < c.n; j++)
                    if (bytelevel_map(c.text.p + c.sp[j].off, c.sp[j].len, &b, &tmp) < 0) { pl_free(&c); goto out; }
                pl_free(&c);
            } else if (bytelevel_map(ps, pn, &b, &tmp) < 0)
                goto out;
        }
        plist sw = a;
        a = b;
        b = sw;
    }
    for (size_t i = 0; i < a.n; i++)
        if (tok_bpe_word(t, a.text.p + a.sp[i].off, a.sp[i].len, ids) < 0) goto out;
    rc = 0;
out:
    pl_free(&a);
    pl_free(&b);
    tok_buf_free(&tmp);
    tok_buf_free(&pre);
    if (rx.js) pcre2_jit_stack_free(rx.js);
    pcre2_match_context_free(rx.mc);
    pcre2_match_data_free(rx.md);
    return rc;
}
