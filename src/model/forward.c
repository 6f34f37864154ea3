/* Forward pass of the dense decoder families (llama, qwen2, qwen3), written
 * once against the backend op table. One call computes a flat batch of
 * tokens from several sequences against the paged KV cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "model/hybrid.h"
#include "model/model.h"

#define LOGIT_CHUNK 32 /* logit rows computed per lm_head pass */

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

/* Attention block of layer L: x += o_proj(attn(norm(x))). */
static void attn_block(model_ws *ws, const model_layer *L, dl_kvcache *kv, int T, int zc) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    int nh = c->n_heads, nkv = c->n_kv_heads, hd = c->head_dim;
    be->rmsnorm(be, ws->xn, ws->x, &L->attn_norm, T, c->hidden, c->rms_eps, zc);
    be->matmul(be, ws->q, ws->xn, &L->q, T);
    be->matmul(be, ws->k, ws->xn, &L->k, T);
    be->matmul(be, ws->v, ws->xn, &L->v, T);
    float *q = ws->q;
    if (ws->qg) {
        /* gated attention: q_proj rows are [query | gate] per head */
        be->copy2d(be, ws->xn, hd, ws->q, 2 * hd, T * nh, hd);
        be->copy2d(be, ws->qg, hd, ws->q + hd, 2 * hd, T * nh, hd);
        q = ws->xn;
    }
    if (L->q_norm.dtype != DT_COUNT) {
        be->rmsnorm(be, q, q, &L->q_norm, T * nh, hd, c->rms_eps, zc);
        be->rmsnorm(be, ws->k, ws->k, &L->k_norm, T * nkv, hd, c->rms_eps, zc);
    }
    be->rope(be, q, nh, hd, &m->rope);
    be->rope(be, ws->k, nkv, hd, &m->rope);
    be->kv_write(be, kv, L->kv_index, ws->k, ws->v);
    be->attention(be, ws->att, q, kv, L->kv_index, nh, 1.0f / sqrtf((float)hd));
    if (ws->qg) be->sigmoid_mul(be, ws->att, ws->qg, (size_t)T * nh * hd);
    be->matmul(be, ws->xn, ws->att, &L->o, T);
    be->add(be, ws->x, ws->xn, (size_t)T * c->hidden);
}

/* MLP block: x += down(silu(gate(norm(x))) * up(norm(x))). */
static void mlp_block(model_ws *ws, const model_layer *L, int T, int zc) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    be->rmsnorm(be, ws->xn, ws->x, &L->ffn_norm, T, c->hidden, c->rms_eps, zc);
    be->matmul(be, ws->gate, ws->xn, &L->gate, T);
    be->matmul(be, ws->up, ws->xn, &L->up, T);
    be->silu_mul(be, ws->gate, ws->gate, ws->up, (size_t)T * c->intermediate);
    be->matmul(be, ws->xn, ws->gate, &L->down, T);
    be->add(be, ws->x, ws->xn, (size_t)T * c->hidden);
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
    int zc = c->arch == ARCH_QWEN3_5 || c->arch == ARCH_QWEN3_NEXT;
    if (be->begin(be, b, kv)) return -1;
    be->embed(be, ws->x, &m->embed);
    for (int l = 0; l < c->n_layers; l++) {
        if (m->layers[l].hyb) hybrid_linear_attn(ws, &m->layers[l], T);
        else attn_block(ws, &m->layers[l], kv, T, zc);
        mlp_block(ws, &m->layers[l], T, zc);
    }
    int chunk = LOGIT_CHUNK < ws->max_tok ? LOGIT_CHUNK : ws->max_tok;
    for (int r0 = 0; r0 < n_logits; r0 += chunk) {
        int n = n_logits - r0 < chunk ? n_logits - r0 : chunk;
        be->gather_rows(be, ws->last, ws->x, logit_rows + r0, n, c->hidden);
        be->rmsnorm(be, ws->last, ws->last, &m->final_norm, n, c->hidden, c->rms_eps, zc);
        be->matmul(be, ws->logits, ws->last, &m->lm_head, n);
        if (be->to_host(be, logits_host + (size_t)r0 * V, ws->logits,
                        (size_t)n * V * sizeof(float)))
            return -1;
    }
    return be->sync(be);
}
