/* Internal interfaces of the template interpreter (src/tmpl only). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "tmpl/tmpl.h"

/* ---- growable output string with a hard size limit ---- */
typedef struct {
    char *p;
    size_t n, cap, limit; /* limit 0 = unlimited */
    int over;             /* set once an append would exceed limit */
} tbuf;
void tb_put(tbuf *b, const char *s, size_t n);
void tb_puts(tbuf *b, const char *s);
void tb_putc(tbuf *b, char c);
char *tb_take(tbuf *b); /* NUL-terminated malloc'd, resets b */
void tb_free(tbuf *b);

/* ---- tokens ---- */
enum { TK_EOF, TK_TEXT, TK_VBEGIN, TK_VEND, TK_BBEGIN, TK_BEND, TK_NAME, TK_STR, TK_INT, TK_FLOAT, TK_OP };
typedef struct {
    int type, line, col;
    char *s;     /* text/name/string/op bytes (malloc'd, NUL-terminated) */
    size_t n;    /* byte length of s */
    long long i; /* TK_INT */
    double d;    /* TK_FLOAT */
} ttok;
/* Lex template source into tokens (ends with TK_EOF). 0 or -1 + dl_err. */
int tl_lex(const char *src, size_t len, ttok **out, int *nout);
void tl_free(ttok *t, int n);

/* ---- AST ---- */
enum {
    /* expressions */
    E_LIT, E_NAME, E_LIST, E_DICT, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST,
    E_NOT, E_NEG, E_POS, E_BIN, E_CMP, E_AND, E_OR, E_COND, E_CONCAT, E_TUPLE,
    /* statements */
    S_BLOCK, S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_BREAK, S_CONTINUE, S_FILTER, S_CALLBLK
};
/* binary/compare operator codes */
enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FDIV, OP_MOD, OP_POW, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN };

typedef struct tnode tnode;
struct tnode {
    int kind, op, line, neg;
    char *name;      /* E_NAME/E_ATTR/E_FILTER/E_TEST name, S_TEXT bytes, S_SET target, S_MACRO name */
    size_t nlen;     /* byte length of name (S_TEXT) */
    char *attr;      /* S_SET namespace attribute (ns.attr) */
    json_t *lit;     /* E_LIT value */
    tnode **k;       /* children, meaning per kind (see tmpl_parse.c) */
    int nk, capk;
    char **argn;     /* keyword names parallel to k (NULL = positional), macro param names */
    char **tg;       /* S_FOR / S_SET unpack targets */
    int ntg;
    int *ops;        /* E_CMP operator per comparison */
};
struct tmpl {
    tnode *root;
};
void tn_free(tnode *n);

/* ---- values (tmpl_val.c); NULL json_t* means jinja2 Undefined ---- */
/* Python type name of a value as jinja2 error messages print it ("str", "dict", "Undefined"...). */
const char *tv_type_name(json_t *v);
int tv_is_int(json_t *v);   /* integer or boolean (Python bool is an int) */
int tv_is_num(json_t *v);
double tv_num(json_t *v);
/* Python str()/repr(); is_tuple(ctx, v) says which arrays print as tuples
 * (may be NULL: none do). */
typedef int (*tv_tuplefn)(void *ctx, json_t *v);
void tv_str(tbuf *b, json_t *v, tv_tuplefn is_tuple, void *ctx);
void tv_repr(tbuf *b, json_t *v, tv_tuplefn is_tuple, void *ctx);
void tv_float(char out[40], double d); /* Python float repr */
/* json.dumps(ensure_ascii=False, indent=indent<0?None:indent, sort_keys) */
void tv_json(tbuf *b, json_t *v, int indent, int sort_keys, int level);
int tv_eq(json_t *a, json_t *b);
/* Python ordering: *res = -1/0/1; -1 if unorderable */
int tv_cmp(json_t *a, json_t *b, int *res);
/* UTF-8 helpers */
size_t tu_cplen(const char *s, size_t n);                /* code points */
int tu_decode(const char *s, size_t n, size_t *i);       /* next cp, advances *i */
void tu_encode(tbuf *b, int cp);
int tu_isspace(int cp);                                  /* Python str.isspace */
json_t *tv_strn(const char *s, size_t n);

/* ---- render state (tmpl_eval.c); filters/tests/methods in tmpl_filters.c ---- */
enum { SP_NS = 1, SP_MACRO = 2, SP_TUPLE = 3, SP_FUNC = 4 };
typedef struct {
    json_t *obj;        /* identity of the special object */
    int kind;           /* SP_NS or SP_MACRO */
    const tnode *node;  /* S_MACRO node */
    const char *fname;  /* SP_FUNC: global function name (static string) */
} tspecial;
typedef struct {
    tbuf out;
    json_t **sc;       /* scope stack: sc[0] = context, sc[1] = template level */
    int nsc, capsc, floor; /* lookups search sc[nsc-1..floor] then sc[1], sc[0] */
    tspecial *sp;      /* registry of namespaces, macros, tuples (holds refs) */
    int nsp, capsp;
    json_t *spmap;     /* "%p" of a registered object -> index into sp */
    json_t *gfn[8];    /* values of the global functions ([0..4]) and of a dict method ([7]), made on first use */
    json_t *undef;     /* marker stored in scopes for an assigned Undefined */
    long steps;        /* loop iterations so far */
    int depth;         /* macro call depth */
    int err;           /* an error message is set */
    int brk;           /* 1 = break, 2 = continue pending */
} rs;

#define TMPL_MAX_STEPS 1000000L
#define TMPL_MAX_DEPTH 64
#define TMPL_MAX_OUT ((size_t)64 << 20)

int rs_err(rs *st, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int rs_truthy(rs *st, json_t *v);
int rs_special(rs *st, json_t *v); /* SP_* kind or 0 */
/* register v (a new array) as a tuple; returns v, or NULL + st->err */
json_t *rs_tuple(rs *st, json_t *v);
int rs_is_tuple(void *st, json_t *v); /* tv_tuplefn for rs */
#define RS_STR(b, v, st) tv_str((b), (v), rs_is_tuple, (st))
/* Filters/tests/methods: args are borrowed; argn[i] is keyword or NULL.
 * Return a new reference; NULL with st->err for errors, NULL without it
 * for Undefined. tf_test returns 0/1, or -1 with st->err. */
json_t *tf_filter(rs *st, int line, const char *name, json_t *v, json_t **args, char **argn, int na);
int tf_test(rs *st, int line, const char *name, json_t *v, json_t **args, int na);
json_t *tf_method(rs *st, int line, json_t *obj, const char *name, json_t **args, char **argn, int na);
json_t *tf_slice(rs *st, int line, json_t *v, json_t *start, json_t *stop, json_t *step);
/* sequence view: list items, string chars, dict keys; NULL + st->err if not iterable */
json_t *tf_iter(rs *st, int line, json_t *v);
