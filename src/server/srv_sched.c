#include "server/srv_sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "server/srv_metrics.h"
#include "server/srv_stop.h"

/* ---------------- scheduler ---------------- */

typedef struct {
    srv_req *r;        /* NULL = unused */
    int slot;
    int n_ctx;         /* positions whose KV is computed */
    int32_t last;      /* token to feed next (decode phase) */
    int cap;           /* positions reserved */
    sampler smp;
    tok_stream ts;
    srv_stop stop;
    double t_last;     /* time of the last token (ITL) */
} seq;

struct srv_sched {
    dl_model *m;
    const tok_tokenizer *tk;
    srv_sched_opts o;
    kv_pool kv;
    model_ws ws;
    int V, nvalid;
    float *logits;     /* [max_seqs, V] */
    int32_t *b_tok, *b_seq, *b_pos, *b_rows; /* [step_tokens] */
    int *row_seq;      /* [max_seqs] seq index of each logit row */
    seq *seqs;         /* [max_seqs] */
    int n_running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_req **queue;   /* ring [max_queue] */
    int q_head, q_len;
    int closing, aborting, quit;
    pthread_t th;
    int started;
};

static void finish_seq(srv_sched *s, seq *q, srv_finish fin, const char *err) {
    srv_req *r = q->r;
    srv_buf tail = {0};
    if (fin != FIN_ERROR) {
        char buf[64];
        int w = s->tk ? tok_stream_flush(&q->ts, buf, sizeof buf) : 0;
        if (w > 0) srv_stop_feed(&q->stop, buf, (size_t)w, &tail);
        srv_stop_flush(&q->stop, &tail);
    }
    /* free the slot and its blocks first: whoever wakes on the request sees them released */
    pthread_mutex_lock(&s->mu);
    kv_slot_free(&s->kv, q->slot);
    q->r = NULL;
    s->n_running--;
    pthread_mutex_unlock(&s->mu);
    samp_free(&q->smp);
    srv_stop_free(&q->stop);
    atomic_fetch_add(&g_srv_metrics.finished[fin == FIN_STOP ? 0 : fin == FIN_LENGTH ? 1 : 3], 1);
    srv_hist_observe(&g_srv_metrics.e2e, srv_now() - r->t_arrive);
    pthread_mutex_lock(&r->mu);
    if (tail.n) sb_add(&r->text, tail.p, tail.n);
    r->finish = fin;
    if (err) snprintf(r->err, sizeof r->err, "%s", err);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    sb_free(&tail);
    srv_req_unref(r);
}

static void fail_req(srv_req *r, const char *msg) {
    pthread_mutex_lock(&r->mu);
    r->finish = FIN_ERROR;
    snprintf(r->err, sizeof r->err, "%s", msg);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&g_srv_metrics.finished[3], 1);
    srv_req_unref(r);
}

/* Try to start the queue head in a free seq; 1 if admitted, 0 if it must wait. Under mu. */
static int admit_one(srv_sched *s) {
    srv_req *r = s->queue[s->q_head];
    int qi = -1;
    for (int i = 0; i < s->o.max_seqs; i++)
        if (!s->seqs[i].r) {
            qi = i;
            break;
        }
    if (qi < 0) return 0;
    int slot = kv_slot_alloc(&s->kv);
    if (slot < 0) return 0;
    int cached = s->o.prefix_cache ? kv_prefix_attach(&s->kv, slot, r->prompt, r->n_prompt) : 0;
    int total = r->n_prompt + r->max_tokens;
    if (total > sched_capacity(s)) total = sched_capacity(s);
    if (kv_blocks_needed(&s->kv, slot, total) > kv_available(&s->kv) ||
        kv_reserve(&s->kv, slot, total)) {
        kv_slot_free(&s->kv, slot);
        return 0;
    }
    seq *q = &s->seqs[qi];
    memset(q, 0, sizeof *q);
    if (samp_init(&q->smp, &r->sp, s->V) ||
        srv_stop_init(&q->stop, (const char *const *)r->stops, r->n_stops)) {
        samp_free(&q->smp);
        kv_slot_free(&s->kv, slot);
        s->q_head = (s->q_head + 1) % s->o.max_queue;
        s->q_len--;
        fail_req(r, "out of memory");
        return 1;
    }
    samp_add_prompt(&q->smp, r->prompt, r->n_prompt);
    tok_stream_init(&q->ts, s->tk, 1);
    q->r = r;
    q->slot = slot;
    q->n_ctx = cached;
    q->cap = total;
    s->q_head = (s->q_head + 1) % s->o.max_queue;
    s->q_len--;
    s->n_running++;
    pthread_mutex_lock(&r->mu);
    r->n_cached = cached;
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&g_srv_metrics.prompt_tokens, (uint64_t)r->n_prompt);
    atomic_fetch_add(&g_srv_metrics.cached_tokens, (uint64_t)cached);
    return 1;
}

static void top_logprobs(const float *lg, int n, int k, srv_lp *out) {
    double mx = -INFINITY, lse = 0;
    for (int i = 0; i < n; i++)
        if (lg[i] > mx) mx = lg[i];
    for (int i = 0; i < n; i++) lse += exp((double)lg[i] - mx);
    lse = mx + log(lse);
    out->ntop = 0;
    for (int i = 0; i < n; i++) {
        float v = lg[i];
        if (v != v) continue;
        int j = out->ntop < k ? out->ntop++ : k;
        if (j == k && (k == 0 || v <= out->top_lp[k - 1])) continue;
        if (j == k) j = k - 1;
        while (j > 0 && out->top_lp[j - 1] < v) {
            out->top_lp[j] = out->top_lp[j - 1];
            out->top_id[j] = out->top_id[j - 1];
            j--;
        }
        out->top_lp[j] = v;
        out->top_id[j] = i;
    }
    for (int i = 0; i < out->ntop; i++) out->top_lp[i] = (float)(out->top_lp[i] - lse);
}

/* Sample from this sequence's logits row and publish the token. */
static void on_logits(srv_sched *s, seq *q, float *lg, double now) {
    srv_req *r = q->r;
    float lp = 0;
    int32_t id = samp_sample(&q->smp, lg, s->nvalid, r->logprobs ? &lp : NULL);
    srv_lp ent = {.id = id, .lp = lp};
    if (r->logprobs) top_logprobs(lg, s->nvalid, r->top_logprobs, &ent);
    srv_hist_observe(r->n_gen == 0 ? &g_srv_metrics.ttft : &g_srv_metrics.itl,
                     now - (r->n_gen == 0 ? r->t_arrive : q->t_last));
    q->t_last = now;
    if (!r->ignore_eos)
        for (int i = 0; i < r->n_stop_ids; i++)
            if (id == r->stop_ids[i]) {
                finish_seq(s, q, FIN_STOP, NULL);
                return;
            }
    samp_accept(&q->smp, id);
    atomic_fetch_add(&g_srv_metrics.gen_tokens, 1);
    char piece[512];
    int w = s->tk ? tok_stream_push(&q->ts, id, piece, sizeof piece) : 0;
    srv_buf vis = {0};
    int hit = w > 0 ? srv_stop_feed(&q->stop, piece, (size_t)w, &vis) : 0;
    pthread_mutex_lock(&r->mu);
    r->n_gen++;
    if (vis.n) sb_add(&r->text, vis.p, vis.n);
    if (r->logprobs) {
        if (r->n_lp == r->cap_lp) {
            int cap = r->cap_lp ? r->cap_lp * 2 : 16;
            srv_lp *p = realloc(r->lp, (size_t)cap * sizeof *p);
            if (p) r->lp = p, r->cap_lp = cap;
        }
        if (r->n_lp < r->cap_lp) r->lp[r->n_lp++] = ent;
    }
    int ngen = r->n_gen;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    sb_free(&vis);
    if (hit) finish_seq(s, q, FIN_STOP, NULL);
    else if (ngen >= r->max_tokens || r->n_prompt + ngen >= q->cap ||
             (r->deadline > 0 && now > r->deadline))
        finish_seq(s, q, FIN_LENGTH, NULL);
    else q->last = id;
}

/* One forward step over all running sequences. */
static void step(srv_sched *s) {
    int T = 0, nl = 0, budget = s->o.step_tokens;
    /* decodes first: one token each */
    for (int i = 0; i < s->o.max_seqs; i++) {
        seq *q = &s->seqs[i];
        if (!q->r || q->n_ctx < q->r->n_prompt) continue;
        s->b_tok[T] = q->last;
        s->b_seq[T] = q->slot;
        s->b_pos[T] = q->n_ctx;
        s->b_rows[nl] = T;
        s->row_seq[nl++] = i;
        T++;
    }
    /* prompt chunks with what is left (admission order = slot order is fine) */
    for (int i = 0; i < s->o.max_seqs && T < budget; i++) {
        seq *q = &s->seqs[i];
        if (!q->r || q->n_ctx >= q->r->n_prompt) continue;
        int c = q->r->n_prompt - q->n_ctx;
        if (c > budget - T) c = budget - T;
        for (int j = 0; j < c; j++) {
            s->b_tok[T + j] = q->r->prompt[q->n_ctx + j];
            s->b_seq[T + j] = q->slot;
            s->b_pos[T + j] = q->n_ctx + j;
        }
        T += c;
        if (q->n_ctx + c == q->r->n_prompt) {
            s->b_rows[nl] = T - 1;
            s->row_seq[nl++] = i;
        }
    }
    if (!T) return;
    dl_batch b = {.ntok = T, .tokens = s->b_tok, .seq = s->b_seq, .pos = s->b_pos};
    int rc = model_forward(&s->ws, &b, &s->kv.kv, s->b_rows, nl, s->logits);
    atomic_fetch_add(&g_srv_metrics.steps, 1);
    atomic_fetch_add(&g_srv_metrics.step_tokens, (uint64_t)T);
    if (rc) {
        char msg[200];
        snprintf(msg, sizeof msg, "forward pass failed: %s", dl_errmsg());
        LOGW("dotlm serve: %s", msg);
        for (int i = 0; i < s->o.max_seqs; i++)
            if (s->seqs[i].r) finish_seq(s, &s->seqs[i], FIN_ERROR, msg);
        return;
    }
    /* advance positions: decodes by 1, prompt chunks by their length */
    for (int t = 0; t < T; t++) {
        seq *q = NULL;
        for (int i = 0; i < s->o.max_seqs; i++)
            if (s->seqs[i].r && s->seqs[i].slot == s->b_seq[t]) q = &s->seqs[i];
        if (q && s->b_pos[t] == q->n_ctx) {
            q->n_ctx++;
            if (q->n_ctx == q->r->n_prompt && s->o.prefix_cache) {
                pthread_mutex_lock(&s->mu);
                kv_prefix_publish(&s->kv, q->slot, q->r->prompt, q->r->n_prompt);
                pthread_mutex_unlock(&s->mu);
            }
        }
    }
    double now = srv_now();
    for (int k = 0; k < nl; k++) {
        seq *q = &s->seqs[s->row_seq[k]];
        if (q->r) on_logits(s, q, s->logits + (size_t)k * s->V, now);
    }
}

static void *sched_main(void *arg) {
    srv_sched *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->quit && !s->n_running && !s->q_len && !s->aborting)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->quit && !s->n_running && !s->q_len) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        if (s->aborting) {
            while (s->q_len) {
                srv_req *r = s->queue[s->q_head];
                s->q_head = (s->q_head + 1) % s->o.max_queue;
                s->q_len--;
                fail_req(r, "server shutting down");
            }
        }
        /* drop cancelled queued requests, then admit in FIFO order */
        while (s->q_len && atomic_load(&s->queue[s->q_head]->cancel)) {
            srv_req *r = s->queue[s->q_head];
            s->q_head = (s->q_head + 1) % s->o.max_queue;
            s->q_len--;
            fail_req(r, "cancelled");
        }
        while (s->q_len && admit_one(s)) {
        }
        pthread_mutex_unlock(&s->mu);
        int aborting = s->aborting;
        for (int i = 0; i < s->o.max_seqs; i++) {
            seq *q = &s->seqs[i];
            if (!q->r) continue;
            if (aborting) finish_seq(s, q, FIN_ERROR, "server shutting down");
            else if (atomic_load(&q->r->cancel)) finish_seq(s, q, FIN_ERROR, "cancelled");
        }
        if (s->n_running) step(s);
        if (aborting && !s->n_running) {
            pthread_mutex_lock(&s->mu);
            int done = !s->q_len;
            if (done) s->quit = 1;
            pthread_mutex_unlock(&s->mu);
            if (done) break;
        }
    }
    return NULL;
}

int sched_capacity(const srv_sched *s) {
    int pool = s->kv.kv.n_blocks * s->kv.kv.block_size;
    return s->o.ctx < pool ? s->o.ctx : pool;
}

int sched_ctx(const srv_sched *s) { return s->o.ctx; }

srv_sched *sched_create(dl_model *m, const tok_tokenizer *tk, const srv_sched_opts *o) {
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return dl_err("out of memory"), NULL;
    s->m = m;
    s->tk = tk;
    s->o = *o;
    if (s->o.max_seqs < 1) s->o.max_seqs = 1;
    if (s->o.max_queue < 1) s->o.max_queue = 1;
    if (s->o.step_tokens < s->o.max_seqs) s->o.step_tokens = s->o.max_seqs;
    const int bs = 16;
    int blocks = s->o.kv_blocks > 0 ? s->o.kv_blocks : s->o.max_seqs * ((s->o.ctx + bs - 1) / bs);
    dl_dtype kvt = s->o.kv_dtype;
    if (kvt != DT_F32 && kvt != DT_F16) {
        free(s);
        return dl_err("KV cache type must be f32 or f16"), NULL;
    }
    s->V = model_vocab(m);
    s->nvalid = m->cfg.vocab < s->V ? m->cfg.vocab : s->V;
    if (tk && tok_vocab_size(tk) < s->nvalid) s->nvalid = tok_vocab_size(tk);
    if (m->n_kv_layers != m->cfg.n_layers) s->o.prefix_cache = 0; /* recurrent layers */
    /* the default pool (every slot at full context) may not fit: halve it
     * down to one full context; admission then queues on blocks instead */
    int min_blocks = (s->o.ctx + bs - 1) / bs;
    for (;;) {
        if (!kv_create(&s->kv, m->be, m->n_kv_layers, m->cfg.n_kv_heads, m->cfg.head_dim, bs, blocks,
                       s->o.max_seqs, s->o.ctx, kvt))
            break;
        if (s->o.kv_blocks > 0 || blocks <= min_blocks) {
            free(s);
            return NULL;
        }
        blocks = blocks / 2 > min_blocks ? blocks / 2 : min_blocks;
        LOGW("dotlm serve: %s; trying a pool of %d blocks", dl_errmsg(), blocks);
    }
    if (model_ws_init(&s->ws, m, s->o.step_tokens, s->o.max_seqs)) {
        kv_destroy(&s->kv);
        free(s);
        return NULL;
    }
    int n = s->o.step_tokens, ms = s->o.max_seqs;
    s->logits = be_host_alloc(m->be, (size_t)ms * s->V * sizeof(float)); /* page-locked on the GPUs */
    s->b_tok = malloc((size_t)n * sizeof(int32_t));
    s->b_seq = malloc((size_t)n * sizeof(int32_t));
    s->b_pos = malloc((size_t)n * sizeof(int32_t));
    s->b_rows = malloc((size_t)n * sizeof(int32_t));
    s->row_seq = malloc((size_t)ms * sizeof(int));
    s->seqs = calloc((size_t)ms, sizeof(seq));
    s->queue = calloc((size_t)s->o.max_queue, sizeof(srv_req *));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (!s->logits || !s->b_tok || !s->b_seq || !s->b_pos || !s->b_rows || !s->row_seq ||
        !s->seqs || !s->queue) {
        sched_destroy(s);
        return dl_err("out of memory for the scheduler"), NULL;
    }
    if (pthread_create(&s->th, NULL, sched_main, s)) {
        sched_destroy(s);
        return dl_err("cannot start the scheduler thread"), NULL;
    }
    s->started = 1;
    return s;
}

int sched_submit(srv_sched *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    int rc = SCHED_OK;
    if (s->closing) rc = SCHED_CLOSED;
    else if (s->q_len >= s->o.max_queue) rc = SCHED_FULL;
    else {
        srv_req_ref(r);
        s->queue[(s->q_head + s->q_len) % s->o.max_queue] = r;
        s->q_len++;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void sched_drain(srv_sched *s, double grace_s) {
    pthread_mutex_lock(&s->mu);
    s->closing = 1;
    pthread_mutex_unlock(&s->mu);
    double end = srv_now() + grace_s;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int busy = s->n_running || s->q_len;
        pthread_mutex_unlock(&s->mu);
        if (!busy || srv_now() > end) break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s->mu);
    s->aborting = 1;
    s->quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void sched_destroy(srv_sched *s) {
    if (!s) return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->closing = s->aborting = s->quit = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
    }
    for (int i = 0; s->queue && i < s->q_len; i++)
        fail_req(s->queue[(s->q_head + i) % s->o.max_queue], "server shutting down");
    for (int i = 0; s->seqs && i < s->o.max_seqs; i++)
        if (s->seqs[i].r) finish_seq(s, &s->seqs[i], FIN_ERROR, "server shutting down");
    model_ws_free(&s->ws);
    kv_destroy(&s->kv);
    be_host_free(s->m->be, s->logits);
    free(s->b_tok);
    free(s->b_seq);
    free(s->b_pos);
    free(s->b_rows);
    free(s->row_seq);
    free(s->seqs);
    free(s->queue);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

void sched_get_stats(srv_sched *s, sched_stats *st) {
    pthread_mutex_lock(&s->mu);
    st->queue_len = s->q_len;
    st->running = s->n_running;
    st->max_seqs = s->o.max_seqs;
    st->kv_used = kv_blocks_in_use(&s->kv);
    st->kv_cached = s->kv.n_lru;
    st->kv_total = s->kv.kv.n_blocks;
    st->prefix_hits = s->kv.prefix_hits;
    st->prefix_queries = s->kv.prefix_queries;
    pthread_mutex_unlock(&s->mu);
}
