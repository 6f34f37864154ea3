/* Value helpers with Python semantics: str(), repr(), json.dumps,
 * equality and ordering over jansson values; UTF-8 utilities; the output
 * buffer. A NULL json_t* is jinja2's Undefined. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tmpl/tmpl_int.h"

/* ---------------- tbuf ---------------- */
void tb_put(tbuf *b, const char *s, size_t n) {
    if (b->over) return;
    if (b->limit && b->n + n > b->limit) { b->over = 1; return; }
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n + 1) nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) { b->over = 1; return; }
        b->p = p;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
void tb_puts(tbuf *b, const char *s) { tb_put(b, s, strlen(s)); }
void tb_putc(tbuf *b, char c) { tb_put(b, &c, 1); }
char *tb_take(tbuf *b) {
    if (b->over) { tb_free(b); return NULL; }
    char *p = b->p ? b->p : calloc(1, 1);
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}
void tb_free(tbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---------------- UTF-8 ---------------- */
int tu_decode(const char *s, size_t n, size_t *i) {
    const unsigned char *u = (const unsigned char *)s;
    utf8proc_int32_t cp;
    utf8proc_ssize_t r = utf8proc_iterate(u + *i, (utf8proc_ssize_t)(n - *i), &cp);
    if (r <= 0) { (*i)++; return 0xFFFD; }
    *i += (size_t)r;
    return cp;
}
size_t tu_cplen(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}
void tu_encode(tbuf *b, int cp) {
    unsigned char o[4];
    utf8proc_ssize_t r = utf8proc_encode_char(cp, o);
    if (r <= 0) { /* surrogates etc: encode raw like Python's surrogatepass */
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        r = 3;
    }
    tb_put(b, (const char *)o, (size_t)r);
}
int tu_isspace(int c) {
    if (c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 || c == 0x1680) return 1;
    if ((c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000) return 1;
    return 0;
}
json_t *tv_strn(const char *s, size_t n) {
    json_t *v = json_stringn_nocheck(s, n);
    return v;
}

/* ---------------- numbers ---------------- */
int tv_is_int(json_t *v) { return v && (json_is_integer(v) || json_is_boolean(v)); }
int tv_is_num(json_t *v) { return v && (json_is_number(v) || json_is_boolean(v)); }
double tv_num(json_t *v) {
    if (json_is_integer(v)) return (double)json_integer_value(v);
    if (json_is_real(v)) return json_real_value(v);
    return json_is_true(v) ? 1.0 : 0.0;
}

/* Python float repr: shortest round-trip digits; scientific when the
 * decimal exponent is < -4 or >= 16. */
void tv_float(char out[40], double d) {
    if (isnan(d)) { strcpy(out, "nan"); return; }
    if (isinf(d)) { strcpy(out, d < 0 ? "-inf" : "inf"); return; }
    char e[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    /* e = [-]D[.DDD]e[+-]XX */
    char dig[24];
    int nd = 0, neg = e[0] == '-';
    const char *q = e + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') dig[nd++] = *q;
    int ex = atoi(q + 1);
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    char *o = out;
    if (neg) *o++ = '-';
    if (ex < -4 || ex >= 16) {
        *o++ = dig[0];
        if (nd > 1) { *o++ = '.'; memcpy(o, dig + 1, (size_t)nd - 1); o += nd - 1; }
        sprintf(o, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
        return;
    }
    if (ex < 0) {
        *o++ = '0'; *o++ = '.';
        for (int i = 0; i < -ex - 1; i++) *o++ = '0';
        memcpy(o, dig, (size_t)nd); o += nd;
    } else {
        for (int i = 0; i <= ex; i++) *o++ = i < nd ? dig[i] : '0';
        *o++ = '.';
        if (nd > ex + 1) { memcpy(o, dig + ex + 1, (size_t)(nd - ex - 1)); o += nd - ex - 1; }
        else *o++ = '0';
    }
    *o = 0;
}

/* ---------------- str / repr ---------------- */
static int printable(int cp) {
    if (cp < 0x20 || cp == 0x7f) return 0;
    if (cp < 0x7f) return 1;
    if (cp == ' ') return 1;
    utf8proc_category_t c = utf8proc_category(cp);
    switch (c) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
        return 0;
    default: return 1;
    }
}
static void repr_str(tbuf *b, const char *s, size_t n) {
    int sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char qc = (sq && !dq) ? '"' : '\'';
    tb_putc(b, qc);
    for (size_t i = 0; i < n;) {
        size_t st = i;
        int cp = tu_decode(s, n, &i);
        char tmp[16];
        if (cp == qc || cp == '\\') { tb_putc(b, '\\'); tb_putc(b, (char)cp); }
        else if (cp == '\n') tb_puts(b, "\\n");
        else if (cp == '\r') tb_puts(b, "\\r");
        else if (cp == '\t') tb_puts(b, "\\t");
        else if (printable(cp)) tb_put(b, s + st, i - st);
        else {
            if (cp < 0x100) snprintf(tmp, sizeof tmp, "\\x%02x", cp);
            else if (cp < 0x10000) snprintf(tmp, sizeof tmp, "\\u%04x", cp);
            else snprintf(tmp, sizeof tmp, "\\U%08x", cp);
            tb_puts(b, tmp);
        }
    }
    tb_putc(b, qc);
}
void tv_repr(tbuf *b, json_t *v, tv_tuplefn is_tuple, void *ctx) {
    char t[40];
    if (!v) return;
    switch (json_typeof(v)) {
    case JSON_STRING: repr_str(b, json_string_value(v), json_string_length(v)); break;
    case JSON_ARRAY: {
        int tup = is_tuple && is_tuple(ctx, v);
        tb_putc(b, tup ? '(' : '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) tb_puts(b, ", ");
            tv_repr(b, json_array_get(v, i), is_tuple, ctx);
        }
        if (tup && json_array_size(v) == 1) tb_putc(b, ',');
        tb_putc(b, tup ? ')' : ']');
        break;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        tb_putc(b, '{');
        json_object_foreach(v, k, x) {
            if (!first) tb_puts(b, ", ");
            first = 0;
            repr_str(b, k, strlen(k));
            tb_puts(b, ": ");
            tv_repr(b, x, is_tuple, ctx);
        }
        tb_putc(b, '}');
        break;
    }
    case JSON_INTEGER: snprintf(t, sizeof t, "%lld", (long long)json_integer_value(v)); tb_puts(b, t); break;
    case JSON_REAL: tv_float(t, json_real_value(v)); tb_puts(b, t); break;
    case JSON_TRUE: tb_puts(b, "True"); break;
    case JSON_FALSE: tb_puts(b, "False"); break;
    case JSON_NULL: tb_puts(b, "None"); break;
    }
}
void tv_str(tbuf *b, json_t *v, tv_tuplefn is_tuple, void *ctx) {
    if (v && json_is_string(v)) tb_put(b, json_string_value(v), json_string_length(v));
    else tv_repr(b, v, is_tuple, ctx);
}

/* ---------------- json.dumps ---------------- */
static void json_str(tbuf *b, const char *s, size_t n) {
    tb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char t[8];
        switch (c) {
        case '"': tb_puts(b, "\\\""); break;
        case '\\': tb_puts(b, "\\\\"); break;
        case '\n': tb_puts(b, "\\n"); break;
        case '\r': tb_puts(b, "\\r"); break;
        case '\t': tb_puts(b, "\\t"); break;
        case '\b': tb_puts(b, "\\b"); break;
        case '\f': tb_puts(b, "\\f"); break;
        default:
            if (c < 0x20) { snprintf(t, sizeof t, "\\u%04x", c); tb_puts(b, t); }
            else tb_putc(b, (char)c);
        }
    }
    tb_putc(b, '"');
}
static void nl_indent(tbuf *b, int indent, int level) {
    tb_putc(b, '\n');
    for (int i = 0; i < indent * level; i++) tb_putc(b, ' ');
}
static int key_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
void tv_json(tbuf *b, json_t *v, int indent, int sort_keys, int level) {
    char t[40];
    if (!v) { tb_puts(b, "null"); return; }
    switch (json_typeof(v)) {
    case JSON_STRING: json_str(b, json_string_value(v), json_string_length(v)); break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (!n) { tb_puts(b, "[]"); break; }
        tb_putc(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i) tb_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0) nl_indent(b, indent, level + 1);
            tv_json(b, json_array_get(v, i), indent, sort_keys, level + 1);
        }
        if (indent >= 0) nl_indent(b, indent, level);
        tb_putc(b, ']');
        break;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        if (!n) { tb_puts(b, "{}"); break; }
        const char **keys = malloc(n * sizeof *keys);
        if (!keys) { b->over = 1; break; }
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) keys[i++] = k;
        if (sort_keys) qsort(keys, n, sizeof *keys, key_cmp);
        tb_putc(b, '{');
        for (i = 0; i < n; i++) {
            if (i) tb_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0) nl_indent(b, indent, level + 1);
            json_str(b, keys[i], strlen(keys[i]));
            tb_puts(b, ": ");
            tv_json(b, json_object_get(v, keys[i]), indent, sort_keys, level + 1);
        }
        free(keys);
        if (indent >= 0) nl_indent(b, indent, level);
        tb_putc(b, '}');
        break;
    }
    case JSON_INTEGER: snprintf(t, sizeof t, "%lld", (long long)json_integer_value(v)); tb_puts(b, t); break;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (isnan(d)) tb_puts(b, "NaN");
        else if (isinf(d)) tb_puts(b, d < 0 ? "-Infinity" : "Infinity");
        else { tv_float(t, d); tb_puts(b, t); }
        break;
    }
    case JSON_TRUE: tb_puts(b, "true"); break;
    case JSON_FALSE: tb_puts(b, "false"); break;
    case JSON_NULL: tb_puts(b, "null"); break;
    }
}

/* ---------------- equality / ordering ---------------- */
int tv_eq(json_t *a, json_t *b) {
    if (!a || !b) return !a && !b;
    if (tv_is_num(a) && tv_is_num(b)) {
        if (tv_is_int(a) && tv_is_int(b)) {
            long long x = json_is_integer(a) ? (long long)json_integer_value(a) : json_is_true(a);
            long long y = json_is_integer(b) ? (long long)json_integer_value(b) : json_is_true(b);
            return x == y;
        }
        return tv_num(a) == tv_num(b);
    }
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) && !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_NULL: return 1;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!tv_eq(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *x;
        json_object_foreach(a, k, x) {
            json_t *y = json_object_get(b, k);
            if (!y || !tv_eq(x, y)) return 0;
        }
        return 1;
    }
    default: return 0;
    }
}
int tv_cmp(json_t *a, json_t *b, int *res) {
    if (!a || !b) return -1;
    if (tv_is_num(a) && tv_is_num(b)) {
        if (tv_is_int(a) && tv_is_int(b)) {
            long long x = json_is_integer(a) ? (long long)json_integer_value(a) : json_is_true(a);
            long long y = json_is_integer(b) ? (long long)json_integer_value(b) : json_is_true(b);
            *res = (x > y) - (x < y);
            return 0;
        }
        double x = tv_num(a), y = tv_num(b);
        *res = (x > y) - (x < y);
        return 0;
    }
    if (json_is_string(a) && json_is_string(b)) {
        size_t na = json_string_length(a), nb = json_string_length(b);
        int c = memcmp(json_string_value(a), json_string_value(b), na < nb ? na : nb);
        if (!c) c = (na > nb) - (na < nb);
        *res = (c > 0) - (c < 0);
        return 0;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < na && i < nb; i++) {
            json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
            if (tv_eq(x, y)) continue;
            return tv_cmp(x, y, res);
        }
        *res = (na > nb) - (na < nb);
        return 0;
    }
    return -1;
}

const char *tv_type_name(json_t *v) {
    if (!v) return "Undefined";
    switch (json_typeof(v)) {
    case JSON_STRING: return "str";
    case JSON_ARRAY: return "list";
    case JSON_OBJECT: return "dict";
    case JSON_INTEGER: return "int";
    case JSON_REAL: return "float";
    case JSON_TRUE: case JSON_FALSE: return "bool";
    default: return "NoneType";
    }
}
