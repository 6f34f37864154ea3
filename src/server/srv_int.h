/* Internals shared by the HTTP layer and the OpenAI request/response mapping. */
#pragma once
#include <microhttpd.h>
#include <stdatomic.h>

#include "server/srv_server.h"
#include "server/srv_toolparse.h"

struct srv_server {
    dl_model *m;
    const tok_tokenizer *tk;
    json_t *tokcfg;
    srv_sched *sched;
    srv_opts o;
    struct MHD_Daemon *d;
    atomic_int closing;
    atomic_int active;        /* requests whose response is not fully sent */
    int reasoning;            /* tokenizer has <think> / </think> */
    int32_t eos[SRV_MAX_STOP_IDS];
    int n_eos;                /* config + generation_config eos ids */
    int32_t chat_eos[SRV_MAX_STOP_IDS];
    int n_chat_eos;           /* plus the template's end-of-turn tokens */
    int cap;                  /* positions a sequence may hold (prompt + output) */
    int vocab;                /* token ids accepted in prompts: [0, vocab) */
    int tool_format;          /* the chat template writes <tool_call>{"name", "arguments"} */
    atomic_ulong next_id;
};

/* An OpenAI error: HTTP status and the fields of {"error": {...}}. */
typedef struct {
    int status;
    const char *type;   /* invalid_request_error, authentication_error, ... */
    char param[64];
    const char *code;   /* NULL -> JSON null */
    char msg[512];
} oai_err;

enum { OAI_FORCE_NONE = 0, OAI_FORCE_NAMED, OAI_FORCE_REQUIRED };

/* A validated generation request (release with oai_job_free). */
typedef struct {
    int chat;
    int stream, include_usage;
    int tools, reasoning, in_reasoning;
    int force;          /* OAI_FORCE_*: the prompt ends with a forced tool-call opening */
    char *force_name;   /* OAI_FORCE_NAMED: the function (malloc'd) */
    json_t *tool_names; /* OAI_FORCE_REQUIRED: allowed function names (owned ref) */
    char id[48];
    long created;
    srv_req *r;
} oai_job;

int oai_error(oai_err *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* {"error": {...}} body, malloc'd. */
char *oai_error_json(const oai_err *e);
/* Validate body (parsed JSON) and build the job (tokenized prompt, sampling,
 * stops). 0, or -1 with e filled; either way release job with oai_job_free. */
int oai_parse(srv_server *s, json_t *body, int chat, oai_job *job, oai_err *e);
/* Drop the job's request reference and what it owns (safe on a zeroed job). */
void oai_job_free(oai_job *job);
/* 1 if the tokenizer_config.json chat template (any of its named templates)
 * writes tool calls as <tool_call>{"name": ..., "arguments": ...}</tool_call>. */
int oai_template_tool_format(json_t *tokcfg);

/* Output state: turns the request's text/logprobs into OpenAI objects. */
typedef struct {
    oai_job *job;
    size_t text_off;  /* bytes of r->text consumed */
    int lp_off;       /* logprob entries consumed */
    srv_parser parser;
    srv_parse_out po; /* parser output not yet turned into chunks */
    int n_calls;      /* tool calls emitted */
    int sent_role;
    size_t text_pos;  /* completions: text offset for logprobs */
} oai_out;

/* job is borrowed and must outlive o. A forced named call's first delta is
 * queued at once (it goes out with the first chunk). */
int oai_out_init(oai_out *o, oai_job *job); /* 0 or -1 (out of memory) */
void oai_out_free(oai_out *o);
/* Streaming: append SSE events for what is new in r (call with r->mu held);
 * when r is finished also the final chunk(s) and "data: [DONE]". */
int oai_stream_chunks(srv_server *s, oai_out *o, srv_buf *sse);
/* Non-streaming: the whole response body (r finished; r->mu held). */
char *oai_full_response(srv_server *s, oai_out *o);
