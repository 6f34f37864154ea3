/* HTTP layer on libmicrohttpd (thread per connection): routing, body
 * limits, API-key check, JSON errors, streaming (SSE through a content
 * reader callback) and client-disconnect detection (the request is
 * cancelled and its KV blocks freed as soon as the peer is gone). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "server/srv_int.h"
#include "server/srv_metrics.h"
#include "tok/chat.h"

typedef struct {
    srv_buf body;
    size_t total;
    int too_big;
} conn_state;

typedef struct {
    srv_server *s;
    struct MHD_Connection *c;
    oai_job job;
    oai_out out;
    srv_buf sse;
    size_t sse_off;
    int ended;
} stream_state;

static enum MHD_Result reply(struct MHD_Connection *c, int code, const char *ctype, char *body) {
    if (!body) body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    srv_metrics_status(code);
    return ret;
}

static enum MHD_Result reply_err(struct MHD_Connection *c, const oai_err *e) {
    return reply(c, e->status, "application/json", oai_error_json(e));
}

static enum MHD_Result simple_err(struct MHD_Connection *c, int code, const char *type,
                                  const char *msg) {
    oai_err e;
    oai_error(&e, code, type, NULL, "%s", msg);
    return reply_err(c, &e);
}

/* 1 if the client closed its end of the connection. */
static int peer_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    int fd = ci->connect_fd;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return 1;
    char ch;
    ssize_t k = recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void timed_wait(srv_req *r, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream_state *st = cls;
    srv_req *r = st->job.r;
    for (;;) {
        if (st->sse.n > st->sse_off) {
            size_t n = st->sse.n - st->sse_off;
            if (n > max) n = max;
            memcpy(buf, st->sse.p + st->sse_off, n);
            st->sse_off += n;
            if (st->sse_off == st->sse.n) {
                sb_reset(&st->sse);
                st->sse_off = 0;
            }
            return (ssize_t)n;
        }
        if (st->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&r->mu);
        while (r->finish == FIN_NONE && r->text.n == st->out.text_off &&
               (!r->logprobs || r->n_lp == st->out.lp_off)) {
            timed_wait(r, 100);
            if (r->finish == FIN_NONE && r->text.n == st->out.text_off && peer_gone(st->c)) {
                pthread_mutex_unlock(&r->mu);
                srv_req_cancel(r);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        int done = r->finish != FIN_NONE;
        int rc = oai_stream_chunks(st->s, &st->out, &st->sse);
        pthread_mutex_unlock(&r->mu);
        if (rc) {
            srv_req_cancel(r);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (done) st->ended = 1;
    }
}

static void stream_free(void *cls) {
    stream_state *st = cls;
    srv_req_cancel(st->job.r); /* no-op when finished; frees KV at once otherwise */
    oai_out_free(&st->out);
    oai_job_free(&st->job);
    sb_free(&st->sse);
    free(st);
}

static enum MHD_Result generate(srv_server *s, struct MHD_Connection *c, conn_state *cs, int chat) {
    if (atomic_load(&s->closing))
        return simple_err(c, 503, "server_error", "the server is shutting down");
    json_error_t je;
    json_t *body = json_loadb(cs->body.p ? cs->body.p : "", cs->body.n, 0, &je);
    if (!body) {
        oai_err e;
        oai_error(&e, 400, "invalid_request_error", NULL, "invalid JSON body: %s (line %d, column %d)",
                  je.text, je.line, je.column);
        return reply_err(c, &e);
    }
    oai_job job;
    oai_err e;
    int bad = oai_parse(s, body, chat, &job, &e);
    json_decref(body);
    if (bad) {
        oai_job_free(&job);
        return reply_err(c, &e);
    }
    srv_req *r = job.r;
    int q = sched_submit(s->sched, r);
    if (q != SCHED_OK) {
        oai_job_free(&job);
        return q == SCHED_FULL ? simple_err(c, 429, "rate_limit_error", "the request queue is full; retry later")
                               : simple_err(c, 503, "server_error", "the server is shutting down");
    }
    if (job.stream) {
        stream_state *st = calloc(1, sizeof *st);
        if (!st) {
            srv_req_cancel(r);
            oai_job_free(&job);
            return simple_err(c, 500, "server_error", "out of memory");
        }
        st->s = s;
        st->c = c;
        st->job = job;
        int bad_out = oai_out_init(&st->out, &st->job);
        struct MHD_Response *resp = bad_out ? NULL :
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, st, stream_free);
        if (!resp) {
            stream_free(st);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        enum MHD_Result ret = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        srv_metrics_status(200);
        return ret;
    }
    /* non-streaming: wait here (this connection's own thread), watching the peer */
    pthread_mutex_lock(&r->mu);
    while (r->finish == FIN_NONE) {
        timed_wait(r, 100);
        if (r->finish == FIN_NONE && peer_gone(c)) {
            pthread_mutex_unlock(&r->mu);
            srv_req_cancel(r);
            oai_job_free(&job);
            srv_metrics_status(499);
            return MHD_NO;
        }
    }
    enum MHD_Result ret;
    if (r->finish == FIN_ERROR) {
        int code = strstr(r->err, "shutting down") ? 503 : 500;
        ret = simple_err(c, code, "server_error", r->err);
    } else {
        oai_out o;
        char *txt = oai_out_init(&o, &job) ? NULL : oai_full_response(s, &o);
        oai_out_free(&o);
        ret = reply(c, 200, "application/json", txt);
    }
    pthread_mutex_unlock(&r->mu);
    oai_job_free(&job);
    return ret;
}

static enum MHD_Result get_models(srv_server *s, struct MHD_Connection *c) {
    json_t *j = json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id",
                          s->o.served_name, "object", "model", "created", (json_int_t)0, "owned_by",
                          "dotlm", "max_model_len", sched_capacity(s->sched));
    char *t = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return reply(c, 200, "application/json", t);
}

static enum MHD_Result get_metrics(srv_server *s, struct MHD_Connection *c) {
    sched_stats st;
    sched_get_stats(s->sched, &st);
    srv_gauges g = {st.queue_len, st.running, st.max_seqs, st.kv_used, st.kv_cached, st.kv_total,
                    st.prefix_hits, st.prefix_queries};
    srv_buf b = {0};
    srv_metrics_render(&b, &g);
    return reply(c, 200, "text/plain; version=0.0.4", sb_take(&b));
}

static int auth_ok(srv_server *s, struct MHD_Connection *c) {
    if (!s->o.api_key || !s->o.api_key[0]) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    h += 7;
    while (*h == ' ') h++;
    /* constant-time comparison */
    size_t a = strlen(h), b = strlen(s->o.api_key);
    unsigned diff = (unsigned)(a != b);
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned char)h[i] ^ (unsigned char)s->o.api_key[i];
    return diff == 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
    (void)version;
    srv_server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs) return MHD_NO;
        *con_cls = cs;
        atomic_fetch_add(&s->active, 1);
        return MHD_YES;
    }
    if (*upload_size) {
        cs->total += *upload_size;
        if (cs->total > s->o.max_body) cs->too_big = 1;
        else if (sb_add(&cs->body, upload, *upload_size)) cs->too_big = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    int is_get = !strcmp(method, "GET"), is_post = !strcmp(method, "POST");
    if (!strcmp(url, "/health") || !strcmp(url, "/v1/health")) {
        if (!is_get) return simple_err(c, 405, "invalid_request_error", "use GET /health");
        if (atomic_load(&s->closing))
            return reply(c, 503, "application/json", strdup("{\"status\":\"shutting down\"}"));
        return reply(c, 200, "application/json", strdup("{\"status\":\"ok\"}"));
    }
    if (!strcmp(url, "/metrics")) {
        if (!is_get) return simple_err(c, 405, "invalid_request_error", "use GET /metrics");
        return get_metrics(s, c);
    }
    int chat = !strcmp(url, "/v1/chat/completions"), cmpl = !strcmp(url, "/v1/completions"),
        models = !strcmp(url, "/v1/models");
    if (!chat && !cmpl && !models) {
        oai_err e;
        oai_error(&e, 404, "invalid_request_error", NULL, "no route for %s %s", method, url);
        return reply_err(c, &e);
    }
    if (!auth_ok(s, c)) {
        oai_err e;
        oai_error(&e, 401, "authentication_error", NULL, "invalid or missing API key (send 'Authorization: Bearer KEY')");
        e.code = "invalid_api_key";
        return reply_err(c, &e);
    }
    if (models) {
        if (!is_get) return simple_err(c, 405, "invalid_request_error", "use GET /v1/models");
        return get_models(s, c);
    }
    if (!is_post) return simple_err(c, 405, "invalid_request_error", "use POST for completions");
    if (cs->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "request body of %zu bytes exceeds the limit of %zu bytes", cs->total,
                 s->o.max_body);
        return simple_err(c, 413, "invalid_request_error", msg);
    }
    return generate(s, c, cs, chat);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)c;
    (void)toe;
    srv_server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) return;
    atomic_fetch_sub(&s->active, 1);
    sb_free(&cs->body);
    free(cs);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    if (dl_log_level() > LOG_DEBUG) return;
    vfprintf(stderr, fmt, ap);
}

srv_server *srv_start(dl_model *m, const tok_tokenizer *tk, json_t *tokcfg, srv_sched *sched,
                      const srv_opts *o) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return dl_err("out of memory"), NULL;
    s->m = m;
    s->tk = tk;
    s->tokcfg = tokcfg;
    s->sched = sched;
    s->o = *o;
    s->reasoning = tok_find(tk, "<think>") >= 0 && tok_find(tk, "</think>") >= 0;
    s->cap = sched_capacity(sched);
    s->vocab = m->cfg.vocab;
    s->tool_format = tokcfg && oai_template_tool_format(tokcfg);
    for (int i = 0; i < m->cfg.n_eos && s->n_eos < SRV_MAX_STOP_IDS / 2; i++) s->eos[s->n_eos++] = m->cfg.eos_ids[i];
    for (int i = 0; i < m->gen.n_eos && s->n_eos < SRV_MAX_STOP_IDS / 2; i++) s->eos[s->n_eos++] = m->gen.eos_ids[i];
    memcpy(s->chat_eos, s->eos, sizeof s->eos);
    s->n_chat_eos = s->n_eos + chat_stop_ids(tk, s->chat_eos + s->n_eos, SRV_MAX_STOP_IDS / 2 - s->n_eos);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    int gai = getaddrinfo(o->host, port, &hints, &ai);
    if (gai) {
        free(s);
        return dl_err("cannot resolve --host '%s': %s", o->host, gai_strerror(gai)), NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handler, s, MHD_OPTION_SOCK_ADDR,
                            ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->conn_timeout,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->d) {
        free(s);
        return dl_err("cannot listen on %s:%d (%s)", o->host, o->port, strerror(errno)), NULL;
    }
    return s;
}

int srv_port(const srv_server *s) {
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : s->o.port;
}

void srv_close(srv_server *s) { atomic_store(&s->closing, 1); }

void srv_shutdown(srv_server *s) {
    if (!s) return;
    /* let responses already produced reach their clients (bounded wait) */
    for (int i = 0; i < 500 && atomic_load(&s->active) > 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (s->d) MHD_stop_daemon(s->d);
    free(s);
}
