/* OpenAI response mapping: chat.completion / text_completion objects,
 * streamed chunks (SSE), logprobs in the chat and completions formats,
 * tool calls and reasoning_content from the parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "server/srv_int.h"

int oai_out_init(oai_out *o, oai_job *job) {
    memset(o, 0, sizeof *o);
    o->job = job;
    srv_parser_init(&o->parser, job->chat && job->reasoning, job->chat && job->tools, job->in_reasoning);
    o->parser.names = job->force == OAI_FORCE_REQUIRED ? job->tool_names : NULL;
    if (job->chat && job->force)
        return srv_parser_force(&o->parser, job->force == OAI_FORCE_NAMED ? job->force_name : NULL, &o->po);
    return 0;
}

void oai_out_free(oai_out *o) {
    srv_parser_free(&o->parser);
    srv_parse_out_free(&o->po);
}

static json_t *tok_str(srv_server *s, int32_t id) {
    size_t n = 0;
    char *t = s->tk ? tok_decode_len(s->tk, &id, 1, 0, &n) : NULL;
    json_t *j = t ? json_stringn(t, n) : NULL;
    free(t);
    return j ? j : json_string("");
}

static json_t *bytes_of(json_t *str) {
    json_t *a = json_array();
    const unsigned char *p = (const unsigned char *)json_string_value(str);
    for (size_t i = 0; i < json_string_length(str); i++) json_array_append_new(a, json_integer(p[i]));
    return a;
}

/* Chat format: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]} */
static json_t *chat_logprobs(srv_server *s, const srv_lp *lp, int n, int ntop) {
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *t = tok_str(s, lp[i].id);
        json_t *top = json_array();
        for (int k = 0; k < lp[i].ntop && k < ntop; k++) {
            json_t *tt = tok_str(s, lp[i].top_id[k]);
            json_array_append_new(top, json_pack("{s:O, s:f, s:o}", "token", tt, "logprob",
                                                 (double)lp[i].top_lp[k], "bytes", bytes_of(tt)));
            json_decref(tt);
        }
        json_array_append_new(arr, json_pack("{s:O, s:f, s:o, s:o}", "token", t, "logprob",
                                             (double)lp[i].lp, "bytes", bytes_of(t), "top_logprobs", top));
        json_decref(t);
    }
    return json_pack("{s:o}", "content", arr);
}

/* Completions format: tokens, token_logprobs, top_logprobs (dicts), text_offset. */
static json_t *cmpl_logprobs(srv_server *s, oai_out *o, const srv_lp *lp, int n, int ntop) {
    json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (int i = 0; i < n; i++) {
        json_t *t = tok_str(s, lp[i].id);
        json_array_append_new(offs, json_integer((json_int_t)o->text_pos));
        o->text_pos += json_string_length(t);
        json_array_append_new(toks, t);
        json_array_append_new(lps, json_real(lp[i].lp));
        json_t *d = json_object();
        for (int k = 0; k < lp[i].ntop && k < ntop; k++) {
            json_t *tt = tok_str(s, lp[i].top_id[k]);
            json_object_set_new(d, json_string_value(tt), json_real(lp[i].top_lp[k]));
            json_decref(tt);
        }
        json_array_append_new(tops, d);
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offs);
}

static json_t *usage(srv_req *r) {
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", r->n_prompt, "completion_tokens",
                     r->n_gen, "total_tokens", r->n_prompt + r->n_gen, "prompt_tokens_details",
                     "cached_tokens", r->n_cached);
}

static const char *finish_str(oai_out *o) {
    srv_req *r = o->job->r;
    if (r->finish == FIN_LENGTH) return "length";
    return o->n_calls ? "tool_calls" : "stop";
}

static json_t *envelope(srv_server *s, oai_out *o, const char *object) {
    return json_pack("{s:s, s:s, s:I, s:s}", "id", o->job->id, "object", object, "created",
                     (json_int_t)o->job->created, "model", s->o.served_name);
}

static int sse(srv_buf *out, json_t *j) {
    char *t = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!t) return -1;
    int rc = sb_adds(out, "data: ") || sb_adds(out, t) || sb_adds(out, "\n\n");
    free(t);
    return rc ? -1 : 0;
}

static void call_id(oai_out *o, char *buf, size_t n, int idx) {
    snprintf(buf, n, "call_%s_%d", o->job->id + (o->job->chat ? 9 : 5), idx);
}

/* Log calls whose arguments ended unfinished or as invalid JSON (they are
 * returned as generated: their first fragments may already be sent). */
static void warn_broken(oai_out *o, const srv_parse_out *po) {
    if (po->n_broken)
        LOGW("dotlm serve: %s: %d tool call(s) ended with arguments that are not a complete JSON object; "
             "returned as generated", o->job->id, po->n_broken);
}

static json_t *chat_chunk(srv_server *s, oai_out *o, json_t *delta, json_t *logprobs, const char *fin) {
    json_t *e = envelope(s, o, "chat.completion.chunk");
    json_t *ch = json_pack("{s:i, s:o, s:o, s:o}", "index", 0, "delta", delta, "logprobs",
                           logprobs ? logprobs : json_null(), "finish_reason",
                           fin ? json_string(fin) : json_null());
    json_object_set_new(e, "choices", json_pack("[o]", ch));
    return e;
}

int oai_stream_chunks(srv_server *s, oai_out *o, srv_buf *out) {
    srv_req *r = o->job->r;
    int done = r->finish != FIN_NONE;
    const char *txt = r->text.p ? r->text.p + o->text_off : "";
    size_t ntxt = r->text.n - o->text_off;
    const srv_lp *lp = r->lp + o->lp_off;
    int nlp = r->logprobs ? r->n_lp - o->lp_off : 0;
    o->text_off = r->text.n;
    o->lp_off = r->n_lp;
    int rc = 0;
    if (o->job->chat) {
        if (!o->sent_role) {
            o->sent_role = 1;
            rc |= sse(out, chat_chunk(s, o, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL, NULL));
        }
        srv_parse_out *po = &o->po;
        rc |= srv_parser_feed(&o->parser, txt, ntxt, po);
        if (done && r->finish != FIN_ERROR) rc |= srv_parser_finish(&o->parser, po);
        warn_broken(o, po);
        if (po->content.n || po->reasoning.n || nlp) {
            json_t *d = json_object();
            if (po->content.n || !po->reasoning.n) json_object_set_new(d, "content", json_stringn(po->content.p ? po->content.p : "", po->content.n));
            if (po->reasoning.n) json_object_set_new(d, "reasoning_content", json_stringn(po->reasoning.p, po->reasoning.n));
            rc |= sse(out, chat_chunk(s, o, d, nlp ? chat_logprobs(s, lp, nlp, r->top_logprobs) : NULL, NULL));
        }
        /* a call's first delta: index, id, type, name and empty arguments;
         * then each arguments fragment as it was generated */
        for (int i = 0; i < po->n_tools; i++) {
            const srv_tool_delta *t = &po->tools[i];
            if (t->name) {
                char id[80];
                call_id(o, id, sizeof id, t->index);
                o->n_calls++;
                json_t *head = json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", t->index,
                                         "id", id, "type", "function", "function", "name", t->name,
                                         "arguments", "");
                rc |= sse(out, chat_chunk(s, o, head, NULL, NULL));
            }
            if (t->args.n) {
                json_t *args = json_pack("{s:[{s:i, s:{s:s%}}]}", "tool_calls", "index", t->index, "function",
                                         "arguments", t->args.p, t->args.n);
                rc |= sse(out, chat_chunk(s, o, args, NULL, NULL));
            }
        }
        srv_parse_out_reset(po);
    } else if (ntxt || nlp || done) {
        if (ntxt || nlp) {
            json_t *e = envelope(s, o, "text_completion");
            json_t *ch = json_pack("{s:i, s:s%, s:o, s:n}", "index", 0, "text", txt, ntxt, "logprobs",
                                   nlp ? cmpl_logprobs(s, o, lp, nlp, r->top_logprobs) : json_null(),
                                   "finish_reason");
            json_object_set_new(e, "choices", json_pack("[o]", ch));
            rc |= sse(out, e);
        }
    }
    if (!done) return rc ? -1 : 0;
    if (r->finish == FIN_ERROR) {
        json_t *err = json_pack("{s:{s:s, s:s, s:n, s:n}}", "error", "message", r->err[0] ? r->err : "generation failed",
                                "type", "server_error", "param", "code");
        rc |= sse(out, err);
    } else if (o->job->chat) {
        rc |= sse(out, chat_chunk(s, o, json_object(), NULL, finish_str(o)));
    } else {
        json_t *e = envelope(s, o, "text_completion");
        json_object_set_new(e, "choices", json_pack("[{s:i, s:s, s:n, s:s}]", "index", 0, "text", "",
                                                    "logprobs", "finish_reason", finish_str(o)));
        rc |= sse(out, e);
    }
    if (o->job->include_usage && r->finish != FIN_ERROR) {
        json_t *e = envelope(s, o, o->job->chat ? "chat.completion.chunk" : "text_completion");
        json_object_set_new(e, "choices", json_array());
        json_object_set_new(e, "usage", usage(r));
        rc |= sse(out, e);
    }
    rc |= sb_adds(out, "data: [DONE]\n\n");
    return rc ? -1 : 0;
}

char *oai_full_response(srv_server *s, oai_out *o) {
    srv_req *r = o->job->r;
    json_t *e;
    if (o->job->chat) {
        srv_parse_out *po = &o->po;
        srv_parser_feed(&o->parser, r->text.p ? r->text.p : "", r->text.n, po);
        srv_parser_finish(&o->parser, po);
        warn_broken(o, po);
        /* the same deltas the stream sends, joined per call */
        int ncalls = 0;
        for (int i = 0; i < po->n_tools; i++)
            if (po->tools[i].index + 1 > ncalls) ncalls = po->tools[i].index + 1;
        srv_buf *args = ncalls ? calloc((size_t)ncalls, sizeof *args) : NULL;
        const char **names = ncalls ? calloc((size_t)ncalls, sizeof *names) : NULL;
        if (ncalls && (!args || !names)) ncalls = 0;
        for (int i = 0; i < po->n_tools && ncalls; i++) {
            const srv_tool_delta *t = &po->tools[i];
            if (t->name) names[t->index] = t->name;
            sb_add(&args[t->index], t->args.p ? t->args.p : "", t->args.n);
        }
        json_t *msg = json_pack("{s:s}", "role", "assistant");
        json_object_set_new(msg, "content", po->content.n || !ncalls
                                                ? json_stringn(po->content.p ? po->content.p : "", po->content.n)
                                                : json_null());
        if (po->reasoning.n) json_object_set_new(msg, "reasoning_content", json_stringn(po->reasoning.p, po->reasoning.n));
        if (ncalls) {
            json_t *calls = json_array();
            for (int i = 0; i < ncalls; i++) {
                char id[80];
                call_id(o, id, sizeof id, i);
                json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s%}}", "id", id, "type", "function",
                                                       "function", "name", names[i] ? names[i] : "", "arguments",
                                                       args[i].p ? args[i].p : "", args[i].n));
            }
            json_object_set_new(msg, "tool_calls", calls);
            o->n_calls = ncalls;
        }
        for (int i = 0; i < ncalls; i++) sb_free(&args[i]);
        free(args);
        free(names);
        e = envelope(s, o, "chat.completion");
        json_t *ch = json_pack("{s:i, s:o, s:o, s:s}", "index", 0, "message", msg, "logprobs",
                               r->logprobs ? chat_logprobs(s, r->lp, r->n_lp, r->top_logprobs) : json_null(),
                               "finish_reason", finish_str(o));
        json_object_set_new(e, "choices", json_pack("[o]", ch));
    } else {
        e = envelope(s, o, "text_completion");
        json_t *ch = json_pack("{s:i, s:s%, s:o, s:s}", "index", 0, "text", r->text.p ? r->text.p : "",
                               r->text.n, "logprobs",
                               r->logprobs ? cmpl_logprobs(s, o, r->lp, r->n_lp, r->top_logprobs) : json_null(),
                               "finish_reason", finish_str(o));
        json_object_set_new(e, "choices", json_pack("[o]", ch));
    }
    json_object_set_new(e, "usage", usage(r));
    char *t = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    return t;
}
