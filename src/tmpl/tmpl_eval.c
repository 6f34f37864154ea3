/* Template evaluation: expressions and statements over jansson values with
 * jinja2 semantics (Undefined = NULL, scopes, loops, macros, namespaces). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/err.h"
#include "tmpl/tmpl_int.h"

int rs_err(rs *st, int line, const char *fmt, ...) {
    if (st->err) return -1;
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    st->err = 1;
    if (line > 0) return dl_err("template:%d: %s", line, m);
    return dl_err("template: %s", m);
}
static void ptr_key(char out[32], json_t *v) { snprintf(out, 32, "%p", (void *)v); }
static int sp_index(rs *st, json_t *v) {
    if (!v || !st->spmap || !st->nsp) return -1;
    char k[32];
    ptr_key(k, v);
    json_t *ix = json_object_get(st->spmap, k);
    return ix ? (int)json_integer_value(ix) : -1;
}
int rs_special(rs *st, json_t *v) {
    if (!v || !json_is_object(v)) return 0;
    int i = sp_index(st, v);
    return i < 0 ? 0 : st->sp[i].kind;
}
int rs_is_tuple(void *ctx, json_t *v) {
    rs *st = ctx;
    if (!st || !v || !json_is_array(v)) return 0;
    int i = sp_index(st, v);
    return i >= 0 && st->sp[i].kind == SP_TUPLE;
}
int rs_truthy(rs *st, json_t *v) {
    if (!v) return 0;
    switch (json_typeof(v)) {
    case JSON_NULL: case JSON_FALSE: return 0;
    case JSON_TRUE: return 1;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0.0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_OBJECT: return json_object_size(v) != 0 || rs_special(st, v);
    }
    return 0;
}
static int add_special(rs *st, json_t *obj, int kind, const tnode *node) {
    if (st->nsp == st->capsp) {
        int nc = st->capsp ? st->capsp * 2 : 8;
        tspecial *p = realloc(st->sp, (size_t)nc * sizeof *p);
        if (!p) return rs_err(st, 0, "out of memory");
        st->sp = p;
        st->capsp = nc;
    }
    char k[32];
    ptr_key(k, obj);
    if (!st->spmap) st->spmap = json_object();
    if (!st->spmap || json_object_set_new(st->spmap, k, json_integer(st->nsp))) return rs_err(st, 0, "out of memory");
    st->sp[st->nsp++] = (tspecial){json_incref(obj), kind, node, NULL};
    return 0;
}
json_t *rs_tuple(rs *st, json_t *v) {
    if (!v) return NULL;
    if (add_special(st, v, SP_TUPLE, NULL)) { json_decref(v); return NULL; }
    return v;
}

/* ---------------- scopes ---------------- */
static int push_scope(rs *st) {
    if (st->nsc == st->capsc) {
        int nc = st->capsc ? st->capsc * 2 : 16;
        json_t **p = realloc(st->sc, (size_t)nc * sizeof *p);
        if (!p) return rs_err(st, 0, "out of memory");
        st->sc = p;
        st->capsc = nc;
    }
    st->sc[st->nsc] = json_object();
    if (!st->sc[st->nsc]) return rs_err(st, 0, "out of memory");
    st->nsc++;
    return 0;
}
static void pop_scope(rs *st) { json_decref(st->sc[--st->nsc]); }
/* Look a name up; *found says whether it exists. Returns a new reference. */
static json_t *lookup(rs *st, const char *name, int *found) {
    for (int i = st->nsc - 1; i >= 0; i--) {
        if (i < st->floor && i > 1) continue;
        json_t *v = json_object_get(st->sc[i], name);
        if (v) {
            *found = 1;
            return v == st->undef ? NULL : json_incref(v);
        }
    }
    *found = 0;
    return NULL;
}
static void assign(rs *st, const char *name, json_t *v) {
    json_object_set(st->sc[st->nsc - 1], name, v ? v : st->undef);
}

/* ---------------- expressions ---------------- */
static json_t *ev(rs *st, const tnode *n);
static int render(rs *st, const tnode *n);

static json_t *undefined_err(rs *st, int line, const char *what) {
    rs_err(st, line, "%s is undefined", what);
    return NULL;
}
/* "'name' is undefined" for a name/attribute node, else the generic text */
static json_t *undefined_node(rs *st, const tnode *n, const char *what) {
    char m[160];
    if (n->kind == E_NAME || n->kind == E_ATTR) {
        snprintf(m, sizeof m, "'%s'", n->name);
        return undefined_err(st, n->line, m);
    }
    return undefined_err(st, n->line, what);
}

static json_t *getitem(rs *st, json_t *obj, json_t *key) {
    (void)st;
    if (json_is_object(obj)) {
        if (!json_is_string(key)) return NULL;
        json_t *v = json_object_get(obj, json_string_value(key));
        return v ? json_incref(v) : NULL;
    }
    if (!tv_is_int(key)) return NULL;
    long long i = json_is_integer(key) ? (long long)json_integer_value(key) : json_is_true(key);
    if (json_is_array(obj)) {
        long long n = (long long)json_array_size(obj);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return NULL;
        return json_incref(json_array_get(obj, (size_t)i));
    }
    if (json_is_string(obj)) {
        const char *s = json_string_value(obj);
        size_t len = json_string_length(obj);
        long long n = (long long)tu_cplen(s, len);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return NULL;
        size_t p = 0;
        for (long long k = 0; k < i; k++) tu_decode(s, len, &p);
        size_t q = p;
        tu_decode(s, len, &q);
        return tv_strn(s + p, q - p);
    }
    return NULL;
}

static int ov_check(rs *st, int line, int ovf) {
    if (ovf) rs_err(st, line, "integer overflow");
    return ovf;
}

static json_t *arith(rs *st, int line, int op, json_t *a, json_t *b) {
    if (!a || !b) return undefined_err(st, line, "a value used in arithmetic");
    if (op == OP_ADD) {
        if (json_is_string(a) && json_is_string(b)) {
            tbuf t = {0};
            t.limit = TMPL_MAX_OUT;
            tb_put(&t, json_string_value(a), json_string_length(a));
            tb_put(&t, json_string_value(b), json_string_length(b));
            if (t.over) { tb_free(&t); rs_err(st, line, "string too large"); return NULL; }
            json_t *r = tv_strn(t.p ? t.p : "", t.n);
            tb_free(&t);
            return r;
        }
        if (json_is_array(a) && json_is_array(b)) {
            json_t *r = json_copy(a);
            json_array_extend(r, b);
            return r;
        }
    }
    if ((op == OP_MUL) && ((json_is_string(a) || json_is_array(a)) && tv_is_int(b) ? 1 : (json_is_string(b) || json_is_array(b)) && tv_is_int(a))) {
        json_t *seq = tv_is_int(b) ? a : b, *cnt = seq == a ? b : a;
        long long k = json_is_integer(cnt) ? (long long)json_integer_value(cnt) : json_is_true(cnt);
        if (k < 0) k = 0;
        if (json_is_string(seq)) {
            size_t len = json_string_length(seq);
            if (len && (unsigned long long)k > TMPL_MAX_OUT / len) { rs_err(st, line, "string too large"); return NULL; }
            tbuf t = {0};
            for (long long i = 0; i < k; i++) tb_put(&t, json_string_value(seq), len);
            json_t *r = tv_strn(t.p ? t.p : "", t.n);
            tb_free(&t);
            return r;
        }
        size_t len = json_array_size(seq);
        if (len && (unsigned long long)k > (1u << 24) / len) { rs_err(st, line, "list too large"); return NULL; }
        json_t *r = json_array();
        for (long long i = 0; i < k; i++) json_array_extend(r, seq);
        return r;
    }
    if (!tv_is_num(a) || !tv_is_num(b)) {
        static const char *names[] = {"+", "-", "*", "/", "//", "%", "**"};
        rs_err(st, line, "unsupported operand type(s) for %s: '%s' and '%s'", names[op], tv_type_name(a), tv_type_name(b));
        return NULL;
    }
    if (tv_is_int(a) && tv_is_int(b) && op != OP_DIV) {
        long long x = json_is_integer(a) ? (long long)json_integer_value(a) : json_is_true(a);
        long long y = json_is_integer(b) ? (long long)json_integer_value(b) : json_is_true(b);
        long long r = 0;
        switch (op) {
        case OP_ADD: if (ov_check(st, line, __builtin_add_overflow(x, y, &r))) return NULL; break;
        case OP_SUB: if (ov_check(st, line, __builtin_sub_overflow(x, y, &r))) return NULL; break;
        case OP_MUL: if (ov_check(st, line, __builtin_mul_overflow(x, y, &r))) return NULL; break;
        case OP_FDIV: case OP_MOD:
            if (y == 0) { rs_err(st, line, "integer division or modulo by zero"); return NULL; }
            if (x == INT64_MIN && y == -1) { rs_err(st, line, "integer overflow"); return NULL; }
            {
                long long q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }
                r = op == OP_FDIV ? q : m;
            }
            break;
        case OP_POW:
            if (y < 0) return json_real(pow((double)x, (double)y));
            r = 1;
            for (long long i = 0; i < y; i++) {
                if (ov_check(st, line, __builtin_mul_overflow(r, x, &r))) return NULL;
                if (r == 0 || r == 1) break;
            }
            if (r == 1 && x == -1 && (y & 1)) r = -1;
            break;
        }
        return json_integer(r);
    }
    double x = tv_num(a), y = tv_num(b), r = 0;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    case OP_DIV:
        if (y == 0) { rs_err(st, line, "division by zero"); return NULL; }
        r = x / y;
        break;
    case OP_FDIV: case OP_MOD:
        if (y == 0) { rs_err(st, line, "float division or modulo by zero"); return NULL; }
        {
            double m = fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            r = op == OP_MOD ? m : floor(x / y);
        }
        break;
    case OP_POW: r = pow(x, y); break;
    }
    return json_real(r);
}

/* Python `needle in hay`: -1 on error */
static int contains(rs *st, int line, json_t *hay, json_t *needle) {
    if (!hay) return 0;
    if (json_is_string(hay)) {
        if (!needle || !json_is_string(needle)) return rs_err(st, line, "'in <string>' requires string as left operand, not %s", tv_type_name(needle));
        size_t hn = json_string_length(hay), nn = json_string_length(needle);
        if (!nn) return 1;
        return memmem(json_string_value(hay), hn, json_string_value(needle), nn) != NULL;
    }
    if (json_is_array(hay)) {
        for (size_t i = 0; i < json_array_size(hay); i++)
            if (tv_eq(json_array_get(hay, i), needle)) return 1;
        return 0;
    }
    if (json_is_object(hay)) return needle && json_is_string(needle) && json_object_get(hay, json_string_value(needle));
    return rs_err(st, line, "argument of type '%s' is not iterable", tv_type_name(hay));
}

static json_t *compare(rs *st, const tnode *n) {
    json_t *a = ev(st, n->k[0]);
    if (st->err) return NULL;
    for (int i = 1; i < n->nk; i++) {
        json_t *b = ev(st, n->k[i]);
        if (st->err) { json_decref(a); return NULL; }
        int op = n->ops[i - 1], r = 0, c;
        switch (op) {
        case OP_EQ: r = tv_eq(a, b); break;
        case OP_NE: r = !tv_eq(a, b); break;
        case OP_IN: case OP_NOTIN:
            r = contains(st, n->line, b, a);
            if (r >= 0 && op == OP_NOTIN) r = !r;
            break;
        default:
            if (!a || !b) { undefined_err(st, n->line, "a compared value"); r = -1; break; }
            if (tv_cmp(a, b, &c)) {
                rs_err(st, n->line, "'%s' not supported between instances of '%s' and '%s'", op == OP_LT ? "<" : op == OP_LE ? "<=" : op == OP_GT ? ">" : ">=", tv_type_name(a), tv_type_name(b));
                r = -1;
                break;
            }
            r = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
        }
        json_decref(a);
        a = b;
        if (r < 0 || st->err) { json_decref(a); return NULL; }
        if (!r) { json_decref(a); return json_false(); }
    }
    json_decref(a);
    return json_true();
}

/* Evaluate call arguments k[first..] into args (new references). */
static int eval_args(rs *st, const tnode *n, int first, json_t ***args) {
    int na = n->nk - first;
    *args = calloc((size_t)(na ? na : 1), sizeof **args);
    if (!*args) return rs_err(st, n->line, "out of memory");
    for (int i = 0; i < na; i++) {
        (*args)[i] = ev(st, n->k[first + i]);
        if (st->err) return -1;
    }
    return 0;
}
static void free_args(json_t **args, int na) {
    if (!args) return;
    for (int i = 0; i < na; i++) json_decref(args[i]);
    free(args);
}

static json_t *call_macro(rs *st, const tnode *call, const tnode *m, json_t **args, char **argn, int na) {
    if (st->depth >= TMPL_MAX_DEPTH) { rs_err(st, call->line, "maximum macro recursion depth exceeded"); return NULL; }
    int nparams = m->nk - 1, npos = 0;
    for (int i = 0; i < na; i++) {
        if (argn[i]) {
            int ok = 0;
            for (int p = 0; p < nparams; p++) ok |= !strcmp(m->argn[p + 1], argn[i]);
            if (!ok) { rs_err(st, call->line, "macro '%s' takes no keyword argument '%s'", m->name, argn[i]); return NULL; }
        } else if (npos++ >= nparams) {
            rs_err(st, call->line, "macro '%s' takes not more than %d argument(s)", m->name, nparams);
            return NULL;
        }
    }
    int save_floor = st->floor;
    if (push_scope(st)) return NULL;
    st->floor = st->nsc - 1;
    st->depth++;
    for (int p = 0; p < nparams && !st->err; p++) {
        const char *pn = m->argn[p + 1];
        json_t *v = NULL;
        int have = 0;
        for (int i = 0; i < na; i++) {
            if (argn[i] ? !strcmp(argn[i], pn) : i == p) { json_decref(v); v = json_incref(args[i]); have = 1; }
        }
        if (!have && m->k[p + 1]) v = ev(st, m->k[p + 1]);
        assign(st, pn, v);
        json_decref(v);
    }
    tbuf save = st->out;
    memset(&st->out, 0, sizeof st->out);
    st->out.limit = save.limit;
    if (!st->err) render(st, m->k[0]);
    json_t *r = NULL;
    if (st->out.over && !st->err) rs_err(st, call->line, "output too large");
    if (!st->err) r = tv_strn(st->out.p ? st->out.p : "", st->out.n);
    tb_free(&st->out);
    st->out = save;
    st->depth--;
    pop_scope(st);
    st->floor = save_floor;
    return r;
}

static json_t *call_global(rs *st, const tnode *n, const char *name, json_t **args, char **argn, int na) {
    if (!strcmp(name, "raise_exception")) {
        tbuf b = {0};
        if (na > 0) RS_STR(&b, args[0], st);
        rs_err(st, n->line, "raise_exception: %s", b.p ? b.p : "");
        tb_free(&b);
        return NULL;
    }
    if (!strcmp(name, "strftime_now")) {
        if (na < 1 || !json_is_string(args[0])) { rs_err(st, n->line, "strftime_now needs a format string"); return NULL; }
        time_t now = time(NULL);
        struct tm tmv;
        localtime_r(&now, &tmv);
        char out[256];
        size_t len = strftime(out, sizeof out, json_string_value(args[0]), &tmv);
        return tv_strn(out, len);
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        json_t *o = json_object();
        for (int i = 0; i < na; i++) {
            if (argn[i]) json_object_set(o, argn[i], args[i] ? args[i] : json_null());
            else if (json_is_object(args[i])) json_object_update(o, args[i]);
            else { json_decref(o); rs_err(st, n->line, "%s() takes keyword arguments", name); return NULL; }
        }
        if (name[0] == 'n' && add_special(st, o, SP_NS, NULL)) { json_decref(o); return NULL; }
        return o;
    }
    if (!strcmp(name, "range")) {
        long long a[3] = {0, 0, 1};
        if (na < 1 || na > 3) { rs_err(st, n->line, "range expected 1 to 3 arguments"); return NULL; }
        for (int i = 0; i < na; i++) {
            if (!args[i] || !json_is_integer(args[i])) { rs_err(st, n->line, "range() arguments must be integers"); return NULL; }
            a[na == 1 ? 1 : i] = json_integer_value(args[i]);
        }
        if (a[2] == 0) { rs_err(st, n->line, "range() arg 3 must not be zero"); return NULL; }
        json_t *r = json_array();
        for (long long x = a[0]; a[2] > 0 ? x < a[1] : x > a[1]; x += a[2]) {
            if (json_array_size(r) >= (size_t)TMPL_MAX_STEPS) { json_decref(r); rs_err(st, n->line, "range too large"); return NULL; }
            json_array_append_new(r, json_integer(x));
        }
        return r;
    }
    rs_err(st, n->line, "'%s' is undefined or not callable", name);
    return NULL;
}

static const char *const GLOBAL_FNS[] = {"raise_exception", "strftime_now", "namespace", "range", "dict", NULL};
/* The value of a global function name (so `strftime_now is defined` holds);
 * NULL if name is not one. */
static json_t *global_fn(rs *st, const char *name) {
    for (int i = 0; GLOBAL_FNS[i]; i++) {
        if (strcmp(name, GLOBAL_FNS[i])) continue;
        if (!st->gfn[i]) {
            json_t *o = json_object();
            if (!o || add_special(st, o, SP_FUNC, NULL)) { json_decref(o); return NULL; }
            st->sp[st->nsp - 1].fname = GLOBAL_FNS[i];
            st->gfn[i] = o; /* the registry holds the reference */
            json_decref(o);
        }
        return json_incref(st->gfn[i]);
    }
    return NULL;
}

/* jinja2 tries getattr before the item: `d.items` on a dict is the bound
 * method (truthy, not the "items" key), as are the other dict methods. */
static int is_dict_method(const char *name) {
    static const char *const M[] = {"items", "keys", "values", "get", "pop", "popitem", "copy", "update",
                                    "setdefault", "clear", "fromkeys", NULL};
    for (int i = 0; M[i]; i++)
        if (!strcmp(name, M[i])) return 1;
    return 0;
}
static json_t *method_value(rs *st) {
    json_t **slot = &st->gfn[7];
    if (!*slot) {
        json_t *o = json_object();
        if (!o || add_special(st, o, SP_FUNC, NULL)) { json_decref(o); return NULL; }
        st->sp[st->nsp - 1].fname = "<method>";
        *slot = o;
        json_decref(o);
    }
    return json_incref(*slot);
}

static json_t *ev_call(rs *st, const tnode *n) {
    const tnode *cal = n->k[0];
    json_t **args = NULL, *r = NULL;
    int na = n->nk - 1;
    if (eval_args(st, n, 1, &args)) { free_args(args, na); return NULL; }
    char **argn = n->argn + 1;
    if (cal->kind == E_ATTR) {
        json_t *obj = ev(st, cal->k[0]);
        if (!st->err) {
            if (!obj) undefined_node(st, cal->k[0], "the object of a method call");
            else r = tf_method(st, n->line, obj, cal->name, args, argn, na);
        }
        json_decref(obj);
    } else if (cal->kind == E_NAME) {
        int found;
        json_t *f = lookup(st, cal->name, &found);
        if (found && rs_special(st, f) == SP_MACRO) {
            const tnode *m = st->sp[sp_index(st, f)].node;
            r = call_macro(st, n, m, args, argn, na);
        } else if (found && rs_special(st, f) == SP_FUNC) {
            r = call_global(st, n, st->sp[sp_index(st, f)].fname, args, argn, na);
        } else if (found && f) rs_err(st, n->line, "'%s' object is not callable", tv_type_name(f));
        else r = call_global(st, n, cal->name, args, argn, na);
        json_decref(f);
    } else rs_err(st, n->line, "object is not callable");
    free_args(args, na);
    return r;
}

static json_t *ev_filter(rs *st, const tnode *n, json_t *base, int use_base) {
    json_t *v = use_base ? json_incref(base) : (n->k[0] ? ev(st, n->k[0]) : NULL);
    if (n->k[0] && use_base && n->k[0]->kind == E_FILTER) {
        json_decref(v);
        v = ev_filter(st, n->k[0], base, 1);
    }
    if (st->err) { json_decref(v); return NULL; }
    json_t **args = NULL;
    int na = n->nk - 1;
    json_t *r = NULL;
    if (!eval_args(st, n, 1, &args)) r = tf_filter(st, n->line, n->name, v, args, n->argn + 1, na);
    free_args(args, na);
    json_decref(v);
    return r;
}

static json_t *ev(rs *st, const tnode *n) {
    if (st->err) return NULL;
    json_t *a = NULL, *b = NULL, *r = NULL;
    switch (n->kind) {
    case E_LIT: return json_incref(n->lit);
    case E_NAME: {
        int found;
        r = lookup(st, n->name, &found);
        if (!found) r = global_fn(st, n->name);
        return r;
    }
    case E_LIST: case E_TUPLE:
        r = json_array();
        for (int i = 0; i < n->nk && !st->err; i++) {
            a = ev(st, n->k[i]);
            json_array_append_new(r, a ? a : json_null());
        }
        if (st->err) { json_decref(r); return NULL; }
        return n->kind == E_TUPLE ? rs_tuple(st, r) : r;
    case E_DICT:
        r = json_object();
        for (int i = 0; i + 1 < n->nk && !st->err; i += 2) {
            a = ev(st, n->k[i]);
            b = ev(st, n->k[i + 1]);
            if (!st->err) {
                tbuf kb = {0};
                RS_STR(&kb, a, st);
                json_object_set(r, kb.p ? kb.p : "", b ? b : json_null());
                tb_free(&kb);
            }
            json_decref(a);
            json_decref(b);
        }
        if (st->err) { json_decref(r); return NULL; }
        return r;
    case E_ATTR:
        a = ev(st, n->k[0]);
        if (st->err) return NULL;
        if (!a) return undefined_node(st, n->k[0], "an object whose attribute is read");
        if (json_is_object(a)) {
            if (!rs_special(st, a) && is_dict_method(n->name)) r = method_value(st);
            else {
                r = json_object_get(a, n->name);
                if (r) json_incref(r);
            }
        }
        json_decref(a);
        return r;
    case E_ITEM:
        a = ev(st, n->k[0]);
        b = ev(st, n->k[1]);
        if (!st->err && !a) undefined_node(st, n->k[0], "an object that is subscripted");
        if (!st->err) r = getitem(st, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case E_SLICE: {
        json_t *p[3] = {NULL, NULL, NULL};
        a = ev(st, n->k[0]);
        for (int i = 0; i < 3; i++)
            if (n->k[i + 1]) p[i] = ev(st, n->k[i + 1]);
        if (!st->err && !a) undefined_err(st, n->line, "an object that is sliced");
        if (!st->err) r = tf_slice(st, n->line, a, p[0], p[1], p[2]);
        json_decref(a);
        for (int i = 0; i < 3; i++) json_decref(p[i]);
        return r;
    }
    case E_CALL: return ev_call(st, n);
    case E_FILTER: return ev_filter(st, n, NULL, 0);
    case E_TEST: {
        a = ev(st, n->k[0]);
        json_t **args = NULL;
        int na = n->nk - 1, t = -1;
        if (!st->err && !eval_args(st, n, 1, &args)) t = tf_test(st, n->line, n->name, a, args, na);
        free_args(args, na);
        json_decref(a);
        if (t < 0 || st->err) return NULL;
        return json_boolean(n->neg ? !t : t);
    }
    case E_NOT:
        a = ev(st, n->k[0]);
        if (st->err) return NULL;
        r = json_boolean(!rs_truthy(st, a));
        json_decref(a);
        return r;
    case E_NEG: case E_POS:
        a = ev(st, n->k[0]);
        if (st->err) return NULL;
        if (!a) return undefined_err(st, n->line, "a negated value");
        if (!tv_is_num(a)) rs_err(st, n->line, "bad operand type for unary %c: '%s'", n->kind == E_NEG ? '-' : '+', tv_type_name(a));
        else if (json_is_real(a)) r = json_real(n->kind == E_NEG ? -json_real_value(a) : json_real_value(a));
        else {
            long long x = json_is_integer(a) ? (long long)json_integer_value(a) : json_is_true(a);
            if (n->kind == E_NEG && x == INT64_MIN) rs_err(st, n->line, "integer overflow");
            else r = json_integer(n->kind == E_NEG ? -x : x);
        }
        json_decref(a);
        return r;
    case E_BIN:
        a = ev(st, n->k[0]);
        b = ev(st, n->k[1]);
        if (!st->err) r = arith(st, n->line, n->op, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case E_CONCAT: {
        a = ev(st, n->k[0]);
        b = ev(st, n->k[1]);
        if (st->err) { json_decref(a); json_decref(b); return NULL; }
        tbuf t = {0};
        t.limit = TMPL_MAX_OUT;
        RS_STR(&t, a, st);
        RS_STR(&t, b, st);
        json_decref(a);
        json_decref(b);
        if (t.over) { tb_free(&t); rs_err(st, n->line, "string too large"); return NULL; }
        r = tv_strn(t.p ? t.p : "", t.n);
        tb_free(&t);
        return r;
    }
    case E_CMP: return compare(st, n);
    case E_AND: case E_OR:
        a = ev(st, n->k[0]);
        if (st->err) return NULL;
        if (rs_truthy(st, a) == (n->kind == E_OR)) return a;
        json_decref(a);
        return ev(st, n->k[1]);
    case E_COND:
        a = ev(st, n->k[1]);
        if (st->err) return NULL;
        {
            int t = rs_truthy(st, a);
            json_decref(a);
            if (t) return ev(st, n->k[0]);
            return n->k[2] ? ev(st, n->k[2]) : NULL;
        }
    }
    rs_err(st, n->line, "bad expression node");
    return NULL;
}

/* ---------------- statements ---------------- */
static int bind_targets(rs *st, const tnode *n, json_t *v) {
    if (n->ntg == 1) {
        assign(st, n->tg[0], v);
        return 0;
    }
    if (!v || !json_is_array(v) || json_array_size(v) != (size_t)n->ntg) {
        if (v && json_is_string(v) && tu_cplen(json_string_value(v), json_string_length(v)) == (size_t)n->ntg) {
            json_t *cs = tf_iter(st, n->line, v);
            if (!cs) return -1;
            for (int i = 0; i < n->ntg; i++) assign(st, n->tg[i], json_array_get(cs, (size_t)i));
            json_decref(cs);
            return 0;
        }
        return rs_err(st, n->line, "cannot unpack value into %d targets", n->ntg);
    }
    for (int i = 0; i < n->ntg; i++) assign(st, n->tg[i], json_array_get(v, (size_t)i));
    return 0;
}

static int render_for(rs *st, const tnode *n) {
    json_t *it = ev(st, n->k[0]);
    if (st->err) return -1;
    json_t *seq = NULL;
    if (!it) seq = json_array();
    else seq = tf_iter(st, n->line, it);
    json_decref(it);
    if (!seq) return -1;
    if (n->k[3]) { /* loop filter: `for x in xs if cond` */
        json_t *kept = json_array();
        for (size_t i = 0; i < json_array_size(seq) && !st->err; i++) {
            if (push_scope(st)) break;
            if (!bind_targets(st, n, json_array_get(seq, i))) {
                json_t *c = ev(st, n->k[3]);
                if (!st->err && rs_truthy(st, c)) json_array_append(kept, json_array_get(seq, i));
                json_decref(c);
            }
            pop_scope(st);
        }
        json_decref(seq);
        seq = kept;
        if (st->err) { json_decref(seq); return -1; }
    }
    size_t len = json_array_size(seq);
    /* one loop object and one scope per for-statement, updated per item
     * (jinja2's loop is likewise a single object advancing in place) */
    json_t *loop = len ? json_object() : NULL;
    if (len) {
        json_object_set_new(loop, "length", json_integer((json_int_t)len));
        json_object_set_new(loop, "depth", json_integer(1));
        json_object_set_new(loop, "depth0", json_integer(0));
        if (push_scope(st)) { json_decref(loop); json_decref(seq); return -1; }
    }
    for (size_t i = 0; i < len; i++) {
        if (++st->steps > TMPL_MAX_STEPS) { rs_err(st, n->line, "loop iteration limit exceeded"); break; }
        json_object_set_new(loop, "index", json_integer((json_int_t)i + 1));
        json_object_set_new(loop, "index0", json_integer((json_int_t)i));
        json_object_set_new(loop, "revindex", json_integer((json_int_t)(len - i)));
        json_object_set_new(loop, "revindex0", json_integer((json_int_t)(len - i - 1)));
        json_object_set(loop, "first", json_boolean(i == 0));
        json_object_set(loop, "last", json_boolean(i + 1 == len));
        if (i > 0) json_object_set(loop, "previtem", json_array_get(seq, i - 1));
        if (i + 1 < len) json_object_set(loop, "nextitem", json_array_get(seq, i + 1));
        else json_object_del(loop, "nextitem");
        json_object_clear(st->sc[st->nsc - 1]); /* fresh variables for each item */
        assign(st, "loop", loop);
        if (!bind_targets(st, n, json_array_get(seq, i))) render(st, n->k[1]);
        if (st->err) break;
        if (st->brk == 1) { st->brk = 0; break; }
        st->brk = 0;
    }
    if (len) {
        pop_scope(st);
        json_decref(loop);
    }
    json_decref(seq);
    if (st->err) return -1;
    if (!len && n->k[2]) {
        if (push_scope(st)) return -1;
        render(st, n->k[2]);
        pop_scope(st);
    }
    return st->err ? -1 : 0;
}

static int check_out(rs *st, int line) {
    if (st->out.over) return rs_err(st, line, "output too large");
    return 0;
}

static int render(rs *st, const tnode *n) {
    if (st->err) return -1;
    switch (n->kind) {
    case S_BLOCK:
        for (int i = 0; i < n->nk; i++) {
            if (render(st, n->k[i])) return -1;
            if (st->brk) break;
        }
        return 0;
    case S_TEXT:
        tb_put(&st->out, n->name, n->nlen);
        return check_out(st, n->line);
    case S_OUT: {
        json_t *v = ev(st, n->k[0]);
        if (st->err) return -1;
        if (rs_special(st, v) == SP_NS) tb_puts(&st->out, "<Namespace>");
        else if (rs_special(st, v) == SP_MACRO) tb_puts(&st->out, "<Macro>");
        else if (rs_special(st, v) == SP_FUNC) tb_puts(&st->out, "<function>");
        else RS_STR(&st->out, v, st);
        json_decref(v);
        return check_out(st, n->line);
    }
    case S_IF: {
        json_t *c = ev(st, n->k[0]);
        if (st->err) return -1;
        int t = rs_truthy(st, c);
        json_decref(c);
        if (t) return render(st, n->k[1]);
        return n->k[2] ? render(st, n->k[2]) : 0;
    }
    case S_FOR: return render_for(st, n);
    case S_SET: {
        json_t *v = ev(st, n->k[0]);
        if (st->err) return -1;
        int rc = 0;
        if (n->attr) {
            int found;
            json_t *ns = lookup(st, n->name, &found);
            if (rs_special(st, ns) != SP_NS) rc = rs_err(st, n->line, "cannot assign attribute on non-namespace object");
            else json_object_set(ns, n->attr, v ? v : json_null());
            json_decref(ns);
        } else rc = bind_targets(st, n, v);
        json_decref(v);
        return rc;
    }
    case S_SETBLOCK: {
        tbuf save = st->out;
        memset(&st->out, 0, sizeof st->out);
        st->out.limit = save.limit;
        render(st, n->k[0]);
        if (!st->err && st->out.over) rs_err(st, n->line, "output too large");
        json_t *v = st->err ? NULL : tv_strn(st->out.p ? st->out.p : "", st->out.n);
        tb_free(&st->out);
        st->out = save;
        if (st->err) return -1;
        assign(st, n->tg[0], v);
        json_decref(v);
        return 0;
    }
    case S_FILTER: {
        tbuf save = st->out;
        memset(&st->out, 0, sizeof st->out);
        st->out.limit = save.limit;
        render(st, n->k[1]);
        json_t *v = st->err ? NULL : tv_strn(st->out.p ? st->out.p : "", st->out.n);
        tb_free(&st->out);
        st->out = save;
        if (st->err) return -1;
        json_t *r = ev_filter(st, n->k[0], v, 1);
        json_decref(v);
        if (!st->err) RS_STR(&st->out, r, st);
        json_decref(r);
        return st->err ? -1 : check_out(st, n->line);
    }
    case S_MACRO: {
        json_t *o = json_object();
        if (!o || add_special(st, o, SP_MACRO, n)) { json_decref(o); return -1; }
        assign(st, n->name, o);
        json_decref(o);
        return 0;
    }
    case S_BREAK: st->brk = 1; return 0;
    case S_CONTINUE: st->brk = 2; return 0;
    }
    return rs_err(st, n->line, "bad statement node");
}

/* The registry holds a reference to every namespace/macro object so their
 * addresses stay unique for the whole render. Only namespaces are mutable,
 * so clearing them breaks any reference cycle before the final release. */
static void free_specials(rs *st) {
    for (int i = 0; i < st->nsp; i++)
        if (st->sp[i].kind == SP_NS) json_object_clear(st->sp[i].obj);
    for (int i = 0; i < st->nsp; i++) json_decref(st->sp[i].obj);
    free(st->sp);
    json_decref(st->spmap);
}

char *tmpl_render(const tmpl *t, json_t *ctx) {
    rs st;
    memset(&st, 0, sizeof st);
    st.out.limit = TMPL_MAX_OUT;
    st.undef = json_object();
    if (!t || (ctx && !json_is_object(ctx))) { dl_err("template: context must be a JSON object"); json_decref(st.undef); return NULL; }
    if (push_scope(&st) || push_scope(&st)) goto fail;
    if (ctx) json_object_update(st.sc[0], ctx);
    render(&st, t->root);
    if (st.err) goto fail;
    while (st.nsc) pop_scope(&st);
    free(st.sc);
    free_specials(&st);
    json_decref(st.undef);
    char *r = tb_take(&st.out);
    if (!r) dl_err("template: output too large");
    return r;
fail:
    while (st.nsc) pop_scope(&st);
    free(st.sc);
    free_specials(&st);
    json_decref(st.undef);
    tb_free(&st.out);
    return NULL;
}
