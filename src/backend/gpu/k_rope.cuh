/* Pieces of the q/k RMSNorm + RoPE arithmetic shared by every kernel that
 * applies it (k_ops.cu: rope, qk_rope_kv; k_attention.cu: the decode
 * attention with the norm and RoPE in its prologue), so that all of them
 * give the same bits: the norm weight read, one rotate-half pair, the
 * frequency table passed by value, and the RMS reduction order. */
#pragma once
#include "gpu_common.cuh"

/* Threads of the reference q/k norm kernels' blocks (k_ops.cu OP_T): the
 * head-row RMS sum is ordered as a block of this many threads sums it. */
#define DL_NORM_T 256

typedef struct {
    float f[256];
} rope_freq;

/* fr.f[i] = inv_freq[i] for i < half (<= 256), 0 above. */
static inline void rope_fill_freq(rope_freq *fr, const float *inv_freq, int half) {
    for (int i = 0; i < 256; i++) fr->f[i] = i < half ? inv_freq[i] : 0.0f;
}

/* w[i] (+ 1 for zero-centred norms, Qwen3.5) as fp32. */
static __device__ __forceinline__ float norm_w(const void *w, int wdt, int i, int zc) {
    float wv = dl_load_elem(w, wdt, i);
    return zc ? wv + 1.0f : wv;
}

/* One rotate-half pair at position p: the single definition every RoPE
 * kernel uses (explicit roundings, so no contraction differs between them):
 * the angle's cosine and sine (rope_cs), then the rotation (rope_rot). */
static __device__ __forceinline__ void rope_cs(float p, float f, float *c, float *s) {
    const float ang = __fmul_rn(p, f);
    *c = cosf(ang);
    *s = sinf(ang);
}
static __device__ __forceinline__ void rope_rot(float *xa, float *xb, float c, float s) {
    const float a = *xa, b = *xb;
    *xa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    *xb = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}
static __device__ __forceinline__ void rope_pair(float *xa, float *xb, float p, float f) {
    float c, s;
    rope_cs(p, f, &c, &s);
    rope_rot(xa, xb, c, s);
}

/* Sum of x[i]^2 over a row of d <= DL_NORM_T elements, computed by ONE warp
 * in exactly the order a DL_NORM_T-thread block computes it with one element
 * per thread (thread i: fmaf(x[i], x[i], 0); each warp's butterfly; the warp
 * totals added to 0 in warp order): lane l stands for thread v * DL_WARP + l
 * of every virtual warp v. Every lane gets the result. */
static __device__ __forceinline__ float dl_row_sumsq_warp(const float *x, int d, int lane) {
    float r = 0.0f;
#pragma unroll
    for (int v = 0; v < DL_NORM_T / DL_WARP; v++) {
        const int i = v * DL_WARP + lane;
        const float xi = i < d ? x[i] : 0.0f;
        r += dl_warp_sum(i < d ? fmaf(xi, xi, 0.0f) : 0.0f);
    }
    return r;
}
