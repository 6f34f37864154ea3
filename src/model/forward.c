/* Forward pass of the dense decoder families (llama, qwen2, qwen3), written
 * once against the backend op table. One call computes a flat batch of
 * tokens from several sequences against the paged KV cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "model/hybrid.h"
#include "model/model.h"

#define LOGIT_CHUNK 32   /* logit rows computed per lm_head pass */
#define GRAPH_MAX_TOK 32 /* batches up to this size may be replayed as graphs */

int model_ws_init(model_ws *ws, const dl_model *m, int max_tok, int max_seqs) {
    memset(ws, 0, sizeof *ws);
    ws->m = m;
    ws->max_tok = max_tok;
    ws->max_seqs = max_seqs;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    size_t T = (size_t)max_tok, H = (size_t)c->hidden, hd = (size_t)c->head_dim;
    size_t qw = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (m->layers[l].kv_index >= 0) qw = (size_t)m->layers[l].q.n;
    size_t kvw = (size_t)c->n_kv_heads * hd;
    size_t att = (size_t)c->n_heads * hd;
    size_t inter = (size_t)c->intermediate;
    size_t lw = LOGIT_CHUNK < T ? LOGIT_CHUNK : T;
    int gated = qw == 2 * att;
    struct {
        float **p;
        size_t n;
    } bufs[] = {{&ws->x, T * H},       {&ws->xn, T * (H > att ? H : att)},
                {&ws->q, T * qw},      {&ws->k, T * kvw},
                {&ws->v, T * kvw},     {&ws->att, T * att},
                {&ws->gate, T * inter}, {&ws->up, T * inter},
                {&ws->last, lw * H},    {&ws->logits, lw * (size_t)model_vocab(m)},
                {&ws->qg, gated ? T * att : 0}};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        if (!bufs[i].n) continue;
        *bufs[i].p = be->alloc(be, bufs[i].n * sizeof(float));
        if (!*bufs[i].p) {
            model_ws_free(ws);
            return dl_err_prefix("allocating forward buffers for %d tokens", max_tok);
        }
    }
    if (m->n_lin_layers && hybrid_ws_init(ws)) {
        model_ws_free(ws);
        return -1;
    }
    return 0;
}

void model_ws_free(model_ws *ws) {
    if (!ws->m) return;
    dl_backend *be = ws->m->be;
    if (ws->hyb) hybrid_ws_free(ws);
    float *bufs[] = {ws->x, ws->xn, ws->q, ws->k, ws->v, ws->att, ws->gate, ws->up, ws->last,
                     ws->logits, ws->qg};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) be->free(be, bufs[i]);
    memset(ws, 0, sizeof *ws);
}

/* ys[i] = x ws[i]^T for weights sharing x, in one backend call when it
 * has matmul_n (one activation quantization, one launch). */
void model_mm_n(dl_backend *be, float *const *ys, const float *x, const dl_weight *const *w, int n, int M) {
    if (be->matmul_n) {
        be->matmul_n(be, ys, x, w, n, M);
        return;
    }
    for (int i = 0; i < n; i++) be->matmul(be, ys[i], x, w[i], M);
}

/* Apply the residual delta a block left in ws->pending (x += delta). */
static void flush_residual(model_ws *ws, int T) {
    dl_backend *be = ws->m->be;
    if (!ws->pending) return;
    be->add(be, ws->x, ws->pending, (size_t)T * ws->m->cfg.hidden);
    ws->pending = NULL;
}

/* xn = rmsnorm(x) with weight w, after adding the pending residual delta
 * (fused into one op when the backend has add_rmsnorm). */
void model_norm_in(model_ws *ws, const dl_weight *w, int T, int zc) {
    const hf_config *c = &ws->m->cfg;
    dl_backend *be = ws->m->be;
    if (ws->pending && be->add_rmsnorm) {
        be->add_rmsnorm(be, ws->x, ws->pending, ws->xn, w, T, c->hidden, c->rms_eps, zc);
        ws->pending = NULL;
        return;
    }
    flush_residual(ws, T);
    be->rmsnorm(be, ws->xn, ws->x, w, T, c->hidden, c->rms_eps, zc);
}

/* Attention block of layer L: x += o_proj(attn(norm(x))); the add is left
 * pending in ws->pending for the next norm. */
static void attn_block(model_ws *ws, const model_layer *L, dl_kvcache *kv, int T, int zc) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    int nh = c->n_heads, nkv = c->n_kv_heads, hd = c->head_dim;
    model_norm_in(ws, &L->attn_norm, T, zc);
    float *const ys[3] = {ws->q, ws->k, ws->v};
    const dl_weight *const wq[3] = {&L->q, &L->k, &L->v};
    model_mm_n(be, ys, ws->xn, wq, 3, T);
    float *q = ws->q;
    if (ws->qg) {
        /* gated attention: q_proj rows are [query | gate] per head */
        be->copy2d(be, ws->xn, hd, ws->q, 2 * hd, T * nh, hd);
        be->copy2d(be, ws->qg, hd, ws->q + hd, 2 * hd, T * nh, hd);
        q = ws->xn;
    }
    const int qkn = L->q_norm.dtype != DT_COUNT;
    const float scale = 1.0f / sqrtf((float)hd);
    if (be->qk_rope_attention) {
        be->qk_rope_attention(be, ws->att, kv, L->kv_index, q, ws->k, ws->v, nh, qkn ? &L->q_norm : NULL,
                              qkn ? &L->k_norm : NULL, c->rms_eps, zc, &m->rope, scale);
    } else if (be->qk_rope_kv) {
        be->qk_rope_kv(be, kv, L->kv_index, q, ws->k, ws->v, nh, qkn ? &L->q_norm : NULL,
                       qkn ? &L->k_norm : NULL, c->rms_eps, zc, &m->rope);
    } else {
        if (qkn) {
            be->rmsnorm(be, q, q, &L->q_norm, T * nh, hd, c->rms_eps, zc);
            be->rmsnorm(be, ws->k, ws->k, &L->k_norm, T * nkv, hd, c->rms_eps, zc);
        }
        be->rope(be, q, nh, hd, &m->rope);
        be->rope(be, ws->k, nkv, hd, &m->rope);
        be->kv_write(be, kv, L->kv_index, ws->k, ws->v);
    }
    if (!be->qk_rope_attention) be->attention(be, ws->att, q, kv, L->kv_index, nh, scale);
    if (ws->qg) be->sigmoid_mul(be, ws->att, ws->qg, (size_t)T * nh * hd);
    be->matmul(be, ws->xn, ws->att, &L->o, T);
    ws->pending = ws->xn;
}

/* MLP block: x += down(silu(gate(norm(x))) * up(norm(x))), add left pending. */
static void mlp_block(model_ws *ws, const model_layer *L, int T, int zc) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    model_norm_in(ws, &L->ffn_norm, T, zc);
    if (be->gate_up_silu) {
        be->gate_up_silu(be, ws->gate, ws->gate, ws->up, ws->xn, &L->gate, &L->up, T);
    } else {
        float *const ys[2] = {ws->gate, ws->up};
        const dl_weight *const wg[2] = {&L->gate, &L->up};
        model_mm_n(be, ys, ws->xn, wg, 2, T);
        be->silu_mul(be, ws->gate, ws->gate, ws->up, (size_t)T * c->intermediate);
    }
    be->matmul(be, ws->xn, ws->gate, &L->down, T);
    ws->pending = ws->xn;
}

/* Qwen3.5 / Qwen3-Next RMSNorms scale by (1 + w). */
static int zero_centred(const hf_config *c) { return c->arch == ARCH_QWEN3_5 || c->arch == ARCH_QWEN3_NEXT; }

/* logits[n, V] of batch rows rows[0..n) (n <= the logit chunk). */
static void logits_chunk(model_ws *ws, const int32_t *rows, int n, int zc) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    be->gather_rows(be, ws->last, ws->x, rows, n, c->hidden);
    be->rmsnorm(be, ws->last, ws->last, &m->final_norm, n, c->hidden, c->rms_eps, zc);
    be->matmul(be, ws->logits, ws->last, &m->lm_head, n);
}

/* Every op of one forward up to the logits of the first `chunk` rows (or
 * none when n_logits == 0): the part a backend may record as a graph. */
static void forward_ops(model_ws *ws, dl_kvcache *kv, int T, const int32_t *logit_rows, int n_logits) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    int zc = zero_centred(c);
    ws->pending = NULL;
    be->embed(be, ws->x, &m->embed);
    for (int l = 0; l < c->n_layers; l++) {
        if (m->layers[l].hyb) {
            hybrid_linear_attn(ws, &m->layers[l], T);
        } else {
            attn_block(ws, &m->layers[l], kv, T, zc);
        }
        mlp_block(ws, &m->layers[l], T, zc);
    }
    flush_residual(ws, T);
    if (n_logits > 0) logits_chunk(ws, logit_rows, n_logits, zc);
}

/* The graph key of a forward: everything its ops take by value. 0 = do
 * not record (prefill-sized batches, hybrid models whose recurrent-state
 * ops take per-batch host data, several logit chunks). */
static uint64_t graph_key(const model_ws *ws, const dl_kvcache *kv, int T, const int32_t *rows, int n) {
    const dl_model *m = ws->m;
    if (!m->be->graph_begin || m->n_lin_layers || T > GRAPH_MAX_TOK || n > LOGIT_CHUNK ||
        n > ws->max_tok)
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the by-value inputs */
    uint64_t v[5] = {(uint64_t)T, (uint64_t)n, (uint64_t)(uintptr_t)ws->x, (uint64_t)(uintptr_t)kv->k,
                     kv->n_layers ? (uint64_t)(uintptr_t)kv->k[0] : 0};
    for (int i = 0; i < 5 + n; i++) {
        uint64_t x = i < 5 ? v[i] : (uint64_t)(uint32_t)rows[i - 5];
        for (int b = 0; b < 8; b++) h = (h ^ ((x >> (8 * b)) & 255)) * 1099511628211ull;
    }
    return h ? h : 1;
}

int model_forward(model_ws *ws, const dl_batch *b, dl_kvcache *kv, const int32_t *logit_rows,
                  int n_logits, float *logits_host) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    int T = b->ntok, V = model_vocab(m);
    if (T <= 0 || T > ws->max_tok)
        return dl_err("batch of %d tokens (workspace holds %d)", T, ws->max_tok);
    for (int i = 0; i < T; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= c->vocab)
            return dl_err("token id %d at batch row %d is outside the vocabulary [0, %d)",
                          b->tokens[i], i, c->vocab);
        if (b->seq[i] < 0 || b->seq[i] >= kv->max_seqs || b->pos[i] < 0 ||
            b->pos[i] >= kv->max_blocks_per_seq * kv->block_size ||
            kv->block_table[(size_t)b->seq[i] * kv->max_blocks_per_seq +
                            b->pos[i] / kv->block_size] < 0)
            return dl_err("batch row %d: position %d of slot %d has no KV block reserved", i,
                          b->pos[i], b->seq[i]);
    }
    for (int i = 0; i < n_logits; i++)
        if (logit_rows[i] < 0 || logit_rows[i] >= T)
            return dl_err("logit row %d outside the batch of %d", logit_rows[i], T);
    if (be->begin(be, b, kv)) return -1;
    int chunk = LOGIT_CHUNK < ws->max_tok ? LOGIT_CHUNK : ws->max_tok;
    int first = n_logits < chunk ? n_logits : chunk;
    uint64_t key = graph_key(ws, kv, T, logit_rows, n_logits);
    int gr = key ? be->graph_begin(be, key) : 0;
    if (gr < 0) return -1;
    if (gr != 1) {
        forward_ops(ws, kv, T, logit_rows, first);
        if (gr == 2) {
            int e = be->graph_end(be);
            if (e < 0) return -1;
            if (e == 1) forward_ops(ws, kv, T, logit_rows, first);
        }
    }
    for (int r0 = 0; r0 < n_logits; r0 += chunk) {
        int n = n_logits - r0 < chunk ? n_logits - r0 : chunk;
        if (r0) logits_chunk(ws, logit_rows + r0, n, zero_centred(c));
        if (be->to_host(be, logits_host + (size_t)r0 * V, ws->logits, (size_t)n * V * sizeof(float)))
            return -1;
    }
    return be->sync(be);
}
