/* Test helper shared by the server tests: what a stream of parser deltas
 * (srv_parse_out) adds up to. args holds "|" before each call's arguments,
 * then its fragments joined; bad_index counts deltas whose index is not the
 * call they belong to. */
#pragma once
#include "server/srv_buf.h"
#include "server/srv_toolparse.h"

typedef struct {
    srv_buf content, reasoning, names, args;
    int ncalls, bad_index, broken;
} acc;

/* Add one parser output to a and reset it. */
static inline void take(acc *a, srv_parse_out *o) {
    sb_add(&a->content, o->content.p ? o->content.p : "", o->content.n);
    sb_add(&a->reasoning, o->reasoning.p ? o->reasoning.p : "", o->reasoning.n);
    for (int i = 0; i < o->n_tools; i++) {
        const srv_tool_delta *t = &o->tools[i];
        if (t->name) {
            if (t->index != a->ncalls) a->bad_index++;
            sb_printf(&a->names, "%s;", t->name);
            sb_adds(&a->args, "|");
            a->ncalls++;
        } else if (t->index != a->ncalls - 1) a->bad_index++;
        sb_add(&a->args, t->args.p ? t->args.p : "", t->args.n);
    }
    a->broken += o->n_broken;
    srv_parse_out_reset(o);
}

static inline void acc_free(acc *a) {
    sb_free(&a->content);
    sb_free(&a->reasoning);
    sb_free(&a->names);
    sb_free(&a->args);
}
