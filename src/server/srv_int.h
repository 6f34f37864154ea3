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

/* A validated generation request. */
typedef struct {
    int chat;
    int stream, include_usage;
    int tools, reasoning, in_reasoning;
    char id[48];
    long created;
    srv_req *r;
} oai_job;

int oai_error(oai_err *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* {"error": {...}} body, malloc'd. */
char *oai_error_json(const oai_err *e);
/* Validate body (parsed JSON) and build the job (tokenized prompt, sampling,
 * stops). 0, or -1 with e filled. */
int oai_parse(srv_server *s, json_t *body, int chat, oai_job *job, oai_err *e);

/* Output state: turns the request's text/logprobs into OpenAI objects. */
typedef struct {
    oai_job *job;
    size_t text_off;  /* bytes of r->text consumed */
    int lp_off;       /* logprob entries consumed */
    srv_parser parser;
    srv_parse_out po;
    int n_calls;      /* tool calls emitted */
    int sent_role;
    size_t text_pos;  /* completions: text offset for logprobs */
} oai_out;

void oai_out_init(oai_out *o, oai_job *job);
void oai_out_free(oai_out *o);
/* Streaming: append SSE events for what is new in r (call with r->mu held);
 * when r is finished also the final chunk(s) and "data: [DONE]". */
int oai_stream_chunks(srv_server *s, oai_out *o, srv_buf *sse);
/* Non-streaming: the whole response body (r finished; r->mu held). */
char *oai_full_response(srv_server *s, oai_out *o);
