/* Template parser: tokens -> AST, following jinja2's grammar and operator
 * precedence (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% <
 * ** < unary < postfix/filters/tests).
 *
 * Child layout (tnode.k) per kind:
 *   E_LIST/E_TUPLE: items; E_DICT: key0,val0,key1,val1...; E_ATTR: obj (name=attr);
 *   E_ITEM: obj,index; E_SLICE: obj,start,stop,step (each may be NULL);
 *   E_CALL: callee,args... (argn[i] = keyword or NULL); E_FILTER/E_TEST: operand,args...;
 *   E_NOT/E_NEG/E_POS: operand; E_BIN/E_AND/E_OR/E_CONCAT: lhs,rhs;
 *   E_CMP: first,operand1..n with ops[i-1]; E_COND: then,cond,else(NULL = undefined);
 *   S_BLOCK: statements; S_OUT: expr; S_IF: cond,body,else(NULL);
 *   S_FOR: iter,body,else(NULL),filter(NULL), targets in tg;
 *   S_SET: value (name or tg targets; attr for ns.attr); S_SETBLOCK: body;
 *   S_MACRO: body,defaults... (argn = param names; default NULL = required);
 *   S_FILTER: filter chain (E_FILTER with NULL operand at the bottom), body. */
#include <stdlib.h>
#include <string.h>
#include "core/err.h"
#include "tmpl/tmpl_int.h"

#define MAX_DEPTH 200

typedef struct {
    ttok *t;
    int n, i, depth;
} parser;

static tnode *nn(int kind, int line) {
    tnode *n = calloc(1, sizeof *n);
    if (n) n->kind = kind, n->line = line;
    return n;
}
static int addk(tnode *n, tnode *c) {
    if (n->nk == n->capk) {
        int nc = n->capk ? n->capk * 2 : 4;
        tnode **k = realloc(n->k, (size_t)nc * sizeof *k);
        if (!k) return -1;
        n->k = k;
        char **a = realloc(n->argn, (size_t)nc * sizeof *a);
        if (!a) return -1;
        n->argn = a;
        n->capk = nc;
    }
    n->argn[n->nk] = NULL;
    n->k[n->nk++] = c;
    return 0;
}
void tn_free(tnode *n) {
    if (!n) return;
    for (int i = 0; i < n->nk; i++) {
        tn_free(n->k[i]);
        free(n->argn[i]);
    }
    for (int i = 0; i < n->ntg; i++) free(n->tg[i]);
    free(n->tg);
    free(n->k);
    free(n->argn);
    free(n->name);
    free(n->attr);
    free(n->ops);
    if (n->lit) json_decref(n->lit);
    free(n);
}

static ttok *cur(parser *P) { return &P->t[P->i]; }
static int perr(parser *P, const char *msg) {
    ttok *t = cur(P);
    return dl_err("template:%d:%d: %s (at '%s')", t->line, t->col, msg, t->type == TK_EOF ? "end of template" : t->s);
}
static int is_op(parser *P, const char *op) { return cur(P)->type == TK_OP && !strcmp(cur(P)->s, op); }
static int is_name(parser *P, const char *nm) { return cur(P)->type == TK_NAME && !strcmp(cur(P)->s, nm); }
static int skip_op(parser *P, const char *op) {
    if (!is_op(P, op)) return 0;
    P->i++;
    return 1;
}
static int expect_op(parser *P, const char *op) {
    if (skip_op(P, op)) return 0;
    char m[64];
    snprintf(m, sizeof m, "expected '%s'", op);
    return perr(P, m);
}
static char *take_name(parser *P) {
    if (cur(P)->type != TK_NAME) {
        perr(P, "expected a name");
        return NULL;
    }
    char *s = strdup(cur(P)->s);
    P->i++;
    if (!s) dl_err("template: out of memory");
    return s;
}

static tnode *p_expr(parser *P, int condexpr);
static tnode *p_unary(parser *P, int with_filter);
static tnode *p_or(parser *P);

#define FAIL(n) do { tn_free(n); return NULL; } while (0)
#define ADD(n, c) do { tnode *c_ = (c); if (!c_ || addk(n, c_)) { tn_free(c_); FAIL(n); } } while (0)

/* call arguments after '(' : positional and name=value */
static tnode *p_args(parser *P, tnode *n) {
    while (!is_op(P, ")")) {
        if (n->nk > 1 && expect_op(P, ",")) FAIL(n);
        if (is_op(P, ")")) break;
        char *kw = NULL;
        if (cur(P)->type == TK_NAME && P->t[P->i + 1].type == TK_OP && !strcmp(P->t[P->i + 1].s, "=")) {
            kw = strdup(cur(P)->s);
            P->i += 2;
        }
        tnode *a = p_expr(P, 1);
        if (!a || addk(n, a)) { free(kw); tn_free(a); FAIL(n); }
        n->argn[n->nk - 1] = kw;
    }
    P->i++;
    return n;
}

static tnode *p_primary(parser *P) {
    ttok *t = cur(P);
    int line = t->line;
    tnode *n;
    if (t->type == TK_NAME) {
        const char *s = t->s;
        json_t *c = NULL;
        int isc = 1;
        if (!strcmp(s, "true") || !strcmp(s, "True")) c = json_true();
        else if (!strcmp(s, "false") || !strcmp(s, "False")) c = json_false();
        else if (!strcmp(s, "none") || !strcmp(s, "None")) c = json_null();
        else isc = 0;
        P->i++;
        if (isc) {
            n = nn(E_LIT, line);
            if (!n) return NULL;
            n->lit = c;
            return n;
        }
        n = nn(E_NAME, line);
        if (!n || !(n->name = strdup(s))) FAIL(n);
        return n;
    }
    if (t->type == TK_STR) {
        tbuf b = {0};
        while (cur(P)->type == TK_STR) {
            tb_put(&b, cur(P)->s, cur(P)->n);
            P->i++;
        }
        n = nn(E_LIT, line);
        if (!n) { tb_free(&b); return NULL; }
        n->lit = tv_strn(b.p ? b.p : "", b.n);
        tb_free(&b);
        return n;
    }
    if (t->type == TK_INT || t->type == TK_FLOAT) {
        n = nn(E_LIT, line);
        if (!n) return NULL;
        n->lit = t->type == TK_INT ? json_integer(t->i) : json_real(t->d);
        P->i++;
        return n;
    }
    if (is_op(P, "(")) {
        P->i++;
        if (skip_op(P, ")")) return nn(E_TUPLE, line);
        tnode *e = p_expr(P, 1);
        if (!e) return NULL;
        if (is_op(P, ",")) {
            n = nn(E_TUPLE, line);
            if (!n || addk(n, e)) { tn_free(e); FAIL(n); }
            while (skip_op(P, ",")) {
                if (is_op(P, ")")) break;
                ADD(n, p_expr(P, 1));
            }
            e = n;
        }
        if (expect_op(P, ")")) FAIL(e);
        return e;
    }
    if (is_op(P, "[")) {
        P->i++;
        n = nn(E_LIST, line);
        if (!n) return NULL;
        while (!is_op(P, "]")) {
            if (n->nk && expect_op(P, ",")) FAIL(n);
            if (is_op(P, "]")) break;
            ADD(n, p_expr(P, 1));
        }
        P->i++;
        return n;
    }
    if (is_op(P, "{")) {
        P->i++;
        n = nn(E_DICT, line);
        if (!n) return NULL;
        while (!is_op(P, "}")) {
            if (n->nk && expect_op(P, ",")) FAIL(n);
            if (is_op(P, "}")) break;
            ADD(n, p_expr(P, 1));
            if (expect_op(P, ":")) FAIL(n);
            ADD(n, p_expr(P, 1));
        }
        P->i++;
        return n;
    }
    perr(P, "unexpected token");
    return NULL;
}

static tnode *p_postfix(parser *P, tnode *n) {
    for (;;) {
        int line = cur(P)->line;
        if (is_op(P, ".")) {
            P->i++;
            tnode *a = nn(E_ATTR, line);
            if (!a || addk(a, n)) { tn_free(a); FAIL(n); }
            n = a;
            if (cur(P)->type == TK_INT) { /* foo.0 == foo[0] */
                tnode *ix = nn(E_LIT, line);
                if (!ix) FAIL(n);
                ix->lit = json_integer(cur(P)->i);
                n->kind = E_ITEM;
                P->i++;
                ADD(n, ix);
                continue;
            }
            if (!(n->name = take_name(P))) FAIL(n);
        } else if (is_op(P, "[")) {
            P->i++;
            tnode *a = nn(E_ITEM, line);
            if (!a || addk(a, n)) { tn_free(a); FAIL(n); }
            n = a;
            tnode *parts[3] = {NULL, NULL, NULL};
            int np = 0;
            for (;;) {
                if (!is_op(P, ":") && !is_op(P, "]")) {
                    if (!(parts[np] = p_expr(P, 1))) { for (int k = 0; k < 3; k++) tn_free(parts[k]); FAIL(n); }
                }
                if (is_op(P, ":") && np < 2) { P->i++; np++; continue; }
                break;
            }
            if (np > 0) n->kind = E_SLICE;
            for (int k = 0; k < (np ? 3 : 1); k++)
                if (addk(n, parts[k])) { for (int j = k; j < 3; j++) tn_free(parts[j]); FAIL(n); }
            if (!np && !n->k[1]) { perr(P, "expected subscript"); FAIL(n); }
            if (expect_op(P, "]")) FAIL(n);
        } else if (is_op(P, "(")) {
            P->i++;
            tnode *c = nn(E_CALL, line);
            if (!c || addk(c, n)) { tn_free(c); FAIL(n); }
            n = p_args(P, c);
            if (!n) return NULL;
        } else return n;
    }
}

static tnode *p_filter_or_test(parser *P, tnode *n) {
    for (;;) {
        int line = cur(P)->line;
        if (is_op(P, "|")) {
            P->i++;
            tnode *f = nn(E_FILTER, line);
            if (!f || addk(f, n)) { tn_free(f); FAIL(n); }
            n = f;
            if (!(n->name = take_name(P))) FAIL(n);
            while (is_op(P, ".")) { /* dotted filter names */
                P->i++;
                char *x = take_name(P);
                if (!x) FAIL(n);
                char *y = malloc(strlen(n->name) + strlen(x) + 2);
                if (!y) { free(x); FAIL(n); }
                sprintf(y, "%s.%s", n->name, x);
                free(x);
                free(n->name);
                n->name = y;
            }
            if (skip_op(P, "(") && !p_args(P, n)) return NULL;
        } else if (is_name(P, "is")) {
            P->i++;
            tnode *f = nn(E_TEST, line);
            if (!f || addk(f, n)) { tn_free(f); FAIL(n); }
            n = f;
            if (is_name(P, "not")) { P->i++; n->neg = 1; }
            if (!(n->name = take_name(P))) FAIL(n);
            if (skip_op(P, "(")) {
                if (!p_args(P, n)) return NULL;
            } else {
                ttok *t = cur(P);
                int ok = (t->type == TK_NAME || t->type == TK_STR || t->type == TK_INT || t->type == TK_FLOAT ||
                          (t->type == TK_OP && (!strcmp(t->s, "[") || !strcmp(t->s, "{")))) &&
                         !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and");
                if (ok) {
                    if (is_name(P, "is")) { perr(P, "unexpected 'is'"); FAIL(n); }
                    tnode *a = p_primary(P);
                    if (a) a = p_postfix(P, a);
                    ADD(n, a);
                }
            }
        } else if (is_op(P, "(")) {
            P->i++;
            tnode *c = nn(E_CALL, line);
            if (!c || addk(c, n)) { tn_free(c); FAIL(n); }
            n = p_args(P, c);
            if (!n) return NULL;
        } else return n;
    }
}

static tnode *p_unary(parser *P, int with_filter) {
    int line = cur(P)->line;
    tnode *n;
    if (++P->depth > MAX_DEPTH) { perr(P, "expression nested too deeply"); return NULL; }
    if (is_op(P, "-") || is_op(P, "+")) {
        int neg = is_op(P, "-");
        P->i++;
        n = nn(neg ? E_NEG : E_POS, line);
        if (!n) return NULL;
        ADD(n, p_unary(P, 0));
    } else n = p_primary(P);
    P->depth--;
    if (!n) return NULL;
    n = p_postfix(P, n);
    if (n && with_filter) n = p_filter_or_test(P, n);
    return n;
}

static tnode *bin(int kind, int op, tnode *l, tnode *r, int line) {
    tnode *n = nn(kind, line);
    if (!n || !r) { tn_free(l); tn_free(r); tn_free(n); return NULL; }
    n->op = op;
    addk(n, l);
    if (addk(n, r)) { tn_free(n); tn_free(r); return NULL; }
    return n;
}

static tnode *p_pow(parser *P) {
    tnode *n = p_unary(P, 1);
    while (n && is_op(P, "**")) { int l = cur(P)->line; P->i++; n = bin(E_BIN, OP_POW, n, p_unary(P, 1), l); }
    return n;
}
static tnode *p_math2(parser *P) {
    tnode *n = p_pow(P);
    for (;;) {
        if (!n) return NULL;
        int op = is_op(P, "*") ? OP_MUL : is_op(P, "/") ? OP_DIV : is_op(P, "//") ? OP_FDIV : is_op(P, "%") ? OP_MOD : -1;
        if (op < 0) return n;
        int l = cur(P)->line;
        P->i++;
        n = bin(E_BIN, op, n, p_pow(P), l);
    }
}
static tnode *p_concat(parser *P) {
    tnode *n = p_math2(P);
    while (n && is_op(P, "~")) { int l = cur(P)->line; P->i++; n = bin(E_CONCAT, 0, n, p_math2(P), l); }
    return n;
}
static tnode *p_math1(parser *P) {
    tnode *n = p_concat(P);
    for (;;) {
        if (!n) return NULL;
        int op = is_op(P, "+") ? OP_ADD : is_op(P, "-") ? OP_SUB : -1;
        if (op < 0) return n;
        int l = cur(P)->line;
        P->i++;
        n = bin(E_BIN, op, n, p_concat(P), l);
    }
}
static tnode *p_compare(parser *P) {
    tnode *n = p_math1(P);
    if (!n) return NULL;
    tnode *c = NULL;
    for (;;) {
        int op = -1;
        if (is_op(P, "==")) op = OP_EQ;
        else if (is_op(P, "!=")) op = OP_NE;
        else if (is_op(P, "<")) op = OP_LT;
        else if (is_op(P, "<=")) op = OP_LE;
        else if (is_op(P, ">")) op = OP_GT;
        else if (is_op(P, ">=")) op = OP_GE;
        else if (is_name(P, "in")) op = OP_IN;
        else if (is_name(P, "not") && P->t[P->i + 1].type == TK_NAME && !strcmp(P->t[P->i + 1].s, "in")) op = OP_NOTIN, P->i++;
        if (op < 0) return c ? c : n;
        if (!c) {
            c = nn(E_CMP, n->line);
            if (!c || addk(c, n)) { tn_free(c); FAIL(n); }
        }
        P->i++;
        ADD(c, p_math1(P));
        int *o = realloc(c->ops, (size_t)c->nk * sizeof *o);
        if (!o) FAIL(c);
        c->ops = o;
        c->ops[c->nk - 2] = op;
    }
}
static tnode *p_not(parser *P) {
    if (is_name(P, "not")) {
        int l = cur(P)->line;
        P->i++;
        if (++P->depth > MAX_DEPTH) { perr(P, "expression nested too deeply"); return NULL; }
        tnode *n = nn(E_NOT, l);
        if (!n) return NULL;
        ADD(n, p_not(P));
        P->depth--;
        return n;
    }
    return p_compare(P);
}
static tnode *p_and(parser *P) {
    tnode *n = p_not(P);
    while (n && is_name(P, "and")) { int l = cur(P)->line; P->i++; n = bin(E_AND, 0, n, p_not(P), l); }
    return n;
}
static tnode *p_or(parser *P) {
    tnode *n = p_and(P);
    while (n && is_name(P, "or")) { int l = cur(P)->line; P->i++; n = bin(E_OR, 0, n, p_and(P), l); }
    return n;
}
static tnode *p_expr(parser *P, int condexpr) {
    if (++P->depth > MAX_DEPTH) { perr(P, "expression nested too deeply"); return NULL; }
    tnode *n = p_or(P);
    while (n && condexpr && is_name(P, "if")) {
        int l = cur(P)->line;
        P->i++;
        tnode *c = nn(E_COND, l);
        if (!c || addk(c, n)) { tn_free(c); FAIL(n); }
        n = c;
        ADD(n, p_or(P));
        if (is_name(P, "else")) {
            P->i++;
            ADD(n, p_expr(P, 1));
        } else if (addk(n, NULL)) FAIL(n);
    }
    P->depth--;
    return n;
}

/* ---------------- statements ---------------- */

static tnode *p_body(parser *P, const char *const *ends);

static int end_tag(parser *P) {
    if (cur(P)->type != TK_BEND) return perr(P, "expected end of tag '%}'");
    P->i++;
    return 0;
}

static int p_targets(parser *P, tnode *n) {
    int paren = skip_op(P, "(");
    do {
        if (paren && is_op(P, ")")) break;
        char *s = take_name(P);
        if (!s) return -1;
        char **tg = realloc(n->tg, (size_t)(n->ntg + 1) * sizeof *tg);
        if (!tg) { free(s); return dl_err("template: out of memory"); }
        n->tg = tg;
        n->tg[n->ntg++] = s;
    } while (skip_op(P, ","));
    if (paren && expect_op(P, ")")) return -1;
    return 0;
}

static const char *const END_IF[] = {"elif", "else", "endif", NULL};
static const char *const END_FOR[] = {"else", "endfor", NULL};
static const char *const END_FOR2[] = {"endfor", NULL};
static const char *const END_SET[] = {"endset", NULL};
static const char *const END_MACRO[] = {"endmacro", NULL};
static const char *const END_GEN[] = {"endgeneration", NULL};
static const char *const END_FILTER[] = {"endfilter", NULL};

static tnode *p_if(parser *P, int line) {
    tnode *n = nn(S_IF, line);
    if (!n) return NULL;
    ADD(n, p_expr(P, 1));
    if (end_tag(P)) FAIL(n);
    ADD(n, p_body(P, END_IF));
    const char *w = cur(P)->s; /* the end keyword reached */
    if (!strcmp(w, "elif")) {
        P->i++;
        ADD(n, p_if(P, cur(P)->line));
        return n;
    }
    P->i++;
    if (!strcmp(w, "else")) {
        if (end_tag(P)) FAIL(n);
        ADD(n, p_body(P, (const char *const[]){"endif", NULL}));
        P->i++;
    } else if (addk(n, NULL)) FAIL(n);
    if (end_tag(P)) FAIL(n);
    return n;
}

static tnode *p_stmt(parser *P) {
    ttok *t = cur(P);
    int line = t->line;
    if (t->type != TK_NAME) { perr(P, "expected a tag name"); return NULL; }
    char kw[32];
    snprintf(kw, sizeof kw, "%s", t->s);
    P->i++;
    tnode *n = NULL;
    if (!strcmp(kw, "if")) return p_if(P, line);
    if (!strcmp(kw, "for")) {
        n = nn(S_FOR, line);
        if (!n || p_targets(P, n)) FAIL(n);
        if (!is_name(P, "in")) { perr(P, "expected 'in'"); FAIL(n); }
        P->i++;
        ADD(n, p_expr(P, 0));
        tnode *filt = NULL;
        if (is_name(P, "if")) {
            P->i++;
            if (!(filt = p_expr(P, 1))) FAIL(n);
        }
        if (is_name(P, "recursive")) { tn_free(filt); perr(P, "recursive loops are not supported"); FAIL(n); }
        if (end_tag(P)) { tn_free(filt); FAIL(n); }
        tnode *body = p_body(P, END_FOR);
        if (!body || addk(n, body)) { tn_free(body); tn_free(filt); FAIL(n); }
        tnode *els = NULL;
        if (!strcmp(cur(P)->s, "else")) {
            P->i++;
            if (end_tag(P) || !(els = p_body(P, END_FOR2))) { tn_free(filt); FAIL(n); }
        }
        P->i++;
        if (addk(n, els)) { tn_free(els); tn_free(filt); FAIL(n); }
        if (addk(n, filt)) { tn_free(filt); FAIL(n); }
        if (end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "set")) {
        n = nn(S_SET, line);
        if (!n) return NULL;
        if (cur(P)->type == TK_NAME && P->t[P->i + 1].type == TK_OP && !strcmp(P->t[P->i + 1].s, ".")) {
            n->name = take_name(P);
            P->i++;
            if (!n->name || !(n->attr = take_name(P))) FAIL(n);
        } else if (p_targets(P, n)) FAIL(n);
        if (cur(P)->type == TK_BEND && n->ntg == 1 && !n->attr) {
            n->kind = S_SETBLOCK;
            P->i++;
            ADD(n, p_body(P, END_SET));
            P->i++;
            if (end_tag(P)) FAIL(n);
            return n;
        }
        if (expect_op(P, "=")) FAIL(n);
        tnode *v = p_expr(P, 1);
        if (v && is_op(P, ",")) { /* tuple value */
            tnode *tu = nn(E_TUPLE, line);
            if (!tu || addk(tu, v)) { tn_free(tu); tn_free(v); FAIL(n); }
            v = tu;
            while (v && skip_op(P, ",")) {
                tnode *e = p_expr(P, 1);
                if (!e || addk(v, e)) { tn_free(e); tn_free(v); v = NULL; }
            }
        }
        ADD(n, v);
        if (end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "macro")) {
        n = nn(S_MACRO, line);
        if (!n || !(n->name = take_name(P))) FAIL(n);
        if (expect_op(P, "(")) FAIL(n);
        if (addk(n, NULL)) FAIL(n); /* body placeholder */
        while (!is_op(P, ")")) {
            if (n->nk > 1 && expect_op(P, ",")) FAIL(n);
            char *pn = take_name(P);
            if (!pn) FAIL(n);
            tnode *d = NULL;
            if (skip_op(P, "=") && !(d = p_expr(P, 1))) { free(pn); FAIL(n); }
            if (addk(n, d)) { free(pn); tn_free(d); FAIL(n); }
            n->argn[n->nk - 1] = pn;
        }
        P->i++;
        if (end_tag(P)) FAIL(n);
        if (!(n->k[0] = p_body(P, END_MACRO))) FAIL(n);
        P->i++;
        if (end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        n = nn(kw[0] == 'b' ? S_BREAK : S_CONTINUE, line);
        if (!n || end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "generation")) {
        if (end_tag(P)) return NULL;
        n = p_body(P, END_GEN);
        if (!n) return NULL;
        P->i++;
        if (end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "filter")) {
        n = nn(S_FILTER, line);
        if (!n) return NULL;
        /* parse "name(args) | name2" as a filter chain over a NULL operand */
        P->i--;
        cur(P)->s[0] = '|'; /* reuse the 'filter' token as a pipe */
        cur(P)->s[1] = 0;
        cur(P)->type = TK_OP;
        tnode *chain = p_filter_or_test(P, NULL);
        if (!chain || addk(n, chain)) { tn_free(chain); FAIL(n); }
        if (end_tag(P)) FAIL(n);
        ADD(n, p_body(P, END_FILTER));
        P->i++;
        if (end_tag(P)) FAIL(n);
        return n;
    }
    if (!strcmp(kw, "call")) {
        P->i--;
        perr(P, "'call' blocks are not supported");
        return NULL;
    }
    P->i--;
    perr(P, "unknown or unsupported tag");
    return NULL;
}

/* Parse statements until a block tag whose keyword is in ends (left as the
 * current token, after its '{%'), or EOF when ends is NULL. */
static tnode *p_body(parser *P, const char *const *ends) {
    tnode *b = nn(S_BLOCK, cur(P)->line);
    if (!b) return NULL;
    if (++P->depth > MAX_DEPTH) { perr(P, "blocks nested too deeply"); FAIL(b); }
    for (;;) {
        ttok *t = cur(P);
        if (t->type == TK_EOF) {
            if (ends) { perr(P, "unexpected end of template, missing end tag"); FAIL(b); }
            break;
        }
        if (t->type == TK_TEXT) {
            tnode *x = nn(S_TEXT, t->line);
            if (!x || !(x->name = malloc(t->n + 1))) { tn_free(x); FAIL(b); }
            memcpy(x->name, t->s, t->n + 1);
            x->nlen = t->n;
            P->i++;
            ADD(b, x);
        } else if (t->type == TK_VBEGIN) {
            P->i++;
            tnode *x = nn(S_OUT, t->line), *e = x ? p_expr(P, 1) : NULL;
            if (!e || addk(x, e)) { tn_free(e); tn_free(x); FAIL(b); }
            if (cur(P)->type != TK_VEND) { perr(P, "expected '}}'"); tn_free(x); FAIL(b); }
            P->i++;
            ADD(b, x);
        } else if (t->type == TK_BBEGIN) {
            P->i++;
            if (ends && cur(P)->type == TK_NAME) {
                int hit = 0;
                for (int i = 0; ends[i]; i++) hit |= !strcmp(cur(P)->s, ends[i]);
                if (hit) break;
            }
            ADD(b, p_stmt(P));
        } else {
            perr(P, "unexpected token");
            FAIL(b);
        }
    }
    P->depth--;
    return b;
}

tmpl *tmpl_parse(const char *src, size_t len) {
    ttok *t;
    int n;
    if (tl_lex(src, len, &t, &n)) return NULL;
    parser P = {t, n, 0, 0};
    tnode *root = p_body(&P, NULL);
    tl_free(t, n);
    if (!root) return NULL;
    tmpl *tp = malloc(sizeof *tp);
    if (!tp) { tn_free(root); dl_err("template: out of memory"); return NULL; }
    tp->root = root;
    return tp;
}

void tmpl_free(tmpl *t) {
    if (!t) return;
    tn_free(t->root);
    free(t);
}
