/* Gated DeltaNet (linear attention) layers of the Qwen3.5 / Qwen3-Next
 * hybrid models: weight binding, per-slot state, and the layer forward,
 * written against the backend op table.
 *
 * Layer forward over a batch of T tokens (FORMATS.md, "Qwen3.5 / Qwen3-Next
 * hybrid"):
 *   xn = rmsnorm_zc(x); mixed = [q | k | v] = in_proj_qkv(xn); z = in_proj_z(xn);
 *   b, a = in_proj_b(xn), in_proj_a(xn);  (Qwen3-Next: un-interleaved from
 *   in_proj_qkvz / in_proj_ba, per key head [q | k | v | z] and [b | a])
 *   mixed = silu(causal_conv1d(mixed)); q, k l2-normalised (q times 1/sqrt(Dk));
 *   beta = sigmoid(b); g = -exp(A_log) softplus(a + dt_bias);
 *   o = gated_delta_rule(q, k, v, g, beta); o = rmsnorm(o) * w * silu(z) per head;
 *   x += out_proj(o). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "model/hybrid.h"

#define HYB_MAX_KERNEL 16 /* longest conv kernel the backends take */
#define HYB_L2_EPS 1e-6f  /* l2norm eps of q / k (FLA / transformers) */

/* Scratch and per-slot states of the hybrid layers (model_ws.hyb). */
typedef struct {
    int Hk, Hv, Dk, Dv, K, conv_dim;
    size_t conv_slot, rec_slot; /* floats of one slot's conv / recurrent state */
    float *proj;   /* [T, Hk*(2*Dk + 2*Dv*Hv/Hk)] fused qkvz projection (qwen3_next) */
    float *ba;     /* [T, 2*Hv] fused ba projection (qwen3_next) */
    float *mixed;  /* [T, conv_dim] conv input [q | k | v] */
    float *conv;   /* [T, conv_dim] conv output */
    float *q, *k;  /* [T, Hk*Dk] */
    float *v, *z, *o; /* [T, Hv*Dv] */
    float *a, *b, *g, *beta; /* [T, Hv] */
    float *conv_state; /* [n_lin, max_seqs, K-1, conv_dim] */
    float *rec_state;  /* [n_lin, max_seqs, Hv, Dk, Dv] fp32 */
} hybrid_ws;

/* Bind the depthwise conv weight `name` stored [conv_dim, 1, K] as a
 * [conv_dim, K] dl_weight. */
static int bind_conv(dl_model *m, dl_weight *w, const char *name, int64_t C, int64_t K) {
    const st_tensor *t = st_find(m->st, name);
    if (!t) return dl_err("%s: tensor '%s' is missing from the checkpoint", m->dir, name);
    int ok = (t->ndim == 3 && t->shape[0] == C && t->shape[1] == 1 && t->shape[2] == K) ||
             (t->ndim == 2 && t->shape[0] == C && t->shape[1] == K);
    if (!ok)
        return dl_err("%s: tensor '%s' has %d dims (first %lld), expected [%lld, 1, %lld]", m->dir,
                      name, t->ndim, (long long)(t->ndim ? t->shape[0] : 0), (long long)C,
                      (long long)K);
    if (t->dtype != DT_F32 && t->dtype != DT_F16 && t->dtype != DT_BF16)
        return dl_err("%s: tensor '%s' has dtype %s; the conv1d weight must be F32, F16 or BF16",
                      m->dir, name, dt_name(t->dtype));
    memset(w, 0, sizeof *w);
    w->name = t->name;
    w->dtype = t->dtype;
    w->n = C;
    w->k = K;
    w->ld = K;
    w->data = t->data;
    m->weight_bytes += t->nbytes;
    return 0;
}

int hybrid_bind_layer(dl_model *m, int i, const char *pre) {
    const hf_config *c = &m->cfg;
    int H = c->hidden, Hk = c->lin_n_key_heads, Hv = c->lin_n_value_heads;
    int Dk = c->lin_key_dim, Dv = c->lin_value_dim, K = c->lin_conv_kernel;
    if (Hk <= 0 || Hv <= 0 || Dk <= 0 || Dv <= 0 || K <= 0 || Hv % Hk)
        return dl_err("%s: linear attention needs linear_num_value_heads (%d) a multiple of "
                      "linear_num_key_heads (%d) and positive head dims / conv kernel",
                      m->dir, Hv, Hk);
    if (K > HYB_MAX_KERNEL)
        return dl_err("%s: linear_conv_kernel_dim %d exceeds what dotlm runs (%d)", m->dir, K,
                      HYB_MAX_KERNEL);
    hybrid_layer *h = calloc(1, sizeof *h);
    if (!h) return dl_err("out of memory");
    m->layers[i].hyb = h;
    h->lin_index = m->n_lin_layers;
    int64_t kd = (int64_t)Hk * Dk, vd = (int64_t)Hv * Dv, conv_dim = 2 * kd + vd;
    char b[384], b2[384];
#define B(fmt) (snprintf(b, sizeof b, "%slayers.%d.linear_attn." fmt, pre, i), b)
    snprintf(b2, sizeof b2, "%slayers.%d.linear_attn.in_proj_qkvz.weight", pre, i);
    h->fused = st_find(m->st, b2) != NULL;
    if (h->fused) {
        int r = Hv / Hk;
        if (model_bind_mat(m, &h->in_qkvz, B("in_proj_qkvz"), (int64_t)Hk * (2 * Dk + 2 * r * Dv),
                           H, 0) ||
            model_bind_mat(m, &h->in_ba, B("in_proj_ba"), 2 * (int64_t)Hv, H, 0))
            return -1;
    } else {
        if (model_bind_mat(m, &h->in_qkv, B("in_proj_qkv"), conv_dim, H, 0) ||
            model_bind_mat(m, &h->in_z, B("in_proj_z"), vd, H, 0) ||
            model_bind_mat(m, &h->in_b, B("in_proj_b"), Hv, H, 0) ||
            model_bind_mat(m, &h->in_a, B("in_proj_a"), Hv, H, 0))
            return -1;
    }
    if (bind_conv(m, &h->conv, B("conv1d.weight"), conv_dim, K) ||
        model_bind_vec(m, &h->A_log, B("A_log"), Hv) ||
        model_bind_vec(m, &h->dt_bias, B("dt_bias"), Hv) ||
        model_bind_vec(m, &h->norm, B("norm.weight"), Dv) ||
        model_bind_mat(m, &h->out, B("out_proj"), H, vd, 0))
        return -1;
#undef B
    return 0;
}

/* Every weight of a hybrid layer (absent ones have data == NULL). */
static int layer_weights(hybrid_layer *h, dl_weight **out) {
    dl_weight *all[] = {&h->in_qkv, &h->in_z, &h->in_b,    &h->in_a, &h->in_qkvz, &h->in_ba,
                        &h->conv,   &h->A_log, &h->dt_bias, &h->norm, &h->out};
    int n = 0;
    for (size_t j = 0; j < sizeof all / sizeof *all; j++)
        if (all[j]->data) out[n++] = all[j];
    return n;
}

int hybrid_upload(dl_model *m, hybrid_layer *h) {
    dl_weight *ws[16];
    int n = layer_weights(h, ws);
    for (int j = 0; j < n; j++)
        if (m->be->upload(m->be, ws[j])) return dl_err_prefix("uploading '%s'", ws[j]->name);
    return 0;
}

void hybrid_release(dl_model *m, hybrid_layer *h) {
    dl_weight *ws[16];
    int n = layer_weights(h, ws);
    for (int j = 0; j < n; j++)
        if (ws[j]->dev) m->be->release(m->be, ws[j]);
}

int hybrid_ws_init(model_ws *ws) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    if (!be->conv1d_silu || !be->l2norm || !be->gdn_gates || !be->gdn || !be->gated_rmsnorm ||
        !be->copy2d)
        return dl_err("%s (%s): Gated DeltaNet layers are not run by this build's '%s' backend",
                      m->dir, c->model_type, be->name);
    hybrid_ws *w = calloc(1, sizeof *w);
    if (!w) return dl_err("out of memory");
    ws->hyb = w;
    w->Hk = c->lin_n_key_heads;
    w->Hv = c->lin_n_value_heads;
    w->Dk = c->lin_key_dim;
    w->Dv = c->lin_value_dim;
    w->K = c->lin_conv_kernel;
    size_t T = (size_t)ws->max_tok, kd = (size_t)w->Hk * w->Dk, vd = (size_t)w->Hv * w->Dv;
    w->conv_dim = (int)(2 * kd + vd);
    w->conv_slot = (size_t)(w->K - 1) * (size_t)w->conv_dim;
    w->rec_slot = (size_t)w->Hv * w->Dk * w->Dv;
    size_t nl = (size_t)m->n_lin_layers, S = (size_t)ws->max_seqs;
    int fused = 0;
    for (int l = 0; l < c->n_layers; l++)
        if (m->layers[l].hyb && m->layers[l].hyb->fused) fused = 1;
    struct {
        float **p;
        size_t n;
    } bufs[] = {{&w->proj, fused ? T * (2 * kd + 2 * vd) : 0},
                {&w->ba, fused ? T * 2 * (size_t)w->Hv : 0},
                {&w->mixed, T * w->conv_dim},
                {&w->conv, T * w->conv_dim},
                {&w->q, T * kd},
                {&w->k, T * kd},
                {&w->v, T * vd},
                {&w->z, T * vd},
                {&w->o, T * vd},
                {&w->a, T * w->Hv},
                {&w->b, T * w->Hv},
                {&w->g, T * w->Hv},
                {&w->beta, T * w->Hv},
                {&w->conv_state, nl * S * w->conv_slot},
                {&w->rec_state, nl * S * w->rec_slot}};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        if (!bufs[i].n) continue;
        *bufs[i].p = be->alloc(be, bufs[i].n * sizeof(float));
        if (!*bufs[i].p)
            return dl_err_prefix("allocating Gated DeltaNet buffers for %d tokens, %d slots",
                                 ws->max_tok, ws->max_seqs);
    }
    return 0;
}

void hybrid_ws_free(model_ws *ws) {
    hybrid_ws *w = ws->hyb;
    if (!w) return;
    dl_backend *be = ws->m->be;
    float *bufs[] = {w->proj, w->ba, w->mixed, w->conv, w->q, w->k, w->v, w->z,
                     w->o, w->a, w->b, w->g, w->beta, w->conv_state, w->rec_state};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) be->free(be, bufs[i]);
    free(w);
    ws->hyb = NULL;
}

/* Qwen3-Next: split the fused projections (per key head [q | k | v | z] and
 * [b | a], v / z / b / a covering that key head's Hv/Hk value heads) into
 * w->q, w->k, w->v, w->z, w->b, w->a, and lay out mixed = [q | k | v]. */
static void unfuse(dl_backend *be, hybrid_ws *w, int T) {
    int Hk = w->Hk, Dk = w->Dk, r = w->Hv / w->Hk, rv = r * w->Dv;
    int W = 2 * Dk + 2 * rv, rows = T * Hk, kd = Hk * Dk, vd = w->Hv * w->Dv;
    be->copy2d(be, w->q, Dk, w->proj, W, rows, Dk);
    be->copy2d(be, w->k, Dk, w->proj + Dk, W, rows, Dk);
    be->copy2d(be, w->v, rv, w->proj + 2 * Dk, W, rows, rv);
    be->copy2d(be, w->z, rv, w->proj + 2 * Dk + rv, W, rows, rv);
    be->copy2d(be, w->b, r, w->ba, 2 * r, rows, r);
    be->copy2d(be, w->a, r, w->ba + r, 2 * r, rows, r);
    be->copy2d(be, w->mixed, w->conv_dim, w->q, kd, T, kd);
    be->copy2d(be, w->mixed + kd, w->conv_dim, w->k, kd, T, kd);
    be->copy2d(be, w->mixed + 2 * kd, w->conv_dim, w->v, vd, T, vd);
}

void hybrid_linear_attn(model_ws *ws, const model_layer *L, int T) {
    const dl_model *m = ws->m;
    const hf_config *c = &m->cfg;
    dl_backend *be = m->be;
    const hybrid_layer *h = L->hyb;
    hybrid_ws *w = ws->hyb;
    int kd = w->Hk * w->Dk, vd = w->Hv * w->Dv;
    model_norm_in(ws, &L->attn_norm, T, 1);
    if (h->fused) {
        be->matmul(be, w->proj, ws->xn, &h->in_qkvz, T);
        be->matmul(be, w->ba, ws->xn, &h->in_ba, T);
        unfuse(be, w, T);
    } else {
        float *const y1[2] = {w->mixed, w->z}, *const y2[2] = {w->b, w->a};
        const dl_weight *const w1[2] = {&h->in_qkv, &h->in_z}, *const w2[2] = {&h->in_b, &h->in_a};
        model_mm_n(be, y1, ws->xn, w1, 2, T);
        model_mm_n(be, y2, ws->xn, w2, 2, T);
    }
    size_t S = (size_t)ws->max_seqs;
    be->conv1d_silu(be, w->conv, w->mixed, &h->conv,
                    w->conv_state + (size_t)h->lin_index * S * w->conv_slot, w->conv_dim);
    be->copy2d(be, w->q, kd, w->conv, w->conv_dim, T, kd);
    be->copy2d(be, w->k, kd, w->conv + kd, w->conv_dim, T, kd);
    be->copy2d(be, w->v, vd, w->conv + 2 * kd, w->conv_dim, T, vd);
    be->l2norm(be, w->q, T * w->Hk, w->Dk, HYB_L2_EPS, 1.0f / sqrtf((float)w->Dk));
    be->l2norm(be, w->k, T * w->Hk, w->Dk, HYB_L2_EPS, 1.0f);
    be->gdn_gates(be, w->g, w->beta, w->a, w->b, &h->A_log, &h->dt_bias, w->Hv);
    be->gdn(be, w->o, w->q, w->k, w->v, w->g, w->beta,
            w->rec_state + (size_t)h->lin_index * S * w->rec_slot, w->Hk, w->Hv, w->Dk, w->Dv);
    be->gated_rmsnorm(be, w->o, w->o, w->z, &h->norm, T * w->Hv, w->Dv, c->rms_eps);
    be->matmul(be, ws->xn, w->o, &h->out, T);
    ws->pending = ws->xn; /* x += delta, in the next norm */
}
