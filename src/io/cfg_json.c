/* Typed, range-checked readers for config.json fields (see cfg_json.h). */
#include "io/cfg_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

int cj_err(const cj_ctx *c, const char *key, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dl_err("%s: field '%s%s': %s", c->label, c->path, key, msg);
}

const char *cj_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

int cj_has(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

int cj_int_value(const cj_ctx *c, const char *key, const json_t *v, long long lo, long long hi, int *out) {
    long long x;
    if (json_is_integer(v)) x = (long long)json_integer_value(v);
    else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d == floor(d)) || d < -9e18 || d > 9e18)
            return cj_err(c, key, "expected an integer, got %g", d);
        x = (long long)d;
    } else
        return cj_err(c, key, "expected an integer, got %s", cj_kind(v));
    if (x < lo || x > hi) return cj_err(c, key, "%lld is out of range [%lld, %lld]", x, lo, hi);
    *out = (int)x;
    return 0;
}

int cj_int(const cj_ctx *c, const json_t *o, const char *key, int required, int def, long long lo,
           long long hi, int *out) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return cj_err(c, key, v ? "is null" : "missing");
        *out = def;
        return 0;
    }
    return cj_int_value(c, key, v, lo, hi, out);
}

int cj_num(const cj_ctx *c, const json_t *o, const char *key, int required, double def, double lo_excl,
           double hi, double *out) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return cj_err(c, key, v ? "is null" : "missing");
        *out = def;
        return 0;
    }
    if (!json_is_number(v)) return cj_err(c, key, "expected a number, got %s", cj_kind(v));
    double d = json_number_value(v);
    if (!(d > lo_excl && d <= hi)) return cj_err(c, key, "%g is out of range (%g, %g]", d, lo_excl, hi);
    *out = d;
    return 0;
}

int cj_bool(const cj_ctx *c, const json_t *o, const char *key, int def, int *out) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v)) return cj_err(c, key, "expected true or false, got %s", cj_kind(v));
    *out = json_is_true(v);
    return 0;
}

int cj_str(const cj_ctx *c, const json_t *o, const char *key, int required, const char *def, char *out,
           size_t cap) {
    const json_t *v = json_object_get(o, key);
    const char *s = def;
    if (!v || json_is_null(v)) {
        if (required) return cj_err(c, key, v ? "is null" : "missing");
    } else if (!json_is_string(v)) {
        return cj_err(c, key, "expected a string, got %s", cj_kind(v));
    } else {
        s = json_string_value(v);
    }
    size_t n = strlen(s);
    if (n >= cap) return cj_err(c, key, "value is too long (%zu bytes, at most %zu)", n, cap - 1);
    memcpy(out, s, n + 1);
    return 0;
}

int cj_strlist(const cj_ctx *c, const json_t *o, const char *key, char ***out, int *n) {
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    *n = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return cj_err(c, key, "expected a list of strings, got %s", cj_kind(v));
    size_t m = json_array_size(v);
    if (m > 1000000) return cj_err(c, key, "list is too long (%zu)", m);
    for (size_t i = 0; i < m; i++)
        if (!json_is_string(json_array_get(v, i)))
            return cj_err(c, key, "entry %zu is %s, expected a string", i, cj_kind(json_array_get(v, i)));
    if (!m) return 0;
    char **l = calloc(m, sizeof *l);
    if (!l) return cj_err(c, key, "out of memory");
    for (size_t i = 0; i < m; i++) {
        l[i] = strdup(json_string_value(json_array_get(v, i)));
        if (!l[i]) {
            for (size_t j = 0; j < i; j++) free(l[j]);
            free(l);
            return cj_err(c, key, "out of memory");
        }
    }
    *out = l;
    *n = (int)m;
    return 0;
}
