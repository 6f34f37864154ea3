/* Matmul for weights widened to fp32 in registers: f32, f16, bf16, fp8
 * (e4m3/e5m2 through a 256-entry shared-memory table) and int8 weight-only.
 * y[M, n] = x[M, k] W^T * scale (+ bias).
 *
 * GEMV (M <= 8): one warp per output row, WPB rows per block; each lane
 * streams 16-byte vectors of the row (lane-strided, GEMV_U vectors in flight)
 * and multiplies them with all M activation rows in the same pass. Per lane
 * each 16-byte chunk gives a partial p (sequential FMAs); a block scale is
 * folded per chunk (chunks never straddle a K block); lanes are combined by a
 * fixed butterfly. GEMM (M > 8 or GEMV not applicable): 128x128 tiles, BK=8,
 * 256 threads with 8x8 outputs each, double-buffered shared memory; every
 * output is one sequential FMA chain over k (block scales multiplied into
 * the weight element as it is widened). Both orders are fixed, so results
 * are bitwise reproducible; they differ between the two paths (documented
 * in docs/gpu_backend.md). */
#include <stdlib.h>

#include "gpu_common.cuh"

#define GEMV_WPB 4
#define GEMV_U 2

/* GEMV widening: bf16/f16/f32/int8 as the GEMM; fp8 by bit arithmetic
 * straight into fp32 (no shared-memory table, no conversion instruction):
 * the code's exponent and mantissa bits are placed in an fp32 whose exponent
 * bias is 127, then one multiply by 2^120 (e4m3) or 2^112 (e5m2) rebiases
 * it. Subnormal codes become fp32 subnormals first and come out exact too.
 * Exact for every finite code (e4m3fn NaN codes read as +-480, e5m2 inf/NaN
 * as large finite values; neither occurs in checkpoints). */
template <int DT> struct dl_gv {
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) { dl_wt<DT>::cvt16(r, f, nullptr); }
};
template <int SH>
static __device__ __forceinline__ void dl_fp8x4_f32(uint32_t v, float *f, float rebias) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        /* byte j to bits 24..31 (one PRMT), sign stays at bit 31, the
         * exponent/mantissa bits move down to start at bit SH */
        const uint32_t t = __byte_perm(v, 0u, (unsigned)((j << 12) | 0x444));
        f[j] = __uint_as_float((t & 0x80000000u) | ((t >> (24 - SH)) & (0x7fu << SH))) * rebias;
    }
}
template <> struct dl_gv<DT_F8E4M3> {
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        const float k = 0x1p120f;
        dl_fp8x4_f32<20>(r.x, f, k); dl_fp8x4_f32<20>(r.y, f + 4, k);
        dl_fp8x4_f32<20>(r.z, f + 8, k); dl_fp8x4_f32<20>(r.w, f + 12, k);
    }
};
template <> struct dl_gv<DT_F8E5M2> {
    static __device__ __forceinline__ void cvt16(uint4 r, float *f) {
        const float k = 0x1p112f;
        dl_fp8x4_f32<21>(r.x, f, k); dl_fp8x4_f32<21>(r.y, f + 4, k);
        dl_fp8x4_f32<21>(r.z, f + 8, k); dl_fp8x4_f32<21>(r.w, f + 12, k);
    }
};

/* Rows per warp: M = 1 streams one row per warp (most bytes in flight);
 * larger M shares each activation load between R rows. */
template <int DT, int MR> struct dl_gemv_rows {
    static const int R = dl_wt<DT>::VEC >= 16 ? 2 : (MR == 1 ? 1 : 4);
};

template <int DT, int MR, int R>
__global__ void __launch_bounds__(GEMV_WPB *DL_WARP)
    dl_k_gemv_f(float *__restrict__ y, const float *__restrict__ x, gk_weight w) {
    typedef dl_wt<DT> T;
    typedef dl_gv<DT> G;
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    const int64_t n0 = ((int64_t)blockIdx.x * GEMV_WPB + wid) * R;
    if (n0 >= w.n) return;
    const int64_t K = w.k;
    const bool blk = w.scale_kind == WS_BLOCK;
    const char *wrow[R];
    const float *srow[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int64_t n = n0 + r < w.n ? n0 + r : w.n - 1; /* tail rows recompute the last row */
        wrow[r] = (const char *)w.data + n * w.ld * T::ES;
        srow[r] = blk ? w.scale + (n / w.bn) * w.kb : nullptr;
    }
    float acc[R][MR];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int m = 0; m < MR; m++) acc[r][m] = 0.0f;
    const int64_t step = (int64_t)DL_WARP * T::VEC;
    for (int64_t k0 = (int64_t)lane * T::VEC; k0 < K; k0 += step * GEMV_U) {
        uint4 raw[GEMV_U][R];
#pragma unroll
        for (int u = 0; u < GEMV_U; u++) {
            const int64_t kk = k0 + u * step;
#pragma unroll
            for (int r = 0; r < R; r++)
                raw[u][r] = kk < K ? *(const uint4 *)(wrow[r] + kk * T::ES) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < GEMV_U; u++) {
            const int64_t kk = k0 + u * step;
            if (kk < K) {
                float f[R][T::VEC];
                float s[R];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    G::cvt16(raw[u][r], f[r]);
                    /* no integer division in the loop for power-of-two blocks */
                    s[r] = blk ? srow[r][w.bk_shift >= 0 ? (kk >> w.bk_shift) : kk / w.bk] : 1.0f;
                }
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    const float4 *xp = (const float4 *)(x + (int64_t)m * K + kk);
                    float xv[T::VEC];
#pragma unroll
                    for (int j = 0; j < T::VEC / 4; j++) {
                        float4 t = xp[j];
                        xv[4 * j] = t.x; xv[4 * j + 1] = t.y; xv[4 * j + 2] = t.z; xv[4 * j + 3] = t.w;
                    }
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        float p = 0.0f;
#pragma unroll
                        for (int j = 0; j < T::VEC; j++) p = fmaf(f[r][j], xv[j], p);
                        acc[r][m] = fmaf(p, s[r], acc[r][m]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int64_t n = n0 + r;
        const float rs = n < w.n ? dl_rowscale(w, n) : 0.0f;
        const float b = (n < w.n && w.bias) ? w.bias[n] : 0.0f;
#pragma unroll
        for (int m = 0; m < MR; m++) {
            float v = dl_warp_sum(acc[r][m]);
            if (lane == 0 && n < w.n) y[(int64_t)m * w.n + n] = __fadd_rn(__fmul_rn(v, rs), b);
        }
    }
}

/* fp8 GEMV through fp16: codes widened by an fp16 table, activations rounded
 * to fp16, products through the fp16 dot instruction (HIP: v_dot2_f32_f16
 * with fp32 accumulation; CUDA: packed fma.rn.f16x2 on pairs, widened into
 * fp32 every 4 products). Less accurate (~1e-3); opt-in, measured apart. */
template <int E5, int MR>
__global__ void __launch_bounds__(GEMV_WPB *DL_WARP)
    dl_k_h2_gemv_fp8(float *__restrict__ y, const float *__restrict__ x, gk_weight w) {
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

#define GB 128
#define GBK 8

template <int DT>
__global__ void __launch_bounds__(256)
    dl_k_gemm_f(float *__restrict__ y, const float *__restrict__ x, gk_weight w, int M) {
    typedef dl_wt<DT> T;
    __shared__ float tab[256];
    __shared__ __align__(16) float As[2][GBK][GB];
    __shared__ __align__(16) float Bs[2][GBK][GB];
    if (DT == DT_F8E4M3 || DT == DT_F8E5M2) dl_fp8_table(tab, DT == DT_F8E5M2);
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const int64_t m0 = (int64_t)blockIdx.y * GB, n0 = (int64_t)blockIdx.x * GB;
    const int lr = t / 2, lc = (t % 2) * 4;
    const int64_t K = w.k;
    const bool blk = w.scale_kind == WS_BLOCK;
    const int64_t am = m0 + lr, bn = n0 + lr;
    const bool aval = am < M, bval = bn < w.n;
    const float *xrow = x + (aval ? am : 0) * K;
    const char *wrow = (const char *)w.data + (bval ? bn : 0) * w.ld * T::ES;
    const float *srow = blk ? w.scale + ((bval ? bn : 0) / w.bn) * w.kb : nullptr;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    float ra[4], rb[4];
#define GEMM_LOAD(k0)                                                              \
    do {                                                                           \
        if (aval) {                                                                \
            float4 v = *(const float4 *)(xrow + (k0) + lc);                        \
            ra[0] = v.x; ra[1] = v.y; ra[2] = v.z; ra[3] = v.w;                    \
        } else ra[0] = ra[1] = ra[2] = ra[3] = 0.0f;                               \
        if (bval) {                                                                \
            T::load4(wrow + ((k0) + lc) * T::ES, rb, tab);                         \
            if (blk) {                                                             \
                const int64_t kc_ = (k0) + lc;                                     \
                float s_ = srow[w.bk_shift >= 0 ? (kc_ >> w.bk_shift) : kc_ / w.bk];                                \
                rb[0] *= s_; rb[1] *= s_; rb[2] *= s_; rb[3] *= s_;                \
            }                                                                      \
        } else rb[0] = rb[1] = rb[2] = rb[3] = 0.0f;                               \
    } while (0)
#define GEMM_STORE(buf)                                                            \
    do {                                                                           \
        for (int i_ = 0; i_ < 4; i_++) {                                           \
            As[buf][lc + i_][lr] = ra[i_];                                         \
            Bs[buf][lc + i_][lr] = rb[i_];                                         \
        }                                                                          \
    } while (0)

    const int64_t nk = K / GBK;
    GEMM_LOAD(0);
    GEMM_STORE(0);
    __syncthreads();
    for (int64_t kt = 0; kt < nk; kt++) {
        const int cur = (int)(kt & 1);
        if (kt + 1 < nk) GEMM_LOAD((kt + 1) * GBK);
#pragma unroll
        for (int kk = 0; kk < GBK; kk++) {
            float4 a0 = *(const float4 *)&As[cur][kk][ty * 4];
            float4 a1 = *(const float4 *)&As[cur][kk][64 + ty * 4];
            float4 b0 = *(const float4 *)&Bs[cur][kk][tx * 4];
            float4 b1 = *(const float4 *)&Bs[cur][kk][64 + tx * 4];
            float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < nk) GEMM_STORE(cur ^ 1);
        __syncthreads();
    }
#undef GEMM_LOAD
#undef GEMM_STORE
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int64_t n = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
        if (n >= w.n) continue;
        const float rs = dl_rowscale(w, n);
        const float b = w.bias ? w.bias[n] : 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
            if (m < M) y[m * w.n + n] = __fadd_rn(__fmul_rn(acc[i][j], rs), b);
        }
    }
}

/* Reference: one thread per output, element by element as w_get() defines
 * it (value * scale), any shape and alignment. */
__global__ void dl_k_matmul_ref(float *__restrict__ y, const float *__restrict__ x, gk_weight w) {
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
    return 1;
}

extern "C" int gk_gemm_ok(const gk_weight *w) {
    if (!vec_of(w->dtype)) return 0;
    if (((uintptr_t)w->data & 15) || (w->ld * es_of(w->dtype)) % 16 || w->k % GBK) return 0;
    if (w->scale_kind == WS_BLOCK && w->bk % 4) return 0;
    return 1;
}

/* Rows per warp (tuning knob DOTLM_GEMV_R1 / DOTLM_GEMV_RM for M = 1 / M > 1). */
static int env_r(const char *name, int def) {
    const char *e = getenv(name);
    int v = e ? atoi(e) : def;
    return (v == 1 || v == 2 || v == 4) ? v : def;
}

template <int DT, int MR, int R>
static void gemv_go(cudaStream_t st, float *y, const float *x, const gk_weight *w) {
    dim3 grid((unsigned)DL_CDIV(w->n, GEMV_WPB * R)), block(GEMV_WPB * DL_WARP);
    dl_k_gemv_f<DT, MR, R><<<grid, block, 0, st>>>(y, x, *w);
}

template <int DT, int MR>
static void gemv_launch(cudaStream_t st, float *y, const float *x, const gk_weight *w) {
    static const int r = MR == 1 ? env_r("DOTLM_GEMV_R1", dl_gemv_rows<DT, 1>::R) : env_r("DOTLM_GEMV_RM", dl_gemv_rows<DT, MR>::R);
    if (r == 4) gemv_go<DT, MR, 4>(st, y, x, w);
    else if (r == 2 || MR > 1) gemv_go<DT, MR, 2>(st, y, x, w);
    else gemv_go<DT, MR, 1>(st, y, x, w);
}

template <int DT>
static void gemv_dt(cudaStream_t st, float *y, const float *x, const gk_weight *w, int M) {
    switch (M) {
    case 1: gemv_launch<DT, 1>(st, y, x, w); break;
    case 2: gemv_launch<DT, 2>(st, y, x, w); break;
    case 3: gemv_launch<DT, 3>(st, y, x, w); break;
    case 4: gemv_launch<DT, 4>(st, y, x, w); break;
    case 5: gemv_launch<DT, 5>(st, y, x, w); break;
    case 6: gemv_launch<DT, 6>(st, y, x, w); break;
    case 7: gemv_launch<DT, 7>(st, y, x, w); break;
    default: gemv_launch<DT, 8>(st, y, x, w); break;
    }
}

extern "C" void gk_gemv(void *s, float *y, const float *x, const gk_weight *w, int M) {
    cudaStream_t st = (cudaStream_t)s;
    switch (w->dtype) {
    case DT_F32: gemv_dt<DT_F32>(st, y, x, w, M); break;
    case DT_F16: gemv_dt<DT_F16>(st, y, x, w, M); break;
    case DT_BF16: gemv_dt<DT_BF16>(st, y, x, w, M); break;
    case DT_F8E4M3: gemv_dt<DT_F8E4M3>(st, y, x, w, M); break;
    case DT_F8E5M2: gemv_dt<DT_F8E5M2>(st, y, x, w, M); break;
    case DT_I8: gemv_dt<DT_I8>(st, y, x, w, M); break;
    default: break;
    }
}

template <int E5>
static void gemv_dot2_e(cudaStream_t st, float *y, const float *x, const gk_weight *w, int M) {
    dim3 grid((unsigned)DL_CDIV(w->n, GEMV_WPB)), block(GEMV_WPB * DL_WARP);
    switch (M) {
    case 1: dl_k_h2_gemv_fp8<E5, 1><<<grid, block, 0, st>>>(y, x, *w); break;
    case 2: dl_k_h2_gemv_fp8<E5, 2><<<grid, block, 0, st>>>(y, x, *w); break;
    case 3: dl_k_h2_gemv_fp8<E5, 3><<<grid, block, 0, st>>>(y, x, *w); break;
    case 4: dl_k_h2_gemv_fp8<E5, 4><<<grid, block, 0, st>>>(y, x, *w); break;
    case 5: dl_k_h2_gemv_fp8<E5, 5><<<grid, block, 0, st>>>(y, x, *w); break;
    case 6: dl_k_h2_gemv_fp8<E5, 6><<<grid, block, 0, st>>>(y, x, *w); break;
    case 7: dl_k_h2_gemv_fp8<E5, 7><<<grid, block, 0, st>>>(y, x, *w); break;
    default: dl_k_h2_gemv_fp8<E5, 8><<<grid, block, 0, st>>>(y, x, *w); break;
    }
}

/* Caller guarantees an fp8 dtype and gk_gemv_ok(w). */
extern "C" void gk_gemv_fp8_dot2(void *s, float *y, const float *x, const gk_weight *w, int M) {
    if (w->dtype == DT_F8E5M2) gemv_dot2_e<1>((cudaStream_t)s, y, x, w, M);
    else gemv_dot2_e<0>((cudaStream_t)s, y, x, w, M);
}

extern "C" void gk_gemm(void *s, float *y, const float *x, const gk_weight *w, int M) {
    cudaStream_t st = (cudaStream_t)s;
    dim3 grid((unsigned)DL_CDIV(w->n, GB), (unsigned)DL_CDIV(M, GB)), block(256);
    switch (w->dtype) {
    case DT_F32: dl_k_gemm_f<DT_F32><<<grid, block, 0, st>>>(y, x, *w, M); break;
    case DT_F16: dl_k_gemm_f<DT_F16><<<grid, block, 0, st>>>(y, x, *w, M); break;
    case DT_BF16: dl_k_gemm_f<DT_BF16><<<grid, block, 0, st>>>(y, x, *w, M); break;
    case DT_F8E4M3: dl_k_gemm_f<DT_F8E4M3><<<grid, block, 0, st>>>(y, x, *w, M); break;
    case DT_F8E5M2: dl_k_gemm_f<DT_F8E5M2><<<grid, block, 0, st>>>(y, x, *w, M); break;
    case DT_I8: dl_k_gemm_f<DT_I8><<<grid, block, 0, st>>>(y, x, *w, M); break;
    default: break;
    }
}

extern "C" void gk_matmul_ref(void *s, float *y, const float *x, const gk_weight *w, int M) {
    dim3 grid((unsigned)DL_CDIV(w->n, 128), (unsigned)M), block(128);
    dl_k_matmul_ref<<<grid, block, 0, (cudaStream_t)s>>>(y, x, *w);
}
