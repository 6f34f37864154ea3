/* The backend op table. Model code is written once against these ops; the
 * CPU backend (always present) is the reference for every other backend.
 *
 * Memory: activations are fp32 buffers in backend memory (host for cpu,
 * device for cuda/hip), allocated with be->alloc. Weights are dl_weight in
 * their stored format; be->upload prepares a backend copy once at load.
 * Batch state: be->begin() is called once per forward with the flat batch
 * (token, sequence slot, position per row) and the KV cache; ops that need
 * positions / slots / block tables read them from that state.
 * Ops are asynchronous on GPU backends; be->sync() waits. Ops return nothing:
 * shape errors are programming errors caught by the model's load checks. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "quant/weight.h"

/* A flat batch of tokens from several sequences. Host arrays. */
typedef struct {
    int ntok;
    const int32_t *tokens; /* [ntok] token ids */
    const int32_t *seq;    /* [ntok] sequence slot (row of the block table) */
    const int32_t *pos;    /* [ntok] position within its sequence */
} dl_batch;

/* Paged KV cache. Block b of layer l holds block_size positions:
 * k[l] / v[l]: [n_blocks, block_size, n_kv_heads, head_dim] in `dtype`
 * (DT_F32 or DT_F16), backend memory. block_table[s * max_blocks_per_seq + j]
 * is the block holding positions [j*block_size, (j+1)*block_size) of slot s
 * (host array; backends mirror it in begin()). */
typedef struct {
    int n_layers;        /* layers that own KV (full attention only) */
    int n_kv_heads, head_dim, block_size, n_blocks;
    dl_dtype dtype;
    void **k, **v;       /* [n_layers] backend pointers */
    int max_seqs, max_blocks_per_seq;
    int32_t *block_table; /* [max_seqs * max_blocks_per_seq], -1 = unassigned */
} dl_kvcache;

/* RoPE frequencies: inv_freq[rot/2] on the host; `dev` is backend-private. */
typedef struct {
    int rot;           /* rotated dims per head (even) */
    float *inv_freq;   /* [rot/2] */
    void *dev;
} dl_rope;

typedef struct dl_backend dl_backend;
struct dl_backend {
    const char *name;
    void *impl;

    /* --- memory --- */
    void *(*alloc)(dl_backend *be, size_t bytes);   /* NULL + dl_errmsg on failure */
    void (*free)(dl_backend *be, void *p);
    int (*upload)(dl_backend *be, dl_weight *w);    /* prepare w->dev; 0 or -1 */
    void (*release)(dl_backend *be, dl_weight *w);  /* free w->dev */
    int (*to_host)(dl_backend *be, void *dst, const void *src, size_t bytes);
    int (*from_host)(dl_backend *be, void *dst, const void *src, size_t bytes);
    /* host memory to_host()/from_host() copy to and from fastest (page-locked
     * for the GPUs), or NULL (plain malloc is as good: the CPU, or the
     * memory could not be had); callers use be_host_alloc()/be_host_free() */
    void *(*host_alloc)(dl_backend *be, size_t bytes);
    void (*host_free)(dl_backend *be, void *p);
    int (*sync)(dl_backend *be);
    void (*destroy)(dl_backend *be);

    /* --- per-forward state --- */
    int (*begin)(dl_backend *be, const dl_batch *b, const dl_kvcache *kv);

    /* --- ops (row-major, rows = batch tokens unless stated) --- */
    /* x[ntok, d] = emb[tokens[i], :] */
    void (*embed)(dl_backend *be, float *x, const dl_weight *emb);
    /* y[r, :] = x[r, :] * rsqrt(mean(x^2) + eps) * (zc ? 1 + w : w); w [d]; y may == x */
    void (*rmsnorm)(dl_backend *be, float *y, const float *x, const dl_weight *w, int rows,
                    int d, float eps, int zc);
    /* y[M, n] = x[M, k] W^T (+ bias); any weight format */
    void (*matmul)(dl_backend *be, float *y, const float *x, const dl_weight *w, int M);
    /* rotate-half RoPE in place on x[ntok, nh * hd], first rope->rot dims of each head,
     * at batch positions */
    void (*rope)(dl_backend *be, float *x, int nh, int hd, const dl_rope *rope);
    /* write k, v [ntok, n_kv_heads * head_dim] into layer `layer` at (seq, pos) */
    void (*kv_write)(dl_backend *be, dl_kvcache *kv, int layer, const float *k, const float *v);
    /* out[ntok, nh*hd]: causal GQA attention of q[ntok, nh*hd] over the cache
     * positions [0, pos] of each token's sequence; head h uses kv head h/(nh/nkv) */
    void (*attention)(dl_backend *be, float *out, const float *q, const dl_kvcache *kv,
                      int layer, int nh, float scale);
    /* out[i] = silu(gate[i]) * up[i], i < n */
    void (*silu_mul)(dl_backend *be, float *out, const float *gate, const float *up, size_t n);
    /* y[i] += x[i] */
    void (*add)(dl_backend *be, float *y, const float *x, size_t n);
    /* copy rows: dst[i, :] = src[idx[i], :], i < n (idx host array), width d */
    void (*gather_rows)(dl_backend *be, float *dst, const float *src, const int32_t *idx, int n,
                        int d);
    /* 2-D strided copy: dst[r * dst_ld + c] = src[r * src_ld + c], r < rows, c < cols */
    void (*copy2d)(dl_backend *be, float *dst, int dst_ld, const float *src, int src_ld, int rows,
                   int cols);
    /* y[i] *= sigmoid(gate[i]), i < n */
    void (*sigmoid_mul)(dl_backend *be, float *y, const float *gate, size_t n);

    /* --- Gated DeltaNet (hybrid models: qwen3_5, qwen3_next); NULL if unsupported ---
     * Per-sequence state lives in backend memory indexed by the batch's slot;
     * a token at position 0 starts its sequence from a zero state. Tokens of
     * one sequence appear in the batch in position order. */
    /* Depthwise causal conv1d (kernel K, no bias) + SiLU: y, x [ntok, C]; w [C, K]
     * (dl_weight n = C, k = K, float dtype); state [max_seqs, K-1, C] fp32 holds
     * each slot's last K-1 inputs. y may not alias x. */
    void (*conv1d_silu)(dl_backend *be, float *y, const float *x, const dl_weight *w,
                        float *state, int C);
    /* Row-wise l2 normalisation in place: x = x / sqrt(sum(x^2) + eps) * scale; x [rows, d]. */
    void (*l2norm)(dl_backend *be, float *x, int rows, int d, float eps, float scale);
    /* Gates: beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias);
     * a, b, g, beta [ntok, Hv]; A_log, dt_bias [Hv] (float dtypes). */
    void (*gdn_gates)(dl_backend *be, float *g, float *beta, const float *a, const float *b,
                      const dl_weight *A_log, const dl_weight *dt_bias, int Hv);
    /* Gated delta rule per value head h (key head h / (Hv / Hk)), tokens in order:
     * S *= exp(g); u = k^T S; S += k (x) ((v - u) * beta); out = q^T S.
     * q, k [ntok, Hk*Dk] (normalised, q pre-scaled); v, out [ntok, Hv*Dv]; g, beta [ntok, Hv];
     * state [max_seqs, Hv, Dk, Dv] fp32. Runs of >= chunk tokens of one sequence may use the
     * chunked (WY) form; every algorithm agrees with the recurrence within 1e-4. */
    void (*gdn)(dl_backend *be, float *out, const float *q, const float *k, const float *v,
                const float *g, const float *beta, float *state, int Hk, int Hv, int Dk, int Dv);
    /* Gated RMSNorm: y[r, :] = rmsnorm(x[r, :]) * w * silu(z[r, :]); x, z, y [rows, d];
     * w [d] (plain weight, not zero-centred). y may alias x. */
    void (*gated_rmsnorm)(dl_backend *be, float *y, const float *x, const float *z,
                          const dl_weight *w, int rows, int d, float eps);

    /* --- fused ops and graph replay: optional (NULL = the model issues the
     * separate ops above). Each equals its separate ops bitwise. --- */
    /* ys[i][M, ws[i]->n] = x[M, k] ws[i]^T for i < n (weights sharing x: q/k/v, gate/up) */
    void (*matmul_n)(dl_backend *be, float *const *ys, const float *x, const dl_weight *const *ws, int n,
                     int M);
    /* out[M, n] = silu(x gate^T) * (x up^T), as matmul_n({gate_buf, up_buf}) then
     * silu_mul(out, gate_buf, up_buf); gate_buf / up_buf [M, n] are scratch that may be
     * left unwritten; out may alias gate_buf */
    void (*gate_up_silu)(dl_backend *be, float *out, float *gate_buf, float *up_buf, const float *x,
                         const dl_weight *gate, const dl_weight *up, int M);
    /* x[r] += res[r]; y[r] = rmsnorm(x[r]) as rmsnorm(); res may alias y */
    void (*add_rmsnorm)(dl_backend *be, float *x, const float *res, float *y, const dl_weight *w, int rows,
                        int d, float eps, int zc);
    /* rmsnorm(q heads, qn) and (k heads, kn) when qn/kn are not NULL, RoPE on both, then
     * kv_write(k, v): q [ntok, nh*hd], k, v [ntok, nkv*hd] */
    void (*qk_rope_kv)(dl_backend *be, dl_kvcache *kv, int layer, float *q, float *k, const float *v,
                       int nh, const dl_weight *qn, const dl_weight *kn, float eps, int zc,
                       const dl_rope *rope);
    /* qk_rope_kv(...) then attention(out, q, kv, layer, nh, scale), with the same out and
     * cache contents, except that q and k may be left as given (not normed or rotated) */
    void (*qk_rope_attention)(dl_backend *be, float *out, dl_kvcache *kv, int layer, float *q, float *k,
                              const float *v, int nh, const dl_weight *qn, const dl_weight *kn, float eps,
                              int zc, const dl_rope *rope, float scale);
    /* Record-and-replay of a whole forward, after begin(): graph_begin(key) returns 1 if a
     * recording of `key` was launched (issue no ops), 2 if the ops that follow are recorded
     * (then call graph_end), 0 to issue the ops as usual, -1 on error. `key` must identify
     * everything ops take by value (batch size, logit rows, buffers, cache). graph_end
     * launches the recording: 0, 1 if recording failed and the ops must be issued again
     * (nothing of them ran), -1 on error. */
    int (*graph_begin)(dl_backend *be, uint64_t key);
    int (*graph_end)(dl_backend *be);
};

/* Create a backend by name ("cpu", "cuda", "hip"). NULL + dl_errmsg (e.g. "backend 'cuda'
 * not compiled in: rebuild with -DDOTLM_CUDA=ON") on failure. */
dl_backend *be_create(const char *name, int nthreads);
void be_destroy(dl_backend *be);
/* Host buffers that be's to_host()/from_host() copy into and out of: the
 * backend's host_alloc memory (page-locked for the GPUs: a decode step's
 * logits row comes back in ~30 us instead of ~120-180 us through pageable
 * memory on the H200, bench/lab/d2h_lab.cu), else malloc (be NULL, the
 * CPU, or the backend's memory refused). NULL + dl_errmsg when neither
 * can be had. Freed only by be_host_free() with the same be, before
 * be_destroy(). 64-byte aligned. */
void *be_host_alloc(dl_backend *be, size_t bytes);
void be_host_free(dl_backend *be, void *p);
