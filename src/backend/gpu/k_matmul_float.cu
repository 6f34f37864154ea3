/* GEMV for weights widened to fp32 in registers: f32, f16, bf16, fp8
 * (e4m3/e5m2, by bit arithmetic) and int8 weight-only; and the reference
 * matmul. y[M, n] = x[M, k] W^T * scale (+ bias).
 *
 * GEMV (M <= 8): a warp takes R rows, wpb warps per block, and one launch
 * may cover up to three weights sharing x (gk_gemv_multi); each lane streams
 * 16-byte vectors of its rows (lane-strided, U vectors per row in flight)
 * and multiplies them with all M activation rows in the same pass. Per lane
 * each 16-byte chunk gives a partial p (sequential FMAs); a block scale is
 * folded per chunk (chunks never straddle a K block); lanes are combined by a
 * fixed butterfly. Variants (dl_gemv_cfg: fp8 widening, U, L1 policy, R,
 * wpb; and the K loop: dl_k_gemv_f or the software-pipelined dl_k_gemv_fp)
 * keep that order and every widened value, so they are bitwise equal.
 * The GEMM (M > 8 or GEMV not applicable) is k_gemm_float.cu. Both orders
 * are fixed, so results are bitwise reproducible; they differ between the
 * two paths (documented in docs/gpu_backend.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.cuh"
#include "gpu_tune.h"

/* Threads per block of the GEMV kernels at most (wpb = DL_GEMV_MAXW warps:
 * 8 on CUDA, 4 on gfx906); the dot2 variant keeps GEMV_WPB warps per block. */
#define GEMV_MAXT (DL_GEMV_MAXW * DL_WARP)
/* The register cap LB of the mlb = 3 loop (at least LB blocks per SM) on
 * CUDA only: on gfx906 it means 2 wavefronts per SIMD, 128 VGPRs, and the
 * M = 7, 8 kernels spilled 3-6 VGPRs under it. */
#if DL_WARP == 64
#define GEMV_LB(lb) 0
#else
#define GEMV_LB(lb) (lb)
#endif
#define GEMV_WPB 4

/* GEMV widening of one 16-byte vector: bf16/f16/f32/int8 as the GEMM; fp8
 * by bit arithmetic (no shared-memory table). Every variant gives every
 * code the same fp32 value, so the FMAs see the same operands.
 *  - DL_FP8_F32 (the original): the code's exponent/mantissa bits placed in
 *    an fp32 whose exponent bias is 127, then one multiply by 2^120 (e4m3)
 *    or 2^112 (e5m2) rebiases it; subnormal codes become fp32 subnormals
 *    first and come out exact. PRMT + SHF + 2 LOP3 + FMUL per element.
 *  - DL_FP8_F32S (e4m3 only): the same fp32 bits and multiply, placed two
 *    codes at a time: one PRMT puts each code next to its replicated sign
 *    byte, then per element one LOP3 keeps the 7 code bits and one sign bit
 *    and one shift moves them into place (no conversion instruction; for
 *    hardware where fp16 -> fp32 conversions are slow).
 *  - DL_FP8_H2: two codes at a time through fp16. e5m2 is the top byte of
 *    an fp16 (same bias), so one PRMT places two codes. e4m3 goes to fp16
 *    as value * 2^-8 (code bits 6..0 at fp16 bits 13..7, sign at 15;
 *    subnormal codes become fp16 subnormals, all exact): one PRMT puts each
 *    code next to its replicated sign byte, one LOP3 keeps the 7 code bits
 *    and one sign bit, one shift moves them into place; one packed fp16
 *    multiply by 256 (exact: results <= 480, fp16 keeps subnormals) undoes
 *    the 2^-8. Then the exact fp16 -> fp32 conversion (one per element).
 *  - DL_FP8_FOLD (e4m3 only): DL_FP8_H2 without the multiply by 256; the
 *    chunk partial is computed on values * 2^-8 and the 2^8 is folded into
 *    the chunk scale (s * 256, exact). Bitwise equal to the others when no
 *    rounding inside the chunk lands below the fp32 normal range in the
 *    scaled domain, which holds whenever every nonzero activation has
 *    2^-109 <= |x| < 2^120 (then every exact intermediate is a multiple of
 *    2^-141, so values under 2^-118 are representable in both domains and
 *    larger ones stay normal): opt-in, see docs/gpu_backend.md.
 *  - DL_FP8_H2X (e4m3): DL_FP8_H2 without the multiply by 256; instead the
 *    activations are multiplied by 256 as they are loaded (x' = x * 2^8,
 *    exact for |x| < 2^120; shared by the R rows), so every FMA sees
 *    (value * 2^-8) * (x * 2^8), the same real product as value * x, and
 *    rounds to the same bits. Used where that is fewer multiplies (16 M
 *    per chunk for R rows against 8 HMUL2 per row: M = 1, R = 4); elsewhere
 *    it is DL_FP8_H2. |x| >= 2^120 (fp32 max is ~2^128) gives x' = +-inf,
 *    so such a row's outputs become +-inf or NaN where DL_FP8_H2 may be
 *    finite; activations never come near.
 * e4m3fn NaN codes read as +-480 in every variant; e5m2 inf/NaN codes read
 * as large finite values in DL_FP8_F32 and as inf/NaN (as the CPU) in
 * DL_FP8_H2; checkpoints contain neither. */
/* The fp8 widening after DL_FP8_F32S (the DL_FP8_* enum of gpu_common.cuh
 * is shared with other files; this value is used only here). */
enum { DL_FP8_H2X = 4 };
/* DL_FP8_HF (e4m3, M = 1 only; knob fp8=hf, opt-in, NOT bitwise equal to
 * the others): the chunk's products in packed fp16. Codes widen as in
 * fold (fp16 bits of value * 2^-8, exact), the chunk's 16 activations are
 * rounded to fp16 once per chunk (shared by the R rows), each row's 8 code
 * pairs go through one HMUL2 and seven HFMA2 into an fp16 pair, whose two
 * halves are widened to fp32 and added; the chunk scale carries the 2^8
 * (FOLD). So a chunk partial is rounded in fp16 (relative error ~1e-3 of
 * the chunk's sum of |products|), while chunks still accumulate in fp32.
 * fp16 overflows when a chunk half's running sum passes 65504, i.e. only
 * for |x| in the thousands (|value * 2^-8| <= 1.75); such outputs become
 * inf. About half the instructions of fold per weight byte. */
enum { DL_FP8_HF = 5 };
template <int DT, int CV> struct dl_gv {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) { dl_wt<DT>::cvt16(r, f, nullptr); }
};
template <int SH>
static __device__ __forceinline__ void dl_fp8x4_f32(uint32_t v, float *f, float rebias) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        /* byte j to bits 24..31 (one PRMT), sign stays at bit 31, the
         * exponent/mantissa bits move down to start at bit SH */
        const uint32_t t = dl_prmt(v, 0u, (unsigned)((j << 12) | 0x444));
        f[j] = __uint_as_float((t & 0x80000000u) | ((t >> (24 - SH)) & (0x7fu << SH))) * rebias;
    }
}
template <> struct dl_gv<DT_F8E4M3, DL_FP8_F32> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        const float k = 0x1p120f;
        dl_fp8x4_f32<20>(r.x, f, k); dl_fp8x4_f32<20>(r.y, f + 4, k);
        dl_fp8x4_f32<20>(r.z, f + 8, k); dl_fp8x4_f32<20>(r.w, f + 12, k);
    }
};
template <> struct dl_gv<DT_F8E5M2, DL_FP8_F32> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        const float k = 0x1p112f;
        dl_fp8x4_f32<21>(r.x, f, k); dl_fp8x4_f32<21>(r.y, f + 4, k);
        dl_fp8x4_f32<21>(r.z, f + 8, k); dl_fp8x4_f32<21>(r.w, f + 12, k);
    }
};
/* e4m3 codes in bytes 0..3 of v -> f[0..3] = value * 2^-120 (fp32 bits s<<31 | code<<20). */
static __device__ __forceinline__ void dl_e4m3x4_f32s(uint32_t v, float *f) {
    /* [sign(b1) b1 sign(b0) b0] and [sign(b3) b3 sign(b2) b2] */
    const uint32_t a = dl_prmt(v, 0u, 0x9180u), b = dl_prmt(v, 0u, 0xB3A2u);
    /* low element: code bits 0..6 and sign bit 11 << 20; high: bits 16..22 and 27 << 4 */
    f[0] = __uint_as_float((a & 0x0000087fu) << 20);
    f[1] = __uint_as_float((a & 0x087f0000u) << 4);
    f[2] = __uint_as_float((b & 0x0000087fu) << 20);
    f[3] = __uint_as_float((b & 0x087f0000u) << 4);
}
template <> struct dl_gv<DT_F8E4M3, DL_FP8_F32S> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        dl_e4m3x4_f32s(r.x, f); dl_e4m3x4_f32s(r.y, f + 4);
        dl_e4m3x4_f32s(r.z, f + 8); dl_e4m3x4_f32s(r.w, f + 12);
#pragma unroll
        for (int e = 0; e < 16; e++) f[e] *= 0x1p120f; /* exact, as DL_FP8_F32 */
    }
};
static __device__ __forceinline__ void dl_h2_f32(uint32_t h, float *f) {
    __half2 t;
    __builtin_memcpy(&t, &h, 4);
    const float2 v = __half22float2(t);
    f[0] = v.x;
    f[1] = v.y;
}
/* e4m3 codes in bytes 0..3 of v -> f[0..3] = value * 256^-1 (RB = 0) or value (RB = 1). */
template <int RB> static __device__ __forceinline__ void dl_e4m3x4_h2(uint32_t v, float *f) {
    /* [sign(b1) b1 sign(b0) b0] and [sign(b3) b3 sign(b2) b2] */
    uint32_t a = dl_prmt(v, 0u, 0x9180u), b = dl_prmt(v, 0u, 0xB3A2u);
    /* keep code bits 6..0 (-> fp16 bits 13..7) and one sign bit (bit 8 -> 15) per half */
    a = (a & 0x017f017fu) << 7;
    b = (b & 0x017f017fu) << 7;
    if (RB) {
        __half2 ha, hb;
        __builtin_memcpy(&ha, &a, 4);
        __builtin_memcpy(&hb, &b, 4);
        const __half2 k = __half2half2(__ushort_as_half((unsigned short)0x5c00u)); /* 256 */
        ha = __hmul2(ha, k);
        hb = __hmul2(hb, k);
        __builtin_memcpy(&a, &ha, 4);
        __builtin_memcpy(&b, &hb, 4);
    }
    dl_h2_f32(a, f);
    dl_h2_f32(b, f + 2);
}
/* e5m2 codes in bytes 0..3 of v -> f[0..3] (the code is the fp16's top byte). */
static __device__ __forceinline__ void dl_e5m2x4_h2(uint32_t v, float *f) {
    dl_h2_f32(dl_prmt(v, 0u, 0x1404u), f);
    dl_h2_f32(dl_prmt(v, 0u, 0x3424u), f + 2);
}
template <> struct dl_gv<DT_F8E4M3, DL_FP8_H2> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        dl_e4m3x4_h2<1>(r.x, f); dl_e4m3x4_h2<1>(r.y, f + 4);
        dl_e4m3x4_h2<1>(r.z, f + 8); dl_e4m3x4_h2<1>(r.w, f + 12);
    }
};
template <> struct dl_gv<DT_F8E4M3, DL_FP8_FOLD> {
    static const bool FOLD = true, XS = false; /* f = value * 2^-8; the chunk scale carries 2^8 */
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        dl_e4m3x4_h2<0>(r.x, f); dl_e4m3x4_h2<0>(r.y, f + 4);
        dl_e4m3x4_h2<0>(r.z, f + 8); dl_e4m3x4_h2<0>(r.w, f + 12);
    }
};
/* hf takes fold's scale (FOLD: the 2^8 in the chunk scale); its chunk
 * math is dl_gv_hf_rows, never cvt16 */
template <> struct dl_gv<DT_F8E4M3, DL_FP8_HF> : dl_gv<DT_F8E4M3, DL_FP8_FOLD> {};
template <> struct dl_gv<DT_F8E4M3, DL_FP8_H2X> {
    static const bool FOLD = false, XS = true; /* f = value * 2^-8; x * 2^8 as it is loaded */
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        dl_e4m3x4_h2<0>(r.x, f); dl_e4m3x4_h2<0>(r.y, f + 4);
        dl_e4m3x4_h2<0>(r.z, f + 8); dl_e4m3x4_h2<0>(r.w, f + 12);
    }
};
template <> struct dl_gv<DT_F8E5M2, DL_FP8_H2> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        dl_e5m2x4_h2(r.x, f); dl_e5m2x4_h2(r.y, f + 4);
        dl_e5m2x4_h2(r.z, f + 8); dl_e5m2x4_h2(r.w, f + 12);
    }
};

/* int8 weight-only, CV = 1 (the new loop, dl_k_gemv_fp): the same exact
 * values without a conversion instruction (I2F is a slow pipe on sm_90):
 * the code + 128 (flipped sign bit) becomes the low byte of the fp32 2^23
 * (one PRMT per element: 0x4B0000uu = 2^23 + u), minus 2^23 + 128 (exact:
 * all three are integers below 2^24). HIP converts bytes natively. */
[[maybe_unused]] static __device__ __forceinline__ void dl_i8x4_mag(uint32_t v, float *f) {
    const uint32_t u = v ^ 0x80808080u;
#pragma unroll
    for (int e = 0; e < 4; e++) f[e] = __fadd_rn(__uint_as_float(dl_prmt(u, 0x4bu, 0x4550u | (unsigned)e)), -8388736.0f);
}
template <> struct dl_gv<DT_I8, 1> {
    static const bool FOLD = false, XS = false;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
#if DL_WARP == 32
        dl_i8x4_mag(r.x, f); dl_i8x4_mag(r.y, f + 4); dl_i8x4_mag(r.z, f + 8); dl_i8x4_mag(r.w, f + 12);
#else
        dl_wt<DT_I8>::cvt16(r, f, nullptr);
#endif
    }
};

/* The chunk scale of weights without block scales. */
static __device__ const float dl_one = 1.0f;

/* One row's epilogue constants: the tensor/channel scale and bias of row
 * n, and of the up row n for a gate/up pair (pair: g.silu with R >= 2). */
struct dl_gv_rowep {
    float rs, b, ru, bu;
};
static __device__ __forceinline__ dl_gv_rowep dl_gv_rowep_at(const dl_gv_sel &g, int sk, int n, bool pair) {
    dl_gv_rowep e;
    e.rs = dl_gv_rowscale(sk, g.scale, n);
    e.b = g.bias ? g.bias[n] : 0.0f;
    e.ru = pair ? dl_gv_rowscale(sk, g.scale2, n) : 0.0f;
    e.bu = pair && g.bias2 ? g.bias2[n] : 0.0f;
    return e;
}
/* Output (m, n) from v, the row's sum over K (and vu, the up row's, for a
 * pair): v * scale + bias into y, or silu(gate) * up of the two such values
 * into g.silu, as dl_k_silu_mul would from y. The one definition of a float
 * GEMV output for both epilogue forms. */
static __device__ __forceinline__ void dl_gv_emit(const dl_gv_sel &g, const dl_gv_rowep &e, int m, int n, float v,
                                                  float vu, bool pair) {
    const float y = __fadd_rn(__fmul_rn(v, e.rs), e.b);
    if (pair) {
        const float h = dl_silu_mul1(y, __fadd_rn(__fmul_rn(vu, e.ru), e.bu));
        g.silu[(int64_t)m * g.n + n] = h;
        if (g.silut) g.silut[dl_xp1_at(n)] = h; /* M = 1 launches only */
    } else {
        g.y[(int64_t)m * g.n + n] = y;
    }
}

/* Output j = r MR + m of the row group (value v: the row's sum over K),
 * stored for n0 + r < g.n; a gate/up pair (g.silu) stores for r < R / 2
 * from v and vu (the sum of row r + R / 2). */
template <int R, int MR>
static __device__ __forceinline__ void dl_gv_put(const dl_gv_sel &g, int sk, int n0, int j, float v, float vu) {
    const int r = j / MR, m = j - r * MR, n = n0 + r;
    if (n >= g.n) return;
    const bool pair = R >= 2 && g.silu;
    dl_gv_emit(g, dl_gv_rowep_at(g, sk, n, pair), m, n, v, vu, pair);
}

/* GEMV epilogue: each lane's acc[r][m] summed over the warp (fixed
 * butterfly); with a K split (g.ks > 1) the ks warps of a row group then
 * add their sums in warp order (through shared memory; every warp of the
 * block must get here); times the tensor/channel scale, plus bias, stored
 * for the rows n0 + r < g.n. A gate/up pair (g.silu) stores instead, for
 * column n0 + r (r < R / 2), silu(gate) * up of the two values so made
 * from rows r and r + R / 2, as dl_k_silu_mul would from y: the same bits.
 * Where R MR is a power of two (every M but 3, 5, 6, 7) the warp sums are
 * scattered (dl_warp_sum_scatter: the same sums, a fraction of the
 * shuffles) and each value is finished and stored by the lane holding it;
 * else lane 0 holds and stores them all. */
template <int R, int MR>
static __device__ __forceinline__ void dl_gv_store(float (&acc)[R][MR], const dl_gv_sel &g, int sk, int n0, int lane) {
    constexpr int N = R * MR;
    if constexpr ((N & (N - 1)) == 0 && N <= DL_WARP) {
        int j;
        bool hold;
        const float v = dl_warp_sum_rows<float, R, MR>(acc, lane, &j, &hold);
        const bool pair = R >= 2 && g.silu; /* value j < N / 2 (gate) needs j + N / 2 (up) */
        if (g.ks > 1) {
            __shared__ float red[GEMV_MAXT / DL_WARP][N];
            const int wid = threadIdx.x / DL_WARP;
            if (hold) red[wid][j] = v;
            __syncthreads();
            if (!hold || (wid & (g.ks - 1)) != 0 || (pair && j >= N / 2)) return;
            float t = red[wid][j], tu = 0.0f;
            for (int w = 1; w < g.ks; w++) t = __fadd_rn(t, red[wid + w][j]);
            if (pair) {
                tu = red[wid][j + N / 2];
                for (int w = 1; w < g.ks; w++) tu = __fadd_rn(tu, red[wid + w][j + N / 2]);
            }
            dl_gv_put<R, MR>(g, sk, n0, j, t, tu);
        } else {
            /* the lanes holding j + N / 2 are DL_WARP / 2 away (j's top bit is the lane's top bit) */
            const float u = pair ? dl_shfl_xor(v, DL_WARP / 2) : 0.0f;
            if (!hold || (pair && j >= N / 2)) return;
            dl_gv_put<R, MR>(g, sk, n0, j, v, u);
        }
        return;
    }
    float v[R][MR]; /* the row sums, valid where own */
    bool own;
    if (g.ks > 1) {
        __shared__ float red[GEMV_MAXT / DL_WARP][R * MR];
        const int wid = threadIdx.x / DL_WARP;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int m = 0; m < MR; m++) {
                const float t = dl_warp_sum(acc[r][m]);
                if (lane == 0) red[wid][r * MR + m] = t;
            }
        __syncthreads();
        own = lane == 0 && (wid & (g.ks - 1)) == 0;
        if (!own) return;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int m = 0; m < MR; m++) {
                float t = red[wid][r * MR + m];
                for (int w = 1; w < g.ks; w++) t = __fadd_rn(t, red[wid + w][r * MR + m]);
                v[r][m] = t;
            }
    } else {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int m = 0; m < MR; m++) v[r][m] = dl_warp_sum(acc[r][m]);
        own = lane == 0;
        if (!own) return;
    }
    const bool pair = R >= 2 && g.silu;
    constexpr int H = R >= 2 ? R / 2 : 0; /* a pair's up rows start at H */
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int n = n0 + r;
        if ((pair && r >= H) || n >= g.n) continue;
        const dl_gv_rowep e = dl_gv_rowep_at(g, sk, n, pair);
#pragma unroll
        for (int m = 0; m < MR; m++) dl_gv_emit(g, e, m, n, v[r][m], pair ? v[r + H < R ? r + H : r][m] : 0.0f, pair);
    }
}

/* Rows per group in the block's placement: R, or R / 2 output columns for
 * a gate/up pair. */
template <int R> static __device__ __forceinline__ int dl_gv_cols(const dl_gv_sel &g) {
    return (R >= 2 && g.silu) ? R / 2 : R;
}

/* Row pointers of a row group: wrow[r] = row n0 + r of the block's weight
 * (tail rows past g.n recompute the last row, not stored), srow[r] = its
 * block-scale row (WS_BLOCK) or the constant 1. A gate/up pair: rows r <
 * R / 2 are gate rows n0 + r, the others up rows n0 + r - R / 2 (the two
 * weights share n, ld and the scale layout). */
template <int DT, int R>
static __device__ __forceinline__ void dl_gv_rows(const dl_gv_sel &g, const dl_gv_job &j, int n0, const char *(&wrow)[R],
                                                  const float *(&srow)[R]) {
#pragma unroll
    for (int r = 0; r < R; r++) {
        const bool up = R >= 2 && g.silu && r >= R / 2;
        const int c = n0 + (up ? r - R / 2 : r);
        const int n = c < g.n ? c : g.n - 1;
        wrow[r] = (up ? g.data2 : g.data) + (int64_t)n * g.ld * dl_wt<DT>::ES;
        srow[r] = j.w[0].scale_kind == WS_BLOCK ? (up ? g.scale2 : g.scale) + (int64_t)(n / j.w[0].bn) * j.w[0].kb
                                                 : &dl_one;
    }
}

/* The VEC activations of one chunk at p (16-byte aligned; its 4-float
 * quads qs float4 apart: 1 in x itself, more in permuted x, dl_xp_at) into
 * xv, times 2^8 where the widening moved that factor into x (dl_gv<DT,
 * CV>::XS; exact for |x| < 2^120). */
template <int DT, int CV>
static __device__ __forceinline__ void dl_gv_xload4(const float *p, float *xv, int q, int qs) {
    const float4 t = ((const float4 *)p)[q * qs];
    xv[4 * q] = t.x; xv[4 * q + 1] = t.y; xv[4 * q + 2] = t.z; xv[4 * q + 3] = t.w;
    if (dl_gv<DT, CV>::XS)
#pragma unroll
        for (int e = 4 * q; e < 4 * q + 4; e++) xv[e] *= 256.0f;
}
template <int DT, int CV>
static __device__ __forceinline__ void dl_gv_xload(const float *p, float *xv, int qs = 1) {
#pragma unroll
    for (int q = 0; q < dl_wt<DT>::VEC / 4; q++) dl_gv_xload4<DT, CV>(p, xv, q, qs);
}

/* The 16/32-bit float formats: their GEMVs at M <= 2 have a build without
 * the per-chunk scale load (CV = 1; gv_go, cuda.gemv_unscaled). */
static constexpr __host__ __device__ bool dl_is_f16_32(int dt) {
    return dt == DT_BF16 || dt == DT_F16 || dt == DT_F32;
}

/* Permuted activations (XP, gk_gemv_xperm_ws): dl_xp_at and its layout
 * are in gpu_common.cuh (the norms and the gate/up epilogue write the M = 1
 * form, the twin). */

/* One row's scale for the chunk at kk: srow[kk / bk] through the umulhi
 * magic, times 2^8 under fold; 1 where CV = 1 builds 16/32-bit weights
 * without the load. Every float GEMV chunk takes its scales here. */
template <int DT, int CV>
static __device__ __forceinline__ float dl_gv_row_scale(int kk, const float *srow, unsigned magic) {
    /* 16/32-bit weights launched with CV = 1 (gv_go: no block scales, the
     * backend's cuda.gemv_unscaled) take s = 1 without a load: fma(p, 1,
     * acc) = acc + p, the same bits */
    constexpr bool NOS = dl_is_f16_32(DT) && CV == 1;
    float s = NOS ? 1.0f : srow[__umulhi((unsigned)kk, magic)];
    if (dl_gv<DT, CV>::FOLD) s *= 256.0f; /* exact */
    return s;
}
/* What a chunk at kk takes besides its weights, at M = 1: its VEC
 * activations (x itself, or the permuted twin with XP) and each row's
 * chunk scale, as dl_gv_chunk loads them. */
template <int DT, int CV, int R>
static __device__ __forceinline__ void dl_gv_chunk_scales(int kk, const float *const (&srow)[R], unsigned magic,
                                                          float (&s)[R]) {
#pragma unroll
    for (int r = 0; r < R; r++) s[r] = dl_gv_row_scale<DT, CV>(kk, srow[r], magic);
}
/* Where the chunk at kk's activations start (M = 1; the twin with XP) and
 * the stride of its float4 loads. */
template <int DT, bool XP> static __device__ __forceinline__ const float *dl_gv_xat(const float *x, int kk) {
    return XP ? x + dl_xp_at<dl_wt<DT>::VEC, 1>(kk) : x + kk;
}
template <int DT, int CV, int R, bool XP>
static __device__ __forceinline__ void dl_gv_chunk_in(const float *__restrict__ x, int kk, const float *const (&srow)[R],
                                                      unsigned magic, float (&xv)[dl_wt<DT>::VEC], float (&s)[R]) {
    dl_gv_chunk_scales<DT, CV, R>(kk, srow, magic, s);
    dl_gv_xload<DT, CV>(dl_gv_xat<DT, XP>(x, kk), xv, XP ? DL_WARP : 1);
}
/* DL_FP8_HF: the chunk's N (16) activations as N / 2 fp16 pairs (RNE).
 * (A template: HIP builds never instantiate it, see DL_HF_BUILT.) */
template <int N>
static __device__ __forceinline__ void dl_gv_hf_x(const float (&xv)[N], __half2 (&xh)[N / 2]) {
#pragma unroll
    for (int i = 0; i < N / 2; i++) xh[i] = __floats2half2_rn(xv[2 * i], xv[2 * i + 1]);
}
/* DL_FP8_HF: each row's chunk (16 e4m3 codes in raw[r]) against xh: codes
 * to fp16 pairs of value * 2^-8 (as dl_e4m3x4_h2<0>), one HMUL2 and seven
 * HFMA2 in element-pair order, the pair's halves widened and added, then
 * acc[r] = fma(partial, s[r], acc[r]) (s carries the 2^8). */
template <int R>
static __device__ __forceinline__ void dl_gv_hf_rows(const uint4 (&raw)[R], const __half2 (&xh)[8], const float (&s)[R],
                                                     float (&acc)[R][1]) {
#pragma unroll
    for (int r = 0; r < R; r++) {
        const uint32_t wd[4] = {raw[r].x, raw[r].y, raw[r].z, raw[r].w};
        __half2 p;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            /* [sign(b1) b1 sign(b0) b0], [sign(b3) b3 sign(b2) b2] -> fp16 pairs */
            uint32_t a = dl_prmt(wd[j], 0u, 0x9180u), b = dl_prmt(wd[j], 0u, 0xB3A2u);
            a = (a & 0x017f017fu) << 7;
            b = (b & 0x017f017fu) << 7;
            __half2 ha, hb;
            __builtin_memcpy(&ha, &a, 4);
            __builtin_memcpy(&hb, &b, 4);
            p = j == 0 ? __hmul2(ha, xh[0]) : __hfma2(ha, xh[2 * j], p);
            p = __hfma2(hb, xh[2 * j + 1], p);
        }
        const float2 pf = __half22float2(p);
        acc[r][0] = fmaf(pf.x + pf.y, s[r], acc[r][0]);
    }
}

/* A chunk's arithmetic at M = 1 on what dl_gv_chunk_in loaded: each row
 * widened, its partial p over the chunk by sequential FMAs, then acc[r] =
 * fma(p, s[r], acc[r]). */
template <int DT, int CV, int R>
static __device__ __forceinline__ void dl_gv_chunk_on(const uint4 (&raw)[R], const float (&xv)[dl_wt<DT>::VEC],
                                                      const float (&s)[R], float (&acc)[R][1]) {
    typedef dl_wt<DT> T;
    if constexpr (CV == DL_FP8_HF) {
        __half2 xh[8];
        dl_gv_hf_x(xv, xh);
        dl_gv_hf_rows<R>(raw, xh, s, acc);
    } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
            float f[T::VEC];
            dl_gv<DT, CV>::cvt16(raw[r], f);
            float p = 0.0f;
#pragma unroll
            for (int e = 0; e < T::VEC; e++) p = fmaf(f[e], xv[e], p);
            acc[r][0] = fmaf(p, s[r], acc[r][0]);
        }
    }
}

/* dl_gv_chunk_on with the next chunk's activations loaded as this chunk's
 * are used up: the rows' FMAs run four elements (one float4 of x) at a
 * time, every row keeping its own sequential order (the same partials,
 * the same bits), and once a float4 has served every row it is reloaded
 * with the next chunk's, at kn, when there is one (more). One register set:
 * the loads overlap the rest of this chunk instead of following the next
 * chunk's ring wait. */
template <int DT, int CV, int R, bool XP>
static __device__ __forceinline__ void dl_gv_chunk_roll(const uint4 (&raw)[R], float (&xv)[dl_wt<DT>::VEC],
                                                        const float (&s)[R], float (&acc)[R][1],
                                                        const float *__restrict__ x, int kn, bool more) {
    typedef dl_wt<DT> T;
    if constexpr (CV == DL_FP8_HF) { /* x rounded first, so the next chunk's loads go out before the math */
        __half2 xh[8];
        dl_gv_hf_x(xv, xh);
        if (more) dl_gv_xload<DT, CV>(dl_gv_xat<DT, XP>(x, kn), xv, XP ? DL_WARP : 1);
        dl_gv_hf_rows<R>(raw, xh, s, acc);
    } else {
        float f[R][T::VEC], p[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            dl_gv<DT, CV>::cvt16(raw[r], f[r]);
            p[r] = 0.0f;
        }
        const float *xn = dl_gv_xat<DT, XP>(x, kn);
#pragma unroll
        for (int q = 0; q < T::VEC / 4; q++) {
#pragma unroll
            for (int e = 4 * q; e < 4 * q + 4; e++)
#pragma unroll
                for (int r = 0; r < R; r++) p[r] = fmaf(f[r][e], xv[e], p[r]);
            /* asks for the order: every row's partial through this float4
             * before its reload. ptxas still sinks the reloads below the
             * chunk's last FMAs (SASS, 2026-12-05), as it did without this;
             * the builds measured had it (docs/gpu_backend.md) */
#if !defined(__HIPCC__) /* (only the CUDA ring calls this) */
#pragma unroll
            for (int r = 0; r < R; r++) asm volatile("" : "+f"(p[r])::"memory");
#endif
            if (more) dl_gv_xload4<DT, CV>(xn, xv, q, XP ? DL_WARP : 1);
        }
#pragma unroll
        for (int r = 0; r < R; r++) acc[r][0] = fmaf(p[r], s[r], acc[r][0]);
    }
}

/* One 16-byte chunk per row (raw[r], at element kk of row r) folded into
 * acc: widened (dl_gv<DT, CV>), each row's partial p over the chunk by
 * sequential FMAs with every activation row m, then acc[r][m] = fma(p, s,
 * acc[r][m]) with s the chunk's block scale (srow[r][kk / bk] through the
 * umulhi magic; 1 without block scales). The one definition of a chunk's
 * arithmetic for every float GEMV K loop but dl_k_gemv_fp (at M = 1 it is
 * dl_gv_chunk_in then dl_gv_chunk_on, which the prefetching ring calls
 * apart). */
template <int DT, int CV, int R, int MR, bool XP = false>
static __device__ __forceinline__ void dl_gv_chunk(const uint4 (&raw)[R], const float *__restrict__ x, int K, int kk,
                                                   const float *const (&srow)[R], unsigned magic, float (&acc)[R][MR]) {
    typedef dl_wt<DT> T;
    if constexpr (MR == 1) { /* the same loads and arithmetic, in the two parts the prefetching ring uses */
        float xv[T::VEC], s[R];
        dl_gv_chunk_in<DT, CV, R, XP>(x, kk, srow, magic, xv, s);
        dl_gv_chunk_on<DT, CV, R>(raw, xv, s, acc);
        (void)K;
    } else {
        float f[R][T::VEC];
        float s[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            dl_gv<DT, CV>::cvt16(raw[r], f[r]);
            s[r] = dl_gv_row_scale<DT, CV>(kk, srow[r], magic);
        }
        const int xo = XP ? dl_xp_at<T::VEC, MR>(kk) : kk;
#pragma unroll
        for (int m = 0; m < MR; m++) {
            float xv[T::VEC];
            if (XP) dl_gv_xload<DT, CV>(x + xo + m * DL_WARP * 4, xv, MR * DL_WARP);
            else dl_gv_xload<DT, CV>(x + (int64_t)m * K + xo, xv);
#pragma unroll
            for (int r = 0; r < R; r++) {
                float p = 0.0f;
#pragma unroll
                for (int e = 0; e < T::VEC; e++) p = fmaf(f[r][e], xv[e], p);
                acc[r][m] = fmaf(p, s[r], acc[r][m]);
            }
        }
    }
}

/* Float GEMV over a job of 1..3 weights (dl_gv_job): y_i[m, n] =
 * (sum_k x[m, k] W_i[n, k]) * rowscale + bias. One warp per R rows,
 * blockDim.x / DL_WARP warps per block; each lane streams 16-byte vectors of
 * its rows (lane-strided: chunk c of a lane starts at (lane + c * DL_WARP) *
 * VEC), U vectors per row in flight, NA = L1 no-allocate weight loads, and
 * uses all MR activation rows in the same pass. Per lane each chunk gives a
 * partial p (sequential FMAs over the chunk) that is folded as acc = fma(p,
 * s, acc) (s: the chunk's block scale, else 1; chunks never straddle a K
 * block); lanes are then combined by a fixed butterfly. R, U, NA, CV and the
 * block shape leave that order, hence every bit, unchanged. Tail rows
 * recompute the last row and are not stored. Needs gk_gemv_ok and a 16-byte
 * aligned x; in-row offsets are 32-bit (k * element size < 2^31). */
/* LB (knob mlb=3, fp8 at M >= 5 with 2 rows per warp): at least LB blocks
 * of GEMV_MAXT threads per SM, i.e. at most 128 registers at LB = 2. */
template <int DT, int MR, int R, int U, int CV, int NA, bool XP = false, int LB = 0>
__global__ void __launch_bounds__(GEMV_MAXT, GEMV_LB(LB))
    dl_k_gemv_f(const float *__restrict__ x, const dl_gv_job j) {
    typedef dl_wt<DT> T;
    const dl_gv_sel g = dl_gv_pick(j);
    const dl_gv_at at = dl_gv_place(g, g.ks, dl_gv_cols<R>(g));
    const int lane = at.lane, wks = at.wks, n0 = at.n0;
    if (g.ks == 1 && n0 >= g.n) return; /* split: every warp meets the epilogue's barrier (rows clamp) */
    const int K = (int)j.w[0].k;
    const int sk = j.w[0].scale_kind;
    /* chunk scale = srow[r][umulhi(kk, magic)]: the row's block scales, or
     * (no block scales) the constant 1 with magic 0; no branch, no division */
    const unsigned magic = j.bk_magic;
    const char *wrow[R];
    const float *srow[R];
    dl_gv_rows<DT, R>(g, j, n0, wrow, srow);
    float acc[R][MR];
    dl_gv_zero(acc);
    const int step = DL_WARP * g.ks * T::VEC; /* a lane's chunks are step apart */
    uint4 raw[U][R]; /* chunks past K are neither loaded nor used */
    auto load = [&](int k0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int kk = k0 + u * step;
            if (kk < K) {
#pragma unroll
                for (int r = 0; r < R; r++) raw[u][r] = dl_ldw16<NA>(wrow[r] + kk * T::ES);
            }
        }
    };
    /* the U chunks of the group at k0 (loaded in raw) into acc */
    auto compute = [&](int k0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int kk = k0 + u * step;
            if (kk < K) dl_gv_chunk<DT, CV, R, MR, XP>(raw[u], x, K, kk, srow, magic, acc);
        }
    };
    int k0 = (lane + DL_WARP * wks) * T::VEC;
    /* the first group's loads are issued before the PDL wait and made its
     * input (else the compiler sinks them below it); each later group is
     * loaded right after the previous one is consumed. Measured on the
     * H200 (2026-11-30, fp8 Qwen3-8B decode at 512): 248.7 tok/s, against
     * 239.8 with a plain load-then-compute loop after the wait. */
    load(k0); /* weights only: before the wait for the kernel that made x */
    dl_pdl_enter_after_group<U, R>(raw, k0, step, K, (uint32_t *)g.y, !g.silu); /* gate/up: see gv_go */
    for (;;) {
        compute(k0);
        k0 += step * U;
        if (k0 >= K) break;
        load(k0);
    }
    dl_gv_store<R, MR>(acc, g, sk, n0, lane);
}

/* dl_k_gemv_f with the weight stream through shared memory (knob ring, the
 * default for fp8 weights at M <= 4; CUDA sm_80+). Each thread's chunks (the same
 * lane-strided chunks as dl_k_gemv_f) are copied global -> shared by
 * cp.async (16 bytes, L1 bypassed) into the thread's own slots of a
 * two-stage ring: dynamic shared memory [2][R][blockDim.x] x 16 bytes. The
 * next chunk of all R rows is in flight while the thread widens and folds
 * the current one, without registers held for it (~64 instead of ~100 per
 * thread: twice the warps per SM). A thread reads only the slots it
 * filled, so cp.async.wait_group is the only synchronisation. Same chunks,
 * partials, order and epilogue as dl_k_gemv_f: the same bits. PDL: the
 * first chunk is requested before the wait (weights only); the next kernel
 * is let launch right after the wait (late = 0), or after the K loop (late
 * = 1, DOTLM_GEMV_TRIG=late). Between back-to-back GEMVs the late trigger
 * is faster (an early-launched grid takes SM slots while this one is
 * resident and unbalances single-wave grids: bench/lab/gemv_lab.cu, H200,
 * 2026-11-30, fp8 4096x12288 at 50% of the copy bandwidth with the trigger
 * at the top, 76% after the K loop), but in a decode step the kernel after
 * a GEMV is small and its launch latency shows: Qwen3-8B fp8 decode 242.8
 * tok/s with the early trigger, 236.7 with the late one. */
/* At M = 1 register use is capped at 64 per thread (4 blocks of 8 warps, or
 * 8 of 4, per SM): left free nvcc took 76, which fits 6 blocks of 4 warps
 * (H200, 2026-11-30: 17408x5120 at 71.7% of the copy bandwidth against
 * 69.5%, gate/up 75.7% against 68.9%, Qwen3-8B fp8 decode 258.6 against
 * 242.8 tok/s). Larger M are left free (0: no bound; a bound of one block
 * let nvcc take more registers and made M = 2 slower). */
/* S = 3 stages (knob ring=2): chunks 0 and 1 are both requested before the
 * PDL wait (twice the weights in flight while the kernel ahead finishes),
 * and chunk c + 2 is requested as chunk c is consumed. */
/* LB (knob mlb, M >= 3): at least LB blocks of GEMV_MAXT threads per SM,
 * i.e. at most 128 registers per thread at LB = 2 (unbounded, nvcc took
 * ~180 at M = 4 and R = 4: two blocks of 4 warps per SM). */
/* At M = 1 with 1 or 2 rows per warp (knob r1) the cap is 48 registers
 * (5 blocks of 8 warps, or 10 of 4, per SM; nvcc then takes 47-48, no
 * spills): at 64, 2 rows on 5120x17408 (1280 blocks of 4 warps) needed more
 * than one wave of the 8 blocks per SM that fit. H200, 2026-12-02, the
 * kernel alone reading the twin, early-trigger chain: 82.5% of the copy
 * bandwidth against 67.2% (bench/h200-2026-12-02e/run1, 2026-12-02d/run4). */
/* PF (knob xpf, M = 1 and two stages only): chunk c + 1's activations and
 * chunk scales are loaded while chunk c computes, into the other of two
 * register sets (two chunks per trip: the sets alternate without copies),
 * so a chunk's FMAs no longer wait on its x loads, which miss L1 about one
 * time in three. The two sets need more than 64 registers: the cap is 85
 * (3 blocks of 8 warps, or 6 of 4, per SM). Same loads, values and order
 * (dl_gv_chunk_in / dl_gv_chunk_on): the same bits. */
/* (Under the 64-register cap of PF = 0 every instance of this loop
 * spills: ptxas -v, 36-140 bytes.) PF = 2 (knob xpf=2, the default): one
 * register set under the 64-register cap, chunk c + 1's activations
 * reloaded float4 by float4 as chunk c's are used up (dl_gv_chunk_roll;
 * ptxas issues them at the end of chunk c's FMAs, still ahead of the next
 * ring wait) and its scales as chunk c starts. */
template <int DT, int MR, int R, int CV, int S, bool XP = false, int LB = 0, int PF = 0>
__global__ void __launch_bounds__(GEMV_MAXT, MR == 1 ? (PF == 1 ? 3 : R <= 2 ? 5 : 4) : LB)
    dl_k_gemv_fa(const float *__restrict__ x, const dl_gv_job j, int late, int spre) {
    static_assert(S == 2 || S == 3, "two or three ring stages");
    static_assert(!PF || (MR == 1 && S == 2), "the prefetching ring: M = 1, two stages");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && DL_WARP == 32 && !defined(__HIPCC__)
    typedef dl_wt<DT> T;
    extern __shared__ uint4 dl_ring[];
    const dl_gv_sel g = dl_gv_pick(j);
    const dl_gv_at at = dl_gv_place(g, g.ks, dl_gv_cols<R>(g));
    const int lane = at.lane, wks = at.wks, n0 = at.n0;
    if (g.ks == 1 && n0 >= g.n) return; /* split: every warp meets the epilogue's barrier (rows clamp) */
    const int K = (int)j.w[0].k;
    const unsigned magic = j.bk_magic;
    const char *wrow[R];
    const float *srow[R];
    dl_gv_rows<DT, R>(g, j, n0, wrow, srow);
    /* one block-scale row per row group (gate and up rows: one each); gv_go
     * sends only groups whose rows share it (dl_gv_scale_shared): the same
     * values, one chunk-scale load instead of R, and registers enough to
     * keep the row pointers (nvcc recomputed them every chunk under the
     * 64-register cap: 372 SASS per chunk against 330 for the lab's ring) */
#pragma unroll
    for (int r = 1; r < R; r++) srow[r] = (R >= 2 && r >= R / 2 && g.silu) ? srow[R / 2] : srow[0];
    float acc[R][MR];
    dl_gv_zero(acc);
    const int T_ = blockDim.x;
    const int step = DL_WARP * g.ks * T::VEC, k1 = (lane + DL_WARP * wks) * T::VEC;
    const int nc = k1 < K ? dl_cdiv_p2(K - k1, step) : 0; /* the thread's chunks */
    /* the next chunk to request in each row: loop-carried pointers (kept in
     * registers; offsets from loop-invariant rows were rematerialised), and
     * the thread's stage-0 slot as a shared-window address */
    const char *wp[R];
#pragma unroll
    for (int r = 0; r < R; r++) wp[r] = wrow[r] + (int64_t)k1 * T::ES;
    const unsigned sa0 = (unsigned)__cvta_generic_to_shared(dl_ring + threadIdx.x);
    const unsigned srow_b = (unsigned)T_ * 16u, sst_b = (unsigned)R * srow_b;
    /* chunk c (wp points at it) of every row into ring stage st (= c % S) */
    auto issue = [&](int c, int st) {
        /* the L2 hint only in the two-stage ring: the three-stage one (knob
         * ring=2) hinted raised an illegal-instruction error on an H100
         * (2026-12-05, bench/h200-2026-12-05c/run2; cause not found) */
        dl_ring_issue_s<R>(sa0 + (unsigned)st * sst_b, srow_b, wp, c < nc, S == 2 ? j.l2ef : 0);
#pragma unroll
        for (int r = 0; r < R; r++) wp[r] += step * T::ES;
    };
    issue(0, 0);
    if (S == 3) issue(1, 1);
    if (spre) {
        /* the first chunk's block scales too (no kernel writes them; else a
         * DRAM round trip after the wait): loaded, and landed, before it */
        uint32_t dep = 0;
#pragma unroll
        for (int r = 0; r < R; r++) dep ^= k1 < K ? __float_as_uint(srow[r][__umulhi((unsigned)k1, magic)]) : 0u;
        if (blockDim.x == 0u) *(uint32_t *)j.y[0] = dep; /* never: keeps the loads above the wait */
    }
    dl_pdl_wait(); /* x is read, y written, only from here on */
    if (!late) dl_pdl_trigger();
    if constexpr (PF == 2) {
        float xv[T::VEC], sv[R];
        if (nc > 0) dl_gv_chunk_in<DT, CV, R, XP>(x, k1, srow, magic, xv, sv);
        int cur = 0, kk = k1;
        for (int c = 0; c < nc; c++) {
            dl_ring_wait<0>(); /* chunk c has landed */
            issue(c + 1, cur ^ 1);
            const uint4 *slot = dl_ring + cur * R * T_ + threadIdx.x;
            cur ^= 1;
            uint4 raw[R];
#pragma unroll
            for (int r = 0; r < R; r++) raw[r] = slot[r * T_];
            const bool more = c + 1 < nc;
            const int kn = kk + step;
            float sc[R];
#pragma unroll
            for (int r = 0; r < R; r++) sc[r] = sv[r];
            if (more) dl_gv_chunk_scales<DT, CV, R>(kn, srow, magic, sv); /* chunk c + 1's */
            dl_gv_chunk_roll<DT, CV, R, XP>(raw, xv, sc, acc, x, kn, more);
            kk = kn;
        }
    } else if constexpr (PF == 1) {
        float xa[T::VEC], xb[T::VEC], sa[R], sb[R];
        if (nc > 0) dl_gv_chunk_in<DT, CV, R, XP>(x, k1, srow, magic, xa, sa);
        /* chunk c from stage st with its inputs xc / sc; chunk c + 1's into xn / sn */
        auto one = [&](int c, int st, float (&xc)[T::VEC], float (&sc)[R], float (&xn)[T::VEC], float (&sn)[R]) {
            dl_ring_wait<0>();  /* chunk c has landed */
            issue(c + 1, st ^ 1); /* into the stage chunk c - 1 left */
            if (c + 1 < nc) dl_gv_chunk_in<DT, CV, R, XP>(x, k1 + (c + 1) * step, srow, magic, xn, sn);
            const uint4 *slot = dl_ring + st * R * T_ + threadIdx.x;
            uint4 raw[R];
#pragma unroll
            for (int r = 0; r < R; r++) raw[r] = slot[r * T_];
            dl_gv_chunk_on<DT, CV, R>(raw, xc, sc, acc);
        };
        for (int c = 0; c < nc; c += 2) {
            one(c, 0, xa, sa, xb, sb);
            if (c + 1 >= nc) break;
            one(c + 1, 1, xb, sb, xa, sa);
        }
    } else {
        int cur = 0, kk = k1; /* c % S, chunk c's first element */
        for (int c = 0; c < nc; c++) {
            dl_ring_wait<S - 2>(); /* chunk c has landed (c + 1 may be in flight) */
            /* chunk c + S - 1 into the stage chunk c - 1 left (consumed) */
            issue(c + S - 1, cur == 0 ? S - 1 : cur - 1);
            const uint4 *slot = dl_ring + cur * R * T_ + threadIdx.x;
            cur = cur == S - 1 ? 0 : cur + 1;
            uint4 raw[R];
#pragma unroll
            for (int r = 0; r < R; r++) raw[r] = slot[r * T_];
            dl_gv_chunk<DT, CV, R, MR, XP>(raw, x, K, kk, srow, magic, acc);
            kk += step;
        }
    }
    if (late) dl_pdl_trigger();
    dl_gv_store<R, MR>(acc, g, j.w[0].scale_kind, n0, lane);
#else /* no cp.async: never launched (gv_go) */
    (void)x, (void)j, (void)late, (void)spre;
#endif
}

template <bool B> struct dl_tag { static constexpr bool value = B; };

/* dl_k_gemv_f with the K loop restructured (knob loop): the same chunks,
 * partials, FMA order, widened values and epilogue, hence the same bits.
 * A lane's nc chunks run in groups of U. Software pipelined: as soon as
 * chunk u of a group is widened, its registers are refilled with chunk u of
 * the next group, so U vectors per row stay in flight while the lane
 * computes (dl_k_gemv_f issues a group only after finishing the previous
 * one). Groups whose next group is complete run without bounds checks, on
 * pointers advanced once per group (loads at immediate offsets); the last
 * groups are checked. 16/32-bit weights without block scales skip the
 * scale load (fma(p, 1, acc) is acc + p). With 2 M <= R all activation
 * rows of a chunk stay in registers and the rows are widened one at a time
 * (fewer live registers), else the reverse, as dl_k_gemv_f. The first group
 * is loaded before dl_pdl_enter() (weights only; x is read after it). Same
 * contract as dl_k_gemv_f. */
template <int DT, int MR, int R, int U, int CV, int NA>
__global__ void __launch_bounds__(GEMV_MAXT)
    dl_k_gemv_fp(const float *__restrict__ x, const dl_gv_job j) {
    typedef dl_wt<DT> T;
    typedef dl_gv<DT, CV> G;
    const dl_gv_sel g = dl_gv_pick(j);
    const dl_gv_at at = dl_gv_place(g, g.ks, dl_gv_cols<R>(g));
    const int lane = at.lane, wks = at.wks, n0 = at.n0;
    if (g.ks == 1 && n0 >= g.n) return; /* split: every warp meets the epilogue's barrier (rows clamp) */
    const int K = (int)j.w[0].k;
    const int sk = j.w[0].scale_kind;
    const unsigned magic = j.bk_magic; /* chunk scale = srow[r][umulhi(k, magic)], as dl_k_gemv_f */
    const int step = DL_WARP * g.ks * T::VEC;     /* elements from one chunk of a lane to its next */
    const int kl = (lane + DL_WARP * wks) * T::VEC; /* the lane's first element */
    const int nc = kl < K ? dl_cdiv_p2(K - kl, step) : 0; /* the lane's chunks */
    const char *wp[R]; /* the group's first chunk in each row */
    const float *srow[R];
    dl_gv_rows<DT, R>(g, j, n0, wp, srow);
#pragma unroll
    for (int r = 0; r < R; r++) wp[r] += kl * T::ES;
    uint4 raw[U][R]; /* chunk u of the current group; past the lane's chunks neither loaded nor used */
#pragma unroll
    for (int u = 0; u < U; u++)
        if (u < nc)
#pragma unroll
            for (int r = 0; r < R; r++) raw[u][r] = dl_ldw16<NA>(wp[r] + u * step * T::ES);
    /* chunk u loaded when u < nc */
    dl_pdl_enter_after_group<U, R>(raw, 0, 1, nc, (uint32_t *)g.y, !g.silu); /* x is read only from here on */
    float acc[R][MR];
    dl_gv_zero(acc);
    const float *xp = x + kl;   /* the group's first chunk in x row 0 */
    unsigned kg = (unsigned)kl; /* its element index */
    /* the K loop; BLK: chunk scales loaded (else 1) */
    auto run = [&](auto blk) {
        constexpr bool BLK = decltype(blk)::value;
        /* chunk u of the group: widen it, refill its registers with chunk u
         * of the next group (when next), fold its partials into acc */
        auto chunk = [&](int u, bool next) {
            float s[R];
            if (BLK) {
                const unsigned si = __umulhi(kg + (unsigned)(u * step), magic);
#pragma unroll
                for (int r = 0; r < R; r++) s[r] = srow[r][si];
            } else {
#pragma unroll
                for (int r = 0; r < R; r++) s[r] = 1.0f;
            }
            if (G::FOLD)
#pragma unroll
                for (int r = 0; r < R; r++) s[r] *= 256.0f; /* exact */
            /* activation row m of the chunk */
            auto xload = [&](int m, float *xv) { dl_gv_xload<DT, CV>(xp + (int64_t)m * K + u * step, xv); };
            /* the products of row r with activation row m, folded into acc */
            auto fold = [&](int r, int m, const float *f, const float *xv) {
                float p = 0.0f;
#pragma unroll
                for (int e = 0; e < T::VEC; e++) p = fmaf(f[e], xv[e], p);
                acc[r][m] = fmaf(p, s[r], acc[r][m]);
            };
            if constexpr (2 * MR <= R) { /* all activation rows live, one widened row at a time */
                float xv[MR][T::VEC];
#pragma unroll
                for (int m = 0; m < MR; m++) xload(m, xv[m]);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float f[T::VEC];
                    G::cvt16(raw[u][r], f);
                    if (next) raw[u][r] = dl_ldw16<NA>(wp[r] + (U + u) * step * T::ES);
#pragma unroll
                    for (int m = 0; m < MR; m++) fold(r, m, f, xv[m]);
                }
            } else { /* all widened rows live, one activation row at a time */
                float f[R][T::VEC];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    G::cvt16(raw[u][r], f[r]);
                    if (next) raw[u][r] = dl_ldw16<NA>(wp[r] + (U + u) * step * T::ES);
                }
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    float xv[T::VEC];
                    xload(m, xv);
#pragma unroll
                    for (int r = 0; r < R; r++) fold(r, m, f[r], xv);
                }
            }
        };
        auto advance = [&]() {
#pragma unroll
            for (int r = 0; r < R; r++) wp[r] += U * step * T::ES;
            xp += U * step;
            kg += (unsigned)(U * step);
        };
        /* UG groups per unchecked iteration: 2 for 16/32-bit weights (fewer
         * register moves at the loop edge), 1 for 8-bit (long bodies) */
        constexpr int UG = T::VEC == 16 ? 1 : 2;
        int left = nc; /* chunks not yet folded, the first U of them in raw */
        for (; left >= (UG + 1) * U; left -= UG * U) {
#pragma unroll
            for (int i = 0; i < UG; i++) {
#pragma unroll
                for (int u = 0; u < U; u++) chunk(u, true);
                advance();
            }
        }
        for (; left > 0; left -= U) { /* at most UG + 1 groups, the last one maybe partial */
#pragma unroll
            for (int u = 0; u < U; u++)
                if (u < left) chunk(u, U + u < left);
            advance();
        }
    };
    if (T::VEC < 16 && sk != WS_BLOCK) run(dl_tag<false>());
    else run(dl_tag<true>());
    dl_gv_store<R, MR>(acc, g, sk, n0, lane);
}

/* fp8 GEMV through fp16: codes widened by an fp16 table, activations rounded
 * to fp16, products through the fp16 dot instruction (HIP: v_dot2_f32_f16
 * with fp32 accumulation; CUDA: packed fma.rn.f16x2 on pairs, widened into
 * fp32 every 4 products). Less accurate (~1e-3); opt-in, measured apart. */
template <int E5, int MR>
__global__ void __launch_bounds__(GEMV_WPB *DL_WARP)
    dl_k_h2_gemv_fp8(float *__restrict__ y, const float *__restrict__ x, gk_weight w) {
    dl_pdl_enter();
    __shared__ __half htab[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) htab[i] = __float2half_rn(dl_fp8_decode(i, E5));
    __syncthreads();
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    const int64_t n = (int64_t)blockIdx.x * GEMV_WPB + wid;
    if (n >= w.n) return;
    const uint8_t *__restrict__ wrow = (const uint8_t *)w.data + n * w.ld;
    const int64_t K = w.k;
    const bool blk = w.scale_kind == WS_BLOCK;
    const float *srow = blk ? w.scale + (n / w.bn) * w.kb : nullptr;
    float acc[MR];
#pragma unroll
    for (int m = 0; m < MR; m++) acc[m] = 0.0f;
    for (int64_t kk = (int64_t)lane * 16; kk < K; kk += (int64_t)DL_WARP * 16) {
        uint4 r = *(const uint4 *)(wrow + kk);
        uint32_t wd[4] = {r.x, r.y, r.z, r.w};
        __half2 w2[8];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            w2[2 * j] = __halves2half2(htab[wd[j] & 255], htab[(wd[j] >> 8) & 255]);
            w2[2 * j + 1] = __halves2half2(htab[(wd[j] >> 16) & 255], htab[wd[j] >> 24]);
        }
        float s = blk ? srow[w.bk_shift >= 0 ? (kk >> w.bk_shift) : kk / w.bk] : 1.0f;
#pragma unroll
        for (int m = 0; m < MR; m++) {
            const float4 *xp = (const float4 *)(x + (int64_t)m * K + kk);
            float p = 0.0f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float4 xv = xp[j];
                p = dl_hdot2x2(w2[2 * j], __floats2half2_rn(xv.x, xv.y), w2[2 * j + 1],
                               __floats2half2_rn(xv.z, xv.w), p);
            }
            acc[m] = blk ? fmaf(p, s, acc[m]) : acc[m] + p;
        }
    }
    const float rs = dl_rowscale(w, n);
    const float b = w.bias ? w.bias[n] : 0.0f;
#pragma unroll
    for (int m = 0; m < MR; m++) {
        float v = dl_warp_sum(acc[m]);
        if (lane == 0) y[(int64_t)m * w.n + n] = __fadd_rn(__fmul_rn(v, rs), b);
    }
}

/* Reference: one thread per output, element by element as w_get() defines
 * it (value * scale), any shape and alignment. */
__global__ void dl_k_matmul_ref(float *__restrict__ y, const float *__restrict__ x, gk_weight w) {
    dl_pdl_enter();
    const int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t m = blockIdx.y;
    if (n >= w.n) return;
    const float *xr = x + m * w.k;
    float acc = 0.0f;
    for (int64_t k = 0; k < w.k; k++)
        acc = fmaf(xr[k], dl_load_elem(w.data, w.dtype, n * w.ld + k) * dl_scale_at(w, n, k), acc);
    y[m * w.n + n] = acc + (w.bias ? w.bias[n] : 0.0f);
}

static int vec_of(int dt) {
    switch (dt) {
    case DT_F32: return 4;
    case DT_F16: case DT_BF16: return 8;
    case DT_F8E4M3: case DT_F8E5M2: case DT_I8: return 16;
    default: return 0;
    }
}

static int es_of(int dt) { return dt == DT_F32 ? 4 : (dt == DT_F16 || dt == DT_BF16) ? 2 : 1; }

extern "C" int gk_gemv_ok(const gk_weight *w) {
    int vec = vec_of(w->dtype);
    if (!vec) return 0;
    if (((uintptr_t)w->data & 15) || (w->ld * es_of(w->dtype)) % 16 || w->k % vec) return 0;
    if (w->scale_kind == WS_BLOCK && w->bk % vec) return 0;
    if (w->n > INT32_MAX || w->k * es_of(w->dtype) > INT32_MAX / 2) return 0; /* 32-bit row/offset math */
    /* the chunk's block index by umulhi needs k * bk < 2^32 */
    if (w->scale_kind == WS_BLOCK && (w->bk <= 0 || (uint64_t)w->k * (uint64_t)w->bk >= (1ull << 32))) return 0;
    return 1;
}


/* ---- permuted activations (knob xp, gk_gemv_xperm_ws) ---- */

/* xp = the M rows of x [M][K] in the layout dl_xp_at reads (VEC = the
 * weight format's elements per 16-byte chunk; K % VEC == 0); n4 =
 * dl_xp_len<VEC>(M, K) / 4 float4 written, the padding as zeros. */
template <int VEC>
__global__ void __launch_bounds__(256) dl_k_xperm(float *__restrict__ xp, const float *__restrict__ x, int n4, int M, int K) {
    dl_pdl_enter(); /* x was just written */
    constexpr int Q = VEC / 4, G = dl_xp_g<VEC>();
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n4; o += gridDim.x * blockDim.x) {
        const int l = o % DL_WARP, t = o / DL_WARP, m = t % M, t2 = t / M, q = t2 % Q, g = t2 / Q;
        const int k = g * G + l * VEC + q * 4;
        *(float4 *)(xp + (int64_t)o * 4) = k < K ? *(const float4 *)(x + (int64_t)m * K + k) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

/* dl_k_xperm of M rows of x [M][K] into xp (dl_xp_len<VEC>(M, K) floats). */
template <int VEC>
static void dl_xperm_launch(cudaStream_t st, float *xp, const float *x, int M, int64_t K) {
    const int n4 = (int)(dl_xp_len<VEC>(M, K) / 4);
    dl_launch(dl_k_xperm<VEC>, dim3((unsigned)(DL_CDIV(n4, 256) < 2048 ? DL_CDIV(n4, 256) : 2048)), dim3(256), 0, st,
              xp, x, n4, M, (int)K);
}

/* The workspace the launchers permute x into (NULL: none; set by the
 * caller before its launches), and the launches made with it. */
static float *g_xp_ws = nullptr;
static size_t g_xp_cap = 0;
static unsigned long long g_xp_n = 0;
extern "C" void gk_gemv_xperm_ws(void *ws, size_t bytes) {
    g_xp_ws = (float *)ws;
    g_xp_cap = ws ? bytes : 0;
}
extern "C" unsigned long long gk_gemv_xperm_launches(void) { return g_xp_n; }
/* x's permuted twin for the next M = 1 launches of fp8 weights, and where a
 * gate/up pair's SiLU output twin goes (gk_gemv_twin), and the launches
 * that read a twin. */
static const float *g_xt = nullptr;
static float *g_silut = nullptr;
static unsigned long long g_xt_n = 0;
extern "C" void gk_gemv_twin(const float *xt, float *outt) {
    g_xt = xt;
    g_silut = outt;
}
extern "C" unsigned long long gk_gemv_twin_launches(void) { return g_xt_n; }
extern "C" size_t gk_gemv_twin_bytes(int64_t k) { return gk_gemv_xperm_bytes(1, k); } /* the M = 1 layout */
/* Launches of the register loop capped at 128 registers (knob mlb=3). */
static unsigned long long g_cap_n = 0;
extern "C" unsigned long long gk_gemv_capped_launches(void) { return g_cap_n; }

/* ---- GEMV variants (dl_gemv_cfg) ---- */

/* Launches through dl_k_gemv_fa (host side, the launching thread), and the
 * gate over the ring knob (gk_gemv_ring_allow). */
static unsigned long long g_ring_n = 0;
static int g_ring_allow = 1;
extern "C" unsigned long long gk_gemv_ring_launches(void) { return g_ring_n; }
extern "C" void gk_gemv_ring_allow(int on) { g_ring_allow = on != 0; }
int dl_ring_ok() { return g_ring_allow && gk_gemv_ring_supported(); }

/* GEMV launches whose blocks per SM were capped (knobs occ, i8occ;
 * dl_occ_pad) and their gate (gk_gemv_occ_allow, the backend's
 * cuda.gemv_occ): off, no launch is padded. */
static unsigned long long g_occ_n = 0, g_occ_left_n = 0;
static int g_occ_allow = 1;
extern "C" unsigned long long gk_gemv_occ_launches(void) { return g_occ_n; }
extern "C" unsigned long long gk_gemv_occ_left_launches(void) { return g_occ_left_n; }
extern "C" void gk_gemv_occ_allow(int on) { g_occ_allow = on != 0; }
#if DL_WARP == 32 && !defined(__HIPCC__)
extern "C" int gk_gemv_occ_supported(void) { return 1; }
#else
extern "C" int gk_gemv_occ_supported(void) { return 0; } /* HIP: dl_occ_pad never pads */
#endif

/* Shared memory per SM that a capped GEMV leaves to other kernels' blocks
 * (a PDL successor placed while the GEMV is resident needs some: each
 * block takes at least the reserved 1 KiB); DOTLM_OCC_KEEP (experiment,
 * bytes, read once) overrides. 0: keeping 16 KiB measured the same (H100,
 * bench/h200-2026-12-06e/run3). */
#define DL_OCC_KEEP 0

/* dl_occ_pad's results, one per kernel, block size, asked bytes and cap
 * (the runtime's occupancy and attribute queries once each, not per
 * launch); pad 0: no padding for that key. */
typedef struct {
    const void *k;
    int threads, occ;
    size_t smem, pad;
} dl_occ_entry;

#if DL_WARP == 32 && !defined(__HIPCC__)
/* The padding for a key not in dl_occ_pad's table tab[0..n) (0: none;
 * its size is in dl_occ_pad's comment): the runtime's occupancy and
 * attribute queries, and the kernel's limit and carve-out set where its
 * attributes do not already cover them. A query that fails clears its
 * own error and gives 0; an earlier launch's error is left for the
 * caller's check. */
static size_t dl_occ_measure(const void *k, int threads, size_t smem, int occ, const dl_occ_entry *tab, int n) {
    static int per_sm = -1, resv = 0;
    if (per_sm < 0) {
        int dev = 0;
        per_sm = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&resv, cudaDevAttrReservedSharedMemoryPerBlock, dev) != cudaSuccess)
            per_sm = 0, (void)cudaGetLastError();
    }
    if (per_sm <= 0) return 0;
    static const int keep = dl_env_int("DOTLM_OCC_KEEP", DL_OCC_KEEP);
    cudaFuncAttributes fa;
    int fit = 0;
    if (cudaFuncGetAttributes(&fa, k) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, k, threads, smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (occ >= fit) return 0;
    const long p = ((long)per_sm - keep) / occ - (long)fa.sharedSizeBytes - resv;
    if (p <= (long)smem) return 0;
    /* the largest limit this kernel's launches ask for, with the largest carve-out */
    long most = p;
    for (int i = 0; i < n; i++)
        if (tab[i].k == k && (long)tab[i].pad > most) most = (long)tab[i].pad;
    if ((fa.maxDynamicSharedSizeBytes < most || fa.preferredShmemCarveout != 100) &&
        (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)most) != cudaSuccess ||
         cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 100) != cudaSuccess)) {
        (void)cudaGetLastError();
        return 0;
    }
    return (size_t)p;
}
#endif

/* Contract in gpu_common.cuh. The padding: (shared memory per SM - kept) /
 * occ, less the kernel's static and the reserved per-block bytes. */
size_t dl_occ_pad(const void *k, unsigned grid, int threads, size_t smem, int occ) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    if (occ <= 0 || !g_occ_allow) return smem;
    enum { N = 64 };
    static dl_occ_entry tab[N];
    static int n = 0;
    size_t pad = 0;
    if (grid <= (unsigned)occ * (unsigned)gpurt_sm_count()) {
        int i = 0;
        while (i < n && !(tab[i].k == k && tab[i].threads == threads && tab[i].occ == occ && tab[i].smem == smem)) i++;
        if (i < n) pad = tab[i].pad;
        else {
            pad = dl_occ_measure(k, threads, smem, occ, tab, n);
            if (n < N) tab[n++] = dl_occ_entry{k, threads, occ, smem, pad};
        }
    }
    if (!pad) {
        g_occ_left_n++;
        return smem;
    }
    g_occ_n++;
    return pad;
#else
    (void)k, (void)grid, (void)threads, (void)occ;
    return smem;
#endif
}

/* Launches of the two-stage fp8 ring at M = 1 that load chunk c + 1's
 * activations and scales during chunk c (knob xpf, opt-in), and the
 * gate (gk_gemv_ring_xpf_allow, the backend's cuda.gemv_ring_xpf): off,
 * those launches load each chunk's inputs as the chunk starts. */
static unsigned long long g_rpf_n = 0;
static int g_rpf_allow = 1;
extern "C" unsigned long long gk_gemv_ring_xpf_launches(void) { return g_rpf_n; }
extern "C" void gk_gemv_ring_xpf_allow(int on) { g_rpf_allow = on != 0; }

/* Launches with the e4m3 fold widening (knob fp8=fold, the default at
 * M <= 2), and its gate (gk_gemv_fold_allow, the backend's cuda.gemv_fold):
 * off, those launches widen with h2 (the 2^8 multiplied per code pair). */
static unsigned long long g_fold_n = 0;
static int g_fold_allow = 1;
extern "C" unsigned long long gk_gemv_fold_launches(void) { return g_fold_n; }
extern "C" void gk_gemv_fold_allow(int on) { g_fold_allow = on != 0; }
/* fp8=hf is built for CUDA only: on gfx906 its M = 1 register loop came
 * out at 733 VALU instructions per trip against fold's 469
 * (tools/gfx906_loop_mix.sh, 2026-12-06), so HIP runs fold. */
#if defined(DOTLM_HIP) || defined(__HIPCC__)
#define DL_HF_BUILT 0
#else
#define DL_HF_BUILT 1
#endif
extern "C" int gk_gemv_hf_built(void) { return DL_HF_BUILT; }
/* Launches with the fp16 chunk products (knob fp8=hf, opt-in, M = 1), and
 * their gate (gk_gemv_hf_allow): off, fp8=hf runs fold. */
static unsigned long long g_hf_n = 0;
static int g_hf_allow = 1;
extern "C" unsigned long long gk_gemv_hf_launches(void) { return g_hf_n; }
extern "C" void gk_gemv_hf_allow(int on) { g_hf_allow = on != 0; }
/* Launches of the 16/32-bit GEMV without the per-chunk scale load (gv_go,
 * M <= 2, no block scales) and its gate (gk_gemv_unscaled_allow, the
 * backend's cuda.gemv_unscaled). */
static unsigned long long g_unsc_n = 0;
static int g_unsc_allow = 1;
extern "C" unsigned long long gk_gemv_unscaled_launches(void) { return g_unsc_n; }
extern "C" void gk_gemv_unscaled_allow(int on) { g_unsc_allow = on != 0; }
/* DOTLM_GEMV_TRIG=late (read once) or gk_gemv_trig_late(): see
 * gpu_common.cuh (same bits either way). */
static int g_trig_late = -1; /* -1: the environment's */
extern "C" void gk_gemv_trig_late(int on) { g_trig_late = on < 0 ? -1 : on != 0; }
int dl_gemv_late() {
    static const int v = dl_env_is("DOTLM_GEMV_TRIG", "late");
    return g_trig_late >= 0 ? g_trig_late : v;
}
void dl_ring_note() { g_ring_n++; }
/* fp8 ring launches whose weight copies carry the L2 evict_first policy,
 * and the gate (gk_gemv_l2ef_allow, the backend's cuda.gemv_l2_evict_first).
 * H100, 2026-12-05 (bench/h200-2026-12-05c/run1): Qwen3-8B fp8 decode at 512
 * 270.4 / 273.4 / 275.0 tok/s with the hint on every GEMV weight stream
 * against 258.5 / 261.7 / 265.2 without; int8 and bf16 within 0.5%, so only
 * the fp8 rings carry it. This code, hint on / off: H100 (run4) 270.0-273.4
 * against 261.8-262.0 tok/s, H200 (run5) 326.2-329.4 against 317.5-318.9. */
static unsigned long long g_l2ef_n = 0;
static int g_l2ef_allow = 1;
extern "C" unsigned long long gk_gemv_l2ef_launches(void) { return g_l2ef_n; }
extern "C" void gk_gemv_l2ef_allow(int on) { g_l2ef_allow = on != 0; }
int dl_gemv_l2ef() {
#if DL_WARP == 32 && !defined(__HIPCC__)
    return g_l2ef_allow;
#else
    return 0; /* no L2 hints on HIP */
#endif
}
void dl_gemv_l2ef_note(int l2ef) { g_l2ef_n += l2ef != 0; }
/* DOTLM_GEMV_SPRE=0 (experiment, read once): the fp8 ring GEMV loads its
 * first chunk's block scales after the PDL wait, not before (same bits). */
[[maybe_unused]] static int dl_ring_spre() { /* unused on HIP (no ring) */
    static const int v = dl_env_int("DOTLM_GEMV_SPRE", 1) != 0;
    return v;
}
/* DOTLM_GEMV_SILU_TRIG=early (experiment, read once): the gate/up + SiLU
 * ring launch triggers its successor early, as the other GEMVs (same bits). */
[[maybe_unused]] static int dl_silu_early() { /* unused on HIP (no ring) */
    static const int v = dl_env_is("DOTLM_GEMV_SILU_TRIG", "early");
    return v;
}
extern "C" int gk_gemv_ring_supported(void) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    static const int ok = [] {
        int dev = 0, major = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
        return major >= 8 ? 1 : 0;
    }();
    return ok;
#else
    return 0;
#endif
}

/* The knobs: dl_gemv_cfg (shared with k_matmul_int8.cu) and the K loop of
 * the float GEMV, loop = 0 (dl_k_gemv_f), 1 (dl_k_gemv_fp for fp8 weights,
 * dl_k_gemv_f for the others) or 2 (dl_k_gemv_fp for every format); the
 * new loop is instantiated at M <= GV_LOOP_MAXM (larger M use the old). */
struct gv_knobs {
    dl_gemv_cfg c;
    int loop;
    int xp; /* 1: 8-bit-weight float GEMVs at M >= 3 read x permuted (dl_k_xperm) when the caller gave a workspace */
};
#define GV_LOOP_MAXM 2

static void cfg_v1(gv_knobs *k) { /* the kernels as they were before the variants */
    k->c = dl_gemv_cfg{DL_FP8_F32, 2, 0, 4, 0, 0, 2, 0, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    k->loop = 0;
    k->xp = 0;
}
/* fp8: h2 in the first K loop (until fold, below). Measured on the H200 (2026-11-30, Qwen3-8B
 * fp8 decode at 512): 248.7 tok/s, against 230.9 with h2x in the pipelined
 * loop (fewer instructions but slower: loop=1 60/61/46% of the copy
 * bandwidth on the bench shapes against 65/65/49% for loop=0). The fp8
 * weight ring is on (M = 1 GEMV 62/70/60% against 54/64/49%; decode 242.8
 * against 241.5 tok/s without it); the W8A8 ring is off (decode 255.3
 * against 259.4 tok/s, kernel alone 71/83/73% against 74/90/68%), and so
 * is the W8A8 K split (i8ks=1; H200, 2026-11-30: the kernel alone at 86.9 /
 * 88.7 / 69.9% with the split by shape against 74.4 / 89.1 / 66.3%, but
 * int8 Qwen3-8B decode at 512 257.4 / 262.2 tok/s with it against 271.2 /
 * 271.6, and 259.2 / 260.0 with every weight over 2 warps). The W8A8
 * GEMV takes 2 rows per warp at M = 1 (i8r1=2, U = 2; the per-format
 * default, kept by v1, is 1 row with U = 4): H200, 2026-11-30, int8
 * Qwen3-8B decode at 512 288.1 / 285.8 tok/s against 267.0 / 270.9, the
 * kernel alone in a late-trigger chain 93.0 / 88.6 / 78.2% of the copy
 * bandwidth against 78.4 / 89.7 / 63.3% (bench/h200-2026-11-30g/run8). */
/* fp8 e4m3 at M <= 2 widens with fold (the 2^8 of h2 in the chunk scale,
 * one multiply per chunk instead of one per code pair: 337 -> ~307 SASS
 * per ring chunk). H200, 2026-12-01, Qwen3-8B fp8 decode at 512: 305.5 /
 * 310.8 tok/s against 297.2 / 297.3 with h2, 265.7 against 259.3 at 4096;
 * the M = 1 GEMV alone 66.3 / 75.1 / 63.0% of the copy bandwidth against
 * 63.9 / 74.1 / 60.3% (bench/h200-2026-12-01b/run8). Bitwise h2 while every
 * nonzero activation has 2^-109 <= |x| < 2^120 (docs/gpu_backend.md);
 * cuda.gemv_fold (DOTLM_DISABLE) or fp8=h2 go back to h2. */
/* mlb = 3 (the M >= 5 register loop with 2 rows per warp capped at 128
 * registers; mlb = 2 until 2026-12-02). H200, 2026-12-02, through the
 * backend, % of the copy bandwidth at M = 5 / 6 / 7 / 8, mlb = 2 -> 3
 * (bench/h200-2026-12-02d/run2): 17408x5120 27.7 / 21.2 / 27.5 / 27.4 ->
 * 30.0 / 30.9 / 27.4 / 29.6, 6144x5120 19.4 / 13.8 / 23.6 / 22.8 -> 26.6 /
 * 26.4 / 23.5 / 24.1 (5120x17408 takes 4 rows: unchanged); the fp8 server
 * within its run-to-run spread (8 clients 322.9 -> 330.7, 32 clients 360.3
 * -> 351.4 output tok/s). */
/* xpf = 2 (the fp8 M = 1 ring reloads x float4 by float4 with the next
 * chunk's, 64 registers). H200, 2026-12-05, Qwen3-8B fp8 decode at 512,
 * interleaved: 338.1 / 332.1 / 335.5 tok/s against 328.9 / 328.2 / 325.2
 * with xpf = 0, 285.0 against 281.2 at 4096; the GEMV alone 66.8 / 81.8 /
 * 65.6% of the copy bandwidth against 65.0 / 81.0 / 64.6%
 * (bench/h200-2026-12-05e/run4); H100: 280.8 / 277.6 / 280.6 against
 * 271.1 / 268.0 (run3). */
/* The memory bandwidth per SM the current device's specification gives
 * (2 x memory clock x bus width over the SMs the backend uses), GB/s; 0 if
 * unknown, and on HIP (gfx906: ~17 GB/s per CU). H200 ~37, H100 SXM ~25. */
static double dev_bw_per_sm() {
#if DL_WARP == 32 && !defined(__HIPCC__)
    int dev = 0, clk = 0, bus = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0;
    }
    const int sms = gpurt_sm_count();
    return sms > 0 && clk > 0 && bus > 0 ? 2.0 * clk * 1e3 * (bus / 8.0) / sms / 1e9 : 0.0;
#else
    return 0.0;
#endif
}

/* i8xp by device (I8_XP_BWSM): the W8A8 M = 1 GEMV loads a group's codes
 * one group ahead (i8xp=1) where the device gives each SM >= 32 GB/s of
 * memory bandwidth, so more bytes must be in flight per SM. H200 (~37 GB/s
 * per SM), 2026-12-06 (bench/h200-2026-12-06d run2 / run3 / run5): the
 * GEMV alone 88.7 / 100.0 / 86.2% and 87.6 / 99.5 / 86.0% of the copy
 * bandwidth against 73.1 / 91.4 / 76.7% and 74.2 / 91.9 / 76.7%; Qwen3-8B
 * W8A8 decode at 512 324.2 / 323.2 tok/s against 323.2 / 321.9, 318.2
 * against 318.9 over 1024 tokens (-1.2% in bench/h200-2026-12-05e/run2).
 * H100 (~25 GB/s per SM): decode 4.1% slower with it, so 0 there. */
#define I8_XP_BWSM 32.0
/* occ by device (FP8_OCC_BWSM, FP8_OCC): the fp8 ring's M = 1 launches
 * are capped at 6 blocks per SM (dl_occ_pad) where the device gives each
 * SM >= 32 GB/s, so that a PDL successor's early blocks spread evenly.
 * H200 (~37 GB/s per SM), 2026-12-06 (bench/h200-2026-12-06i/run1): the
 * GEMV alone, early chain, 86.8 / 83.6 / 79.0% of the copy bandwidth on
 * 5120x17408 / 17408x5120 / 6144x5120 against 70.9 / 83.7 / 73.9% with
 * no cap; Qwen3-8B fp8 decode at 512 339.0 / 338.3 tok/s against 338.8 /
 * 336.2, Qwen3-14B 208.6 / 208.7 against 208.5 / 208.7. H100 (~25 GB/s
 * per SM): the GEMV gains as well (92.4 / 91.5 / 89.1% against 82.5 /
 * 91.5 / 82.6%, bench/h200-2026-12-06h/run1) but decode measured 0-1.1%
 * slower with it (forty-fifth to forty-eighth sessions), so 0 there. */
#define FP8_OCC_BWSM 32.0
#define FP8_OCC 6
extern "C" double gk_gemv_bw_per_sm(void) { return dev_bw_per_sm(); }
static void cfg_default(gv_knobs *k) {
    k->c = dl_gemv_cfg{DL_FP8_FOLD, 0, 1, 4, 0, 0, 0, 1, 4, 2, 0, 1, 0, 1, 3, 2, 0, 0, 0};
    const double bwsm = dev_bw_per_sm();
    k->c.i8xp = bwsm >= I8_XP_BWSM ? 1 : 0;
    k->c.occ = bwsm >= FP8_OCC_BWSM ? FP8_OCC : 0;
    k->loop = 0;
    k->xp = 1;
}

/* Apply a spec "key=value,key=value" (or the words "default" / "v1") to k.
 * Returns 0, or -1 on an unknown key or value (k is then partly updated). */
static int cfg_apply(gv_knobs *k, const char *spec) {
    dl_gemv_cfg *c = &k->c;
    const char *p = spec;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char kv[64];
        if (n >= sizeof kv) return -1;
        memcpy(kv, p, n);
        kv[n] = 0;
        p = e ? e + 1 : NULL;
        if (!n) continue;
        if (!strcmp(kv, "default")) { cfg_default(k); continue; }
        if (!strcmp(kv, "v1")) { cfg_v1(k); continue; }
        char *eq = strchr(kv, '=');
        if (!eq) return -1;
        *eq = 0;
        const char *key = kv, *v = eq + 1;
        if (!strcmp(key, "fp8")) {
            if (!strcmp(v, "f32")) c->fp8 = DL_FP8_F32;
            else if (!strcmp(v, "h2")) c->fp8 = DL_FP8_H2;
            else if (!strcmp(v, "fold")) c->fp8 = DL_FP8_FOLD;
            else if (!strcmp(v, "f32s")) c->fp8 = DL_FP8_F32S;
            else if (!strcmp(v, "h2x")) c->fp8 = DL_FP8_H2X;
            else if (!strcmp(v, "hf")) c->fp8 = DL_FP8_HF;
            else return -1;
            continue;
        }
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || end == v) return -1;
        /* allowed values as bit masks: u 0 (auto)|2|4, na 0|1, wpb 4|8 (4 on gfx906: DL_GEMV_MAXW), rows and
         * i8ks 0 (default)|1|2|4, loop, ring, xpf and i8xp 0|1|2, occ and i8occ 0|2..7 */
        const unsigned U24 = 0x15, B01 = 0x3, W48 = DL_GEMV_MAXW == 8 ? 0x110 : 0x10, R = 0x17, L012 = 0x7, OC = 0xFD;
        const struct { const char *k; int *p; unsigned ok; } tab[] = {
            {"u", &c->u, U24}, {"na", &c->na, B01}, {"wpb", &c->wpb, W48}, {"r1", &c->r1, R},
            {"rm", &c->rm, R}, {"i8u", &c->i8u, U24}, {"i8na", &c->i8na, B01}, {"i8wpb", &c->i8wpb, W48},
            {"i8r1", &c->i8r1, R}, {"i8rm", &c->i8rm, R}, {"loop", &k->loop, L012}, {"ring", &c->ring, L012},
            {"i8ring", &c->i8ring, B01}, {"i8ks", &c->i8ks, R}, {"xp", &k->xp, B01}, {"mlb", &c->mlb, 0xF},
            {"xpf", &c->xpf, L012}, {"i8xp", &c->i8xp, L012}, {"occ", &c->occ, OC}, {"i8occ", &c->i8occ, OC}};
        size_t i = 0;
        for (; i < sizeof tab / sizeof tab[0]; i++)
            if (!strcmp(key, tab[i].k)) break;
        if (i == sizeof tab / sizeof tab[0] || x < 0 || x > 8 || !((tab[i].ok >> x) & 1)) return -1;
        *tab[i].p = (int)x;
    }
    return 0;
}

/* The settings at start: the defaults, then the older per-knob variables
 * DOTLM_GEMV_R1/RM and DOTLM_I8_R1/RM, then DOTLM_GEMV (a spec; ignored as a
 * whole, with a line on stderr, if it does not parse). */
static gv_knobs cfg_from_env() {
    gv_knobs k;
    cfg_default(&k);
    static const char *old[4] = {"DOTLM_GEMV_R1", "DOTLM_GEMV_RM", "DOTLM_I8_R1", "DOTLM_I8_RM"};
    int *dst[4] = {&k.c.r1, &k.c.rm, &k.c.i8r1, &k.c.i8rm};
    for (int i = 0; i < 4; i++) {
        const char *e = getenv(old[i]);
        int v = e ? atoi(e) : 0;
        if (v == 1 || v == 2 || v == 4) *dst[i] = v;
    }
    const char *e = getenv("DOTLM_GEMV");
    gv_knobs t = k;
    if (e && cfg_apply(&t, e) == 0) k = t;
    else if (e) fprintf(stderr, "dotlm: DOTLM_GEMV='%s' not understood (see gpu_tune.h); GEMV defaults used\n", e);
    return k;
}

/* The settings in force (read from the environment once, at first use;
 * the initialisation is thread-safe, changes by gk_gemv_tune are not). */
static gv_knobs &cfg_ref() {
    static gv_knobs k = cfg_from_env();
    return k;
}
const dl_gemv_cfg &dl_gemv_cfg_now() { return cfg_ref().c; }

extern "C" int gk_gemv_tune(const char *spec) {
    gv_knobs t = cfg_ref();
    if (!spec || cfg_apply(&t, spec)) return -1;
    cfg_ref() = t;
    return 0;
}

extern "C" int gk_gemv_wpb_max(void) { return DL_GEMV_MAXW; }

extern "C" void gk_gemv_tune_str(char *buf, size_t n) {
    const gv_knobs &k = cfg_ref();
    const dl_gemv_cfg &c = k.c;
    static const char *f8[6] = {"f32", "h2", "fold", "f32s", "h2x", "hf"};
    snprintf(buf, n,
             "fp8=%s,u=%d,na=%d,wpb=%d,r1=%d,rm=%d,i8u=%d,i8na=%d,i8wpb=%d,i8r1=%d,i8rm=%d,loop=%d,ring=%d,i8ring=%d,i8ks=%d,"
             "xp=%d,mlb=%d,xpf=%d,i8xp=%d,occ=%d,i8occ=%d",
             f8[c.fp8], c.u, c.na, c.wpb, c.r1, c.rm, c.i8u, c.i8na, c.i8wpb, c.i8r1, c.i8rm, k.loop, c.ring, c.i8ring,
             c.i8ks, k.xp, c.mlb, c.xpf, c.i8xp, c.occ, c.i8occ);
}

/* One float GEMV launch: the job's weights, the output pointers, M, knobs
 * (loop: 1 = dl_k_gemv_fp, resolved for the format). */
struct gv_call {
    cudaStream_t st;
    const float *x;
    const gk_weight *w;
    float *const *y;
    int count;
    dl_gemv_cfg cfg;
    int loop;
    float *silu; /* gate/up pair (gk_gemv_silu): w[0] gate, w[1] up; else NULL */
    float *xpws; /* M >= 3 with knob xp: a workspace of gk_gemv_xperm_bytes(M, k) to permute x into (gv_go), else NULL */
    const float *xt; /* M = 1, 8-bit weights: x's permuted twin (gk_gemv_twin; gv_reads_xt), else NULL */
    float *silut;    /* M = 1 gate/up pair: where silu's twin goes (gk_gemv_twin), else NULL */
};

/* Warps splitting a weight's K (part of the GEMV's summation order, so a
 * function of the weight's shape and format only: never of M, the variant
 * knobs or the other weights of a multi-weight job). 16/32-bit weights with
 * fewer than GV_KS_MAXN_F rows would leave most of the GPU idle at one
 * warp per row group: they split K over 2 or 4 warps when each lane still
 * gets >= 4 chunks of 16 bytes (dl_ks_by_shape). Measured on the H200
 * (2026-11-30, Qwen3-8B decode at 512): bf16 185.9 tok/s unsplit, 194.7
 * split below 8192 rows, 192.6 below 16384. With the later 16-bit launch
 * shapes (2 rows per warp at M = 1, placement by shifts, gate/up with the
 * SiLU epilogue) 16384 measured faster (2026-12-01: 216.2 / 216.2 tok/s
 * against 211.5 / 211.4 at 512, 195.4 against 191.7 at 4096; the gate/up
 * + SiLU launch alone 98.8% of the copy bandwidth against 94.5%;
 * bench/h200-2026-12-01b/run11, run12), so the bound is 16384: the
 * 12288-row gate and up weights split too. fp8 weights split K over 2
 * warps at every n (needs >= 4 chunks per lane): with the shared-memory
 * ring (dl_k_gemv_fa) that
 * measured best on every decode shape (bench/lab/gemv_lab.cu, H200,
 * 2026-11-30: 2 warps against 1 and 4, see docs/gpu_backend.md); int8
 * weight-only is not split. */
#define GV_KS_MAXN_F 16384 /* the float GEMV's row bound (W8A8's opt-in split: I8_KS_MAXN) */
static int gv_ks_maxn() {
    static const int v = dl_env_int("DOTLM_GEMV_KSMAXN", GV_KS_MAXN_F);
    return v;
}
/* DOTLM_GEMV_FP8KS4N=n (experiment, read once): fp8 weights with fewer than
 * n rows and >= 8 chunks per lane split K over 4 warps instead of 2 (more
 * warps streaming a small weight; changes the summation order). */
static int gv_fp8_ks4n() {
    static const int v = dl_env_int("DOTLM_GEMV_FP8KS4N", 0);
    return v;
}
static int gv_ks(const gk_weight &w, int vec) {
    const int64_t chunks = DL_CDIV(w.k, (int64_t)DL_WARP * vec); /* per lane, unsplit */
    if (dl_is_fp8(w.dtype)) return chunks >= 8 && w.n < gv_fp8_ks4n() ? 4 : chunks >= 4 ? 2 : 1;
    if (vec >= 16) return 1;
    return dl_ks_by_shape(w.n, chunks, gv_ks_maxn());
}

template <int DT, int MR, int R, int U, int CV, int NA, bool XP>
static void gv_go_k(const gv_call &c) {
    dl_gv_job j;
    int ks[GK_MULTI_MAX] = {1, 1, 1};
    for (int i = 0; i < c.count; i++) ks[i] = gv_ks(c.w[i], dl_wt<DT>::VEC);
    /* a gate/up pair is one weight of R / 2 columns per row group whose
     * rows R / 2.. come from up (same shape, so the same ks) */
    const unsigned grid = dl_gv_job_make(&j, c.w, c.y, c.silu ? 1 : c.count, c.cfg.wpb, c.silu ? R / 2 : R, ks);
    if (c.silu) {
        j.w[1] = c.w[1];
        j.y[1] = c.y[1];
        j.silu = c.silu;
        j.silut = MR == 1 ? c.silut : nullptr;
    }
#if DL_WARP == 32 && !defined(__HIPCC__)
    /* knob mlb: fp8 at M >= 3 with x permuted through the two-stage ring
     * capped at 128 registers (LB = 2): at every M up to 8 (mlb = 1), or
     * at M <= 4 (mlb = 2, with the rows per warp of gv_rows_batch) */
    if constexpr ((DT == DT_F8E4M3 || DT == DT_F8E5M2) && MR >= 3 && XP) {
        if ((c.cfg.mlb == 1 || (c.cfg.mlb >= 2 && MR <= 4)) && c.cfg.ring && dl_ring_ok() &&
            dl_gv_scale_shared(c.w[0], c.silu ? R / 2 : R)) {
            const size_t smem = (size_t)2 * R * c.cfg.wpb * DL_WARP * sizeof(uint4);
            g_ring_n++;
            dl_gemv_l2ef_note(j.l2ef);
            const int late = j.late || (c.silu && !dl_silu_early());
            return dl_launch(dl_k_gemv_fa<DT, MR, R, CV, 2, true, 2>, grid, c.cfg.wpb * DL_WARP, smem, c.st, c.x, j,
                             late, dl_ring_spre());
        }
    }
    /* M <= 4: at M = 8 the ring measured slower than the register loop
     * (H200, 2026-11-30, fp8 5120x17408: 11.7% against 16.1% of the copy
     * bandwidth; M = 1 / 2 / 4: 74.7 / 55.1 / 27.5% against 54.5 / 46.3 /
     * 25.4%) */
    if constexpr ((DT == DT_F8E4M3 || DT == DT_F8E5M2) && MR <= 4) {
        if (c.cfg.ring && dl_ring_ok() && dl_gv_scale_shared(c.w[0], c.silu ? R / 2 : R)) {
            /* S stages of R chunks per thread: 48 KiB at most (S = 3, R = 4, wpb = 8), the default limit */
            const int S = c.cfg.ring == 2 ? 3 : 2;
            const size_t smem = (size_t)S * R * c.cfg.wpb * DL_WARP * sizeof(uint4);
            g_ring_n++;
            dl_gemv_l2ef_note(S == 2 && j.l2ef); /* (dl_k_gemv_fa: two stages only) */
            /* a gate/up pair is followed by the down projection's GEMV, not by
             * a small kernel: it lets that one launch after its K loop (the
             * faster order between back-to-back GEMVs, see dl_k_gemv_fa) */
            const int late = j.late || (c.silu && !dl_silu_early());
            if (S == 3) {
                /* 48 KiB of ring plus the epilogue's static array pass the default per-block limit */
                static bool big = false;
                if (!big) {
                    (void)cudaFuncSetAttribute((const void *)dl_k_gemv_fa<DT, MR, R, CV, 3, XP>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
                    big = true;
                }
                return dl_launch(dl_k_gemv_fa<DT, MR, R, CV, 3, XP>, grid, c.cfg.wpb * DL_WARP, smem, c.st, c.x, j, late,
                                 dl_ring_spre());
            }
            if constexpr (MR == 1) {
                if (c.cfg.xpf && g_rpf_allow) {
                    g_rpf_n++;
                    const int th = c.cfg.wpb * DL_WARP;
                    auto k = c.cfg.xpf == 2 ? dl_k_gemv_fa<DT, 1, R, CV, 2, XP, 0, 2> : dl_k_gemv_fa<DT, 1, R, CV, 2, XP, 0, 1>;
                    return dl_launch(k, grid, th, dl_occ_pad((const void *)k, grid, th, smem, c.cfg.occ), c.st, c.x, j,
                                     late, dl_ring_spre());
                }
            }
            const int th = c.cfg.wpb * DL_WARP;
            auto k = dl_k_gemv_fa<DT, MR, R, CV, 2, XP>;
            return dl_launch(k, grid, th, MR == 1 ? dl_occ_pad((const void *)k, grid, th, smem, c.cfg.occ) : smem,
                             c.st, c.x, j, late, dl_ring_spre());
        }
    }
#endif
    /* (dl_k_gemv_fp reads x as it is, and has no hf form: not built for it) */
    if constexpr (MR <= GV_LOOP_MAXM && !XP && CV != DL_FP8_HF) {
        if (c.loop) {
            /* int8 weight-only: the conversion-free widening (dl_gv<DT_I8, 1>) */
            constexpr int CVP = DT == DT_I8 ? 1 : CV;
            return dl_launch(dl_k_gemv_fp<DT, MR, R, U, CVP, NA>, grid, c.cfg.wpb * DL_WARP, 0, c.st, c.x, j);
        }
    }
    /* 16/32-bit weights at M <= 2 without block scales (every weight of the
     * job): the chunk scale is the constant 1, so the kernel is built
     * without its load (CV = 1, see dl_gv_chunk). The load of the constant
     * per chunk and row put an L1/L2 round trip into every chunk (H200,
     * 2026-12-01, bf16 Qwen3-8B decode at 512: 223.3-225.7 tok/s without
     * it against 217.6-219.7, bench/h200-2026-12-01f/run6) */
    if constexpr (dl_is_f16_32(DT) && MR <= 2 && CV == 0) {
        bool none = g_unsc_allow != 0;
        for (int i = 0; i < c.count; i++) none = none && c.w[i].scale_kind != WS_BLOCK;
        if (none) {
            g_unsc_n++;
            return dl_launch(dl_k_gemv_f<DT, MR, R, U, 1, NA>, grid, c.cfg.wpb * DL_WARP, 0, c.st, c.x, j);
        }
    }
    if constexpr ((DT == DT_F8E4M3 || DT == DT_F8E5M2) && MR >= 5 && R == 2 && XP) {
        if (c.cfg.mlb == 3) {
            g_cap_n++;
            return dl_launch(dl_k_gemv_f<DT, MR, R, U, CV, NA, XP, 2>, grid, c.cfg.wpb * DL_WARP, 0, c.st, c.x, j);
        }
    }
    dl_launch(dl_k_gemv_f<DT, MR, R, U, CV, NA, XP>, grid, c.cfg.wpb * DL_WARP, 0, c.st, c.x, j);
}

/* Whether the launch c of weights with vec elements per chunk, built with
 * L1 no-allocate loads or not (na), reads x permuted (gv_go): a workspace
 * (M >= 3, knob xp), 8-bit weights, na, and K a multiple of the chunk
 * within dl_k_xperm's 32-bit offsets. */
/* K fits the permuted layouts for vec elements per chunk: 8-bit weights,
 * whole chunks, 32-bit offsets (dl_k_xperm's). */
static bool gv_xp_fits(int64_t K, int vec) {
    return vec >= 16 && K % vec == 0 && 8 * (K + (int64_t)DL_WARP * vec) <= INT32_MAX;
}
static bool gv_reads_xp(const gv_call &c, int vec, int na) { return c.xpws && na && gv_xp_fits(c.w[0].k, vec); }

/* Whether the M = 1 launch c reads x's permuted twin: the caller gave one
 * (gk_gemv_twin) and K fits the layout as for gv_reads_xp. */
static bool gv_reads_xt(const gv_call &c) { return c.xt && gv_xp_fits(c.w[0].k, dl_wt<DT_F8E4M3>::VEC); }

/* One launch of the job: 8-bit weights (16 codes per chunk) at M >= 3
 * (c.xpws set: knob xp and a workspace), with L1 no-allocate weight loads
 * (NA = 1, the default) and K a multiple of the chunk: x is first permuted
 * into the workspace (dl_k_xperm) and the kernels read it there (XP). A
 * lane's chunk needs 16 floats of each activation row, 64 bytes after the
 * next lane's, so a warp's load of one 16-byte quad touched 16 L1 lines for
 * 512 bytes. Same values and order: the same bits. H200, 2026-12-02
 * (bench/h200-2026-12-02/run6, through the backend, % of the copy bandwidth
 * on 5120x17408 / 17408x5120 / 6144x5120): fp8 M = 8 25.0 / 20.6 / 19.5
 * against 16.2 / 14.5 / 14.7, M = 4 33.9 / 31.7 / 29.5 against 28.0 /
 * 25.4 / 25.7; bf16 (8 elements per chunk, 32 bytes apart) M = 4 55.7
 * against 61.6 on 5120x17408 (the extra launch outweighs it), so 16-bit and
 * 32-bit weights keep the strided loads. */
template <int DT, int MR, int R, int U, int CV, int NA>
static void gv_go(const gv_call &c) {
    if constexpr (CV == DL_FP8_FOLD) g_fold_n++;
    if constexpr (CV == DL_FP8_HF) g_hf_n++;
    constexpr int VEC = dl_wt<DT>::VEC;
    if constexpr (MR > 2 && MR > GV_LOOP_MAXM && NA == 1 && VEC >= 16) {
        const int64_t K = c.w[0].k;
        if (gv_reads_xp(c, VEC, NA)) {
            dl_xperm_launch<VEC>(c.st, c.xpws, c.x, MR, K);
            g_xp_n++;
            gv_call p = c;
            p.x = c.xpws;
            p.xpws = nullptr;
            return gv_go_k<DT, MR, R, U, CV, NA, true>(p);
        }
    }
    if constexpr (MR == 1 && VEC >= 16) {
        if (gv_reads_xt(c)) { /* x's twin, written by the kernel that made x */
            g_xt_n++;
            gv_call p = c;
            p.x = c.xt;
            return gv_go_k<DT, MR, R, U, CV, NA, true>(p);
        }
    }
    gv_go_k<DT, MR, R, U, CV, NA, false>(c);
}

/* Knob -> template. Instantiated: every format with U = 2 and NA = 0/1 at
 * all M; U = 4 and the e4m3 F32S widening only at M <= 2 (decode proper),
 * where instruction counts and loads in flight matter most; larger M fall
 * back to U = 2 / DL_FP8_H2. The e4m3 FOLD widening at M <= 2, and at
 * M > 2 with L1 no-allocate weight loads (na = 1, the default): a token's
 * row in a batch then has the bits it has alone at every activation, not
 * only where fold and h2 agree (before 2026-12-02 larger M took h2). R = 1
 * only at M = 1 (as before). H2X is its own kernel only where moving the
 * 256 to x saves multiplies (2 M < R: M = 1, R = 4); elsewhere it runs as
 * DL_FP8_H2 (same bits). */
template <int DT, int MR, int R, int U, int NA>
static void gv_cv(const gv_call &c) {
    if constexpr (DT == DT_F8E4M3) {
        /* the fp16 chunk products (opt-in; CUDA): built for the default
         * M = 1 launch shape only (4 rows per warp, 2 vectors, na = 1);
         * other shapes run fold (gk_gemv_hf_launches counts where it ran) */
        if constexpr (DL_HF_BUILT && MR == 1 && NA == 1 && R == 4 && U == 2) {
            if (c.cfg.fp8 == DL_FP8_HF && g_hf_allow) return gv_go<DT, MR, R, U, DL_FP8_HF, NA>(c);
        }
        if constexpr (MR <= 2 || NA == 1) {
            if (c.cfg.fp8 == DL_FP8_FOLD && g_fold_allow) return gv_go<DT, MR, R, U, DL_FP8_FOLD, NA>(c);
        }
        if constexpr (MR <= 2) {
            if (c.cfg.fp8 == DL_FP8_F32S) return gv_go<DT, MR, R, U, DL_FP8_F32S, NA>(c);
        }
        if constexpr (2 * MR < R) {
            if (c.cfg.fp8 == DL_FP8_H2X) return gv_go<DT, MR, R, U, DL_FP8_H2X, NA>(c);
        }
        if (c.cfg.fp8 != DL_FP8_F32) return gv_go<DT, MR, R, U, DL_FP8_H2, NA>(c);
        return gv_go<DT, MR, R, U, DL_FP8_F32, NA>(c);
    } else if constexpr (DT == DT_F8E5M2) { /* no rebias to fold or move: FOLD = H2X = H2; F32S = F32 */
        if (c.cfg.fp8 != DL_FP8_F32 && c.cfg.fp8 != DL_FP8_F32S) return gv_go<DT, MR, R, U, DL_FP8_H2, NA>(c);
        return gv_go<DT, MR, R, U, DL_FP8_F32, NA>(c);
    } else {
        return gv_go<DT, MR, R, U, 0, NA>(c);
    }
}

/* u = 0 (auto): 4 vectors in flight when a warp streams one row, else 2
 * (at least 64 bytes per lane either way). */
template <int DT, int MR, int R>
static void gv_un(const gv_call &c) {
    if constexpr (MR <= 2) {
        if (c.cfg.u == 4 || (c.cfg.u == 0 && R == 1)) {
            if (c.cfg.na) return gv_cv<DT, MR, R, 4, 1>(c);
            return gv_cv<DT, MR, R, 4, 0>(c);
        }
    }
    if (c.cfg.na) return gv_cv<DT, MR, R, 2, 1>(c);
    return gv_cv<DT, MR, R, 2, 0>(c);
}

/* Rows per warp: knob r1 (M = 1) / rm (M > 1); 0 = per format: fp8 4 rows
 * (measured on the H200, 2026-11-30, % of copy bandwidth on 5120x17408 /
 * 17408x5120 / 6144x5120: M = 1 66/66/55 against 66/59/52 with 2 rows;
 * M = 2 47/53/43 against 27/36/27; M = 8 13/17/14 against 7/10/8), other
 * 8-bit weights 2 rows, 16-bit weights 2 rows at M = 1 and 32-bit 1, 4
 * at M > 1 (each activation load shared by 4 rows). 16-bit at M = 1 took
 * 1 row (U = 4: a warp's whole K slice requested before the PDL wait on
 * q/k/v and o_proj) until the H200 measured 2 rows (U = 2) faster in a
 * decode step (2026-12-01, bf16 Qwen3-8B at 512: 208.9 / 212.8 tok/s
 * against 203.5 / 203.7; bench/h200-2026-12-01/run5). */
/* Rows per warp of an fp8 launch at M >= 3 that reads x permuted, under
 * mlb = 2 (rm = 0). M <= 4 (the capped ring, 16 warps per SM at most): 4
 * rows when the grid then fills at least two waves (rows x ks >= 128 SMs),
 * else 2; M >= 5 (the register loop): 2 rows while the M x k activations
 * fit in L1 (<= 192 KiB; each load then serves 2 rows from L1), else 4
 * (the loads that miss are shared by twice the rows). H200, 2026-12-02,
 * % of the copy bandwidth through the backend (bench/h200-2026-12-02b/run1,
 * ring capped / register loop), 5120x17408 / 17408x5120 / 6144x5120: M = 4
 * 4 rows 27.7 / 42.1 / 28.9, 2 rows 41.6 / 37.8 / 32.1 (before: 33.7 / 31.5
 * / 29.3); M = 8 4 rows 24.7 / 20.5 / 19.4, 2 rows 20.4 / 24.3 / 20.3.
 * Rows per warp never change the summation order: the same bits. */
static int gv_rows_batch(const gv_call &c, int M, int vec) {
    int64_t rows = 0; /* every weight's (a gate/up pair: count 2, gate and up alike) */
    for (int i = 0; i < c.count; i++) rows += c.w[i].n;
    if (M <= 4) {
        int nsm = gpurt_sm_count();
        if (nsm <= 0) nsm = 132;
        return rows * gv_ks(c.w[0], vec) >= 128 * (int64_t)nsm ? 4 : 2;
    }
    return (int64_t)M * c.w[0].k * (int64_t)sizeof(float) <= 192 * 1024 ? 2 : 4;
}

template <int DT, int MR>
static void gv_rows(const gv_call &c) {
    int r = MR == 1 ? c.cfg.r1 : c.cfg.rm;
    if (!r && dl_is_fp8(DT) && MR >= 3 && c.cfg.mlb >= 2 && gv_reads_xp(c, dl_wt<DT>::VEC, c.cfg.na))
        r = gv_rows_batch(c, MR, dl_wt<DT>::VEC);
    if (!r) r = dl_wt<DT>::VEC >= 16 ? (dl_is_fp8(DT) ? 4 : 2) : MR > 1 ? 4 : dl_wt<DT>::VEC == 8 ? 2 : 1;
    if (c.silu && r == 1) r = 2; /* a pair needs one gate and one up row per warp */
    if (r == 4) return gv_un<DT, MR, 4>(c);
    if constexpr (MR == 1) {
        if (r == 1) return gv_un<DT, 1, 1>(c);
    }
    return gv_un<DT, MR, 2>(c);
}

template <int DT>
static void gv_m(const gv_call &c, int M) {
    switch (M) {
    case 1: gv_rows<DT, 1>(c); break;
    case 2: gv_rows<DT, 2>(c); break;
    case 3: gv_rows<DT, 3>(c); break;
    case 4: gv_rows<DT, 4>(c); break;
    case 5: gv_rows<DT, 5>(c); break;
    case 6: gv_rows<DT, 6>(c); break;
    case 7: gv_rows<DT, 7>(c); break;
    default: gv_rows<DT, 8>(c); break;
    }
}

static void gv_run(cudaStream_t st, const float *x, const gk_weight *w, float *const *y, int count, int M,
                   float *silu) {
    const gv_knobs &k = cfg_ref();
    const int dt = w[0].dtype;
    const int loop = k.loop == 2 || (k.loop == 1 && dl_is_fp8(dt));
    const bool xp = k.xp && M >= 3 && g_xp_ws && gk_gemv_xperm_bytes(M, w[0].k) <= g_xp_cap;
    const bool xt = M == 1 && g_xt && dl_is_fp8(dt);
    const gv_call c = {st, x, w, y, count, k.c, loop, silu, xp ? g_xp_ws : nullptr, xt ? g_xt : nullptr,
                       M == 1 && silu ? g_silut : nullptr};
    switch (dt) {
    case DT_F32: gv_m<DT_F32>(c, M); break;
    case DT_F16: gv_m<DT_F16>(c, M); break;
    case DT_BF16: gv_m<DT_BF16>(c, M); break;
    case DT_F8E4M3: gv_m<DT_F8E4M3>(c, M); break;
    case DT_F8E5M2: gv_m<DT_F8E5M2>(c, M); break;
    case DT_I8: gv_m<DT_I8>(c, M); break;
    default: break;
    }
}

/* Whether float GEMVs of dtype at M >= 3 read x permuted under the current
 * knobs (xp, na): the rule of gv_go's first branch that does not depend
 * on the launch (8-bit weights: 16 codes per chunk), for the caller that
 * sizes the workspace. */
extern "C" int gk_gemv_xperm_wants(int dtype) {
    const gv_knobs &k = cfg_ref();
    int vec = 0;
    switch (dtype) {
    case DT_F8E4M3: vec = dl_wt<DT_F8E4M3>::VEC; break;
    case DT_F8E5M2: vec = dl_wt<DT_F8E5M2>::VEC; break;
    case DT_I8: vec = dl_wt<DT_I8>::VEC; break;
    default: break; /* 16/32-bit: fewer than 16 elements per chunk */
    }
    return k.xp && k.c.na && vec >= 16;
}

/* Bytes of the permuted copy of M rows of k activations (8-bit weights:
 * 16 per chunk), k padded to whole groups of chunks (dl_xp_len). */
extern "C" size_t gk_gemv_xperm_bytes(int M, int64_t k) {
    static_assert(dl_wt<DT_F8E4M3>::VEC == dl_wt<DT_I8>::VEC, "8-bit weights share one chunk width");
    return (size_t)dl_xp_len<dl_wt<DT_F8E4M3>::VEC>(M, k) * sizeof(float);
}

/* xt = the permuted twin of one row x of k floats (dl_k_xperm at M = 1;
 * padding zero). For tests and callers whose x has no producer that
 * writes the twin. */
extern "C" void gk_gemv_twin_fill(void *s, float *xt, const float *x, int64_t k) {
    dl_xperm_launch<dl_wt<DT_F8E4M3>::VEC>((cudaStream_t)s, xt, x, 1, k);
}

extern "C" void gk_gemv(void *s, float *y, const float *x, const gk_weight *w, int M) {
    gv_run((cudaStream_t)s, x, w, &y, 1, M, nullptr);
}

/* Same format, scale kind, block shape and k for every weight, each one fit
 * for the GEMV on its own. */
extern "C" int gk_gemv_multi_ok(const gk_multi *mw) {
    if (!mw || mw->count < 1 || mw->count > GK_MULTI_MAX) return 0;
    const gk_weight *a = &mw->w[0];
    for (int i = 0; i < mw->count; i++) {
        const gk_weight *b = &mw->w[i];
        if (!gk_gemv_ok(b) || !mw->y[i]) return 0;
        if (b->dtype != a->dtype || b->scale_kind != a->scale_kind || b->k != a->k) return 0;
        if (a->scale_kind == WS_BLOCK &&
            (b->bn != a->bn || b->bk != a->bk || b->kb != a->kb || b->bk_shift != a->bk_shift))
            return 0;
    }
    return 1;
}

extern "C" void gk_gemv_multi(void *s, const gk_multi *mw, const float *x, int M) {
    gv_run((cudaStream_t)s, x, mw->w, mw->y, mw->count, M, nullptr);
}

/* A gate/up pair the float GEMV can fuse: two alike weights of the same n
 * and row stride, M <= 8, an output. */
extern "C" int gk_gemv_silu_ok(const gk_multi *mw, int M) {
    return mw && mw->count == 2 && mw->silu && M >= 1 && M <= 8 && gk_gemv_multi_ok(mw) && mw->w[0].n == mw->w[1].n &&
           mw->w[0].ld == mw->w[1].ld;
}

extern "C" void gk_gemv_silu(void *s, const gk_multi *mw, const float *x, int M) {
    gv_run((cudaStream_t)s, x, mw->w, mw->y, 2, M, mw->silu);
}

template <int E5>
static void gemv_dot2_e(cudaStream_t st, float *y, const float *x, const gk_weight *w, int M) {
    dim3 grid((unsigned)DL_CDIV(w->n, GEMV_WPB)), block(GEMV_WPB * DL_WARP);
    switch (M) {
    case 1: dl_launch(dl_k_h2_gemv_fp8<E5, 1>, grid, block, 0, st, y, x, *w); break;
    case 2: dl_launch(dl_k_h2_gemv_fp8<E5, 2>, grid, block, 0, st, y, x, *w); break;
    case 3: dl_launch(dl_k_h2_gemv_fp8<E5, 3>, grid, block, 0, st, y, x, *w); break;
    case 4: dl_launch(dl_k_h2_gemv_fp8<E5, 4>, grid, block, 0, st, y, x, *w); break;
    case 5: dl_launch(dl_k_h2_gemv_fp8<E5, 5>, grid, block, 0, st, y, x, *w); break;
    case 6: dl_launch(dl_k_h2_gemv_fp8<E5, 6>, grid, block, 0, st, y, x, *w); break;
    case 7: dl_launch(dl_k_h2_gemv_fp8<E5, 7>, grid, block, 0, st, y, x, *w); break;
    default: dl_launch(dl_k_h2_gemv_fp8<E5, 8>, grid, block, 0, st, y, x, *w); break;
    }
}

/* Caller guarantees an fp8 dtype and gk_gemv_ok(w). */
extern "C" void gk_gemv_fp8_dot2(void *s, float *y, const float *x, const gk_weight *w, int M) {
    if (w->dtype == DT_F8E5M2) gemv_dot2_e<1>((cudaStream_t)s, y, x, w, M);
    else gemv_dot2_e<0>((cudaStream_t)s, y, x, w, M);
}


extern "C" void gk_matmul_ref(void *s, float *y, const float *x, const gk_weight *w, int M) {
    dim3 grid((unsigned)DL_CDIV(w->n, 128), (unsigned)M), block(128);
    dl_launch(dl_k_matmul_ref, grid, block, 0, (cudaStream_t)s, y, x, *w);
}
