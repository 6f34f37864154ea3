/* Gated DeltaNet ops of the GPU backend (hybrid models: qwen3_5, qwen3_next):
 * conv1d_silu, l2norm, gdn_gates, gdn, gated_rmsnorm (contracts in
 * backend/backend.h). gpu_gdn.c (C) fills the op table and keeps the batch's
 * per-sequence grouping on the device; k_gdn.cu holds the kernels and the
 * launchers declared here.
 *
 * Kernel registry names (per launch): cuda.gdn.recurrent, cuda.conv1d,
 * cuda.l2norm, cuda.gdn_gates, cuda.gated_rmsnorm ("hip." in HIP builds). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dl_backend dl_backend;

/* Fill the Gated DeltaNet slots of a GPU op table (copy2d / sigmoid_mul only
 * where still NULL). Wraps be->begin (to group the batch by sequence slot),
 * be->sync (to report errors of these void ops) and be->destroy (to free
 * what it allocated): call it after those three are set. */
void gpu_gdn_install(dl_backend *be);

/* The batch as the kernels see it (device arrays, filled once per forward):
 * tokens grouped by sequence slot, groups in order of first appearance,
 * tokens of a group in batch (= position) order. */
typedef struct {
    int ntok, ngrp;
    const int32_t *seq;  /* [ntok] slot of each batch row */
    const int32_t *pos;  /* [ntok] position of each batch row */
    const int32_t *prev; /* [ntok] previous row of the same slot in the batch; -1 if none or pos 0 */
    const int32_t *idx;  /* [ntok] batch rows grouped by slot */
    const int32_t *off;  /* [ngrp + 1] group g is idx[off[g] .. off[g+1]) */
    const int32_t *slot; /* [ngrp] slot of group g */
} gk_gdn_batch;

/* Largest conv kernel length, key and value head sizes the kernels take. */
#define GK_GDN_MAXK 16
#define GK_GDN_MAXD 256

/* Depthwise causal conv1d + SiLU; w [C, ld] (K taps) in dtype wdt; state
 * [slots, K-1, C]. Two launches: outputs (reading the old state), then the
 * state update of every slot in the batch. */
void gk_gdn_conv1d_silu(void *s, float *y, const float *x, const void *w, int wdt, int64_t wld, int K,
                        float *state, int C, const gk_gdn_batch *b);
/* x[r, :] = x[r, :] / sqrt(sum x^2 + eps) * scale, x [rows, d] */
void gk_gdn_l2norm(void *s, float *x, int rows, int d, float eps, float scale);
/* beta = sigmoid(b); g = -exp(A_log[h]) * softplus(a + dt_bias[h]); [ntok, Hv] */
void gk_gdn_gates(void *s, float *g, float *beta, const float *a, const float *b, const void *A_log,
                  int adt, const void *dt_bias, int bdt, int ntok, int Hv);
/* y[r, :] = x * rsqrt(mean x^2 + eps) * w * silu(z); y may alias x */
void gk_gdn_gated_rmsnorm(void *s, float *y, const float *x, const float *z, const void *w, int wdt,
                          int rows, int d, float eps);
/* Gated delta rule, token by token, state [slots, Hv, Dk, Dv] fp32 held in
 * registers for a group's whole run. Dk, Dv <= GK_GDN_MAXD. */
void gk_gdn_recurrent(void *s, float *out, const float *q, const float *k, const float *v,
                      const float *g, const float *beta, float *state, int Hk, int Hv, int Dk,
                      int Dv, const gk_gdn_batch *b);

#ifdef __cplusplus
}
#endif
