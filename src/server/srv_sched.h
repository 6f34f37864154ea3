/* Continuous-batching scheduler. One thread owns the model workspace and
 * the paged KV pool; each step it runs ONE model_forward over the decode
 * token of every running sequence plus prompt chunks of sequences being
 * prefilled (under a per-step token budget, decodes first), samples, and
 * publishes text to the requests. Requests wait in a bounded FIFO queue and
 * are admitted between steps while a slot and enough KV blocks (prompt +
 * max_tokens, after reusing cached prefix blocks) are available. */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engine/kvcache.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "server/srv_buf.h"
#include "tok/tok.h"

#define SRV_MAX_TOP 20
#define SRV_MAX_STOP_IDS 24

/* Log probabilities of one generated token. */
typedef struct {
    int32_t id;
    float lp;
    int ntop;
    int32_t top_id[SRV_MAX_TOP];
    float top_lp[SRV_MAX_TOP];
} srv_lp;

typedef enum { FIN_NONE = 0, FIN_STOP, FIN_LENGTH, FIN_ERROR } srv_finish;

/* One generation request, shared by the HTTP thread that owns the client and
 * the scheduler (reference counted). Inputs are set before sched_submit and
 * then read-only; outputs are guarded by mu and signalled on cv. */
typedef struct srv_req {
    /* inputs */
    int32_t *prompt;  /* [n_prompt] malloc'd, owned */
    int n_prompt;
    int max_tokens;
    samp_params sp;
    int logprobs, top_logprobs;
    char **stops;     /* [n_stops] owned */
    int n_stops;
    int32_t stop_ids[SRV_MAX_STOP_IDS];
    int n_stop_ids;
    int ignore_eos;
    double t_arrive, deadline; /* monotonic seconds; deadline 0 = none */
    /* outputs (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_buf text;     /* visible text so far (stop strings removed) */
    srv_lp *lp;       /* [n_lp] when logprobs */
    int n_lp, cap_lp;
    int n_gen;        /* generated tokens (excluding a stop token) */
    int n_cached;     /* prompt tokens reused from the prefix cache */
    srv_finish finish;
    char err[200];
    /* control */
    atomic_int cancel;
    atomic_int refs;
} srv_req;

srv_req *srv_req_new(void);
void srv_req_ref(srv_req *r);
void srv_req_unref(srv_req *r);
/* Ask the scheduler to drop the request (client gone); frees its KV at the next step. */
void srv_req_cancel(srv_req *r);

typedef struct srv_sched srv_sched;

typedef struct {
    int ctx;          /* positions per sequence */
    int max_seqs;     /* concurrent sequences */
    int max_queue;    /* waiting requests before submit answers SCHED_FULL */
    int step_tokens;  /* tokens per forward step (>= max_seqs) */
    int kv_blocks;    /* 0 = max_seqs * ctx / block */
    int prefix_cache; /* reuse prompt blocks */
    dl_dtype kv_dtype; /* KV cache: DT_F32 or DT_F16 (the CLI passes the backend's default) */
} srv_sched_opts;

enum { SCHED_OK = 0, SCHED_FULL = 1, SCHED_CLOSED = 2 };

/* Create the pool and workspace and start the thread. NULL + dl_errmsg. */
srv_sched *sched_create(dl_model *m, const tok_tokenizer *tk, const srv_sched_opts *o);
/* Queue a request (takes a reference). SCHED_OK / SCHED_FULL / SCHED_CLOSED. */
int sched_submit(srv_sched *s, srv_req *r);
/* Stop admitting, let running and queued requests finish for up to grace_s
 * seconds, then fail the rest (FIN_ERROR "server shutting down"). */
void sched_drain(srv_sched *s, double grace_s);
/* Stop the thread and free everything (after sched_drain). */
void sched_destroy(srv_sched *s);
/* Positions a sequence may hold (ctx, or less when the pool is smaller). */
int sched_capacity(const srv_sched *s);
int sched_ctx(const srv_sched *s);

typedef struct {
    int queue_len, running, max_seqs, kv_used, kv_cached, kv_total;
    uint64_t prefix_hits, prefix_queries;
} sched_stats;
void sched_get_stats(srv_sched *s, sched_stats *st);

double srv_now(void);
