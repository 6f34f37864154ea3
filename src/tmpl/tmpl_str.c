/* Python str methods for the template interpreter (upper, split, strip,
 * replace, format, ...), operating on UTF-8 by code point. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tmpl/tmpl_str.h"

json_t *ts_take(tbuf *b) {
    json_t *r = b->over ? NULL : tv_strn(b->p ? b->p : "", b->n);
    tb_free(b);
    return r;
}

static int cased(int cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

json_t *ts_case(const char *s, size_t n, int mode) {
    tbuf b = {0};
    int prev_cased = 0, first = 1, word_start = 1;
    for (size_t i = 0; i < n;) {
        int cp = tu_decode(s, n, &i), o = cp;
        switch (mode) {
        case TS_UPPER: o = utf8proc_toupper(cp); break;
        case TS_LOWER: o = utf8proc_tolower(cp); break;
        case TS_PYTITLE: o = prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp); prev_cased = cased(cp); break;
        case TS_CAPITALIZE: o = first ? utf8proc_totitle(cp) : utf8proc_tolower(cp); break;
        case TS_JTITLE: {
            int sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || tu_isspace(cp);
            if (sep) word_start = 1;
            else {
                o = word_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
                word_start = 0;
            }
            break;
        }
        }
        first = 0;
        tu_encode(&b, o);
    }
    return ts_take(&b);
}

static int in_set(int cp, const int *set, int nset) {
    if (!set) return tu_isspace(cp);
    for (int i = 0; i < nset; i++)
        if (set[i] == cp) return 1;
    return 0;
}

json_t *ts_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right) {
    int *set = NULL, nset = 0;
    if (chars) {
        set = malloc((nchars + 1) * sizeof *set);
        if (!set) return NULL;
        for (size_t i = 0; i < nchars;) set[nset++] = tu_decode(chars, nchars, &i);
    }
    size_t a = 0, z = n;
    if (left)
        while (a < z) {
            size_t j = a;
            int cp = tu_decode(s, z, &j);
            if (!in_set(cp, set, nset)) break;
            a = j;
        }
    if (right)
        while (z > a) {
            size_t st = z - 1;
            while (st > a && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
            size_t j = st;
            int cp = tu_decode(s, z, &j);
            if (!in_set(cp, set, nset)) break;
            z = st;
        }
    free(set);
    return tv_strn(s + a, z - a);
}

/* Python str.split / rsplit. sep NULL = runs of whitespace. */
json_t *ts_split(const char *s, size_t n, const char *sep, size_t nsep, long long maxsplit, int from_right) {
    json_t *parts = json_array();
    if (!sep) {
        size_t i = 0;
        while (i < n) {
            size_t j = i;
            int cp = tu_decode(s, n, &j);
            if (!tu_isspace(cp)) break;
            i = j;
        }
        while (i < n) {
            size_t st = i;
            while (i < n) {
                size_t j = i;
                int cp = tu_decode(s, n, &j);
                if (tu_isspace(cp)) break;
                i = j;
            }
            json_array_append_new(parts, tv_strn(s + st, i - st));
            while (i < n) {
                size_t j = i;
                int cp = tu_decode(s, n, &j);
                if (!tu_isspace(cp)) break;
                i = j;
            }
        }
    } else {
        size_t st = 0;
        for (;;) {
            const char *f = nsep <= n - st ? memmem(s + st, n - st, sep, nsep) : NULL;
            if (!f) break;
            json_array_append_new(parts, tv_strn(s + st, (size_t)(f - (s + st))));
            st = (size_t)(f - s) + nsep;
        }
        json_array_append_new(parts, tv_strn(s + st, n - st));
    }
    long long np = (long long)json_array_size(parts);
    if (maxsplit < 0 || np <= maxsplit + 1) return parts;
    /* merge the surplus pieces back together */
    const char *js = sep ? sep : " ";
    size_t jn = sep ? nsep : 1;
    json_t *out = json_array();
    long long keep = maxsplit, merged = np - maxsplit;
    tbuf b = {0};
    if (!from_right) {
        for (long long i = 0; i < keep; i++) json_array_append(out, json_array_get(parts, (size_t)i));
        for (long long i = keep; i < np; i++) {
            if (i > keep) tb_put(&b, js, jn);
            json_t *p = json_array_get(parts, (size_t)i);
            tb_put(&b, json_string_value(p), json_string_length(p));
        }
        json_array_append_new(out, ts_take(&b));
    } else {
        for (long long i = 0; i < merged; i++) {
            if (i) tb_put(&b, js, jn);
            json_t *p = json_array_get(parts, (size_t)i);
            tb_put(&b, json_string_value(p), json_string_length(p));
        }
        json_array_append_new(out, ts_take(&b));
        for (long long i = merged; i < np; i++) json_array_append(out, json_array_get(parts, (size_t)i));
    }
    json_decref(parts);
    return out;
}

json_t *ts_replace(const char *s, size_t n, const char *old, size_t no, const char *nw, size_t nn, long long count) {
    tbuf b = {0};
    b.limit = TMPL_MAX_OUT;
    long long done = 0;
    if (!no) {
        for (size_t i = 0; i <= n;) {
            if (count < 0 || done < count) { tb_put(&b, nw, nn); done++; }
            if (i == n) break;
            size_t j = i;
            tu_decode(s, n, &j);
            tb_put(&b, s + i, j - i);
            i = j;
        }
        return ts_take(&b);
    }
    size_t st = 0;
    while (count < 0 || done < count) {
        const char *f = no <= n - st ? memmem(s + st, n - st, old, no) : NULL;
        if (!f) break;
        tb_put(&b, s + st, (size_t)(f - (s + st)));
        tb_put(&b, nw, nn);
        st = (size_t)(f - s) + no;
        done++;
    }
    tb_put(&b, s + st, n - st);
    return ts_take(&b);
}

long long ts_find(const char *s, size_t n, const char *sub, size_t ns, int last) {
    if (ns > n) return -1;
    long long at = -1;
    for (size_t i = 0; i + ns <= n; i++) {
        if (!memcmp(s + i, sub, ns)) {
            at = (long long)i;
            if (!last) break;
        }
    }
    if (at < 0) return -1;
    return (long long)tu_cplen(s, (size_t)at); /* byte offset -> code point index */
}

long long ts_count(const char *s, size_t n, const char *sub, size_t ns) {
    if (!ns) return (long long)tu_cplen(s, n) + 1;
    long long c = 0;
    for (size_t i = 0; i + ns <= n;) {
        if (!memcmp(s + i, sub, ns)) { c++; i += ns; }
        else i++;
    }
    return c;
}
