/* libFuzzer target: the OpenAI request parser. Arbitrary bytes are parsed as
 * a JSON body and validated by oai_parse() for /v1/chat/completions and
 * /v1/completions, with the real Qwen3 tokenizer and chat template (tools,
 * tool_choice and its forced call openings included). Any input must give
 * a job or a well-formed OpenAI error, never a crash, leak or sanitizer
 * report.
 *
 * When a request is accepted, the text of its last message (or its prompt)
 * is also taken as if the model had generated it and turned into the
 * response both ways: streamed (SSE chunks, fed in pieces split by the input
 * itself) and whole. The streamed content, reasoning and tool-call deltas
 * must add up to the non-streamed message exactly (abort otherwise). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "server/srv_int.h"
#include "tok/chat.h"

#ifndef DOTLM_SRC_DIR
#define DOTLM_SRC_DIR "."
#endif

static srv_server S;

static void setup(void) {
    static int done;
    if (done) return;
    done = 1;
    dl_log_set_level(LOG_QUIET);
    const char *dir = DOTLM_SRC_DIR "/assets/tokenizers/qwen3";
    tok_tokenizer *tk = tok_load(dir);
    json_t *cfg = json_load_file(DOTLM_SRC_DIR "/assets/tokenizers/qwen3/tokenizer_config.json", 0, NULL);
    if (!tk || !cfg) {
        fprintf(stderr, "fuzz_request: cannot load %s\n", dir);
        abort();
    }
    S.tk = tk; /* both live for the whole run */
    S.tokcfg = cfg;
    S.o.served_name = "demo";
    S.o.max_tokens_cap = 0;
    S.o.request_timeout = 600;
    S.cap = 4096;
    S.vocab = 151936;
    S.reasoning = tok_find(tk, "<think>") >= 0 && tok_find(tk, "</think>") >= 0;
    S.tool_format = oai_template_tool_format(cfg);
    S.eos[S.n_eos++] = 151645;
    memcpy(S.chat_eos, S.eos, sizeof S.eos);
    S.n_chat_eos = S.n_eos + chat_stop_ids(tk, S.chat_eos + S.n_eos, SRV_MAX_STOP_IDS / 2 - S.n_eos);
}

/* What a chat response says: content, reasoning, per call "name(args)". */
typedef struct {
    srv_buf content, reasoning, calls, fin;
} summary;

static void summary_free(summary *m) {
    sb_free(&m->content);
    sb_free(&m->reasoning);
    sb_free(&m->calls);
    sb_free(&m->fin);
}

static void add_str(srv_buf *b, json_t *s) {
    if (json_is_string(s)) sb_add(b, json_string_value(s), json_string_length(s));
}

/* Non-streamed message -> summary. */
static void from_full(const char *body, summary *m) {
    json_t *j = json_loads(body, 0, NULL);
    if (!j) abort();
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    json_t *msg = json_object_get(ch, "message");
    add_str(&m->content, json_object_get(msg, "content"));
    add_str(&m->reasoning, json_object_get(msg, "reasoning_content"));
    add_str(&m->fin, json_object_get(ch, "finish_reason"));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, c) {
        json_t *f = json_object_get(c, "function");
        sb_printf(&m->calls, "%zu:%s:", i, json_string_value(json_object_get(c, "id")));
        add_str(&m->calls, json_object_get(f, "name"));
        sb_adds(&m->calls, "(");
        add_str(&m->calls, json_object_get(f, "arguments"));
        sb_adds(&m->calls, ")");
    }
    json_decref(j);
}

/* SSE events -> summary (each call's fragments joined in order). */
static void from_sse(const srv_buf *sse, summary *m) {
    srv_buf args[16] = {{0}};
    char *names[16] = {0}, *ids[16] = {0};
    int ncalls = 0;
    const char *p = sse->p ? sse->p : "";
    while (*p) {
        const char *e = strstr(p, "\n\n");
        if (strncmp(p, "data: ", 6) || !e) abort();
        if (!strncmp(p + 6, "[DONE]", 6)) break;
        json_t *j = json_loadb(p + 6, (size_t)(e - p - 6), 0, NULL);
        if (!j) abort();
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        json_t *d = json_object_get(ch, "delta");
        add_str(&m->content, json_object_get(d, "content"));
        add_str(&m->reasoning, json_object_get(d, "reasoning_content"));
        add_str(&m->fin, json_object_get(ch, "finish_reason"));
        size_t i;
        json_t *t;
        json_array_foreach(json_object_get(d, "tool_calls"), i, t) {
            json_int_t k = json_integer_value(json_object_get(t, "index"));
            json_t *f = json_object_get(t, "function");
            if (k < 0 || k >= 16) continue;
            if (json_object_get(t, "id")) { /* first delta: in index order, arguments "" */
                if (k != ncalls || ids[k] || strcmp(json_string_value(json_object_get(f, "arguments")), "")) abort();
                ids[k] = strdup(json_string_value(json_object_get(t, "id")));
                names[k] = strdup(json_string_value(json_object_get(f, "name")));
                ncalls++;
            } else {
                if (!ids[k]) abort(); /* a fragment before its call's first delta */
                add_str(&args[k], json_object_get(f, "arguments"));
            }
        }
        json_decref(j);
        p = e + 2;
    }
    for (int k = 0; k < ncalls; k++) {
        sb_printf(&m->calls, "%d:%s:%s(", k, ids[k], names[k]);
        sb_add(&m->calls, args[k].p ? args[k].p : "", args[k].n);
        sb_adds(&m->calls, ")");
    }
    for (int k = 0; k < 16; k++) {
        sb_free(&args[k]);
        free(names[k]);
        free(ids[k]);
    }
}

static int same(const srv_buf *a, const srv_buf *b) {
    return a->n == b->n && (!a->n || !memcmp(a->p, b->p, a->n));
}

/* Take text as the generated output of job: streamed in pieces (cut at
 * character starts picked by seed) and whole must agree. */
static void check_output(oai_job *job, const char *text, size_t n, unsigned seed) {
    srv_req *r = job->r;
    r->n_gen = 1;
    srv_buf sse = {0};
    oai_out o;
    if (oai_out_init(&o, job)) abort();
    size_t pos = 0;
    while (pos < n) {
        size_t c = 1 + (seed = seed * 1103515245u + 12345u) % 7;
        size_t end = pos + c < n ? pos + c : n;
        while (end < n && ((unsigned char)text[end] & 0xC0) == 0x80) end++;
        sb_add(&r->text, text + pos, end - pos);
        oai_stream_chunks(&S, &o, &sse);
        pos = end;
    }
    r->finish = FIN_STOP;
    oai_stream_chunks(&S, &o, &sse);
    oai_out_free(&o);
    if (job->chat) {
        if (oai_out_init(&o, job)) abort();
        char *full = oai_full_response(&S, &o);
        oai_out_free(&o);
        if (!full) abort();
        summary a = {0}, b = {0};
        from_full(full, &a);
        from_sse(&sse, &b);
        if (!same(&a.content, &b.content) || !same(&a.reasoning, &b.reasoning) || !same(&a.calls, &b.calls) ||
            !same(&a.fin, &b.fin)) {
            fprintf(stderr, "stream/whole mismatch:\nwhole: %s\nstream calls: %s\n", full, b.calls.p ? b.calls.p : "");
            abort();
        }
        summary_free(&a);
        summary_free(&b);
        free(full);
    } else {
        char *full = oai_full_response(&S, &o);
        free(full);
    }
    sb_free(&sse);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    json_t *body = json_loadb((const char *)data, size, 0, NULL);
    for (int chat = 0; chat < 2; chat++) {
        oai_job job;
        oai_err e;
        if (oai_parse(&S, body, chat, &job, &e)) {
            char *js = oai_error_json(&e);
            json_t *ej = js ? json_loads(js, 0, NULL) : NULL;
            json_t *err = json_object_get(ej, "error");
            if (e.status < 400 || e.status > 599 || !json_is_string(json_object_get(err, "message"))) abort();
            json_decref(ej);
            free(js);
        } else {
            if (job.r->n_prompt <= 0 || job.r->n_prompt >= S.cap || job.r->max_tokens < 1 ||
                job.r->n_prompt + job.r->max_tokens > S.cap)
                abort();
            json_t *msgs = json_object_get(body, "messages");
            json_t *last = json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content");
            json_t *src = chat ? last : json_object_get(body, "prompt");
            if (json_is_string(src))
                check_output(&job, json_string_value(src), json_string_length(src), (unsigned)size);
        }
        oai_job_free(&job);
    }
    json_decref(body);
    return 0;
}
