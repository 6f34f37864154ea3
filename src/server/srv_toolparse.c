#include "server/srv_toolparse.h"

#include <stdlib.h>
#include <string.h>

#include "server/srv_stop.h"

static const char T_THINK[] = "<think>", T_ETHINK[] = "</think>", T_CALL[] = "<tool_call>",
                  T_ECALL[] = "</tool_call>";

/* Parser states: plain content, inside <think>, inside a tool-call block
 * before its arguments stream (HEAD), streaming the arguments value (ARGS),
 * after the arguments value until </tool_call> (TAIL). */
enum { SP_CONTENT, SP_THINK, SP_HEAD, SP_ARGS, SP_TAIL };

static int is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

void srv_parser_init(srv_parser *p, int reasoning, int tools, int in_reasoning) {
    memset(p, 0, sizeof *p);
    p->reasoning = reasoning;
    p->tools = tools;
    p->state = reasoning && in_reasoning ? SP_THINK : SP_CONTENT;
}

void srv_parser_free(srv_parser *p) {
    sb_free(&p->pend);
    sb_free(&p->body);
    sb_free(&p->args);
}

void srv_parse_out_reset(srv_parse_out *o) {
    sb_reset(&o->content);
    sb_reset(&o->reasoning);
    for (int i = 0; i < o->n_tools; i++) {
        free(o->tools[i].name);
        sb_free(&o->tools[i].args);
    }
    o->n_tools = 0;
    o->n_broken = 0;
}

void srv_parse_out_free(srv_parse_out *o) {
    srv_parse_out_reset(o);
    sb_free(&o->content);
    sb_free(&o->reasoning);
    free(o->tools);
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

/* Append a tool delta: a new one when name is given (the call's first
 * delta, with empty arguments; name is taken over, freed on failure), else
 * the fragment joins the last delta when that is a fragment of the same
 * call. */
static int add_delta(srv_parse_out *o, int index, char *name, const char *frag, size_t n) {
    srv_tool_delta *last = o->n_tools ? &o->tools[o->n_tools - 1] : NULL;
    if (!name && last && last->index == index && !last->name) return n ? sb_add(&last->args, frag, n) : 0;
    if (!name && !n) return 0;
    if (o->n_tools == o->cap_tools) {
        int cap = o->cap_tools ? o->cap_tools * 2 : 4;
        srv_tool_delta *t = realloc(o->tools, (size_t)cap * sizeof *t);
        if (!t) return free(name), -1;
        o->tools = t;
        o->cap_tools = cap;
    }
    srv_tool_delta *d = &o->tools[o->n_tools++];
    memset(d, 0, sizeof *d);
    d->index = index;
    d->name = name;
    return n ? sb_add(&d->args, frag, n) : 0;
}

/* Emit text of the current state (content or reasoning). */
static int emit(srv_parser *p, srv_parse_out *o, const char *s, size_t n) {
    if (p->skip_ws && p->state == SP_CONTENT) {
        while (n && is_ws(*s)) s++, n--;
        if (n) p->skip_ws = 0;
    }
    if (!n) return 0;
    return sb_add(p->state == SP_THINK ? &o->reasoning : &o->content, s, n);
}

static const char *find(const char *h, size_t n, const char *needle) {
    size_t L = strlen(needle);
    for (size_t i = 0; i + L <= n; i++)
        if (h[i] == needle[0] && !memcmp(h + i, needle, L)) return h + i;
    return NULL;
}

static int name_ok(json_t *names, const char *name) {
    if (!names) return 1;
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), name)) return 1;
    return 0;
}

enum { HM_NO, HM_MORE, HM_YES };

/* Whitespace, then literal lit at b[*i]: HM_YES (*i past it), HM_MORE when
 * the text ends inside, HM_NO when it differs. */
static int lit_at(const char *b, size_t n, size_t *i, const char *lit) {
    while (*i < n && is_ws(b[*i])) (*i)++;
    size_t L = strlen(lit), m = n - *i < L ? n - *i : L;
    if (*i == n) return HM_MORE;
    if (memcmp(b + *i, lit, m)) return HM_NO;
    if (m < L) return HM_MORE;
    *i += L;
    return HM_YES;
}

/* Does the block body b[0..n) begin with `{"name": "NAME", "arguments": {`
 * (any JSON whitespace between the tokens; "parameters" may stand for
 * "arguments"; NAME a non-empty JSON string, one of names when given)?
 * HM_YES with *name (malloc'd, decoded) and *voff at the arguments' `{`;
 * HM_MORE when the text so far is a prefix of that form; else HM_NO. */
static int head_match(const char *b, size_t n, json_t *names, char **name, size_t *voff) {
    size_t i = 0;
    int r;
    if ((r = lit_at(b, n, &i, "{")) != HM_YES || (r = lit_at(b, n, &i, "\"name\"")) != HM_YES ||
        (r = lit_at(b, n, &i, ":")) != HM_YES || (r = lit_at(b, n, &i, "\"")) != HM_YES)
        return r;
    size_t j = i;
    while (j < n && b[j] != '"') {
        if ((unsigned char)b[j] < 0x20) return HM_NO;
        j += b[j] == '\\' ? 2 : 1;
    }
    if (j >= n) return HM_MORE;
    size_t q = i - 1; /* the opening quote */
    i = j + 1;
    if ((r = lit_at(b, n, &i, ",")) != HM_YES) return r;
    int r1 = lit_at(b, n, &(size_t){i}, "\"arguments\""), r2 = lit_at(b, n, &(size_t){i}, "\"parameters\"");
    if (r1 != HM_YES && r2 != HM_YES) return r1 == HM_MORE || r2 == HM_MORE ? HM_MORE : HM_NO;
    lit_at(b, n, &i, r1 == HM_YES ? "\"arguments\"" : "\"parameters\"");
    if ((r = lit_at(b, n, &i, ":")) != HM_YES || (r = lit_at(b, n, &i, "{")) != HM_YES) return r;
    json_t *s = json_loadb(b + q, j + 1 - q, JSON_DECODE_ANY, NULL);
    int ok = json_is_string(s) && json_string_length(s) > 0 && name_ok(names, json_string_value(s));
    *name = ok ? strdup(json_string_value(s)) : NULL;
    json_decref(s);
    if (!*name) return HM_NO;
    *voff = i - 1;
    return HM_YES;
}

/* The call's first delta: state ARGS with the arguments value not started. */
static int start_call(srv_parser *p, srv_parse_out *o, char *name) {
    p->state = SP_ARGS;
    p->vkind = p->depth = p->in_str = p->esc = p->closed_brace = 0;
    sb_reset(&p->args);
    return add_delta(o, p->n_calls++, name, NULL, 0);
}

/* Scan s[0..n) (no </tool_call> in it) as the arguments value: skips the
 * whitespace before it, forwards its characters as a fragment, and stops
 * after its last character (*done = 1; the rest is the TAIL's). Returns the
 * bytes consumed, or (size_t)-1 out of memory. */
static size_t scan_args(srv_parser *p, srv_parse_out *o, const char *s, size_t n, int *done) {
    size_t i = 0;
    *done = 0;
    if (!p->vkind) {
        while (i < n && is_ws(s[i])) i++;
        if (i == n) return n;
        p->vkind = s[i] == '{' || s[i] == '[' ? 1 : s[i] == '"' ? 2 : 3;
    }
    size_t start = i;
    for (; i < n && !*done; i++) {
        char c = s[i];
        if (p->vkind == 3) { /* number / literal / junk: ends before a delimiter */
            if (is_ws(c) || c == ',' || c == '}' || c == ']') {
                *done = 1;
                break;
            }
        } else if (p->in_str) {
            if (p->esc) p->esc = 0;
            else if (c == '\\') p->esc = 1;
            else if (c == '"') {
                p->in_str = 0;
                if (!p->depth) *done = 1; /* the value was a string */
            }
        } else if (c == '"') p->in_str = 1;
        else if (c == '{' || c == '[') p->depth++;
        else if ((c == '}' || c == ']') && p->depth > 0 && --p->depth == 0) *done = 1;
    }
    if (sb_add(&p->args, s + start, i - start) ||
        add_delta(o, p->n_calls - 1, NULL, s + start, i - start))
        return (size_t)-1;
    return i;
}

/* After the arguments: whitespace and one `}` belong to the call. Returns
 * the bytes consumed; *junk when it stopped at anything else. */
static size_t scan_tail(srv_parser *p, const char *s, size_t n, int *junk) {
    size_t i = 0;
    *junk = 0;
    for (; i < n; i++) {
        if (is_ws(s[i])) continue;
        if (s[i] == '}' && !p->closed_brace) {
            p->closed_brace = 1;
            continue;
        }
        *junk = 1;
        break;
    }
    return i;
}

/* Close the streaming call: arguments that never started become "{}";
 * arguments that are not a complete JSON object are kept as sent and
 * counted in n_broken. */
static int close_call(srv_parser *p, srv_parse_out *o) {
    int rc = 0;
    if (!p->vkind) {
        rc = add_delta(o, p->n_calls - 1, NULL, "{}", 2);
    } else {
        json_t *j = p->state == SP_TAIL ? json_loadb(p->args.p, p->args.n, JSON_DECODE_ANY, NULL) : NULL;
        if (!json_is_object(j)) o->n_broken++;
        json_decref(j);
    }
    p->state = SP_CONTENT;
    p->skip_ws = 1; /* whitespace between calls is not content */
    sb_reset(&p->args);
    return rc;
}

/* A block closed before its arguments streamed: a call if well-formed,
 * else content. */
static int close_whole(srv_parser *p, srv_parse_out *o) {
    char *name = NULL, *args = NULL;
    int rc = 0;
    p->state = SP_CONTENT;
    if (!srv_parse_tool_json(p->body.p ? p->body.p : "", p->body.n, &name, &args) && name_ok(p->names, name)) {
        int idx = p->n_calls++;
        rc = add_delta(o, idx, name, NULL, 0) || add_delta(o, idx, NULL, args, strlen(args));
        p->skip_ws = 1;
    } else {
        free(name);
        p->skip_ws = 0;
        rc = sb_adds(&o->content, T_CALL) || sb_add(&o->content, p->body.p ? p->body.p : "", p->body.n) ||
             sb_adds(&o->content, T_ECALL);
    }
    free(args);
    sb_reset(&p->body);
    p->head_no = 0;
    return rc ? -1 : 0;
}

int srv_parser_force(srv_parser *p, const char *name, srv_parse_out *o) {
    p->state = SP_HEAD;
    p->head_no = 0;
    sb_reset(&p->body);
    if (!name) return 0;
    char *nm = strdup(name);
    return nm ? start_call(p, o, nm) : -1;
}

/* One step inside a tool-call block over s[0..avail) of pend (the text
 * before </tool_call>, or before a partial tag at the end), tag: the tag
 * follows. 1 = progress (loop again), 0 = waiting for text, -1 = no memory. */
static int call_step(srv_parser *p, srv_parse_out *o, const char *s, size_t avail, int tag) {
    const size_t TL = sizeof T_ECALL - 1;
    if (p->state == SP_HEAD) {
        if (avail && sb_add(&p->body, s, avail)) return -1;
        sb_consume(&p->pend, avail);
        if (!p->head_no) {
            char *name = NULL;
            size_t voff = 0;
            int m = head_match(p->body.p, p->body.n, p->names, &name, &voff);
            if (m == HM_YES) {
                /* the arguments start in body: put them back in front of pend */
                srv_buf t = {0};
                if (start_call(p, o, name) || sb_add(&t, p->body.p + voff, p->body.n - voff) ||
                    sb_add(&t, p->pend.p ? p->pend.p : "", p->pend.n))
                    return sb_free(&t), -1;
                sb_free(&p->pend);
                p->pend = t;
                sb_reset(&p->body);
                return 1;
            }
            if (m == HM_NO) p->head_no = 1;
        }
        if (!tag) return 0;
        sb_consume(&p->pend, TL);
        return close_whole(p, o) ? -1 : 1;
    }
    if (p->state == SP_ARGS) {
        int done;
        size_t k = scan_args(p, o, s, avail, &done);
        if (k == (size_t)-1) return -1;
        sb_consume(&p->pend, k);
        if (done) {
            p->state = SP_TAIL;
            return 1;
        }
    } else { /* SP_TAIL */
        int junk;
        size_t k = scan_tail(p, s, avail, &junk);
        sb_consume(&p->pend, k);
        if (junk) { /* no </tool_call>: the call ends here, the rest is content */
            if (close_call(p, o)) return -1;
            p->skip_ws = 0;
            return 1;
        }
    }
    if (!tag) return 0;
    sb_consume(&p->pend, TL);
    return close_call(p, o) ? -1 : 1;
}

int srv_parser_feed(srv_parser *p, const char *txt, size_t len, srv_parse_out *o) {
    if (sb_add(&p->pend, txt, len)) return -1;
    for (;;) {
        const char *s = p->pend.p;
        size_t n = p->pend.n;
        if (!n) return 0;
        if (p->state >= SP_HEAD) {
            const char *e = find(s, n, T_ECALL);
            size_t avail = e ? (size_t)(e - s) : n - srv_partial_suffix(s, n, (const char *const[]){T_ECALL}, 1);
            int r = call_step(p, o, s, avail, e != NULL);
            if (r <= 0) return r;
            continue;
        }
        const char *tags[2];
        int k = 0;
        if (p->state == SP_THINK) tags[k++] = T_ETHINK;
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
        if (tag == T_THINK) p->state = SP_THINK;
        else if (tag == T_ETHINK) p->state = SP_CONTENT, p->skip_ws = 1;
        else p->state = SP_HEAD, p->head_no = 0;
    }
}

int srv_parser_finish(srv_parser *p, srv_parse_out *o) {
    int rc = 0;
    if (p->state == SP_HEAD) {
        /* never reached the streamed form nor closed: verbatim content */
        p->state = SP_CONTENT;
        p->skip_ws = 0;
        rc = sb_adds(&o->content, T_CALL) || sb_add(&o->content, p->body.p ? p->body.p : "", p->body.n) ||
             sb_add(&o->content, p->pend.p ? p->pend.p : "", p->pend.n);
    } else if (p->state == SP_ARGS) {
        /* cut off inside the arguments: what is held (a partial tag) is theirs too */
        int done;
        rc = scan_args(p, o, p->pend.p ? p->pend.p : "", p->pend.n, &done) == (size_t)-1;
        if (done) p->state = SP_TAIL;
        rc |= close_call(p, o);
    } else if (p->state == SP_TAIL) {
        rc = close_call(p, o); /* held text here is the start of </tool_call> */
    } else if (p->pend.n) {
        rc = emit(p, o, p->pend.p, p->pend.n);
    }
    sb_reset(&p->pend);
    sb_reset(&p->body);
    return rc ? -1 : 0;
}
