/* jinja2 builtin filters and tests, plus the Python methods templates call
 * on str/dict/list values, with jinja2/Python semantics. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tmpl/tmpl_int.h"
#include "tmpl/tmpl_str.h"

#define S(v) json_string_value(v)
#define SN(v) json_string_length(v)

/* argument by position (pos, counting positionals only) or keyword name */
static json_t *arg(json_t **args, char **argn, int na, int pos, const char *name, int *have) {
    int p = 0;
    for (int i = 0; i < na; i++) {
        if (argn && argn[i]) {
            if (name && !strcmp(argn[i], name)) { if (have) *have = 1; return args[i]; }
        } else if (p++ == pos) { if (have) *have = 1; return args[i]; }
    }
    if (have) *have = 0;
    return NULL;
}

static json_t *to_str(rs *st, json_t *v) {
    if (v && json_is_string(v)) return json_incref(v);
    tbuf b = {0};
    RS_STR(&b, v, st);
    return ts_take(&b);
}

json_t *tf_iter(rs *st, int line, json_t *v) {
    if (!v) return json_array();
    if (json_is_array(v)) return json_incref(v);
    if (json_is_object(v) && !rs_special(st, v)) {
        json_t *r = json_array();
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) json_array_append_new(r, json_string(k));
        return r;
    }
    if (json_is_string(v)) {
        json_t *r = json_array();
        const char *s = S(v);
        size_t n = SN(v);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            tu_decode(s, n, &j);
            json_array_append_new(r, tv_strn(s + i, j - i));
            i = j;
        }
        return r;
    }
    rs_err(st, line, "'%s' object is not iterable", rs_special(st, v) ? "Namespace" : tv_type_name(v));
    return NULL;
}

static int as_int(json_t *v, long long *out) {
    if (!v || json_is_null(v)) return 1;
    if (!tv_is_int(v)) return -1;
    *out = json_is_integer(v) ? (long long)json_integer_value(v) : json_is_true(v);
    return 0;
}

json_t *tf_slice(rs *st, int line, json_t *v, json_t *start, json_t *stop, json_t *step) {
    long long n, a = 0, b = 0, k = 1;
    int ra, rb;
    if (as_int(step, &k) < 0 || (ra = as_int(start, &a)) < 0 || (rb = as_int(stop, &b)) < 0) {
        rs_err(st, line, "slice indices must be integers or None");
        return NULL;
    }
    if (k == 0) { rs_err(st, line, "slice step cannot be zero"); return NULL; }
    json_t *seq = NULL;
    if (json_is_array(v)) seq = json_incref(v);
    else if (json_is_string(v)) seq = tf_iter(st, line, v);
    else { /* jinja2 compiles slices to a plain Python subscript: TypeError */
        rs_err(st, line, "'%s' object is not subscriptable", tv_type_name(v));
        return NULL;
    }
    n = (long long)json_array_size(seq);
    if (ra) a = k < 0 ? n - 1 : 0;
    else {
        if (a < 0) a += n;
        if (a < 0) a = k < 0 ? -1 : 0;
        if (a >= n) a = k < 0 ? n - 1 : n;
    }
    if (rb) b = k < 0 ? -1 : n;
    else {
        if (b < 0) b += n;
        if (b < 0) b = k < 0 ? -1 : 0;
        if (b >= n) b = k < 0 ? n - 1 : n;
    }
    json_t *r = json_array();
    for (long long i = a; k > 0 ? i < b : i > b; i += k) json_array_append(r, json_array_get(seq, (size_t)i));
    json_decref(seq);
    if (json_is_string(v)) {
        tbuf t = {0};
        for (size_t i = 0; i < json_array_size(r); i++) tb_put(&t, S(json_array_get(r, i)), SN(json_array_get(r, i)));
        json_decref(r);
        return ts_take(&t);
    }
    return r;
}

/* Item lookup by a jinja attribute path "a.b.0". A missing last part is
 * Undefined (NULL); a missing intermediate part is an UndefinedError. */
static json_t *attr_path(rs *st, int line, json_t *v, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = v;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
        if (!cur) {
            rs_err(st, line, "attribute path '%s': an intermediate value is undefined", path);
            return NULL;
        }
        char *end;
        long long ix = strtoll(tok, &end, 10);
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur) && *tok && !*end) {
            long long nn = (long long)json_array_size(cur);
            if (ix < 0) ix += nn;
            cur = (ix >= 0 && ix < nn) ? json_array_get(cur, (size_t)ix) : NULL;
        } else cur = NULL;
    }
    return cur;
}

/* ---------------- sorting helpers ---------------- */
typedef struct {
    json_t *key, *val;
    size_t idx;
} sitem;
typedef struct {
    int err, reverse;
} sctx;
static int sitem_cmp(const void *pa, const void *pb, void *c) {
    const sitem *a = pa, *b = pb;
    sctx *x = c;
    int r;
    if (tv_cmp(a->key, b->key, &r)) { x->err = 1; r = 0; }
    if (x->reverse) r = -r;
    if (!r) r = (a->idx > b->idx) - (a->idx < b->idx);
    return r;
}
static json_t *sort_key(json_t *v, int case_sensitive) {
    if (v && json_is_string(v) && !case_sensitive) return ts_case(S(v), SN(v), TS_LOWER);
    return v ? json_incref(v) : NULL;
}
/* Stable sort of seq items by key (attribute path or item itself). */
static json_t *sort_items(rs *st, int line, json_t *seq, const char *attr, int case_sensitive, int reverse, int pairs_by) {
    size_t n = json_array_size(seq);
    sitem *it = calloc(n ? n : 1, sizeof *it);
    if (!it) { rs_err(st, line, "out of memory"); return NULL; }
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(seq, i);
        json_t *k = pairs_by >= 0 ? json_array_get(x, (size_t)pairs_by) : attr ? attr_path(st, line, x, attr) : x;
        it[i] = (sitem){sort_key(k, case_sensitive), x, i};
    }
    sctx c = {0, reverse};
    if (st->err) c.err = 1;
    qsort_r(it, n, sizeof *it, sitem_cmp, &c);
    json_t *r = NULL;
    if (c.err) rs_err(st, line, "cannot sort values of different types"); /* no-op if already failed */
    else {
        r = json_array();
        for (size_t i = 0; i < n; i++) json_array_append(r, it[i].val);
    }
    for (size_t i = 0; i < n; i++) json_decref(it[i].key);
    free(it);
    return r;
}

static json_t *do_tojson(rs *st, int line, json_t *v, json_t **args, char **argn, int na) {
    json_t *ea = arg(args, argn, na, 0, "ensure_ascii", NULL), *ind = arg(args, argn, na, 1, "indent", NULL);
    json_t *sep = arg(args, argn, na, 2, "separators", NULL), *sk = arg(args, argn, na, 3, "sort_keys", NULL);
    if (!v || rs_special(st, v)) { rs_err(st, line, "Object of type %s is not JSON serializable", v ? "Namespace" : "Undefined"); return NULL; }
    if (sep && !json_is_null(sep)) { rs_err(st, line, "tojson: separators are not supported"); return NULL; }
    int indent = -1;
    if (ind && json_is_integer(ind)) indent = (int)json_integer_value(ind);
    else if (ind && !json_is_null(ind)) { rs_err(st, line, "tojson: indent must be an integer"); return NULL; }
    if (indent > 64) indent = 64;
    if (indent < -1) indent = 0;
    tbuf b = {0};
    b.limit = TMPL_MAX_OUT;
    tv_json(&b, v, indent, rs_truthy(st, sk), 0);
    if (rs_truthy(st, ea)) { /* escape non-ASCII as \uXXXX (surrogate pairs) */
        tbuf o = {0};
        o.limit = TMPL_MAX_OUT;
        for (size_t i = 0; i < b.n;) {
            if ((unsigned char)b.p[i] < 0x80) { tb_putc(&o, b.p[i++]); continue; }
            int cp = tu_decode(b.p, b.n, &i);
            char t[16];
            if (cp >= 0x10000) snprintf(t, sizeof t, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
            else snprintf(t, sizeof t, "\\u%04x", cp);
            tb_puts(&o, t);
        }
        tb_free(&b);
        b = o;
    }
    json_t *r = ts_take(&b);
    if (!r) rs_err(st, line, "output too large");
    return r;
}

static json_t *do_indent(json_t *s, json_t **args, char **argn, int na, rs *st) {
    json_t *w = arg(args, argn, na, 0, "width", NULL), *fi = arg(args, argn, na, 1, "first", NULL), *bl = arg(args, argn, na, 2, "blank", NULL);
    tbuf ind = {0};
    if (w && json_is_string(w)) tb_put(&ind, S(w), SN(w));
    else {
        long long k = 4;
        if (w) as_int(w, &k);
        for (long long i = 0; i < k && i < 1024; i++) tb_putc(&ind, ' ');
    }
    /* split into lines like str.splitlines() after appending "\n" */
    json_t *lines = json_array();
    const char *p = S(s);
    size_t n = SN(s), st0 = 0;
    tbuf text = {0};
    tb_put(&text, p, n);
    tb_putc(&text, '\n');
    p = text.p;
    n = text.n;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int cp = tu_decode(p, n, &j);
        int br = cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (br) {
            json_array_append_new(lines, tv_strn(p + st0, i - st0));
            if (cp == '\r' && j < n && p[j] == '\n') j++;
            st0 = j;
        }
        i = j;
    }
    if (st0 < n) json_array_append_new(lines, tv_strn(p + st0, n - st0));
    tbuf o = {0};
    o.limit = TMPL_MAX_OUT;
    int blank = rs_truthy(st, bl);
    for (size_t i = 0; i < json_array_size(lines); i++) {
        json_t *l = json_array_get(lines, i);
        if (i) {
            tb_putc(&o, '\n');
            if (blank || SN(l)) tb_put(&o, ind.p, ind.n);
        }
        tb_put(&o, S(l), SN(l));
    }
    json_t *r;
    if (rs_truthy(st, fi)) {
        tbuf f = {0};
        tb_put(&f, ind.p, ind.n);
        tb_put(&f, o.p, o.n);
        tb_free(&o);
        r = ts_take(&f);
    } else r = ts_take(&o);
    json_decref(lines);
    tb_free(&ind);
    tb_free(&text);
    return r;
}

static json_t *do_int(json_t *v, json_t *def) {
    if (tv_is_int(v)) return json_integer(json_is_integer(v) ? json_integer_value(v) : json_is_true(v));
    if (v && json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && fabs(d) < 9.2e18) return json_integer((json_int_t)d);
    }
    if (v && json_is_string(v)) {
        json_t *t = ts_strip(S(v), SN(v), NULL, 0, 1, 1);
        const char *s = S(t);
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (*s && !*end && !errno && !strchr(s, ' ')) { json_decref(t); return json_integer(x); }
        double d = strtod(s, &end);
        if (*s && !*end && isfinite(d) && fabs(d) < 9.2e18 && !strchr(s, 'x') && !strchr(s, 'X')) { json_decref(t); return json_integer((json_int_t)d); }
        json_decref(t);
    }
    return def ? json_incref(def) : json_integer(0);
}
static json_t *do_float(json_t *v, json_t *def) {
    if (tv_is_num(v)) return json_real(tv_num(v));
    if (v && json_is_string(v)) {
        json_t *t = ts_strip(S(v), SN(v), NULL, 0, 1, 1);
        char *end;
        double d = strtod(S(t), &end);
        int ok = *S(t) && !*end && !strchr(S(t), 'x') && !strchr(S(t), 'X');
        json_decref(t);
        if (ok) return json_real(d);
    }
    return def ? json_incref(def) : json_real(0.0);
}

static json_t *select_like(rs *st, int line, json_t *v, json_t **args, char **argn, int na, int by_attr, int keep) {
    json_t *seq = tf_iter(st, line, v);
    if (!seq) return NULL;
    int skip = by_attr ? 1 : 0;
    const char *attr = NULL;
    if (by_attr) {
        if (na < 1 || !json_is_string(args[0])) { json_decref(seq); rs_err(st, line, "selectattr/rejectattr need an attribute name"); return NULL; }
        attr = S(args[0]);
    }
    const char *test = na > skip && args[skip] && json_is_string(args[skip]) ? S(args[skip]) : NULL;
    json_t *r = json_array();
    for (size_t i = 0; i < json_array_size(seq) && !st->err; i++) {
        json_t *x = json_array_get(seq, i), *y = attr ? attr_path(st, line, x, attr) : x;
        int t = test ? tf_test(st, line, test, y, args + skip + 1, na - skip - 1) : rs_truthy(st, y);
        if (t < 0) break;
        if (t == keep) json_array_append(r, x);
    }
    (void)argn;
    json_decref(seq);
    if (st->err) { json_decref(r); return NULL; }
    return r;
}

/* Python str.isalnum / isdigit per code point (Unicode categories) */
static int is_alnum(int cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) || (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}
static int is_digit(int cp) { return utf8proc_category(cp) == UTF8PROC_CATEGORY_ND; }

static json_t *html_escape(json_t *s) {
    tbuf b = {0};
    for (size_t i = 0; i < SN(s); i++) {
        char c = S(s)[i];
        switch (c) {
        case '&': tb_puts(&b, "&amp;"); break;
        case '<': tb_puts(&b, "&lt;"); break;
        case '>': tb_puts(&b, "&gt;"); break;
        case '"': tb_puts(&b, "&#34;"); break;
        case '\'': tb_puts(&b, "&#39;"); break;
        default: tb_putc(&b, c);
        }
    }
    return ts_take(&b);
}

json_t *tf_filter(rs *st, int line, const char *f, json_t *v, json_t **args, char **argn, int na) {
    json_t *r = NULL, *s = NULL, *seq = NULL;
    if (!strcmp(f, "tojson")) return do_tojson(st, line, v, args, argn, na);
    if (!strcmp(f, "safe") || !strcmp(f, "string") || !strcmp(f, "e") || !strcmp(f, "escape") || !strcmp(f, "trim") ||
        !strcmp(f, "upper") || !strcmp(f, "lower") || !strcmp(f, "title") || !strcmp(f, "capitalize") ||
        !strcmp(f, "replace") || !strcmp(f, "indent") || !strcmp(f, "wordcount") || !strcmp(f, "center")) {
        if (!strcmp(f, "safe") && v) return json_incref(v);
        if (!strcmp(f, "indent") && !(v && json_is_string(v))) { /* jinja2 appends "\n" to the value */
            rs_err(st, line, "indent needs a string, not '%s'", tv_type_name(v));
            return NULL;
        }
        s = to_str(st, v);
        if (!s) { rs_err(st, line, "out of memory"); return NULL; }
        if (!strcmp(f, "safe") || !strcmp(f, "string")) return s;
        if (!strcmp(f, "e") || !strcmp(f, "escape")) r = html_escape(s);
        else if (!strcmp(f, "trim")) {
            json_t *c = arg(args, argn, na, 0, "chars", NULL);
            if (c && json_is_string(c)) r = ts_strip(S(s), SN(s), S(c), SN(c), 1, 1);
            else r = ts_strip(S(s), SN(s), NULL, 0, 1, 1);
        } else if (!strcmp(f, "upper")) r = ts_case(S(s), SN(s), TS_UPPER);
        else if (!strcmp(f, "lower")) r = ts_case(S(s), SN(s), TS_LOWER);
        else if (!strcmp(f, "title")) r = ts_case(S(s), SN(s), TS_JTITLE);
        else if (!strcmp(f, "capitalize")) r = ts_case(S(s), SN(s), TS_CAPITALIZE);
        else if (!strcmp(f, "replace")) {
            json_t *o = arg(args, argn, na, 0, "old", NULL), *nw = arg(args, argn, na, 1, "new", NULL), *c = arg(args, argn, na, 2, "count", NULL);
            long long cnt = -1;
            if (!o || !nw || !json_is_string(o) || !json_is_string(nw)) rs_err(st, line, "replace needs two strings");
            else {
                if (c) as_int(c, &cnt);
                r = ts_replace(S(s), SN(s), S(o), SN(o), S(nw), SN(nw), cnt);
            }
        } else if (!strcmp(f, "indent")) r = do_indent(s, args, argn, na, st);
        else if (!strcmp(f, "wordcount")) {
            long long c = 0;
            int in = 0;
            for (size_t i = 0; i < SN(s);) {
                int cp = tu_decode(S(s), SN(s), &i);
                int w = cp == '_' || is_alnum(cp);
                if (w && !in) c++;
                in = w;
            }
            r = json_integer(c);
        } else rs_err(st, line, "filter '%s' is not supported", f);
        json_decref(s);
        if (!r && !st->err) rs_err(st, line, "string too large");
        return r;
    }
    if (!strcmp(f, "length") || !strcmp(f, "count")) {
        if (!v) return json_integer(0);
        if (json_is_string(v)) return json_integer((json_int_t)tu_cplen(S(v), SN(v)));
        if (json_is_array(v)) return json_integer((json_int_t)json_array_size(v));
        if (json_is_object(v) && !rs_special(st, v)) return json_integer((json_int_t)json_object_size(v));
        rs_err(st, line, "object of type '%s' has no len()", tv_type_name(v));
        return NULL;
    }
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        json_t *d = arg(args, argn, na, 0, "default_value", NULL), *b = arg(args, argn, na, 1, "boolean", NULL);
        int have;
        arg(args, argn, na, 0, "default_value", &have);
        if (!v || (rs_truthy(st, b) && !rs_truthy(st, v))) return have ? (d ? json_incref(d) : NULL) : json_string("");
        return json_incref(v);
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        if (!(seq = tf_iter(st, line, v))) return NULL;
        size_t n = json_array_size(seq);
        if (n) r = json_incref(json_array_get(seq, f[0] == 'f' ? 0 : n - 1));
        json_decref(seq);
        return r;
    }
    if (!strcmp(f, "list")) {
        if (!(seq = tf_iter(st, line, v))) return NULL;
        r = json_copy(seq);
        json_decref(seq);
        return r;
    }
    if (!strcmp(f, "items")) {
        if (!v) return json_array();
        if (!json_is_object(v) || rs_special(st, v)) { rs_err(st, line, "Can only get item pairs from a mapping."); return NULL; }
        r = json_array();
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            json_t *pair = rs_tuple(st, json_pack("[sO]", k, x));
            if (!pair) { json_decref(r); return NULL; }
            json_array_append_new(r, pair);
        }
        return r;
    }
    if ((!strcmp(f, "int") || !strcmp(f, "float")) && !v) { /* int(Undefined) raises in jinja2 */
        rs_err(st, line, "value passed to '%s' is undefined", f);
        return NULL;
    }
    if (!strcmp(f, "int")) return do_int(v, arg(args, argn, na, 0, "default", NULL));
    if (!strcmp(f, "float")) return do_float(v, arg(args, argn, na, 0, "default", NULL));
    if (!strcmp(f, "abs")) {
        if (!tv_is_num(v)) { rs_err(st, line, "bad operand type for abs(): '%s'", tv_type_name(v)); return NULL; }
        if (json_is_real(v)) return json_real(fabs(json_real_value(v)));
        long long x = json_is_integer(v) ? (long long)json_integer_value(v) : json_is_true(v);
        return json_integer(x < 0 && x != INT64_MIN ? -x : x);
    }
    if (!strcmp(f, "round")) {
        json_t *p = arg(args, argn, na, 0, "precision", NULL), *m = arg(args, argn, na, 1, "method", NULL);
        long long prec = 0;
        if (p) as_int(p, &prec);
        if (!tv_is_num(v)) { rs_err(st, line, "round needs a number"); return NULL; }
        if (prec > 300) prec = 300;
        if (prec < -300) prec = -300;
        const char *meth = m && json_is_string(m) ? S(m) : "common";
        double x = tv_num(v), sc = pow(10.0, (double)prec);
        if (!strcmp(meth, "floor")) return json_real(floor(x * sc) / sc);
        if (!strcmp(meth, "ceil")) return json_real(ceil(x * sc) / sc);
        if (tv_is_int(v) && prec >= 0) return json_integer(json_is_integer(v) ? json_integer_value(v) : json_is_true(v));
        if (prec >= 0) {
            char buf[512];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
            return json_real(strtod(buf, NULL));
        }
        return json_real(nearbyint(x * sc) / sc);
    }
    if (!strcmp(f, "join")) {
        json_t *d = arg(args, argn, na, 0, "d", NULL), *at = arg(args, argn, na, 1, "attribute", NULL);
        if (!(seq = tf_iter(st, line, v))) return NULL;
        tbuf b = {0};
        b.limit = TMPL_MAX_OUT;
        for (size_t i = 0; i < json_array_size(seq); i++) {
            if (i && d) RS_STR(&b, d, st);
            json_t *x = json_array_get(seq, i);
            RS_STR(&b, at && json_is_string(at) ? attr_path(st, line, x, S(at)) : x, st);
        }
        json_decref(seq);
        if (st->err) { tb_free(&b); return NULL; }
        r = ts_take(&b);
        if (!r) rs_err(st, line, "output too large");
        return r;
    }
    if (!strcmp(f, "reverse")) {
        if (v && json_is_string(v)) {
            json_t *m1 = json_integer(-1);
            r = tf_slice(st, line, v, NULL, NULL, m1);
            json_decref(m1);
            return r;
        }
        if (!(seq = tf_iter(st, line, v))) return NULL;
        r = json_array();
        for (size_t i = json_array_size(seq); i-- > 0;) json_array_append(r, json_array_get(seq, i));
        json_decref(seq);
        return r;
    }
    if (!strcmp(f, "map")) {
        if (!(seq = tf_iter(st, line, v))) return NULL;
        json_t *at = arg(args, argn, na, -1, "attribute", NULL), *def = arg(args, argn, na, -1, "default", NULL);
        r = json_array();
        for (size_t i = 0; i < json_array_size(seq) && !st->err; i++) {
            json_t *x = json_array_get(seq, i), *y;
            if (at) {
                y = json_is_string(at) ? attr_path(st, line, x, S(at)) : NULL;
                if (!y) y = def;
                json_array_append(r, y ? y : json_null());
            } else if (na >= 1 && json_is_string(args[0])) {
                y = tf_filter(st, line, S(args[0]), x, args + 1, argn + 1, na - 1);
                json_array_append_new(r, y ? y : json_null());
            } else rs_err(st, line, "map needs a filter name or attribute=");
        }
        json_decref(seq);
        if (st->err) { json_decref(r); return NULL; }
        return r;
    }
    if (!strcmp(f, "select")) return select_like(st, line, v, args, argn, na, 0, 1);
    if (!strcmp(f, "reject")) return select_like(st, line, v, args, argn, na, 0, 0);
    if (!strcmp(f, "selectattr")) return select_like(st, line, v, args, argn, na, 1, 1);
    if (!strcmp(f, "rejectattr")) return select_like(st, line, v, args, argn, na, 1, 0);
    if (!strcmp(f, "sort") || !strcmp(f, "unique") || !strcmp(f, "min") || !strcmp(f, "max")) {
        int isort = f[0] == 's';
        json_t *rev = isort ? arg(args, argn, na, 0, "reverse", NULL) : NULL;
        json_t *cs = arg(args, argn, na, isort ? 1 : 0, "case_sensitive", NULL), *at = arg(args, argn, na, isort ? 2 : 1, "attribute", NULL);
        const char *attr = at && json_is_string(at) ? S(at) : NULL;
        if (!(seq = tf_iter(st, line, v))) return NULL;
        if (!strcmp(f, "unique")) {
            r = json_array();
            json_t *seen = json_array();
            for (size_t i = 0; i < json_array_size(seq); i++) {
                json_t *x = json_array_get(seq, i), *k = sort_key(attr ? attr_path(st, line, x, attr) : x, rs_truthy(st, cs));
                int dup = 0;
                for (size_t j = 0; j < json_array_size(seen) && !dup; j++) dup = tv_eq(json_array_get(seen, j), k);
                if (!dup) {
                    json_array_append(r, x);
                    json_array_append(seen, k ? k : json_null());
                }
                json_decref(k);
            }
            json_decref(seen);
            if (st->err) { json_decref(r); r = NULL; }
        } else {
            r = sort_items(st, line, seq, attr, rs_truthy(st, cs), rs_truthy(st, rev), -1);
            if (r && !isort) {
                size_t n = json_array_size(r);
                json_t *m = n ? json_incref(json_array_get(r, f[1] == 'i' ? 0 : n - 1)) : NULL;
                json_decref(r);
                r = m;
            }
        }
        json_decref(seq);
        return r;
    }
    if (!strcmp(f, "dictsort")) {
        json_t *cs = arg(args, argn, na, 0, "case_sensitive", NULL), *by = arg(args, argn, na, 1, "by", NULL), *rev = arg(args, argn, na, 2, "reverse", NULL);
        json_t *items = tf_filter(st, line, "items", v, NULL, NULL, 0);
        if (!items) return NULL;
        int pos = by && json_is_string(by) && !strcmp(S(by), "value") ? 1 : 0;
        r = sort_items(st, line, items, NULL, rs_truthy(st, cs), rs_truthy(st, rev), pos);
        json_decref(items);
        return r;
    }
    if (!strcmp(f, "batch")) {
        json_t *cnt = arg(args, argn, na, 0, "linecount", NULL), *fill = arg(args, argn, na, 1, "fill_with", NULL);
        long long k = 0;
        if (!cnt || as_int(cnt, &k) || k <= 0) { rs_err(st, line, "batch needs a positive count"); return NULL; }
        if (!(seq = tf_iter(st, line, v))) return NULL;
        r = json_array();
        json_t *cur = NULL;
        for (size_t i = 0; i < json_array_size(seq); i++) {
            if (!cur) cur = json_array();
            json_array_append(cur, json_array_get(seq, i));
            if ((long long)json_array_size(cur) == k) { json_array_append_new(r, cur); cur = NULL; }
        }
        if (cur) {
            int have;
            arg(args, argn, na, 1, "fill_with", &have);
            while (have && (long long)json_array_size(cur) < k) json_array_append(cur, fill ? fill : json_null());
            json_array_append_new(r, cur);
        }
        json_decref(seq);
        return r;
    }
    if (!strcmp(f, "sum")) {
        json_t *at = arg(args, argn, na, 0, "attribute", NULL), *start = arg(args, argn, na, 1, "start", NULL);
        if (!(seq = tf_iter(st, line, v))) return NULL;
        long long si = 0;
        double sf = 0;
        int isf = start && json_is_real(start);
        if (start) { if (isf) sf = json_real_value(start); else as_int(start, &si); }
        for (size_t i = 0; i < json_array_size(seq); i++) {
            json_t *x = json_array_get(seq, i);
            if (at && json_is_string(at)) x = attr_path(st, line, x, S(at));
            if (!tv_is_num(x)) { json_decref(seq); rs_err(st, line, "sum needs numbers"); return NULL; }
            if (json_is_real(x) && !isf) { isf = 1; sf = (double)si; }
            if (isf) sf += tv_num(x);
            else if (__builtin_add_overflow(si, (long long)tv_num(x), &si)) { json_decref(seq); rs_err(st, line, "integer overflow"); return NULL; }
        }
        json_decref(seq);
        return isf ? json_real(sf) : json_integer(si);
    }
    rs_err(st, line, "no filter named '%s'", f);
    return NULL;
}

/* ---------------- tests ---------------- */
int tf_test(rs *st, int line, const char *t, json_t *v, json_t **args, int na) {
    json_t *a = na > 0 ? args[0] : NULL;
    int c;
    if (!strcmp(t, "defined")) return v != NULL;
    if (!strcmp(t, "undefined")) return v == NULL;
    if (!strcmp(t, "none")) return v && json_is_null(v);
    if (!strcmp(t, "string")) return v && json_is_string(v);
    if (!strcmp(t, "mapping")) return v && json_is_object(v) && !rs_special(st, v);
    if (!strcmp(t, "iterable")) return !v || json_is_string(v) || json_is_array(v) || (json_is_object(v) && !rs_special(st, v));
    if (!strcmp(t, "sequence")) return !v || (json_is_string(v) || json_is_array(v) || (json_is_object(v) && !rs_special(st, v)));
    if (!strcmp(t, "number")) return tv_is_num(v);
    if (!strcmp(t, "integer")) return v && json_is_integer(v);
    if (!strcmp(t, "float")) return v && json_is_real(v);
    if (!strcmp(t, "boolean")) return v && json_is_boolean(v);
    if (!strcmp(t, "true")) return v && json_is_true(v);
    if (!strcmp(t, "false")) return v && json_is_false(v);
    if (!strcmp(t, "callable")) return rs_special(st, v) == SP_MACRO || rs_special(st, v) == SP_FUNC;
    if (!strcmp(t, "escaped")) return 0;
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) { /* str(v).islower()/isupper() */
        json_t *sv = to_str(st, v);
        if (!sv) return rs_err(st, line, "out of memory");
        json_t *x = ts_case(S(sv), SN(sv), t[0] == 'l' ? TS_LOWER : TS_UPPER);
        json_t *y = ts_case(S(sv), SN(sv), t[0] == 'l' ? TS_UPPER : TS_LOWER);
        int r = x && y && tv_eq(x, sv) && !tv_eq(y, sv); /* has a cased char, all in this case */
        json_decref(x);
        json_decref(y);
        json_decref(sv);
        return r;
    }
    if (!strcmp(t, "odd") || !strcmp(t, "even") || !strcmp(t, "divisibleby")) { /* value % n with Python semantics */
        long long x, d = 2;
        if (t[0] == 'd' && (!tv_is_num(a) || tv_num(a) == 0)) return rs_err(st, line, "divisibleby needs a non-zero number");
        if (!tv_is_num(v)) return rs_err(st, line, "test '%s' needs a number", t);
        if (!as_int(v, &x) && (t[0] != 'd' || !as_int(a, &d))) {
            long long m = x % d;
            if (m && ((m < 0) != (d < 0))) m += d;
            return t[0] == 'o' ? m == 1 : m == 0;
        }
        double fx = tv_num(v), fd = t[0] == 'd' ? tv_num(a) : 2.0, m = fmod(fx, fd);
        if (m != 0 && ((m < 0) != (fd < 0))) m += fd;
        return t[0] == 'o' ? m == 1.0 : m == 0.0;
    }
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "==")) return tv_eq(v, a);
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !tv_eq(v, a);
    if (!strcmp(t, "sameas")) { /* Python identity: singletons and cached small ints */
        if (v == a) return 1;
        if (!v || !a || json_typeof(v) != json_typeof(a)) return 0;
        if (json_is_null(v) || json_is_boolean(v)) return 1;
        return json_is_integer(v) && json_integer_value(v) == json_integer_value(a) && json_integer_value(v) >= -5 && json_integer_value(v) <= 256;
    }
    if (!strcmp(t, "lt") || !strcmp(t, "le") || !strcmp(t, "gt") || !strcmp(t, "ge") || !strcmp(t, "lessthan") || !strcmp(t, "greaterthan")) {
        if (tv_cmp(v, a, &c)) return rs_err(st, line, "test '%s': values are not comparable", t);
        if (!strcmp(t, "lt") || !strcmp(t, "lessthan")) return c < 0;
        if (!strcmp(t, "le")) return c <= 0;
        if (!strcmp(t, "gt") || !strcmp(t, "greaterthan")) return c > 0;
        return c >= 0;
    }
    if (!strcmp(t, "in")) {
        if (!a) return 0;
        if (json_is_string(a)) return v && json_is_string(v) && (SN(v) == 0 || memmem(S(a), SN(a), S(v), SN(v)));
        if (json_is_array(a)) {
            for (size_t i = 0; i < json_array_size(a); i++)
                if (tv_eq(json_array_get(a, i), v)) return 1;
            return 0;
        }
        if (json_is_object(a)) return v && json_is_string(v) && json_object_get(a, S(v));
        return rs_err(st, line, "argument of type '%s' is not iterable", tv_type_name(a));
    }
    return rs_err(st, line, "no test named '%s'", t);
}

/* ---------------- methods ---------------- */
static json_t *str_method(rs *st, int line, json_t *v, const char *m, json_t **args, char **argn, int na) {
    const char *s = S(v);
    size_t n = SN(v);
    json_t *a0 = arg(args, argn, na, 0, NULL, NULL), *a1 = arg(args, argn, na, 1, NULL, NULL);
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        int ends = m[0] == 'e';
        json_t *cands = a0 && json_is_array(a0) ? json_incref(a0) : json_pack("[O]", a0 ? a0 : json_null());
        int hit = 0;
        for (size_t i = 0; i < json_array_size(cands); i++) {
            json_t *p = json_array_get(cands, i);
            if (!json_is_string(p)) { json_decref(cands); rs_err(st, line, "%s arg must be str or a tuple of str", m); return NULL; }
            size_t pn = SN(p);
            if (pn <= n && !memcmp(ends ? s + n - pn : s, S(p), pn)) hit = 1;
        }
        json_decref(cands);
        return json_boolean(hit);
    }
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
        int l = m[0] != 'r', r = m[0] != 'l';
        if (a0 && json_is_string(a0)) return ts_strip(s, n, S(a0), SN(a0), l, r);
        if (a0 && !json_is_null(a0)) { rs_err(st, line, "%s arg must be None or str", m); return NULL; }
        return ts_strip(s, n, NULL, 0, l, r);
    }
    if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
        json_t *sep = arg(args, argn, na, 0, "sep", NULL), *mx = arg(args, argn, na, 1, "maxsplit", NULL);
        long long k = -1;
        if (mx) as_int(mx, &k);
        if (sep && !json_is_null(sep)) {
            if (!json_is_string(sep)) { rs_err(st, line, "must be str or None"); return NULL; }
            if (!SN(sep)) { rs_err(st, line, "empty separator"); return NULL; }
            return ts_split(s, n, S(sep), SN(sep), k, m[0] == 'r');
        }
        return ts_split(s, n, NULL, 0, k, m[0] == 'r');
    }
    if (!strcmp(m, "replace")) {
        json_t *c = arg(args, argn, na, 2, "count", NULL);
        long long k = -1;
        if (c) as_int(c, &k);
        if (!a0 || !a1 || !json_is_string(a0) || !json_is_string(a1)) { rs_err(st, line, "replace() arguments must be str"); return NULL; }
        return ts_replace(s, n, S(a0), SN(a0), S(a1), SN(a1), k);
    }
    if (!strcmp(m, "upper")) return ts_case(s, n, TS_UPPER);
    if (!strcmp(m, "lower")) return ts_case(s, n, TS_LOWER);
    if (!strcmp(m, "title")) return ts_case(s, n, TS_PYTITLE);
    if (!strcmp(m, "capitalize")) return ts_case(s, n, TS_CAPITALIZE);
    if (!strcmp(m, "find") || !strcmp(m, "rfind") || !strcmp(m, "count") || !strcmp(m, "index") || !strcmp(m, "rindex")) {
        if (!a0 || !json_is_string(a0)) { rs_err(st, line, "%s() argument must be str", m); return NULL; }
        if (!strcmp(m, "count")) return json_integer(ts_count(s, n, S(a0), SN(a0)));
        long long i = ts_find(s, n, S(a0), SN(a0), m[0] == 'r');
        if (i < 0 && m[m[0] == 'r' ? 1 : 0] == 'i') { rs_err(st, line, "substring not found"); return NULL; }
        return json_integer(i);
    }
    if (!strcmp(m, "join")) {
        json_t *seq = tf_iter(st, line, a0);
        if (!seq) return NULL;
        tbuf b = {0};
        b.limit = TMPL_MAX_OUT;
        for (size_t i = 0; i < json_array_size(seq); i++) {
            json_t *x = json_array_get(seq, i);
            if (!json_is_string(x)) { json_decref(seq); tb_free(&b); rs_err(st, line, "sequence item %zu: expected str instance", i); return NULL; }
            if (i) tb_put(&b, s, n);
            tb_put(&b, S(x), SN(x));
        }
        json_decref(seq);
        return ts_take(&b);
    }
    if (!strcmp(m, "splitlines")) {
        json_t *r = json_array();
        size_t st0 = 0;
        for (size_t i = 0; i < n;) {
            size_t j = i;
            int cp = tu_decode(s, n, &j);
            if (cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
                json_array_append_new(r, tv_strn(s + st0, i - st0));
                if (cp == '\r' && j < n && s[j] == '\n') j++;
                st0 = j;
            }
            i = j;
        }
        if (st0 < n) json_array_append_new(r, tv_strn(s + st0, n - st0));
        return r;
    }
    if (!strcmp(m, "isdigit") || !strcmp(m, "isalpha") || !strcmp(m, "isalnum") || !strcmp(m, "isspace") || !strcmp(m, "islower") || !strcmp(m, "isupper")) {
        if (!strcmp(m, "islower") || !strcmp(m, "isupper")) {
            json_t *x = ts_case(s, n, m[2] == 'l' ? TS_LOWER : TS_UPPER), *y = ts_case(s, n, m[2] == 'l' ? TS_UPPER : TS_LOWER);
            int r = tv_eq(x, v) && !tv_eq(y, v);
            json_decref(x);
            json_decref(y);
            return json_boolean(r);
        }
        int ok = n > 0;
        for (size_t i = 0; i < n && ok;) {
            int cp = tu_decode(s, n, &i);
            int d = is_digit(cp), al = is_alnum(cp) && !d;
            if (!strcmp(m, "isdigit")) ok = d;
            else if (!strcmp(m, "isalpha")) ok = al;
            else if (!strcmp(m, "isalnum")) ok = al || d;
            else ok = tu_isspace(cp);
        }
        return json_boolean(ok);
    }
    if (!strcmp(m, "format")) {
        tbuf b = {0};
        b.limit = TMPL_MAX_OUT;
        int auto_i = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') { tb_putc(&b, '{'); i++; continue; }
            if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') { tb_putc(&b, '}'); i++; continue; }
            if (s[i] != '{') { tb_putc(&b, s[i]); continue; }
            const char *e = memchr(s + i, '}', n - i);
            if (!e) { tb_free(&b); rs_err(st, line, "Single '{' encountered in format string"); return NULL; }
            char key[64];
            size_t kl = (size_t)(e - (s + i + 1));
            if (kl >= sizeof key || memchr(s + i + 1, ':', kl) || memchr(s + i + 1, '!', kl)) { tb_free(&b); rs_err(st, line, "unsupported format field"); return NULL; }
            memcpy(key, s + i + 1, kl);
            key[kl] = 0;
            json_t *x;
            if (!kl) x = arg(args, argn, na, auto_i++, NULL, NULL);
            else if (key[0] >= '0' && key[0] <= '9') x = arg(args, argn, na, atoi(key), NULL, NULL);
            else x = arg(args, argn, na, -1, key, NULL);
            if (!x) { tb_free(&b); rs_err(st, line, "format: missing argument '%s'", key); return NULL; }
            RS_STR(&b, x, st);
            i = (size_t)(e - s);
        }
        return ts_take(&b);
    }
    rs_err(st, line, "'str' object has no attribute '%s'", m);
    return NULL;
}

json_t *tf_method(rs *st, int line, json_t *obj, const char *m, json_t **args, char **argn, int na) {
    if (json_is_string(obj)) return str_method(st, line, obj, m, args, argn, na);
    if (json_is_object(obj) && !rs_special(st, obj)) {
        if (!strcmp(m, "items")) return tf_filter(st, line, "items", obj, NULL, NULL, 0);
        if (!strcmp(m, "keys")) return tf_iter(st, line, obj);
        if (!strcmp(m, "values")) {
            json_t *r = json_array();
            const char *k;
            json_t *x;
            json_object_foreach(obj, k, x) json_array_append(r, x);
            return r;
        }
        if (!strcmp(m, "get")) {
            json_t *k = na > 0 ? args[0] : NULL, *d = na > 1 ? args[1] : NULL;
            json_t *x = k && json_is_string(k) ? json_object_get(obj, S(k)) : NULL;
            if (x) return json_incref(x);
            return d ? json_incref(d) : json_null();
        }
    }
    if (json_is_array(obj)) {
        json_t *a0 = na > 0 ? args[0] : NULL;
        if (!strcmp(m, "count") || !strcmp(m, "index")) {
            long long c = 0;
            for (size_t i = 0; i < json_array_size(obj); i++)
                if (tv_eq(json_array_get(obj, i), a0)) {
                    if (m[0] == 'i') return json_integer((json_int_t)i);
                    c++;
                }
            if (m[0] == 'i') { rs_err(st, line, "value is not in list"); return NULL; }
            return json_integer(c);
        }
    }
    const char *mut[] = {"append", "pop", "insert", "extend", "remove", "clear", "update", "setdefault", "popitem", "sort", "reverse", NULL};
    for (int i = 0; mut[i]; i++)
        if (!strcmp(m, mut[i])) { rs_err(st, line, "access to attribute '%s' of '%s' object is unsafe.", m, tv_type_name(obj)); return NULL; }
    rs_err(st, line, "'%s' object has no attribute '%s'", rs_special(st, obj) ? "Namespace" : tv_type_name(obj), m);
    return NULL;
}
