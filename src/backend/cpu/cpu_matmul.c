/* CPU matmul: y[M, n] = x[M, k] W^T (+ bias) for F32 / F16 / BF16 weights;
 * FP8 / INT8 weights go to qmm_matmul() in src/quant.
 *
 * Fast path (AVX2/FMA/F16C): work is split over output rows of W (columns
 * of y) in chunks handed to the thread pool. Inside a chunk:
 *   M < 4  (decode, GEMV): groups of 4 weight rows, each streamed from memory
 *          once and multiplied with every row of x (1x4 micro-kernel);
 *   4 <= M <= 8 (batched decode, rows spread): 4 rows of x x 2 spread weight
 *          rows over the whole k; on AVX-512 CPUs, 2 <= M <= 8: all M rows
 *          x 4..8 weight rows (MM_BATCH);
 *   M > 8 (prefill; M >= 4 with spreading off): 4 rows of x x 2 weight rows
 *          (4x2 micro-kernel) over the chunk, so each converted weight
 *          vector is reused 4 times and the chunk stays in L2 across the M
 *          loop; on AVX-512 CPUs 6 x 4 (the same ymm arithmetic with 32
 *          registers, MM_WIDE).
 * Determinism / batch invariance: every micro-kernel computes an output
 * element the same way — one 8-lane fp32 FMA accumulator over k in steps of
 * 8 (the k tail zero-padded to a full step), a fixed-order horizontal sum,
 * then + bias — so y[m, n] is bitwise independent of M, the tile shape, the
 * chunking and the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_quant_hook.h"
#include "backend/cpu/cpu_simd.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/log.h"
#include "core/rowspread.h"
#include "core/tpool.h"

#if !CPU_HAVE_QMATMUL
/* Fallback while src/quant provides no quantized matmul: a strong
 * definition elsewhere replaces it at link time. */
__attribute__((weak)) int qmm_matmul(float *y, const float *x, const dl_weight *w, int M,
                                     tpool *tp) {
    (void)y, (void)x, (void)M, (void)tp;
    return dl_err("weight format %s not supported by the CPU backend", dt_name(w->dtype));
}
#endif

/* Batches up to this M are memory-bound: their tiles take spread-out rows
 * (core/rowspread.h); larger M use the k-blocked prefill tiles. */
enum { MM_SPREAD_MAX_M = 8 };

static kreg_kernel K_f32 = KREG_KERNEL("cpu.matmul.f32.avx2", "AVX2 f32-weight GEMV/GEMM");
static kreg_kernel K_f16 = KREG_KERNEL("cpu.matmul.f16.avx2", "AVX2/F16C f16-weight GEMV/GEMM");
static kreg_kernel K_bf16 = KREG_KERNEL("cpu.matmul.bf16.avx2", "AVX2 bf16-weight GEMV/GEMM");
/* the AVX-512VL tiles' descriptions, per weight type T */
#define MM_WIDE_DESC(T) \
    "AVX-512VL " T "-weight 6x4 prefill tile (M > 8, or M >= 4 with cpu.gemv.spread off; same bits as the AVX2 4x2 tile)"
#define MM_BATCH_DESC(T) \
    "AVX-512VL " T "-weight M x NR batched-decode tile (2 <= M <= 8, rows spread; same bits as the AVX2 tiles)"
static kreg_kernel K_f32_w = KREG_KERNEL("cpu.matmul.f32.avx512vl", MM_WIDE_DESC("f32"));
static kreg_kernel K_f16_w = KREG_KERNEL("cpu.matmul.f16.avx512vl", MM_WIDE_DESC("f16"));
static kreg_kernel K_bf16_w = KREG_KERNEL("cpu.matmul.bf16.avx512vl", MM_WIDE_DESC("bf16"));
static kreg_kernel K_f32_b = KREG_KERNEL("cpu.matmul.f32.avx512vl.batch", MM_BATCH_DESC("f32"));
static kreg_kernel K_f16_b = KREG_KERNEL("cpu.matmul.f16.avx512vl.batch", MM_BATCH_DESC("f16"));
static kreg_kernel K_bf16_b = KREG_KERNEL("cpu.matmul.bf16.avx512vl.batch", MM_BATCH_DESC("bf16"));
static kreg_kernel K_f32_ref = KREG_KERNEL("cpu.matmul.f32.ref", "scalar f32-weight matmul");
static kreg_kernel K_f16_ref = KREG_KERNEL("cpu.matmul.f16.ref", "scalar f16-weight matmul");
static kreg_kernel K_bf16_ref = KREG_KERNEL("cpu.matmul.bf16.ref", "scalar bf16-weight matmul");

typedef struct {
    float *y;
    const float *x;
    const dl_weight *w;
    int M;
    int spread; /* decode rows visited spread out (core/rowspread.h) */
} mm_ctx;

/* Reference: double accumulation in k order, one output column per item. */
static void mm_ref(void *ctx, size_t n0, size_t n1) {
    const mm_ctx *c = ctx;
    const dl_weight *w = c->w;
    int64_t K = w->k, N = w->n;
    for (size_t n = n0; n < n1; n++) {
        double b = w_bias_at(w, (int64_t)n);
        for (int m = 0; m < c->M; m++) {
            const float *x = c->x + (size_t)m * (size_t)K;
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (double)x[k] * cpu_loadf(w->dtype, w->data, (int64_t)n * w->ld + k);
            c->y[(size_t)m * (size_t)N + n] = (float)(acc + b);
        }
    }
}

#if CPU_X86
enum { MM_NB = 32,   /* output columns per inner block (accumulators: 4 x MM_NB) */
       MM_KB = 512 }; /* k block: 4 x rows of it stay in L1 across the columns */

/* Weight loaders: 8 consecutive elements, and a zero-padded tail of r < 8. */
CPU_AVX2_INLINE __m256 wl_f32(const void *p, size_t i) { return _mm256_loadu_ps((const float *)p + i); }
CPU_AVX2_INLINE __m256 wl_f16(const void *p, size_t i) { return cpu_ld_f16((const uint16_t *)p + i); }
CPU_AVX2_INLINE __m256 wl_bf16(const void *p, size_t i) { return cpu_ld_bf16((const uint16_t *)p + i); }
CPU_AVX2_INLINE __m256 wt_f32(const void *p, size_t i, int r) {
    return _mm256_maskload_ps((const float *)p + i, cpu_mask(r));
}
CPU_AVX2_INLINE __m256 wt_f16(const void *p, size_t i, int r) {
    uint16_t t[8] = {0};
    memcpy(t, (const uint16_t *)p + i, (size_t)r * 2);
    return cpu_ld_f16(t);
}
CPU_AVX2_INLINE __m256 wt_bf16(const void *p, size_t i, int r) {
    uint16_t t[8] = {0};
    memcpy(t, (const uint16_t *)p + i, (size_t)r * 2);
    return cpu_ld_bf16(t);
}

/* MR x NR micro-kernel: adds x[m, k0:k1] . w[n, k0:k1] into the 8-lane
 * accumulators acc[m * astr + n] (m < MR, n < NR), then, when tail > 0, the
 * zero-padded last step at k1 (tail = K - k1 < 8). x rows are ldx apart,
 * weight rows ldwb bytes apart. MR, NR are constants at every call site, so
 * the accumulators live in registers inside the k loop. Splitting k into
 * blocks does not change any lane's sequence of FMAs. MM_MICRO defines one
 * as NAME with the inline/target attributes INL, for MR <= MAXR, NR <= MAXN
 * (the AVX2 mk_* and the AVX-512VL mw_* share this body, hence their bits). */
#define MM_MICRO(NAME, INL, MAXR, MAXN, WL, WT)                                                  \
    INL void NAME(__m256 *accp, size_t astr, const float *x, size_t ldx,                         \
                  const char *w, size_t ldwb, size_t k0, size_t k1, int tail, const int MR,    \
                  const int NR) {                                                              \
        __m256 acc[MAXR][MAXN];                                                                  \
        _Pragma("GCC unroll 8") for (int m = 0; m < MR; m++)                                     \
            _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++) acc[m][n] = accp[m * astr + n]; \
        for (size_t k = k0; k < k1; k += 8) {                                                    \
            __m256 wv[MAXN];                                                                     \
            _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++) wv[n] = WL(w + n * ldwb, k);    \
            _Pragma("GCC unroll 8") for (int m = 0; m < MR; m++) {                               \
                __m256 xv = _mm256_loadu_ps(x + m * ldx + k);                                    \
                _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++)                             \
                    acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);                           \
            }                                                                                    \
        }                                                                                        \
        if (tail) {                                                                              \
            __m256 wv[MAXN];                                                                     \
            _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++) wv[n] = WT(w + n * ldwb, k1, tail); \
            _Pragma("GCC unroll 8") for (int m = 0; m < MR; m++) {                               \
                __m256 xv = _mm256_maskload_ps(x + m * ldx + k1, cpu_mask(tail));                \
                _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++)                             \
                    acc[m][n] = _mm256_fmadd_ps(xv, wv[n], acc[m][n]);                           \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int m = 0; m < MR; m++)                                     \
            _Pragma("GCC unroll 8") for (int n = 0; n < NR; n++) accp[m * astr + n] = acc[m][n]; \
    }

#define MM_KERNEL(SUF, WL, WT)                                                                   \
    MM_MICRO(mk_##SUF, CPU_AVX2_INLINE, 4, 4, WL, WT)                                            \
    /* GEMV tile: y[(n - n0) ys], n = weight rows w, w + ldwb, ... (NR of them), for one x row   \
     * over the whole k; bias[0..NR) their biases. */                                            \
    CPU_AVX2_INLINE void gv_##SUF(float *y, size_t ys, const float *x, size_t K, const char *w,  \
                                  size_t ldwb, const float *bias, const int NR) {                \
        __m256 acc[4];                                                                           \
        _Pragma("GCC unroll 4") for (int n = 0; n < NR; n++) acc[n] = _mm256_setzero_ps();       \
        size_t K8 = K & ~(size_t)7;                                                              \
        mk_##SUF(acc, 0, x, 0, w, ldwb, 0, K8, (int)(K - K8), 1, NR);                            \
        _Pragma("GCC unroll 4") for (int n = 0; n < NR; n++)                                     \
            y[(size_t)n * ys] = cpu_hsum(acc[n]) + bias[n];                                      \
    }                                                                                            \
    /* Decode (M < 4) chunk [n0, n1) with row spreading (core/rowspread.h): 4-row tiles of rows  \
     * spread over the chunk (rs_tile), a partial last tile one row at a time; each output as   \
     * in mm_. */                                                                               \
    CPU_AVX2 static void mm_##SUF##_spread(const mm_ctx *c, size_t n0, size_t n1) {              \
        const dl_weight *w = c->w;                                                               \
        size_t K = (size_t)w->k, N = (size_t)w->n, M = (size_t)c->M;                             \
        size_t ldwb = (size_t)w->ld * dt_size(w->dtype);                                         \
        const char *wd = w->data;                                                                \
        int64_t n, st, nr;                                                                       \
        for (int64_t t = 0; (nr = rs_tile((int64_t)n0, (int64_t)n1, 4, 1, t, &n, &st)) > 0; t++) { \
            float b[4];                                                                          \
            for (int64_t g = 0; g < nr; g++) b[g] = w_bias_at(w, n + g * st);                    \
            for (size_t r = 0; r < M; r++) {                                                     \
                float *yr = c->y + r * N + (size_t)n;                                            \
                const char *wt = wd + (size_t)n * ldwb;                                          \
                if (nr == 4)                                                                     \
                    gv_##SUF(yr, (size_t)st, c->x + r * K, K, wt, (size_t)st * ldwb, b, 4);      \
                else                                                                             \
                    for (int64_t g = 0; g < nr; g++)                                             \
                        gv_##SUF(yr + g * st, 1, c->x + r * K, K, wt + (size_t)(g * st) * ldwb,  \
                                 ldwb, b + g, 1);                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    /* Batched decode (4 <= M <= MM_SPREAD_MAX_M) chunk [n0, n1) with row spreading: 2-row      \
     * tiles of rows (n1 - n0) / 2 apart, each through the 4x2 micro-kernel over the whole k    \
     * for 4 x rows at a time (the last M mod 4 rows in one narrower pass); each output as in   \
     * mm_ (one accumulator in k order, same tail step and horizontal sum). */                  \
    CPU_AVX2 static void mm_##SUF##_spread_b(const mm_ctx *c, size_t n0, size_t n1) {            \
        const dl_weight *w = c->w;                                                               \
        size_t K = (size_t)w->k, N = (size_t)w->n, M = (size_t)c->M, K8 = K & ~(size_t)7;        \
        int tail = (int)(K - K8);                                                                \
        size_t ldwb = (size_t)w->ld * dt_size(w->dtype);                                         \
        const char *wd = w->data;                                                                \
        int64_t n, st, nr;                                                                       \
        for (int64_t t = 0; (nr = rs_tile((int64_t)n0, (int64_t)n1, 2, 1, t, &n, &st)) > 0; t++) { \
            const char *wt = wd + (size_t)n * ldwb;                                              \
            size_t wst = (size_t)st * ldwb;                                                      \
            float b[2] = {w_bias_at(w, n), nr > 1 ? w_bias_at(w, n + st) : 0.0f};                \
            for (size_t m0 = 0; m0 < M; m0 += 4) {                                               \
                __m256 acc[8];                                                                   \
                for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();                        \
                const float *xm = c->x + m0 * K;                                                 \
                int mr = M - m0 < 4 ? (int)(M - m0) : 4;                                         \
                switch ((mr - 1) * 2 + (int)nr - 1) { /* constant MR, NR for each micro-kernel */      \
                case 0: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 1, 1); break;              \
                case 1: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 1, 2); break;              \
                case 2: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 2, 1); break;              \
                case 3: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 2, 2); break;              \
                case 4: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 3, 1); break;              \
                case 5: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 3, 2); break;              \
                case 6: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 4, 1); break;              \
                default: mk_##SUF(acc, 2, xm, K, wt, wst, 0, K8, tail, 4, 2); break;             \
                }                                                                                \
                for (int i = 0; i < mr; i++)                                                     \
                    for (int j = 0; j < (int)nr; j++)                                            \
                        c->y[(m0 + (size_t)i) * N + (size_t)(n + j * st)] = cpu_hsum(acc[i * 2 + j]) + b[j]; \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    /* Chunk [n0, n1) of output columns for all M rows. */                                       \
    CPU_AVX2 static void mm_##SUF(void *ctx, size_t n0, size_t n1) {                             \
        const mm_ctx *c = ctx;                                                                   \
        if (c->spread) {                                                                         \
            if (c->M < 4) mm_##SUF##_spread(c, n0, n1);                                          \
            else mm_##SUF##_spread_b(c, n0, n1);                                                 \
            return;                                                                              \
        }                                                                                        \
        const dl_weight *w = c->w;                                                               \
        size_t K = (size_t)w->k, N = (size_t)w->n, M = (size_t)c->M, K8 = K & ~(size_t)7;        \
        int tail = (int)(K - K8);                                                                \
        size_t es = dt_size(w->dtype), ldwb = (size_t)w->ld * es;                                \
        const char *wd = w->data;                                                                \
        float bias[MM_NB];                                                                       \
        __m256 acc[4 * MM_NB]; /* [4][MM_NB] accumulators of one row block */                    \
        for (size_t nb = n0; nb < n1; nb += MM_NB) {                                             \
            size_t ne = nb + MM_NB < n1 ? nb + MM_NB : n1, nn = ne - nb;                         \
            for (size_t n = nb; n < ne; n++)                                                     \
                bias[n - nb] = w_bias_at(w, (int64_t)n);                                         \
            size_t m = 0;                                                                        \
            if (M >= 4) /* prefill: 4 x rows at a time, k in L1-sized blocks */                  \
                for (; m + 4 <= M; m += 4) {                                                     \
                    const float *xm = c->x + m * K;                                              \
                    for (size_t i = 0; i < 4 * MM_NB; i++) acc[i] = _mm256_setzero_ps();        \
                    for (size_t kb = 0; kb < K8 || kb == 0; kb += MM_KB) {                       \
                        size_t ke = kb + MM_KB < K8 ? kb + MM_KB : K8;                           \
                        int tl = ke == K8 ? tail : 0;                                            \
                        size_t j = 0;                                                            \
                        for (; j + 2 <= nn; j += 2)                                              \
                            mk_##SUF(acc + j, MM_NB, xm, K, wd + (nb + j) * ldwb, ldwb, kb, ke,  \
                                     tl, 4, 2);                                                  \
                        for (; j < nn; j++)                                                      \
                            mk_##SUF(acc + j, MM_NB, xm, K, wd + (nb + j) * ldwb, ldwb, kb, ke,  \
                                     tl, 4, 1);                                                  \
                        if (ke == K8) break;                                                     \
                    }                                                                            \
                    for (size_t r = 0; r < 4; r++)                                               \
                        for (size_t j = 0; j < nn; j++)                                          \
                            c->y[(m + r) * N + nb + j] = cpu_hsum(acc[r * MM_NB + j]) + bias[j]; \
                }                                                                                \
            /* decode / leftover rows: each group of 4 weight rows streamed once for all rows */ \
            size_t n = nb;                                                                       \
            for (; n + 4 <= ne; n += 4)                                                          \
                for (size_t r = m; r < M; r++)                                                   \
                    gv_##SUF(c->y + r * N + n, 1, c->x + r * K, K, wd + n * ldwb, ldwb,          \
                             bias + (n - nb), 4);                                                \
            for (; n < ne; n++)                                                                  \
                for (size_t r = m; r < M; r++)                                                   \
                    gv_##SUF(c->y + r * N + n, 1, c->x + r * K, K, wd + n * ldwb, ldwb,          \
                             bias + (n - nb), 1);                                                \
        }                                                                                        \
    }

MM_KERNEL(f32, wl_f32, wt_f32)
MM_KERNEL(f16, wl_f16, wt_f16)
MM_KERNEL(bf16, wl_bf16, wt_bf16)

/* The prefill tile on AVX-512 CPUs (cpu.matmul.*.avx512vl): the same 8-lane
 * ymm arithmetic, EVEX-encoded so that 32 ymm registers are addressable:
 * 6 x rows x 4 weight rows (24 accumulators, 4 widened weight vectors, one
 * x vector) instead of the 4 x 2 tile that fits AVX2's 16 registers. Per
 * step of 8 k: 4 weight loads (+ widening) and 6 x loads feed 24 FMAs,
 * against 2 + 4 for 8. Every output is still one 8-lane accumulator over k
 * in steps of 8 (k blocks in order, the zero-padded tail last), the fixed
 * horizontal sum, + bias: bitwise the AVX2 kernel. */
#define CPU_X512 __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#define CPU_X512_INLINE static inline __attribute__((always_inline, target("avx512f,avx512vl,avx2,fma,f16c")))
enum { MW_MR = 6, MW_NR = 4, MW_MAXR = 8, MW_MAXN = 8 };

/* Weight rows per batched-decode tile at M rows of x (2..8). Measured on the
 * EPYC dev VM, 4096x4096, 1 thread (bench/cpu-2026-12-05c): NR = 2..8 each
 * tried at M >= 4, 4 / 6 / 8 at M = 2, 3; these were fastest or within the
 * noise of it. M = 3 and 6..8 keep a few accumulators in memory
 * (M x NR + NR > 32 ymm) and are still faster than a tile that fits. */
static int mwb_nr(int M) {
    static const int t[9] = {0, 0, 8, 8, 4, 5, 5, 5, 4};
    return t[M];
}

#define MM_WIDE(SUF, WL, WT)                                                                     \
    /* MR x NR (<= MW_MAXR x MW_MAXN) micro-kernel with the contract of mk_##SUF. */           \
    MM_MICRO(mw_##SUF, CPU_X512_INLINE, MW_MAXR, MW_MAXN, WL, WT)                                \
    /* The tile for mr (1..6) x rows and NR weight rows: constant shapes per call. */            \
    CPU_X512_INLINE void mw_##SUF##_mr(int mr, __m256 *accp, size_t astr, const float *x,        \
                                       size_t ldx, const char *w, size_t ldwb, size_t k0,        \
                                       size_t k1, int tail, const int NR) {                      \
        switch (mr) {                                                                            \
        case 1: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 1, NR); break;               \
        case 2: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 2, NR); break;               \
        case 3: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 3, NR); break;               \
        case 4: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 4, NR); break;               \
        case 5: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 5, NR); break;               \
        default: mw_##SUF(accp, astr, x, ldx, w, ldwb, k0, k1, tail, 6, NR); break;              \
        }                                                                                        \
    }                                                                                            \
    /* Prefill chunk [n0, n1) of output columns for all M rows: blocks of MM_NB columns, 6 x     \
     * rows at a time (the last M mod 6 in one narrower pass), k in MM_KB blocks; the same      \
     * outputs, bit for bit, as mm_##SUF's non-spread path. */                                  \
    CPU_X512 static void mmw_##SUF(void *ctx, size_t n0, size_t n1) {                            \
        const mm_ctx *c = ctx;                                                                   \
        const dl_weight *w = c->w;                                                               \
        size_t K = (size_t)w->k, N = (size_t)w->n, M = (size_t)c->M, K8 = K & ~(size_t)7;        \
        int tail = (int)(K - K8);                                                                \
        size_t ldwb = (size_t)w->ld * dt_size(w->dtype);                                         \
        const char *wd = w->data;                                                                \
        float bias[MM_NB];                                                                       \
        __m256 acc[MW_MR * MM_NB]; /* [MW_MR][MM_NB] accumulators of one row block */            \
        for (size_t nb = n0; nb < n1; nb += MM_NB) {                                             \
            size_t ne = nb + MM_NB < n1 ? nb + MM_NB : n1, nn = ne - nb;                         \
            for (size_t n = nb; n < ne; n++) bias[n - nb] = w_bias_at(w, (int64_t)n);            \
            for (size_t m = 0; m < M; m += MW_MR) {                                              \
                const int mr = M - m < MW_MR ? (int)(M - m) : MW_MR;                             \
                const float *xm = c->x + m * K;                                                  \
                for (size_t i = 0; i < MW_MR * MM_NB; i++) acc[i] = _mm256_setzero_ps();        \
                for (size_t kb = 0; kb < K8 || kb == 0; kb += MM_KB) {                           \
                    size_t ke = kb + MM_KB < K8 ? kb + MM_KB : K8;                               \
                    int tl = ke == K8 ? tail : 0;                                                \
                    size_t j = 0;                                                                \
                    for (; j + MW_NR <= nn; j += MW_NR)                                          \
                        mw_##SUF##_mr(mr, acc + j, MM_NB, xm, K, wd + (nb + j) * ldwb, ldwb, kb, \
                                      ke, tl, MW_NR);                                            \
                    for (; j < nn; j++)                                                          \
                        mw_##SUF##_mr(mr, acc + j, MM_NB, xm, K, wd + (nb + j) * ldwb, ldwb, kb, \
                                      ke, tl, 1);                                                \
                    if (ke == K8) break;                                                         \
                }                                                                                \
                for (size_t r = 0; r < (size_t)mr; r++)                                          \
                    for (size_t j = 0; j < nn; j++)                                              \
                        c->y[(m + r) * N + nb + j] = cpu_hsum(acc[r * MM_NB + j]) + bias[j];     \
            }                                                                                    \
        }                                                                                        \
    }

MM_WIDE(f32, wl_f32, wt_f32)
MM_WIDE(f16, wl_f16, wt_f16)
MM_WIDE(bf16, wl_bf16, wt_bf16)

/* The batch tile for MRC (constant) x rows and nr (1..8) weight rows. */
#define MWB_NR(SUF, MRC)                                                                         \
    switch (nr) {                                                                                \
    case 1: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 1); break;                   \
    case 2: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 2); break;                   \
    case 3: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 3); break;                   \
    case 4: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 4); break;                   \
    case 5: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 5); break;                   \
    case 6: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 6); break;                   \
    case 7: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 7); break;                   \
    default: mw_##SUF(acc, MW_MAXN, xm, K, wt, wst, 0, K8, tail, MRC, 8); break;                  \
    }

#define MM_BATCH(SUF)                                                                            \
    /* Batched decode (2 <= M <= 8, rows spread) chunk [n0, n1): tiles of mwb_nr(M) weight rows \
     * spread over the chunk (rs_tile), each through the M x nr micro-kernel over the whole k,  \
     * so every weight row is read once for all M rows of x; each output as in mm_##SUF. */     \
    CPU_X512 static void mwb_##SUF(void *ctx, size_t n0, size_t n1) {                            \
        const mm_ctx *c = ctx;                                                                   \
        const dl_weight *w = c->w;                                                               \
        size_t K = (size_t)w->k, N = (size_t)w->n, K8 = K & ~(size_t)7;                          \
        const int M = c->M, tail = (int)(K - K8), G = mwb_nr(M);                                 \
        size_t ldwb = (size_t)w->ld * dt_size(w->dtype);                                         \
        const float *xm = c->x;                                                                  \
        int64_t n, st, nr;                                                                       \
        for (int64_t t = 0; (nr = rs_tile((int64_t)n0, (int64_t)n1, G, 1, t, &n, &st)) > 0; t++) { \
            const char *wt = (const char *)w->data + (size_t)n * ldwb;                           \
            size_t wst = (size_t)st * ldwb;                                                      \
            __m256 acc[MW_MAXR * MW_MAXN];                                                       \
            float b[MW_MAXN]; /* the tile rows' biases, read once for all M rows */             \
            for (int i = 0; i < M * MW_MAXN; i++) acc[i] = _mm256_setzero_ps();                  \
            for (int j = 0; j < (int)nr; j++) b[j] = w_bias_at(w, n + j * st);                   \
            switch (M) {                                                                         \
            case 2: MWB_NR(SUF, 2) break;                                                        \
            case 3: MWB_NR(SUF, 3) break;                                                        \
            case 4: MWB_NR(SUF, 4) break;                                                        \
            case 5: MWB_NR(SUF, 5) break;                                                        \
            case 6: MWB_NR(SUF, 6) break;                                                        \
            case 7: MWB_NR(SUF, 7) break;                                                        \
            default: MWB_NR(SUF, 8) break;                                                       \
            }                                                                                    \
            for (int i = 0; i < M; i++)                                                          \
                for (int j = 0; j < (int)nr; j++)                                                \
                    c->y[(size_t)i * N + (size_t)(n + j * st)] = cpu_hsum(acc[i * MW_MAXN + j]) + b[j]; \
        }                                                                                        \
    }

MM_BATCH(f32)
MM_BATCH(f16)
MM_BATCH(bf16)
#endif

/* Fill y with NaN so a failed matmul cannot pass silently (ops return void). */
static void mm_fail(float *y, const dl_weight *w, int M) {
    dl_log(LOG_WARN, "matmul %s: %s", w->name ? w->name : "?", dl_errmsg());
    size_t n = (size_t)M * (size_t)w->n;
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

void cpu_matmul(cpu_state *st, float *y, const float *x, const dl_weight *w, int M) {
    kreg_kernel *fast, *ref, *wide, *batch;
    tp_fn ffn = NULL, wfn = NULL, bfn = NULL;
    switch (w->dtype) {
    case DT_F32: fast = &K_f32, ref = &K_f32_ref, wide = &K_f32_w, batch = &K_f32_b;
#if CPU_X86
        ffn = mm_f32, wfn = mmw_f32, bfn = mwb_f32;
#endif
        break;
    case DT_F16: fast = &K_f16, ref = &K_f16_ref, wide = &K_f16_w, batch = &K_f16_b;
#if CPU_X86
        ffn = mm_f16, wfn = mmw_f16, bfn = mwb_f16;
#endif
        break;
    case DT_BF16: fast = &K_bf16, ref = &K_bf16_ref, wide = &K_bf16_w, batch = &K_bf16_b;
#if CPU_X86
        ffn = mm_bf16, wfn = mmw_bf16, bfn = mwb_bf16;
#endif
        break;
    case DT_F8E4M3: case DT_F8E5M2: case DT_I8:
        if (qmm_matmul(y, x, w, M, st->tp)) mm_fail(y, w, M);
        return;
    default:
        dl_err("weight format %s not supported by the CPU backend", dt_name(w->dtype));
        mm_fail(y, w, M);
        return;
    }
    if (M <= 0 || w->n <= 0) return;
    mm_ctx c = {y, x, w, M, 0};
    /* on AVX-512 CPUs (st->avx512 implies st->avx2): the batch tile for batched decode
     * (2 <= M <= 8, rows spread), the 6x4 tile for prefill (M >= 4, rows not spread);
     * switched off, the AVX2 kernel's tiles */
    const int spread = M <= MM_SPREAD_MAX_M && rs_use();
    const int bat = spread && M >= 2 && st->avx512 && bfn && kreg_use(batch);
    if (bat) ffn = bfn;
    else if (M >= 4 && !spread && st->avx512 && wfn && kreg_use(wide)) ffn = wfn;
    else if (!(st->avx2 && ffn && kreg_use(fast))) ffn = NULL;
    if (ffn) {
        /* Chunks of output columns; multiples of 4 keep the micro-kernels full. */
        size_t grain = M < 4 ? 16 : 32;
        if (spread) {
            c.spread = 1;
            grain = rs_chunk_rows((size_t)w->n, (size_t)w->ld * dt_size(w->dtype),
                                  bat ? mwb_nr(M) : M < 4 ? 4 : 2, tp_nthreads(st->tp));
        }
        tp_run(st->tp, (size_t)w->n, grain, ffn, &c);
    } else {
        kreg_hit(ref);
        tp_run(st->tp, (size_t)w->n, 4, mm_ref, &c);
    }
}
