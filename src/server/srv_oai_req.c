/* OpenAI request validation: body JSON -> srv_req (prompt ids, sampling,
 * stops, limits). Every type/range problem becomes a 4xx in OpenAI's error
 * shape naming the parameter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "server/srv_int.h"
#include "tmpl/tmpl.h"
#include "tok/chat.h"

int oai_error(oai_err *e, int status, const char *type, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    e->code = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

char *oai_error_json(const oai_err *e) {
    json_t *err = json_pack("{s:s, s:s, s:o, s:o}", "message", e->msg, "type", e->type, "param",
                            e->param[0] ? json_string(e->param) : json_null(), "code",
                            e->code ? json_string(e->code) : json_null());
    json_t *j = json_pack("{s:o}", "error", err);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

#define BAD(p, ...) oai_error(e, 400, "invalid_request_error", p, __VA_ARGS__)

/* Optional number field in [lo, hi]; 0 ok (absent/null leaves *v), -1 error. */
static int get_num(json_t *b, const char *k, double lo, double hi, float *v, oai_err *e) {
    json_t *x = json_object_get(b, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_number(x)) return BAD(k, "'%s' must be a number", k);
    double d = json_number_value(x);
    if (!(d >= lo && d <= hi)) return BAD(k, "'%s' must be between %g and %g, got %g", k, lo, hi, d);
    *v = (float)d;
    return 0;
}

static int get_int(json_t *b, const char *k, long long lo, long long hi, long long *v, oai_err *e) {
    json_t *x = json_object_get(b, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_integer(x)) {
        /* accept integral reals like 5.0 as some clients send them */
        if (json_is_real(x) && json_real_value(x) == floor(json_real_value(x)) &&
            fabs(json_real_value(x)) < 9e15)
            *v = (long long)json_real_value(x);
        else return BAD(k, "'%s' must be an integer", k);
    } else *v = json_integer_value(x);
    if (*v < lo || *v > hi) return BAD(k, "'%s' must be between %lld and %lld, got %lld", k, lo, hi, *v);
    return 0;
}

static int get_bool(json_t *b, const char *k, int *v, oai_err *e) {
    json_t *x = json_object_get(b, k);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_boolean(x)) return BAD(k, "'%s' must be a boolean", k);
    *v = json_is_true(x);
    return 0;
}

/* messages -> a copy whose content parts are joined into strings. */
static json_t *norm_messages(json_t *msgs, oai_err *e) {
    if (!json_is_array(msgs)) return BAD("messages", "'messages' must be an array"), NULL;
    if (!json_array_size(msgs)) return BAD("messages", "'messages' must not be empty"), NULL;
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        char p[48];
        snprintf(p, sizeof p, "messages[%zu]", i);
        if (!json_is_object(m)) return json_decref(out), BAD(p, "'%s' must be an object", p), NULL;
        json_t *role = json_object_get(m, "role");
        if (!json_is_string(role))
            return json_decref(out), BAD(p, "'%s.role' must be a string", p), NULL;
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "tool") && strcmp(rs, "developer") && strcmp(rs, "function"))
            return json_decref(out), BAD(p, "'%s.role' '%s' is not a known role", p, rs), NULL;
        json_t *c = json_deep_copy(m);
        json_t *content = json_object_get(m, "content");
        if (content && json_is_array(content)) {
            srv_buf txt = {0};
            size_t k;
            json_t *part;
            json_array_foreach(content, k, part) {
                json_t *t = json_object_get(part, "text");
                json_t *ty = json_object_get(part, "type");
                if (!json_is_object(part) || !json_is_string(t) ||
                    (ty && (!json_is_string(ty) || strcmp(json_string_value(ty), "text")))) {
                    sb_free(&txt);
                    json_decref(c);
                    json_decref(out);
                    return BAD(p, "'%s.content' parts must be {\"type\": \"text\", \"text\": ...}", p), NULL;
                }
                sb_adds(&txt, json_string_value(t));
            }
            json_object_set_new(c, "content", json_string(txt.p ? txt.p : ""));
            sb_free(&txt);
        } else if (!content || json_is_null(content)) {
            /* templates test `'x' in message.content`: null (assistant tool calls) -> "" */
            json_object_set_new(c, "content", json_string(""));
        } else if (!json_is_string(content)) {
            json_decref(c);
            json_decref(out);
            return BAD(p, "'%s.content' must be a string, an array of text parts or null", p), NULL;
        }
        json_array_append_new(out, c);
    }
    return out;
}

/* Validate tools/tool_choice. *tools_out = tools to render (new ref or
 * NULL), *parse = look for tool calls in the output, job->force and its
 * name / allowed names for a named or "required" choice. */
static int tools_check(srv_server *s, json_t *b, json_t **tools_out, oai_job *job, oai_err *e) {
    *tools_out = NULL;
    job->tools = 0;
    json_t *tools = json_object_get(b, "tools");
    json_t *tc = json_object_get(b, "tool_choice");
    if (tools && json_is_null(tools)) tools = NULL;
    if (tools) {
        if (!json_is_array(tools)) return BAD("tools", "'tools' must be an array");
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            json_t *f = json_object_get(t, "function");
            json_t *ty = json_object_get(t, "type");
            if (!json_is_object(t) || !json_is_object(f) || !json_is_string(json_object_get(f, "name")) ||
                (ty && !(json_is_string(ty) && !strcmp(json_string_value(ty), "function"))))
                return BAD("tools", "tools[%zu] must be {\"type\": \"function\", \"function\": {\"name\": ...}}", i);
        }
    }
    const char *mode = tools ? "auto" : "none";
    const char *named = NULL;
    if (tc && !json_is_null(tc)) {
        if (json_is_string(tc)) {
            mode = json_string_value(tc);
            if (strcmp(mode, "auto") && strcmp(mode, "none") && strcmp(mode, "required"))
                return BAD("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function");
        } else if (json_is_object(tc)) {
            json_t *f = json_object_get(tc, "function");
            if (!json_is_object(f) || !json_is_string(json_object_get(f, "name")))
                return BAD("tool_choice", "'tool_choice' object must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
            named = json_string_value(json_object_get(f, "name"));
            mode = "named";
        } else return BAD("tool_choice", "'tool_choice' must be a string or an object");
        if (strcmp(mode, "none") && !tools)
            return BAD("tool_choice", "'tool_choice' is set but no 'tools' were given");
    }
    if (!tools || !strcmp(mode, "none")) return 0;
    int required = !strcmp(mode, "required");
    if ((named || required) && !s->tool_format)
        return BAD("tool_choice", "tool_choice '%s' cannot be enforced: this model's chat template has no "
                   "<tool_call>{\"name\", \"arguments\"} format the server knows; use \"auto\" or \"none\"",
                   named ? named : mode);
    json_t *sel = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *fn = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (!named || !strcmp(fn, named)) json_array_append(sel, t);
    }
    if (named && !json_array_size(sel)) {
        json_decref(sel);
        return BAD("tool_choice", "tool_choice names function '%s', which is not in 'tools'", named);
    }
    if (named) {
        job->force = OAI_FORCE_NAMED;
        if (!(job->force_name = strdup(named))) return json_decref(sel), oai_error(e, 500, "server_error", NULL, "out of memory");
    } else if (required) {
        job->force = OAI_FORCE_REQUIRED;
        job->tool_names = json_array();
        json_array_foreach(tools, i, t)
            json_array_append(job->tool_names, json_object_get(json_object_get(t, "function"), "name"));
    }
    *tools_out = sel;
    job->tools = 1;
    return 0;
}

static int tool_format_text(const char *t) {
    return t && strstr(t, "<tool_call>") && strstr(t, "arguments") && !strstr(t, "<function=");
}

int oai_template_tool_format(json_t *tokcfg) {
    json_t *ct = json_object_get(tokcfg, "chat_template");
    if (json_is_string(ct)) return tool_format_text(json_string_value(ct));
    size_t i;
    json_t *x;
    json_array_foreach(ct, i, x) if (tool_format_text(json_string_value(json_object_get(x, "template")))) return 1;
    return 0;
}

void oai_job_free(oai_job *job) {
    srv_req_unref(job->r);
    free(job->force_name);
    json_decref(job->tool_names);
    job->r = NULL;
    job->force_name = NULL;
    job->tool_names = NULL;
}

static int add_stop(srv_req *r, const char *s) {
    char **p = realloc(r->stops, (size_t)(r->n_stops + 1) * sizeof *p);
    if (!p) return -1;
    r->stops = p;
    if (!(r->stops[r->n_stops] = strdup(s))) return -1;
    r->n_stops++;
    return 0;
}

/* The text a forced call opens with (appended to the rendered prompt):
 * `<tool_call>\n` for "required", plus `{"name": NAME, "arguments":` for a
 * named function. It stops before the value so that the model writes the
 * value's first token (` {"`) as it learned it. malloc'd or NULL. */
static char *forced_opening(const oai_job *job, int close_think) {
    srv_buf b = {0};
    int rc = close_think ? sb_adds(&b, "\n</think>\n\n") : 0;
    rc |= sb_adds(&b, "<tool_call>\n");
    if (job->force == OAI_FORCE_NAMED) {
        json_t *n = json_string(job->force_name);
        char *q = n ? json_dumps(n, JSON_ENCODE_ANY) : NULL;
        json_decref(n);
        rc |= !q || sb_printf(&b, "{\"name\": %s, \"arguments\":", q);
        free(q);
    }
    if (rc) return sb_free(&b), NULL;
    return sb_take(&b);
}

/* Chat: render the template (plus a forced call opening) and tokenize. */
static int chat_prompt(srv_server *s, json_t *b, oai_job *job, oai_err *e) {
    json_t *msgs = norm_messages(json_object_get(b, "messages"), e);
    if (!msgs) return -1;
    json_t *tools = NULL;
    if (tools_check(s, b, &tools, job, e)) return json_decref(msgs), -1;
    if (!s->tokcfg) {
        json_decref(msgs);
        json_decref(tools);
        return BAD("messages", "this model has no tokenizer_config.json chat template; use /v1/completions");
    }
    json_t *req = json_object();
    json_object_set_new(req, "messages", msgs);
    if (tools) json_object_set_new(req, "tools", tools);
    json_t *agp = json_object_get(b, "add_generation_prompt");
    if (agp && !json_is_boolean(agp)) {
        json_decref(req);
        return BAD("add_generation_prompt", "'add_generation_prompt' must be a boolean");
    }
    if (agp && json_is_false(agp) && job->force) {
        json_decref(req);
        return BAD("tool_choice", "a named or \"required\" tool_choice needs 'add_generation_prompt': true");
    }
    if (agp) json_object_set(req, "add_generation_prompt", agp);
    json_t *kw = json_object_get(b, "chat_template_kwargs");
    if (kw && !json_is_null(kw)) {
        if (!json_is_object(kw)) {
            json_decref(req);
            return BAD("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        }
        json_object_set(req, "chat_template_kwargs", kw);
    }
    char *text = tmpl_render_chat(s->tokcfg, req);
    json_decref(req);
    if (!text) return BAD("messages", "chat template: %s", dl_errmsg());
    size_t L = strlen(text);
    while (L && (text[L - 1] == '\n' || text[L - 1] == ' ')) L--;
    job->reasoning = s->reasoning;
    job->in_reasoning = s->reasoning && L >= 7 && !memcmp(text + L - 7, "<think>", 7);
    if (job->force) {
        /* a think block the template opened is closed (empty) before the call */
        char *open = forced_opening(job, job->in_reasoning);
        char *full = open ? malloc(strlen(text) + strlen(open) + 1) : NULL;
        if (full) strcat(strcpy(full, text), open);
        free(open);
        free(text);
        if (!full) return oai_error(e, 500, "server_error", NULL, "out of memory");
        text = full;
        job->in_reasoning = 0;
    }
    int n = tok_encode(s->tk, text, strlen(text), &job->r->prompt);
    free(text);
    if (n < 0) return BAD("messages", "cannot tokenize the prompt: %s", dl_errmsg());
    job->r->n_prompt = n;
    /* a forced named call is the whole turn: generation ends with its block */
    if (job->force == OAI_FORCE_NAMED && add_stop(job->r, "</tool_call>"))
        return oai_error(e, 500, "server_error", NULL, "out of memory");
    return 0;
}

static int completion_prompt(srv_server *s, json_t *b, oai_job *job, oai_err *e) {
    json_t *p = json_object_get(b, "prompt");
    srv_req *r = job->r;
    if (!p) return BAD("prompt", "'prompt' is required");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
        p = json_array_get(p, 0);
    if (json_is_string(p)) {
        int n = tok_encode(s->tk, json_string_value(p), json_string_length(p), &r->prompt);
        if (n < 0) return BAD("prompt", "cannot tokenize the prompt: %s", dl_errmsg());
        r->n_prompt = n;
    } else if (json_is_array(p) && json_array_size(p) && json_is_integer(json_array_get(p, 0))) {
        size_t n = json_array_size(p);
        r->prompt = malloc(n * sizeof(int32_t));
        if (!r->prompt) return oai_error(e, 500, "server_error", NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_array_get(p, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) >= s->vocab)
                return BAD("prompt", "prompt[%zu] must be a token id in [0, %d)", i, s->vocab);
            r->prompt[i] = (int32_t)json_integer_value(x);
        }
        r->n_prompt = (int)n;
    } else if (json_is_array(p) && json_array_size(p) > 1)
        return BAD("prompt", "only one prompt per request is supported (got a list of %zu)", json_array_size(p));
    else return BAD("prompt", "'prompt' must be a string or a list of token ids");
    return 0;
}

int oai_parse(srv_server *s, json_t *b, int chat, oai_job *job, oai_err *e) {
    memset(job, 0, sizeof *job);
    job->chat = chat;
    if (!json_is_object(b)) return BAD(NULL, "the request body must be a JSON object");
    json_t *model = json_object_get(b, "model");
    if (model && !json_is_null(model)) {
        if (!json_is_string(model)) return BAD("model", "'model' must be a string");
        if (strcmp(json_string_value(model), s->o.served_name)) {
            oai_error(e, 404, "invalid_request_error", "model",
                      "The model '%s' does not exist; this server serves '%s'",
                      json_string_value(model), s->o.served_name);
            e->code = "model_not_found";
            return -1;
        }
    }
    long long n = 1;
    if (get_int(b, "n", 1, 128, &n, e)) return -1;
    if (n != 1) return BAD("n", "only n=1 is supported (got n=%lld)", n);
    long long bo = 1;
    if (get_int(b, "best_of", 1, 128, &bo, e)) return -1;
    if (bo != 1) return BAD("best_of", "only best_of=1 is supported");
    if (get_bool(b, "stream", &job->stream, e)) return -1;
    json_t *so = json_object_get(b, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return BAD("stream_options", "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &job->include_usage, e)) return -1;
    }
    srv_req *r = job->r = srv_req_new();
    if (!r) return oai_error(e, 500, "server_error", NULL, "out of memory");
    samp_params *sp = &r->sp;
    sp->temperature = 1.0f;
    long long v;
    if (get_num(b, "temperature", 0, 2, &sp->temperature, e) ||
        get_num(b, "top_p", 1e-9, 1, &sp->top_p, e) || get_num(b, "min_p", 0, 1, &sp->min_p, e) ||
        get_num(b, "presence_penalty", -2, 2, &sp->presence_penalty, e) ||
        get_num(b, "frequency_penalty", -2, 2, &sp->frequency_penalty, e) ||
        get_num(b, "repetition_penalty", 1e-6, 100, &sp->repetition_penalty, e))
        return -1;
    v = 0;
    if (get_int(b, "top_k", -1, 1 << 30, &v, e)) return -1;
    sp->top_k = v < 0 ? 0 : (int)v;
    v = -1;
    if (get_int(b, "seed", -(1LL << 62), 1LL << 62, &v, e)) return -1;
    sp->seed = v == -1 ? (uint64_t)time(NULL) ^ (atomic_fetch_add(&s->next_id, 1) * 0x9e3779b97f4a7c15ull)
                       : (uint64_t)v;
    long long mt = -1;
    if (get_int(b, "max_tokens", 1, 1 << 30, &mt, e)) return -1;
    if (get_int(b, "max_completion_tokens", 1, 1 << 30, &mt, e)) return -1;
    if (get_bool(b, "ignore_eos", &r->ignore_eos, e)) return -1;
    /* logprobs: chat = bool + top_logprobs; completions = int */
    json_t *lp = json_object_get(b, "logprobs");
    if (chat) {
        if (get_bool(b, "logprobs", &r->logprobs, e)) return -1;
        v = 0;
        if (get_int(b, "top_logprobs", 0, SRV_MAX_TOP, &v, e)) return -1;
        if (v && !r->logprobs) return BAD("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        r->top_logprobs = (int)v;
    } else if (lp && !json_is_null(lp)) {
        if (json_is_boolean(lp)) r->logprobs = json_is_true(lp), r->top_logprobs = 0;
        else {
            v = 0;
            if (get_int(b, "logprobs", 0, SRV_MAX_TOP, &v, e)) return -1;
            r->logprobs = 1;
            r->top_logprobs = (int)v;
        }
    }
    json_t *st = json_object_get(b, "stop");
    if (st && !json_is_null(st)) {
        if (json_is_string(st)) {
            if (add_stop(r, json_string_value(st))) return oai_error(e, 500, "server_error", NULL, "out of memory");
        } else if (json_is_array(st)) {
            if (json_array_size(st) > 16) return BAD("stop", "at most 16 stop sequences are supported");
            size_t i;
            json_t *x;
            json_array_foreach(st, i, x) {
                if (!json_is_string(x)) return BAD("stop", "'stop' must be a string or a list of strings");
                if (add_stop(r, json_string_value(x))) return oai_error(e, 500, "server_error", NULL, "out of memory");
            }
        } else return BAD("stop", "'stop' must be a string or a list of strings");
    }
    json_t *sids = json_object_get(b, "stop_token_ids");
    if (sids && !json_is_null(sids)) {
        if (!json_is_array(sids)) return BAD("stop_token_ids", "'stop_token_ids' must be a list of integers");
        size_t i;
        json_t *x;
        json_array_foreach(sids, i, x) {
            if (!json_is_integer(x)) return BAD("stop_token_ids", "'stop_token_ids' must be a list of integers");
            if (r->n_stop_ids < SRV_MAX_STOP_IDS / 2) r->stop_ids[r->n_stop_ids++] = (int32_t)json_integer_value(x);
        }
    }
    if (chat ? chat_prompt(s, b, job, e) : completion_prompt(s, b, job, e)) return -1;
    const int32_t *ids = chat ? s->chat_eos : s->eos;
    int nid = chat ? s->n_chat_eos : s->n_eos;
    for (int i = 0; i < nid && r->n_stop_ids < SRV_MAX_STOP_IDS; i++) r->stop_ids[r->n_stop_ids++] = ids[i];
    if (r->n_prompt <= 0) return BAD(chat ? "messages" : "prompt", "the prompt is empty");
    int cap = s->cap;
    if (r->n_prompt >= cap) {
        oai_error(e, 400, "invalid_request_error", chat ? "messages" : "prompt",
                  "This model's maximum context length is %d tokens, but the prompt has %d tokens",
                  cap, r->n_prompt);
        e->code = "context_length_exceeded";
        return -1;
    }
    int room = cap - r->n_prompt;
    if (s->o.max_tokens_cap > 0 && room > s->o.max_tokens_cap) room = s->o.max_tokens_cap;
    r->max_tokens = mt > 0 && mt < room ? (int)mt : room;
    r->t_arrive = srv_now();
    r->deadline = s->o.request_timeout > 0 ? r->t_arrive + s->o.request_timeout : 0;
    job->created = (long)time(NULL);
    snprintf(job->id, sizeof job->id, "%s-%lx%06lx", chat ? "chatcmpl" : "cmpl", (unsigned long)job->created,
             (unsigned long)atomic_fetch_add(&s->next_id, 1));
    return 0;
}
