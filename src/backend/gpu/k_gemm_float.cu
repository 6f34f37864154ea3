/* Float-weight GEMM (prefill): y[M, n] = x[M, k] W^T * scale (+ bias) for
 * f32, f16, bf16, fp8 (e4m3/e5m2, widened through a shared-memory table)
 * and int8 weight-only; fp32 FFMA only (no matrix instructions).
 *
 * Every output is one sequential FMA chain over k in increasing order,
 * starting from 0, on the widened weight element (block scales multiplied
 * into it as it is widened), then * row scale + bias: results are bitwise
 * reproducible and independent of M and of the tiling (they differ from
 * the GEMV's chunked order; docs/gpu_backend.md). Two kernels keep that
 * chain, so they are bitwise equal:
 *  - v2 (default), dl_k_gemm2_f: BM x 128 tiles (BM = 128 or 64), BK = 16
 *    (or 8) k per stage, 8x8 outputs per thread; each stage is loaded a
 *    whole stage ahead into registers in its stored format and widened into
 *    shared memory late in the next stage (no load-use stall), conflict-free
 *    XOR-swizzled shared layout, fp8 table replicated per bank. The tile and
 *    the blocks per SM are chosen per shape by a wave model (gk2_pick).
 *  - v1, dl_k_gemm_f: the original 128x128, BK = 8 kernel, for A/B timing
 *    (DOTLM_GEMM=v1), as the reference of DOTLM_GEMM_CHECK, and for block
 *    sizes v2 does not take. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>

#include "gpu_common.cuh"

/* ---------------------------------------------------------------------- */
/* v1: 128x128 tiles, BK=8, 256 threads with 8x8 outputs each, double-
 * buffered shared memory. */

#define GB 128
#define GBK 8

template <int DT>
__global__ void __launch_bounds__(256)
    dl_k_gemm_f(float *__restrict__ y, const float *__restrict__ x, gk_weight w, int M) {
    dl_pdl_enter();
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
    for (int kt = 0; kt < nk; kt++) {
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

/* ---------------------------------------------------------------------- */
/* v2. Tile BM x GK2_BN (BM = 128: 256 threads; BM = 64: 128 threads), BK k
 * per stage, each thread 8x8 outputs: rows ty*4 + {0..3} and BM/2 + ty*4 +
 * {0..3}, columns tx*4 + {0..3} and 64 + tx*4 + {0..3}. Threads form groups
 * of 32 covering 4 (ty) x 8 (tx), so a 128-bit fragment read touches 64 (A)
 * or 128 (B) contiguous bytes (no bank conflict); and threads n and n^1 of
 * a group read the same A fragment, n and n^2 the same B fragment: the
 * pairing under which NVIDIA's shared memory returns a 128-bit load in 2
 * passes instead of 4 (128 bytes per clock). This layout serves 32 banks
 * of 4 bytes, not the warp width; correctness does not depend on it.
 *
 * Loaders: a stage is BM x BK of x and 128 x BK of W. Thread t loads one
 * chunk of consecutive k of one row of each: x row t/2, chunk t%2 (BK/2
 * elements); W row t/CPB, chunk t%CPB (CPB = 2 chunks per row when BM =
 * 128, 1 when BM = 64, i.e. BK elements). The element (k, r) of a stage
 * lives at [k][r ^ (k >= BK/2 ? 16 : 0)]: the 32 lanes of a transposing
 * store then hit 32 banks, and the XOR keeps 16-byte groups together for
 * the reads.
 *
 * Pipeline, one barrier per stage: stage kt+2 is loaded into registers at
 * the end of stage kt (the barrier keeps the loads there; ptxas may hoist
 * them), and widened and stored into the idle buffer at step GK2_SA of
 * stage kt+1, a whole stage of FMAs after the load was issued.
 *
 * Shared memory (dynamic): As[2][BK][BM], Bs[2][BK][128] floats, then for
 * fp8 a 256 x GK2_TABR table: entry c of replica r at c*GK2_TABR + r, a
 * thread reads replica t % GK2_TABR, so two lanes meet in one bank only
 * when 32 / GK2_TABR of them share a replica (2-way at most at 16). */

#define GK2_BN 128
#if DL_WARP == 32
#define GK2_TABR 16
/* 8x8 accumulators: at most 128 registers, i.e. 512 threads per SM */
#define GK2_BOUNDS(nt) __launch_bounds__(nt, 512 / (nt))
#else
#define GK2_TABR 1
#define GK2_BOUNDS(nt) __launch_bounds__(nt)
#endif
/* step of a stage at which the next stage is stored (see above) */
#ifndef GK2_SA
#define GK2_SA (BK * 3 / 4)
#endif

/* One loader chunk of a weight row: CK consecutive stored elements (CK*ES
 * bytes, 4..64, aligned to min(16, that)) as 32-bit words, widened to fp32
 * when stored to shared memory. */
template <int DT, int CK> struct gk2_chunk {
    static const int ES = dl_wt<DT>::ES, NW = CK * ES / 4;
    uint32_t v[NW];
    /* the first nw words from p (nw = NW or NW/2), zeros after them */
    __device__ __forceinline__ void load(const char *p, int nw) {
        if constexpr (NW % 4 == 0) {
#pragma unroll
            for (int i = 0; i < NW / 4; i++) {
                uint4 q = make_uint4(0u, 0u, 0u, 0u);
                if (4 * i + 4 <= nw) {
                    q = ((const uint4 *)p)[i];
                } else if (4 * i + 2 == nw) {
                    const uint2 h = ((const uint2 *)p)[2 * i];
                    q.x = h.x; q.y = h.y;
                }
                v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
            }
        } else if constexpr (NW == 2) {
            const uint2 q =
                nw == 2 ? *(const uint2 *)p : make_uint2(nw == 1 ? *(const uint32_t *)p : 0u, 0u);
            v[0] = q.x; v[1] = q.y;
        } else {
            v[0] = nw == 1 ? *(const uint32_t *)p : 0u;
        }
    }
    /* f[CK]: the same values as dl_wt<DT> gives; fp8 from the table: tab
     * its start, lane4 = 4 * this thread's replica (entry c of replica r at
     * byte 4 * (c * GK2_TABR + r)). */
    __device__ __forceinline__ void widen(float *f, const char *tab, uint32_t lane4) const {
#pragma unroll
        for (int i = 0; i < NW; i++) {
            if constexpr (DT == DT_F32) f[i] = __uint_as_float(v[i]);
            else if constexpr (DT == DT_BF16) dl_bf16x2(v[i], f + 2 * i);
            else if constexpr (DT == DT_F16) dl_f16x2(v[i], f + 2 * i);
            else if constexpr (DT == DT_I8) dl_i8x4(v[i], f + 4 * i);
            else {
                constexpr int SH = GK2_TABR == 16 ? 6 : 2; /* log2(4 * GK2_TABR) */
                static_assert(GK2_TABR == 16 || GK2_TABR == 1, "table replicas");
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const uint32_t c = 8 * b >= SH ? v[i] >> (8 * b - SH) : v[i] << (SH - 8 * b);
                    f[4 * i + b] = *(const float *)(tab + ((c & (255u << SH)) | lane4));
                }
            }
        }
    }
};

/* Bytes of dynamic shared memory a v2 kernel needs. */
static size_t gk2_smem(int dt, int bm, int bk) {
    size_t s = (size_t)2 * bk * (bm + GK2_BN) * sizeof(float);
    if (dl_is_fp8(dt)) s += (size_t)256 * GK2_TABR * sizeof(float);
    return s;
}
/* Weight elements per loader chunk (the block-scale granule). */
static int gk2_ckb(int bm, int bk) { return bk * GK2_BN / (2 * bm); }

/* y[M, w.n] (row-major) = x[M, w.k] W^T; grid (ceil(n/128), ceil(M/BM)),
 * NT = BM*2 threads, gk2_smem() bytes of dynamic shared memory (or more:
 * extra only lowers the blocks per SM). Needs what gk_gemm_ok checks: x and
 * W rows 16-byte aligned, k % 8 == 0 (a last half stage reads zeros); with
 * block scales (BLK) bk a power of two >= gk2_ckb(BM, BK) (one scale per
 * loader chunk, found by a shift). */
template <int DT, int BM, int BK, bool BLK>
__global__ void GK2_BOUNDS(BM * 2)
    dl_k_gemm2_f(float *__restrict__ y, const float *__restrict__ x, gk_weight w, int M) {
    dl_pdl_enter();
    constexpr int BN = GK2_BN, NT = BM * 2, CKA = BK / 2, CKB = BK * BN / NT, CPB = BK / CKB;
    constexpr int ES = dl_wt<DT>::ES;
    constexpr bool FP8 = DT == DT_F8E4M3 || DT == DT_F8E5M2;
    static_assert((BM == 64 || BM == 128) && (BK == 8 || BK == 16) && NT / CPB == BN, "tile");
    extern __shared__ __align__(16) float gk2_sm[];
    float *const As = gk2_sm;               /* [2][BK][BM] */
    float *const Bs = gk2_sm + 2 * BK * BM; /* [2][BK][BN] */
    const int t = threadIdx.x;

    const char *tab = (const char *)(Bs + 2 * BK * BN);
    const uint32_t lane4 = (uint32_t)(t % GK2_TABR) * 4u;
    if constexpr (FP8)
        for (int c = t; c < 256; c += NT) {
            const float v = dl_fp8_decode((uint32_t)c, DT == DT_F8E5M2);
#pragma unroll
            for (int r = 0; r < GK2_TABR; r++) ((float *)tab)[c * GK2_TABR + r] = v;
        }

    /* compute mapping: groups of 32 threads cover 4 (ty) x 8 (tx); bit 0
     * of the thread's index within its group is bit 0 of tx, bit 1 is bit 0
     * of ty (see above) */
    const int l = t % 32, g = t / 32;
    const int tx = ((l & 1) | ((l >> 3) << 1)) + 8 * (g % 2), ty = ((l >> 1) & 3) + 4 * (g / 2);
    /* loader mapping; rows past M or n are clamped to the last one: they
     * only feed outputs that are never stored */
    const int ar = t / 2, aq = t % 2, br = t / CPB, bq = t % CPB;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
    const int64_t K = w.k;
    const int nk = (int)((K + BK - 1) / BK);
    const bool ktail = K % BK != 0; /* k % BK == BK/2: the last stage is half */
    const float *xp = x + (m0 + ar < M ? m0 + ar : M - 1) * K + aq * CKA;
    const int64_t wr = n0 + br < w.n ? n0 + br : w.n - 1;
    const char *wp = (const char *)w.data + (wr * w.ld + bq * CKB) * ES;
    /* offset of the row's block scales */
    const int sr = BLK ? (int)((uint32_t)wr / (uint32_t)w.bn) * w.kb : 0;

    float4 xa[CKA / 4] = {};
    gk2_chunk<DT, CKB> wb = {};
    /* block scale of the chunk; sc2 that of its second half: 0 where the
     * half stage zero-fills it, so no Inf/NaN scale reaches the padding */
    float sc = 0.0f, sc2 = 0.0f;
    /* raw loads of stage s: plain for a whole stage; the half stage at the
     * end (k % BK != 0) reads only what lies below k and zero-fills the
     * rest; nothing past the last stage (what the loop then stores into the
     * idle buffer is never read) */
    const int nfull = ktail ? nk - 1 : nk;
    /* the scales are set through locals and assigned once: on gfx906,
     * assigning sc / sc2 in both branches made the compiler pick the
     * variable by address, so both lived in scratch (12 scratch ops per
     * stage; tools/gpu_gate.sh) */
    auto load = [&](int s) {
        const int k0 = s * BK;
        float s1 = sc, s2 = sc2;
        if (s < nfull) {
#pragma unroll
            for (int i = 0; i < CKA / 4; i++) xa[i] = *(const float4 *)(xp + k0 + 4 * i);
            wb.load(wp + (int64_t)k0 * ES, wb.NW);
            if constexpr (BLK)
                s1 = s2 = w.scale[sr + (int)((uint32_t)(k0 + bq * CKB) >> w.bk_shift)];
        } else if (s == nfull && ktail) {
            const bool ain = aq == 0, bin = CPB == 1 || bq == 0;
#pragma unroll
            for (int i = 0; i < CKA / 4; i++)
                xa[i] = ain ? *(const float4 *)(xp + k0 + 4 * i)
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            wb.load(wp + (int64_t)k0 * ES, !bin ? 0 : CPB == 1 ? wb.NW / 2 : wb.NW);
            if constexpr (BLK) {
                s1 = bin ? w.scale[sr + (int)((uint32_t)(k0 + bq * CKB) >> w.bk_shift)] : 0.0f;
                s2 = CPB == 1 ? 0.0f : s1;
            }
        }
        sc = s1;
        sc2 = s2;
    };
    /* widen the raw registers and store them, transposed, as buffer b */
    auto store = [&](int b) {
        float *as = As + b * BK * BM + aq * CKA * BM + (ar ^ (aq * 16));
#pragma unroll
        for (int i = 0; i < CKA / 4; i++) {
            as[(4 * i + 0) * BM] = xa[i].x;
            as[(4 * i + 1) * BM] = xa[i].y;
            as[(4 * i + 2) * BM] = xa[i].z;
            as[(4 * i + 3) * BM] = xa[i].w;
        }
        float f[CKB];
        wb.widen(f, tab, lane4);
        if constexpr (BLK) {
#pragma unroll
            for (int c = 0; c < CKB; c++) f[c] *= c < CKB / 2 ? sc : sc2;
        }
        float *bs = Bs + b * BK * BN + bq * CKB * BN;
#pragma unroll
        for (int c = 0; c < CKB; c++) bs[c * BN + (br ^ (bq * CKB + c >= BK / 2 ? 16 : 0))] = f[c];
    };
    /* fragments of step kk of buffer b */
    auto frag = [&](int b, int kk, float *a, float *bb) {
        const int sw = kk >= BK / 2 ? 16 : 0;
        const float *ap = As + b * BK * BM + kk * BM, *bp = Bs + b * BK * BN + kk * BN;
        const float4 a0 = *(const float4 *)(ap + ((ty * 4) ^ sw));
        const float4 a1 = *(const float4 *)(ap + BM / 2 + ((ty * 4) ^ sw));
        const float4 b0 = *(const float4 *)(bp + ((tx * 4) ^ sw));
        const float4 b1 = *(const float4 *)(bp + BN / 2 + ((tx * 4) ^ sw));
        a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
        a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
        bb[0] = b0.x; bb[1] = b0.y; bb[2] = b0.z; bb[3] = b0.w;
        bb[4] = b1.x; bb[5] = b1.y; bb[6] = b1.z; bb[7] = b1.w;
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    if constexpr (FP8) __syncthreads(); /* the table, before the first widening */
    load(0);
    store(0);
    load(1);
    __syncthreads();
#pragma unroll 1
    for (int kt = 0; kt < nk; kt++) {
        const int cur = kt & 1;
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            /* stage kt+1 into the idle buffer (zeros after the last) */
            if (kk == (GK2_SA)) store(cur ^ 1);
            float a[8], b[8];
            frag(cur, kk, a, b);
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        load(kt + 2);
        __syncthreads();
    }

    /* epilogue: * row scale + bias, the v1 operations; 16-byte stores when
     * y and its rows allow */
    const bool v4 = w.n % 4 == 0 && ((uintptr_t)y & 15) == 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t nb = n0 + h * (BN / 2) + tx * 4;
        if (nb >= w.n) continue;
        float rs[4], bi[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t n = nb + j < w.n ? nb + j : w.n - 1;
            rs[j] = dl_rowscale(w, n);
            bi[j] = w.bias ? w.bias[n] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int64_t m = m0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
            if (m >= M) continue;
            float o[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                o[j] = __fadd_rn(__fmul_rn(acc[i][h * 4 + j], rs[j]), bi[j]);
            float *yr = y + m * w.n + nb;
            if (v4 && nb + 3 < w.n) {
                *(float4 *)yr = make_float4(o[0], o[1], o[2], o[3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (nb + j < w.n) yr[j] = o[j];
            }
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Host side: configurations, the wave model, launch. */

static int gemm_vec_of(int dt) {
    return dt == DT_F32 ? 4 : (dt == DT_F16 || dt == DT_BF16) ? 8 : (dt == DT_F8E4M3 || dt == DT_F8E5M2 || dt == DT_I8) ? 16 : 0;
}
static int gemm_es_of(int dt) { return dt == DT_F32 ? 4 : (dt == DT_F16 || dt == DT_BF16) ? 2 : 1; }

extern "C" int gk_gemm_ok(const gk_weight *w) {
    if (!gemm_vec_of(w->dtype)) return 0;
    if (((uintptr_t)w->data & 15) || (w->ld * gemm_es_of(w->dtype)) % 16 || w->k % GBK) return 0;
    if (w->scale_kind == WS_BLOCK && w->bk % 4) return 0;
    return 1;
}

/* v2 configurations: tile rows BM, stage depth BK, and bps = the blocks per
 * SM to hold it to (0: as many as registers/shared memory allow; 3: the
 * dynamic shared memory request is raised until only 3 fit, CUDA only). */
typedef struct {
    int bm, bk, bps;
    const char *name;
} gk2_cfg;
static const gk2_cfg GK2_CFG[] = {
    {128, 16, 0, "128x128"}, {64, 16, 0, "64x128"}, {64, 16, 3, "64x128/3"},
    {128, 8, 0, "128x128k8"}, {64, 8, 0, "64x128k8"}, {64, 8, 3, "64x128k8/3"},
};
#define GK2_NCFG ((int)(sizeof GK2_CFG / sizeof GK2_CFG[0]))
#define GK2_NAUTO 3 /* auto chooses among the first three (BK = 16) */
#define GK2_MAXDEV 16

/* Per device and dtype: SM count and, per configuration, the dynamic
 * shared memory to request and the resulting blocks per SM (0: unusable). */
typedef struct {
    int ready, sms;
    size_t smem[GK2_NCFG];
    int occ[GK2_NCFG];
} gk2_dev;

typedef void (*gk2_kern)(float *, const float *, gk_weight, int);

/* gfx906 (HIP): only the BK = 8 kernels (at BK = 16 its compiler spills). */
template <int DT, bool BLK> static gk2_kern gk2_kernel(int c) {
    switch (c) {
#if DL_WARP == 32
    case 0: return dl_k_gemm2_f<DT, 128, 16, BLK>;
    case 1:
    case 2: return dl_k_gemm2_f<DT, 64, 16, BLK>;
#endif
    case 3: return dl_k_gemm2_f<DT, 128, 8, BLK>;
    case 4:
    case 5: return dl_k_gemm2_f<DT, 64, 8, BLK>;
    default: return nullptr;
    }
}
/* The v2 kernel of configuration c for dtype dt, with block scales or not. */
static gk2_kern gk2_kernel_dt(int dt, int c, bool blk) {
    switch (dt) {
    case DT_F32: return blk ? gk2_kernel<DT_F32, true>(c) : gk2_kernel<DT_F32, false>(c);
    case DT_F16: return blk ? gk2_kernel<DT_F16, true>(c) : gk2_kernel<DT_F16, false>(c);
    case DT_BF16: return blk ? gk2_kernel<DT_BF16, true>(c) : gk2_kernel<DT_BF16, false>(c);
    case DT_F8E4M3: return blk ? gk2_kernel<DT_F8E4M3, true>(c) : gk2_kernel<DT_F8E4M3, false>(c);
    case DT_F8E5M2: return blk ? gk2_kernel<DT_F8E5M2, true>(c) : gk2_kernel<DT_F8E5M2, false>(c);
    case DT_I8: return blk ? gk2_kernel<DT_I8, true>(c) : gk2_kernel<DT_I8, false>(c);
    default: return nullptr;
    }
}

#if DL_WARP == 64
#define GK2_OCC(n, k, t, s) hipOccupancyMaxActiveBlocksPerMultiprocessor(n, (const void *)(k), t, s)
#else
#define GK2_ATTR(v, a, d) cudaDeviceGetAttribute(v, cudaDevAttr##a, d)
#define GK2_OCC(n, k, t, s) cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, k, t, s)
#endif

/* Fills d for device dev and dtype dt (runtime queries; once). A failed
 * query leaves the configuration unusable (occ 0); with none usable the
 * v1 kernel runs. */
static void gk2_dev_init(gk2_dev *d, int dev, int dt) {
    (void)dev; /* only CUDA queries the shared-memory limits */
    d->sms = gpurt_sm_count();
    for (int c = 0; c < GK2_NCFG; c++) {
        const gk2_cfg &g = GK2_CFG[c];
        const gk2_kern k = gk2_kernel_dt(dt, c, false), kb = gk2_kernel_dt(dt, c, true);
        const int nt = g.bm * 2;
        size_t s = gk2_smem(dt, g.bm, g.bk);
        d->smem[c] = s;
        d->occ[c] = 0;
        if (!k || !kb) continue;
        if (g.bps) {
#if DL_WARP == 32
            int per_sm = 0, resv = 0, optin = 0;
            if (GK2_ATTR(&per_sm, MaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
                GK2_ATTR(&resv, ReservedSharedMemoryPerBlock, dev) != cudaSuccess ||
                GK2_ATTR(&optin, MaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            /* a little under the most that fits bps blocks: bps + 1 do not */
            size_t want = (size_t)(per_sm / g.bps - resv - 256) & ~(size_t)127;
            if (want < s || want > (size_t)optin) continue;
            const cudaFuncAttribute at = cudaFuncAttributeMaxDynamicSharedMemorySize;
            if (cudaFuncSetAttribute((const void *)k, at, (int)want) != cudaSuccess ||
                cudaFuncSetAttribute((const void *)kb, at, (int)want) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            s = d->smem[c] = want;
#else
            continue;
#endif
        }
        /* blocks per SM: the smaller of the two kernels (block scales or not) */
        int n = 0, nb = 0;
        if (GK2_OCC(&n, k, nt, s) != cudaSuccess || GK2_OCC(&nb, kb, nt, s) != cudaSuccess) {
            (void)cudaGetLastError();
            n = nb = 0;
        }
        n = n < nb ? n : nb;
        if (g.bps && n != g.bps) n = 0;
        d->occ[c] = n;
    }
}

/* Relative FFMA throughput of an SM by resident warps per scheduler (4
 * schedulers; fewer warps hide less of the barrier and fragment latency).
 * Estimates, not measurements. */
static double gk2_rate(double wps) {
    return wps >= 4 ? 1.0 : wps >= 3 ? 0.97 : wps >= 2 ? 0.92 : wps >= 1 ? 0.8 : 0.6;
}

/* Predicted time (arbitrary unit) of configuration c: the grid runs in
 * waves of sms*occ blocks; a grid that fits one wave is spread breadth-
 * first (ceil(T/sms) blocks on the busiest SM); a partial last wave is
 * counted as a full one (its blocks land occ to an SM as slots free up). */
static double gk2_pred(const gk2_dev *d, int c, int64_t M, int64_t n) {
    const gk2_cfg &g = GK2_CFG[c];
    const int64_t T = DL_CDIV(M, g.bm) * DL_CDIV(n, GK2_BN), S = (int64_t)d->sms * d->occ[c];
    /* per tile: 64-row tiles issue ~2% more non-FMA instructions per FMA */
    const double nt = g.bm * 2.0, tile = (double)g.bm * GK2_BN * (g.bm == 64 ? 1.02 : 1.0);
    auto wave = [&](int64_t b) { return b * tile / gk2_rate(b * nt / 128.0); };
    if (T <= S) return wave(DL_CDIV(T, d->sms));
    return (double)DL_CDIV(T, S) * wave(d->occ[c]);
}

/* DOTLM_GEMM (read once): "v1" the original kernel (-2); a configuration
 * name of GK2_CFG forces it where usable (its index); "k8" the wave model
 * among the BK = 8 configurations (-3); unset or "auto": the wave model
 * (-1). */
static int gk2_mode() {
    static const int mode = [] {
        const char *e = getenv("DOTLM_GEMM");
        if (!e || !*e || !strcmp(e, "auto")) return -1;
        if (!strcmp(e, "v1")) return -2;
        if (!strcmp(e, "k8")) return -3;
        for (int c = 0; c < GK2_NCFG; c++)
            if (!strcmp(e, GK2_CFG[c].name)) return c;
        fprintf(stderr,
                "dotlm: DOTLM_GEMM='%s' not understood (v1, auto, k8, 128x128, 64x128, "
                "64x128/3, 128x128k8, 64x128k8, 64x128k8/3); auto used\n",
                e);
        return -1;
    }();
    return mode;
}

#if DL_WARP == 64
#define GK2_CAPTURING(st, c) hipStreamIsCapturing(st, c)
typedef hipStreamCaptureStatus gk2_capst;
#define GK2_CAPNONE hipStreamCaptureStatusNone
#else
#define GK2_CAPTURING(st, c) cudaStreamIsCapturing(st, c)
typedef cudaStreamCaptureStatus gk2_capst;
#define GK2_CAPNONE cudaStreamCaptureStatusNone
#endif

/* 1 if work issued on st is being captured into a graph (or the query
 * fails). */
static int gk2_capturing(cudaStream_t st) {
    gk2_capst cs = GK2_CAPNONE;
    if (GK2_CAPTURING(st, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return cs != GK2_CAPNONE;
}

/* The configuration for this launch, or -1 for the v1 kernel (DOTLM_GEMM=v1,
 * or block scales no v2 configuration takes: bk not a power of two or
 * smaller than its loader chunk). Device state is initialised on first use
 * (per device and format, under a lock; afterwards read-only), never while
 * st is being captured into a graph: such a first call runs v1. */
static int gk2_pick(cudaStream_t st, const gk_weight *w, int M, size_t *smem) {
    static gk2_dev devs[GK2_MAXDEV][6];
    static std::mutex mu;
    const int mode = gk2_mode();
    if (mode == -2) return -1;
    const bool blk = w->scale_kind == WS_BLOCK;
    if (blk && (w->bk_shift < 0 || w->bk != 1 << w->bk_shift)) return -1;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        dev = 0;
    }
    if (dev < 0 || dev >= GK2_MAXDEV) dev = 0;
    gk2_dev *d = &devs[dev][w->dtype];
    {
        std::lock_guard<std::mutex> lk(mu);
        if (!d->ready) {
            if (gk2_capturing(st)) return -1;
            gk2_dev_init(d, dev, w->dtype);
            d->ready = 1;
        }
    }
    auto usable = [&](int c) {
        return d->occ[c] > 0 && (!blk || gk2_ckb(GK2_CFG[c].bm, GK2_CFG[c].bk) <= w->bk);
    };
    int best = -1;
    if (mode >= 0 && usable(mode)) best = mode;
    else {
        /* the wave model among the BK = 16 configurations, or among the
         * BK = 8 ones (DOTLM_GEMM=k8, or none of those usable) */
        int lo = 0, hi = GK2_NAUTO;
        bool any = false;
        for (int c = lo; c < hi; c++) any = any || usable(c);
        if (!any || mode == -3) lo = GK2_NAUTO, hi = GK2_NCFG;
        double bt = 0.0;
        for (int c = lo; c < hi; c++) {
            if (!usable(c)) continue;
            const double p = d->sms ? gk2_pred(d, c, M, w->n) : (double)c;
            if (best < 0 || p < bt * 0.98) best = c, bt = p;
        }
    }
    if (best >= 0) *smem = d->smem[best];
    return best;
}

/* v1 launch (the reference order for the check below, and DOTLM_GEMM=v1). */
static void gk_gemm_v1(cudaStream_t st, float *y, const float *x, const gk_weight *w, int M) {
    dim3 grid((unsigned)DL_CDIV(w->n, GB), (unsigned)DL_CDIV(M, GB)), block(256);
    switch (w->dtype) {
    case DT_F32: dl_launch(dl_k_gemm_f<DT_F32>, grid, block, 0, st, y, x, *w, M); break;
    case DT_F16: dl_launch(dl_k_gemm_f<DT_F16>, grid, block, 0, st, y, x, *w, M); break;
    case DT_BF16: dl_launch(dl_k_gemm_f<DT_BF16>, grid, block, 0, st, y, x, *w, M); break;
    case DT_F8E4M3: dl_launch(dl_k_gemm_f<DT_F8E4M3>, grid, block, 0, st, y, x, *w, M); break;
    case DT_F8E5M2: dl_launch(dl_k_gemm_f<DT_F8E5M2>, grid, block, 0, st, y, x, *w, M); break;
    case DT_I8: dl_launch(dl_k_gemm_f<DT_I8>, grid, block, 0, st, y, x, *w, M); break;
    default: break;
    }
}

/* *cnt += number of i < n with a[i] != b[i] as bit patterns (debug check). */
__global__ void dl_k_gemm_cmp(const uint32_t *__restrict__ a, const uint32_t *__restrict__ b,
                              int64_t n, unsigned long long *cnt) {
    dl_pdl_enter();
    unsigned long long d = 0;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        d += a[i] != b[i];
    if (d) atomicAdd(cnt, d);
}

/* DOTLM_GEMM_CHECK=1 (read once; debugging, slow): after each v2 GEMM the
 * v1 kernel recomputes y into a scratch buffer and the two are compared
 * bit for bit on the stream (which this synchronises); mismatches are
 * reported on stderr (=2: every checked call). Skipped while the stream
 * is being captured into a graph or when the scratch cannot be allocated. */
static void gk2_check(cudaStream_t st, const float *y, const float *x, const gk_weight *w, int M,
                      int c) {
    static const int level = [] {
        const char *e = getenv("DOTLM_GEMM_CHECK");
        return e ? atoi(e) : 0;
    }();
    static std::mutex mu;
    static unsigned long long ncall = 0, nbad = 0;
    if (level <= 0) return;
    if (gk2_capturing(st)) return;
    const int64_t total = (int64_t)M * w->n;
    float *ref = nullptr;
    unsigned long long *cnt = nullptr, h = 0;
    if (cudaMalloc((void **)&ref, (size_t)total * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&cnt, sizeof *cnt) != cudaSuccess) {
        (void)cudaGetLastError();
        fprintf(stderr, "dotlm: DOTLM_GEMM_CHECK: no scratch for M=%d n=%lld, not checked\n", M,
                (long long)w->n);
        if (ref) (void)cudaFree(ref);
        return;
    }
    gk_gemm_v1(st, ref, x, w, M);
    (void)cudaMemsetAsync(cnt, 0, sizeof *cnt, st);
    dl_launch(dl_k_gemm_cmp, dim3(1024), dim3(256), 0, st, (const uint32_t *)y,
              (const uint32_t *)ref, total, cnt);
    (void)cudaMemcpyAsync(&h, cnt, sizeof h, cudaMemcpyDeviceToHost, st);
    (void)cudaStreamSynchronize(st);
    (void)cudaFree(ref);
    (void)cudaFree(cnt);
    std::lock_guard<std::mutex> lk(mu);
    ncall++;
    nbad += h != 0;
    if (h || level >= 2)
        fprintf(stderr,
                "dotlm: DOTLM_GEMM_CHECK %s M=%d n=%lld k=%lld dtype=%d scale=%d: %llu of %lld "
                "outputs differ from v1 (%llu of %llu calls bad)\n",
                GK2_CFG[c].name, M, (long long)w->n, (long long)w->k, w->dtype, w->scale_kind, h,
                (long long)total, nbad, ncall);
}

extern "C" void gk_gemm(void *s, float *y, const float *x, const gk_weight *w, int M) {
    cudaStream_t st = (cudaStream_t)s;
    if (M <= 0 || w->n <= 0 || w->dtype < 0 || w->dtype > DT_I8) return;
    size_t smem = 0;
    const int c = gk2_pick(st, w, M, &smem);
    if (c < 0) {
        gk_gemm_v1(st, y, x, w, M);
        return;
    }
    const gk2_kern k = gk2_kernel_dt(w->dtype, c, w->scale_kind == WS_BLOCK);
    const int bm = GK2_CFG[c].bm;
    dim3 grid((unsigned)DL_CDIV(w->n, GK2_BN), (unsigned)DL_CDIV(M, bm)), block((unsigned)(bm * 2));
    dl_launch(k, grid, block, smem, st, y, x, *w, M);
    gk2_check(st, y, x, w, M, c);
}
