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
};

/* Create a backend by name ("cpu", "cuda", "hip"). NULL + dl_errmsg (e.g. "backend 'cuda'
 * not compiled in: rebuild with -DDOTLM_CUDA=ON") on failure. */
dl_backend *be_create(const char *name, int nthreads);
void be_destroy(dl_backend *be);
