/* Gated DeltaNet ops of the GPU backend (hybrid models: qwen3_5, qwen3_next):
 * conv1d_silu, l2norm, gdn_gates, gdn, gated_rmsnorm (contracts in
 * backend/backend.h). gpu_gdn.c (C) fills the op table and keeps the batch's
 * per-sequence grouping on the device; k_gdn.cu holds the kernels and the
 * launchers declared here.
 *
 * Kernel registry names (per launch): cuda.gdn.recurrent, cuda.gdn.chunked
 * (switch: DOTLM_DISABLE=cuda.gdn.chunked runs every group through the
 * recurrence), cuda.conv1d, cuda.l2norm, cuda.gdn_gates, cuda.gated_rmsnorm
 * ("hip." in HIP builds).
 *
 * Tuning (read once by gpu_gdn_install): DOTLM_GPU_GDN_CHUNK_MIN (default
 * 64) is the shortest run that sends a sequence to the chunked form;
 * DOTLM_GPU_GDN_BV (16 or 32; default: by grid size) is the chunked scan's
 * value-column tile. Neither changes any result bit. */
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
/* Tests and benchmarks: set the run length that sends a sequence to the
 * chunked form (>= 1; from the next begin()) and the chunked scan's column
 * tile (16, 32, 0 = by grid size). Returns -1 if be has no Gated DeltaNet
 * ops of this file. */
int gpu_gdn_tune(dl_backend *be, int chunk_min, int bv);

/* The batch as the kernels see it (device arrays, filled once per forward):
 * tokens grouped by sequence slot, groups in order of first appearance,
 * tokens of a group in batch (= position) order.
 *
 * A run is a maximal stretch of a group's tokens not restarting at
 * position 0. A group with a run of at least the chunk threshold is "long":
 * the chunked kernel takes the whole group, cut into chunks of at most
 * GK_GDN_CHUNK tokens that never cross a restart (a chunk restarts its slot
 * only at its first token). The other groups take the recurrence. Every
 * slot is one group, so the two kernels never touch the same state. */
typedef struct {
    int ntok, ngrp;
    int nlong, nch;      /* long groups (the tail of glist) and their chunks */
    const int32_t *seq;  /* [ntok] slot of each batch row */
    const int32_t *pos;  /* [ntok] position of each batch row */
    const int32_t *prev; /* [ntok] previous row of the same slot in the batch; -1 if none or pos 0 */
    const int32_t *idx;  /* [ntok] batch rows grouped by slot */
    const int32_t *off;  /* [ngrp + 1] group g is idx[off[g] .. off[g+1]) */
    const int32_t *slot; /* [ngrp] slot of group g */
    const int32_t *glist; /* [ngrp] group indices: the ngrp - nlong short groups, then the long ones */
    const int32_t *loff;  /* [nlong + 1] long group i owns chunks loff[i] .. loff[i+1] */
    const int32_t *cst;   /* [nch] first token of each chunk (offset into idx) */
    const int32_t *clen;  /* [nch] tokens of each chunk, 1 .. GK_GDN_CHUNK */
} gk_gdn_batch;

/* Largest conv kernel length, key and value head sizes the kernels take. */
#define GK_GDN_MAXK 16
#define GK_GDN_MAXD 256
/* Chunked form: chunk length, largest key head size (larger ones take the
 * recurrence), default run threshold, and the workspace row (floats per
 * token and value head: the chunk's 64-entry row of T / P, then
 * e^c, e^(c_last - c), beta, the batch row, the restart flag, padding). */
#define GK_GDN_CHUNK 64
#define GK_GDN_CHUNK_MAXDK 128
#define GK_GDN_CHUNK_MIN 64
#define GK_GDN_WSROW 72

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
 * registers for a group's whole run; groups b->glist[0 .. ng). Dk, Dv <=
 * GK_GDN_MAXD. */
void gk_gdn_recurrent(void *s, float *out, const float *q, const float *k, const float *v,
                      const float *g, const float *beta, float *state, int Hk, int Hv, int Dk,
                      int Dv, const gk_gdn_batch *b, int ng);
/* Gated delta rule in the chunked (WY / UT) form for the b->nlong long
 * groups (the tail of b->glist). Two launches: a preparation kernel, one
 * block per (chunk, key head), all chunks in parallel, writes each chunk's
 * T = (I + L)^-1 and decayed Q K^T into ws; then a scan kernel, one block
 * per (long group, value head, bv value columns), walks the group's chunks
 * in order with its state columns on chip. ws holds
 * Hv * b->ntok * GK_GDN_WSROW floats. bv: 16, 32, or 0 (chosen by grid
 * size). Needs 1 <= Dk <= GK_GDN_CHUNK_MAXDK, 1 <= Dv <= GK_GDN_MAXD,
 * Hv a multiple of Hk, and 1 <= nlong <= nch <= ntok; returns -1 without
 * launching anything otherwise (the caller then runs the recurrence), 0 when
 * launched. */
int gk_gdn_chunked(void *s, float *out, const float *q, const float *k, const float *v,
                   const float *g, const float *beta, float *state, float *ws, int Hk, int Hv,
                   int Dk, int Dv, const gk_gdn_batch *b, int bv);

#ifdef __cplusplus
}
#endif
