#include "server/srv_toolparse.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_stop.h"

static const char T_THINK[] = "<think>", T_ETHINK[] = "</think>", T_CALL[] = "<tool_call>",
                  T_ECALL[] = "</tool_call>";

void srv_parser_init(srv_parser *p, int reasoning, int tools, int in_reasoning) {
    memset(p, 0, sizeof *p);
    p->reasoning = reasoning;
    p->tools = tools;
    p->state = reasoning && in_reasoning ? 1 : 0;
}

void srv_parser_free(srv_parser *p) {
    sb_free(&p->pend);
    sb_free(&p->body);
}

void srv_parse_out_reset(srv_parse_out *o) {
    sb_reset(&o->content);
    sb_reset(&o->reasoning);
    for (int i = 0; i < o->n_calls; i++) {
        free(o->calls[i].name);
        free(o->calls[i].args);
    }
    o->n_calls = 0;
}

void srv_parse_out_free(srv_parse_out *o) {
    srv_parse_out_reset(o);
    sb_free(&o->content);
    sb_free(&o->reasoning);
    free(o->calls);
    memset(o, 0, sizeof *o);
}

int srv_parse_tool_json(const char *body, size_t len, char **name, char **args) {
    json_error_t e;
    json_t *j = json_loadb(body, len, 0, &e);
    if (!j) return -1;
    json_t *n = json_object_get(j, "name");
    json_t *a = json_object_get(j, "arguments");
    if (!a) a = json_object_get(j, "parameters");
    int rc = -1;
    if (json_is_object(j) && json_is_string(n) && json_string_length(n) > 0 &&
        (!a || json_is_object(a) || json_is_string(a))) {
        *name = strdup(json_string_value(n));
        if (!a) *args = strdup("{}");
        else if (json_is_string(a)) *args = strdup(json_string_value(a));
        else *args = json_dumps(a, JSON_COMPACT);
        if (*name && *args) rc = 0;
        else {
            free(*name);
            free(*args);
        }
    }
    json_decref(j);
    return rc;
}

static int add_call(srv_parse_out *o, char *name, char *args) {
    if (o->n_calls == o->cap_calls) {
        int cap = o->cap_calls ? o->cap_calls * 2 : 4;
        srv_tool_call *c = realloc(o->calls, (size_t)cap * sizeof *c);
        if (!c) return -1;
        o->calls = c;
        o->cap_calls = cap;
    }
    o->calls[o->n_calls++] = (srv_tool_call){name, args};
    return 0;
}

/* Emit text of the current state (content or reasoning). */
static int emit(srv_parser *p, srv_parse_out *o, const char *s, size_t n) {
    if (p->skip_ws && p->state == 0) {
        while (n && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')) s++, n--;
        if (n) p->skip_ws = 0;
    }
    if (!n) return 0;
    return sb_add(p->state == 1 ? &o->reasoning : &o->content, s, n);
}

static const char *find(const char *h, size_t n, const char *needle) {
    size_t L = strlen(needle);
    for (size_t i = 0; i + L <= n; i++)
        if (h[i] == needle[0] && !memcmp(h + i, needle, L)) return h + i;
    return NULL;
}

/* A closed tool-call block: a call if well-formed, else content. */
static int close_call(srv_parser *p, srv_parse_out *o) {
    char *name = NULL, *args = NULL;
    int rc = 0;
    p->state = 0;
    if (!srv_parse_tool_json(p->body.p ? p->body.p : "", p->body.n, &name, &args)) {
        if (add_call(o, name, args)) rc = -1, free(name), free(args);
        p->n_calls++;
        p->skip_ws = 1; /* whitespace between calls is not content */
    } else {
        p->skip_ws = 0;
        rc = sb_adds(&o->content, T_CALL) || sb_add(&o->content, p->body.p ? p->body.p : "", p->body.n) ||
             sb_adds(&o->content, T_ECALL);
    }
    sb_reset(&p->body);
    return rc ? -1 : 0;
}

int srv_parser_feed(srv_parser *p, const char *txt, size_t len, srv_parse_out *o) {
    if (sb_add(&p->pend, txt, len)) return -1;
    for (;;) {
        const char *s = p->pend.p;
        size_t n = p->pend.n;
        if (!n) return 0;
        if (p->state == 2) {
            const char *e = find(s, n, T_ECALL);
            if (!e) {
                size_t keep = srv_partial_suffix(s, n, (const char *const[]){T_ECALL}, 1);
                if (sb_add(&p->body, s, n - keep)) return -1;
                sb_consume(&p->pend, n - keep);
                return 0;
            }
            if (sb_add(&p->body, s, (size_t)(e - s))) return -1;
            sb_consume(&p->pend, (size_t)(e - s) + strlen(T_ECALL));
            if (close_call(p, o)) return -1;
            continue;
        }
        const char *tags[2];
        int k = 0;
        if (p->state == 1) tags[k++] = T_ETHINK;
        else {
            if (p->reasoning) tags[k++] = T_THINK;
            if (p->tools) tags[k++] = T_CALL;
        }
        const char *best = NULL, *tag = NULL;
        for (int i = 0; i < k; i++) {
            const char *f = find(s, n, tags[i]);
            if (f && (!best || f < best)) best = f, tag = tags[i];
        }
        if (!best) {
            size_t keep = k ? srv_partial_suffix(s, n, tags, k) : 0;
            if (emit(p, o, s, n - keep)) return -1;
            sb_consume(&p->pend, n - keep);
            return 0;
        }
        if (emit(p, o, s, (size_t)(best - s))) return -1;
        sb_consume(&p->pend, (size_t)(best - s) + strlen(tag));
        if (tag == T_THINK) p->state = 1;
        else if (tag == T_ETHINK) p->state = 0, p->skip_ws = 1;
        else p->state = 2;
    }
}

int srv_parser_finish(srv_parser *p, srv_parse_out *o) {
    int rc = 0;
    if (p->state == 2) {
        p->state = 0;
        p->skip_ws = 0;
        rc = sb_adds(&o->content, T_CALL) || sb_add(&o->content, p->body.p ? p->body.p : "", p->body.n) ||
             sb_add(&o->content, p->pend.p ? p->pend.p : "", p->pend.n);
    } else if (p->pend.n) {
        rc = emit(p, o, p->pend.p, p->pend.n);
    }
    sb_reset(&p->pend);
    sb_reset(&p->body);
    return rc ? -1 : 0;
}
