/* dotlm serve: the OpenAI-compatible HTTP front end (libmicrohttpd, one
 * thread per connection) over the continuous-batching scheduler. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "model/model.h"
#include "server/srv_sched.h"
#include "tok/tok.h"

typedef struct {
    const char *host;         /* bind address (default 127.0.0.1) */
    int port;                 /* 0 = any free port (see srv_port) */
    const char *api_key;      /* NULL = no auth */
    const char *served_name;  /* model id clients must use */
    size_t max_body;          /* request body limit in bytes */
    int max_tokens_cap;       /* upper bound for max_tokens (0 = context) */
    double request_timeout;   /* seconds of generation per request (0 = none) */
    int conn_timeout;         /* idle connection timeout, seconds */
    int max_conns;            /* concurrent connections */
} srv_opts;

typedef struct srv_server srv_server;

/* Start listening. tokcfg: parsed tokenizer_config.json (borrowed; may be
 * NULL: chat requests then fail with 400). NULL + dl_errmsg. */
srv_server *srv_start(dl_model *m, const tok_tokenizer *tk, json_t *tokcfg, srv_sched *sched,
                      const srv_opts *o);
int srv_port(const srv_server *s);
/* Answer 503 to new generation requests (shutdown begins). */
void srv_close(srv_server *s);
/* Stop the daemon (waits for connection threads) and free. */
void srv_shutdown(srv_server *s);
