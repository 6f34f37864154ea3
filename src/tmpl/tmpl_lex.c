/* Template lexer: splits source into text and tag tokens and applies
 * jinja2's whitespace rules (trim_blocks, lstrip_blocks, '-'/'+' markers,
 * newline normalisation, dropping one trailing newline). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/err.h"
#include "tmpl/tmpl_int.h"

typedef struct {
    const char *s;
    size_t n, pos;
    ttok *t;
    int nt, cap;
    size_t cpos; /* line/col cache: position cpos is at cline:ccol */
    int cline, ccol;
} lexer;

/* line and column of L->pos (incremental; positions only move forward) */
static void where(lexer *L, int *line, int *col) {
    if (L->pos < L->cpos) L->cpos = 0, L->cline = 1, L->ccol = 1;
    if (!L->cline) L->cline = 1, L->ccol = 1;
    for (; L->cpos < L->pos && L->cpos < L->n; L->cpos++) {
        if (L->s[L->cpos] == '\n') L->cline++, L->ccol = 1;
        else L->ccol++;
    }
    *line = L->cline;
    *col = L->ccol;
}

static int push(lexer *L, int type, const char *s, size_t n) {
    if (L->nt == L->cap) {
        int nc = L->cap ? L->cap * 2 : 64;
        ttok *nt = realloc(L->t, (size_t)nc * sizeof *nt);
        if (!nt) return dl_err("template: out of memory");
        L->t = nt;
        L->cap = nc;
    }
    ttok *k = &L->t[L->nt++];
    memset(k, 0, sizeof *k);
    k->type = type;
    k->s = malloc(n + 1);
    if (!k->s) return dl_err("template: out of memory");
    if (n) memcpy(k->s, s, n);
    k->s[n] = 0;
    k->n = n;
    where(L, &k->line, &k->col);
    return 0;
}

static int lerr(lexer *L, const char *msg) {
    int line, col;
    where(L, &line, &col);
    return dl_err("template:%d:%d: %s", line, col, msg);
}

/* length of the Python-whitespace code point ending at s[end) or 0 */
static size_t ws_before(const char *s, size_t start, size_t end) {
    if (end <= start) return 0;
    size_t i = end - 1;
    while (i > start && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    size_t j = i;
    int cp = tu_decode(s, end, &j);
    return (j == end && tu_isspace(cp)) ? end - i : 0;
}
/* length of the Python-whitespace code point starting at s[i] or 0 */
static size_t ws_at(const char *s, size_t n, size_t i) {
    if (i >= n) return 0;
    size_t j = i;
    int cp = tu_decode(s, n, &j);
    return tu_isspace(cp) ? j - i : 0;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode a string literal body the way Python's unicode-escape codec does. */
static void unescape(tbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 >= n) {
            tb_putc(b, c);
            continue;
        }
        char e = s[++i];
        switch (e) {
        case '\n': break;
        case '\\': tb_putc(b, '\\'); break;
        case '\'': tb_putc(b, '\''); break;
        case '"': tb_putc(b, '"'); break;
        case 'a': tb_putc(b, '\a'); break;
        case 'b': tb_putc(b, '\b'); break;
        case 'f': tb_putc(b, '\f'); break;
        case 'n': tb_putc(b, '\n'); break;
        case 'r': tb_putc(b, '\r'); break;
        case 't': tb_putc(b, '\t'); break;
        case 'v': tb_putc(b, '\v'); break;
        case 'x': case 'u': case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8, ok = i + (size_t)nd < n;
            long cp = 0;
            for (int k = 1; ok && k <= nd; k++) {
                int h = hexval((unsigned char)s[i + (size_t)k]);
                if (h < 0) ok = 0;
                else cp = cp * 16 + h;
            }
            if (ok && cp <= 0x10FFFF) {
                tu_encode(b, (int)cp);
                i += (size_t)nd;
            } else {
                tb_putc(b, '\\');
                tb_putc(b, e);
            }
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                int cp = e - '0';
                for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++) cp = cp * 8 + (s[++i] - '0');
                tu_encode(b, cp);
            } else {
                tb_putc(b, '\\');
                tb_putc(b, e);
            }
        }
    }
}

static const char *OPS2[] = {"//", "**", "==", "!=", ">=", "<=", NULL};
static const char OPS1[] = "+-*/%~[](){}<>=.:|,;";

/* Lex the inside of a {{ }} or {% %} tag up to and including its end. */
static int lex_tag(lexer *L, int block, int *line_starting) {
    const char *s = L->s;
    size_t n = L->n;
    int depth = 0;
    for (;;) {
        size_t w;
        while ((w = ws_at(s, n, L->pos))) L->pos += w;
        if (L->pos >= n) return lerr(L, block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
        size_t p = L->pos;
        char ec = block ? '%' : '}';
        if (depth == 0) {
            int minus = s[p] == '-', plus = block && s[p] == '+';
            size_t q = p + (size_t)(minus || plus);
            if (q + 1 < n && s[q] == ec && s[q + 1] == '}') {
                if (push(L, block ? TK_BEND : TK_VEND, block ? "%}" : "}}", 2)) return -1;
                L->pos = q + 2;
                char last = s[q + 1];
                if (minus) {
                    while ((w = ws_at(s, n, L->pos))) { last = s[L->pos + w - 1]; L->pos += w; }
                } else if (block && !plus && L->pos < n && s[L->pos] == '\n') {
                    L->pos++;
                    last = '\n';
                }
                *line_starting = last == '\n';
                return 0;
            }
        }
        char c = s[p];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t e = p;
            while (e < n && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') || s[e] == '_' || (s[e] >= '0' && s[e] <= '9'))) e++;
            if (push(L, TK_NAME, s + p, e - p)) return -1;
            L->pos = e;
        } else if (c >= '0' && c <= '9') {
            tbuf d = {0};
            size_t e = p;
            int isf = 0;
            while (e < n && ((s[e] >= '0' && s[e] <= '9') || (s[e] == '_' && e + 1 < n && s[e + 1] >= '0' && s[e + 1] <= '9'))) { if (s[e] != '_') tb_putc(&d, s[e]); e++; }
            if (e + 1 < n && s[e] == '.' && s[e + 1] >= '0' && s[e + 1] <= '9') {
                isf = 1;
                tb_putc(&d, s[e++]);
                while (e < n && ((s[e] >= '0' && s[e] <= '9') || (s[e] == '_' && e + 1 < n && s[e + 1] >= '0' && s[e + 1] <= '9'))) { if (s[e] != '_') tb_putc(&d, s[e]); e++; }
            }
            if (e < n && (s[e] == 'e' || s[e] == 'E')) {
                size_t f = e + 1;
                if (f < n && (s[f] == '+' || s[f] == '-')) f++;
                if (f < n && s[f] >= '0' && s[f] <= '9') {
                    isf = 1;
                    for (size_t g = e; g < f; g++) tb_putc(&d, s[g]);
                    e = f;
                    while (e < n && s[e] >= '0' && s[e] <= '9') tb_putc(&d, s[e++]);
                }
            }
            char *num = tb_take(&d);
            if (!num) return dl_err("template: out of memory");
            int rc = push(L, isf ? TK_FLOAT : TK_INT, num, strlen(num));
            if (!rc) {
                if (isf) L->t[L->nt - 1].d = strtod(num, NULL);
                else {
                    errno = 0;
                    L->t[L->nt - 1].i = strtoll(num, NULL, 10);
                    if (errno) rc = lerr(L, "integer literal too large");
                }
            }
            free(num);
            if (rc) return -1;
            L->pos = e;
        } else if (c == '\'' || c == '"') {
            size_t e = p + 1;
            while (e < n && s[e] != c) e += (s[e] == '\\' && e + 1 < n) ? 2 : 1;
            if (e >= n) return lerr(L, "unterminated string literal");
            tbuf d = {0};
            unescape(&d, s + p + 1, e - p - 1);
            size_t dn = d.n;
            char *str = tb_take(&d);
            if (!str) return dl_err("template: out of memory");
            int rc = push(L, TK_STR, str, dn);
            free(str);
            if (rc) return -1;
            L->pos = e + 1;
        } else {
            size_t len = 0;
            for (int i = 0; OPS2[i]; i++)
                if (p + 1 < n && s[p] == OPS2[i][0] && s[p + 1] == OPS2[i][1]) len = 2;
            if (!len && strchr(OPS1, c) && c) len = 1;
            if (!len) return lerr(L, "unexpected character in tag");
            if (c == '(' || c == '[' || c == '{') depth++;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            if (push(L, TK_OP, s + p, len)) return -1;
            L->pos = p + len;
        }
    }
}

/* skip Python whitespace from i */
static size_t skip_ws(const char *s, size_t n, size_t i) {
    size_t w;
    while ((w = ws_at(s, n, i))) i += w;
    return i;
}
/* match "WORD\s*" then a block end at i; returns the position after the
 * end and the end's sign ('-', '+' or 0) or 0 if it does not match */
static size_t match_word_end(const char *s, size_t n, size_t i, const char *word, char *sign) {
    size_t wl = strlen(word);
    i = skip_ws(s, n, i);
    if (i + wl > n || memcmp(s + i, word, wl)) return 0;
    i = skip_ws(s, n, i + wl);
    *sign = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) *sign = s[i++];
    if (i + 1 < n && s[i] == '%' && s[i + 1] == '}') return i + 2;
    return 0;
}

/* {% raw %}...{% endraw %} starting with the tag body at `body`: emits the
 * verbatim text and returns 1, or 0 if this tag is not `raw`, -1 on error.
 * Like jinja2: no trim_blocks after `raw`, normal tag rules at `endraw`. */
static int lex_raw(lexer *L, size_t body, int *line_starting) {
    const char *s = L->s;
    size_t n = L->n;
    char sign;
    size_t st = match_word_end(s, n, body, "raw", &sign);
    if (!st || sign == '+') return 0;
    if (sign == '-') st = skip_ws(s, n, st);
    int content_line_start = st > 0 && s[st - 1] == '\n';
    for (size_t p = st; p + 1 < n; p++) {
        if (s[p] != '{' || s[p + 1] != '%') continue;
        size_t q = p + 2;
        char bsign = (q < n && (s[q] == '-' || s[q] == '+')) ? s[q] : 0;
        char esign;
        size_t e = match_word_end(s, n, q + (bsign ? 1 : 0), "endraw", &esign);
        if (!e) continue;
        size_t te = p;
        if (bsign == '-') {
            size_t w;
            while ((w = ws_before(s, st, te))) te -= w;
        } else if (bsign != '+') {
            size_t lp = te;
            while (lp > st && s[lp - 1] != '\n') lp--;
            if (lp > st || content_line_start) {
                size_t k = skip_ws(s, te, lp);
                if (k == te) te = lp;
            }
        }
        L->pos = st;
        if (te > st && push(L, TK_TEXT, s + st, te - st)) return -1;
        L->pos = e;
        char last = '}';
        if (esign == '-') {
            size_t w;
            while ((w = ws_at(s, n, L->pos))) { last = s[L->pos + w - 1]; L->pos += w; }
        } else if (esign != '+' && L->pos < n && s[L->pos] == '\n') {
            L->pos++;
            last = '\n';
        }
        *line_starting = last == '\n';
        return 1;
    }
    L->pos = body;
    return lerr(L, "missing {% endraw %}");
}

int tl_lex(const char *src, size_t len, ttok **out, int *nout) {
    /* normalise \r\n and \r to \n, drop one trailing newline */
    char *s = malloc(len + 1);
    if (!s) return dl_err("template: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else s[n++] = src[i];
    }
    if (n && s[n - 1] == '\n') n--;
    s[n] = 0;
    lexer L = {s, n, 0, NULL, 0, 0, 0, 1, 1};
    int line_starting = 1, rc = 0;
    while (L.pos < n) {
        size_t t = L.pos;
        while (t + 1 < n && !(s[t] == '{' && (s[t + 1] == '{' || s[t + 1] == '%' || s[t + 1] == '#'))) t++;
        if (t + 1 >= n) t = n;
        size_t te = t; /* end of text */
        char kind = t < n ? s[t + 1] : 0;
        char sign = (t + 2 < n) ? s[t + 2] : 0;
        if (sign != '-' && sign != '+') sign = 0;
        if (kind == '{' && sign == '+') sign = 0;
        if (kind && sign == '-') {
            size_t w;
            while ((w = ws_before(s, L.pos, te))) te -= w;
        } else if (kind && sign != '+' && kind != '{') {
            size_t lp = te;
            while (lp > L.pos && s[lp - 1] != '\n') lp--;
            if (lp > L.pos || line_starting) {
                size_t q = lp, w;
                while (q < te && (w = ws_at(s, te, q))) q += w;
                if (q == te) te = lp;
            }
        }
        if (te > L.pos) {
            size_t save = L.pos;
            if ((rc = push(&L, TK_TEXT, s + L.pos, te - L.pos))) break;
            L.pos = save;
        }
        if (!kind) { L.pos = n; break; }
        L.pos = t;
        size_t body = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t e = body;
            while (e + 1 < n && !(s[e] == '#' && s[e + 1] == '}')) e++;
            if (e + 1 >= n) { rc = lerr(&L, "unterminated comment"); break; }
            L.pos = e + 2;
            char last = '}';
            if (e > body && s[e - 1] == '-') {
                size_t w;
                while ((w = ws_at(s, n, L.pos))) { last = s[L.pos + w - 1]; L.pos += w; }
            } else if (!(e > body && s[e - 1] == '+') && L.pos < n && s[L.pos] == '\n') {
                L.pos++;
                last = '\n';
            }
            line_starting = last == '\n';
            continue;
        }
        if (kind == '%') {
            int r = lex_raw(&L, body, &line_starting);
            if (r < 0) { rc = -1; break; }
            if (r) continue;
        }
        if ((rc = push(&L, kind == '%' ? TK_BBEGIN : TK_VBEGIN, kind == '%' ? "{%" : "{{", 2))) break;
        L.pos = body;
        if ((rc = lex_tag(&L, kind == '%', &line_starting))) break;
    }
    if (!rc) {
        L.pos = n;
        rc = push(&L, TK_EOF, "", 0);
    }
    free(s);
    if (rc) {
        tl_free(L.t, L.nt);
        return -1;
    }
    *out = L.t;
    *nout = L.nt;
    return 0;
}

void tl_free(ttok *t, int n) {
    for (int i = 0; i < n; i++) free(t[i].s);
    free(t);
}
