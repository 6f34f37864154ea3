/* Prefill attention in register tiles (cuda.attention.prefill).
 *
 * The tiled kernel (k_attention.cu, dl_k_attn) gives each lane one key and
 * runs its dot product over head_dim with two shared-memory loads per FMA,
 * so it is bound by shared memory: after 4096 prompt positions (Qwen3-8B,
 * 256-token forwards) one launch took 2.25 ms, ~7.6 TFLOP/s, with the L1 /
 * shared pipe 83% busy (H200, 2026-12-01, bench/h200-2026-12-01h/run4).
 *
 * Here a block takes BQ = 64 (CUDA; 32 on HIP) query vectors (vector =
 * token x head of the GQA group, as dl_k_attn numbers them) of one KV head,
 * 4 x BQ threads, and walks the keys
 * of each sequence among its rows in tiles of PF_BK = 64 positions from 0:
 *   scores: thread (qg = tid / 16, kg = tid % 16) computes the 4 x 4 tile
 *     of queries 4 qg .. 4 qg + 3 and keys kg + 16 j (j < 4): per 4 dims it
 *     reads 4 query and 4 key float4s from shared memory (the queries
 *     pre-scaled by scale * log2(e)) and makes 64 FMAs, a sequential fmaf
 *     chain over the dims per score;
 *   softmax: masked scores (other sequences, keys after the row's
 *     position) are -inf; the tile's row max and the sum of 2^(s - max)
 *     come from fixed xor butterflies over the 16 threads of a query quad
 *     (every thread ends with the same bits); the running max, sum and
 *     outputs are rescaled as in the decode kernels;
 *   values: the weights go to shared memory transposed (key-major), the V
 *     tile replaces the K tile, and thread (qg, kg) accumulates dims
 *     4 kg .. 4 kg + 3 (+ 64) of its 4 queries over the tile's keys in
 *     position order.
 * A row's tiles, butterflies and chains depend only on its own position and
 * the shape, never on the other rows of its block (a tile past the row's
 * position leaves its max, sum and outputs bitwise unchanged: a factor of
 * exactly 1 and additions of 0 * finite V): the same bits run to run and in
 * any batch. Its own summation order (not dl_k_attn's bits); tests compare
 * it with the CPU reference.
 *
 * Shapes: head_dim 64 or 128, K/V rows in 16-byte vectors (f16 or f32),
 * 16-byte aligned caches, q and out (gk_attn_pf_ok); others take dl_k_attn.
 * Shared memory at head_dim 128: 85 KB (BQ = 64: 2 blocks of 8 warps per
 * H200 SM at <= 128 registers) or 59.9 KB (BQ = 32, under gfx906's 64 KB).
 * The blocks of the latest tokens (most keys) are launched first. */
#include <math.h>
#include <stdlib.h>

#include "gpu_common.cuh"

#define PF_BK 64  /* keys per tile */
#define PF_QG 16  /* consecutive threads sharing a query quad */
#define PF_LOG2E 1.4426950408889634f
/* Query vectors per block: 64 (256 threads, 85 KB of shared memory at
 * head_dim 128) on CUDA; 32 (128 threads, 59.9 KB) on HIP, under gfx906's
 * 64 KB per workgroup. */
#ifdef __HIPCC__
#define PF_BQ_DEF 32
#else
#define PF_BQ_DEF 64
#endif

static size_t pf_smem(int hd, int bq) {
    const size_t st = (size_t)hd + 4;
    return ((size_t)bq * st + (size_t)PF_BK * st + (size_t)PF_BK * (bq + 4)) * sizeof(float);
}

/* Max and sum over the 16 threads of a query quad (xor butterflies inside
 * aligned groups of 16 lanes; every lane gets the same bits). */
static __device__ __forceinline__ float pf_max16(float v) {
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, dl_shfl_xor(v, o));
    return v;
}
static __device__ __forceinline__ float pf_sum16(float v) {
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) v += dl_shfl_xor(v, o);
    return v;
}

/* One tile of K or V rows: load() issues this thread's 16-byte loads of
 * positions k0 .. k0 + nc - 1 of sequence S, KV head g (rows past nc or on
 * an unmapped page are zeros; consecutive threads read consecutive chunks
 * of a row); store() widens them into dst [PF_BK][HD + 4] floats. */
template <int KF16, int HD, int T> struct pf_tile {
    static constexpr int VE = KF16 ? 8 : 4, NCH = HD / VE, ST = HD + 4, NL = PF_BK * NCH / T;
    uint4 r[NL];
    __device__ __forceinline__ void load(const void *src, const gk_attn &a, int S, int k0, int nc, int g) {
        const int64_t width = (int64_t)a.nkv * HD;
#pragma unroll
        for (int u = 0; u < NL; u++) {
            const int e = threadIdx.x + u * T, c = e / NCH, j = e % NCH;
            r[u] = make_uint4(0, 0, 0, 0);
            if (c < nc) {
                const int row = dl_kv_row(a, S, k0 + c);
                if (row >= 0) {
                    const int64_t idx = (int64_t)row * width + (int64_t)g * HD + j * VE;
                    r[u] = *(const uint4 *)((const char *)src + idx * (KF16 ? 2 : 4));
                }
            }
        }
    }
    __device__ __forceinline__ void store(float *dst) const {
#pragma unroll
        for (int u = 0; u < NL; u++) {
            const int e = threadIdx.x + u * T, c = e / NCH, j = e % NCH;
            float f[VE];
            dl_wt<KF16 ? DT_F16 : DT_F32>::cvt16(r[u], f, nullptr);
#pragma unroll
            for (int w = 0; w < VE; w += 4)
                *(float4 *)(dst + c * ST + j * VE + w) = make_float4(f[w], f[w + 1], f[w + 2], f[w + 3]);
        }
    }
};

/* out [ntok * nh][HD] for the query vectors of block x (reversed: the last
 * vectors first) and KV head blockIdx.y; q [ntok * nh][HD]. */
template <int KF16, int NH, int BQ>
__global__ void __launch_bounds__(4 * BQ, BQ == 64 ? 2 : 1)
    dl_k_attn_pf(float *__restrict__ out, const float *__restrict__ q, gk_attn a) {
    dl_pdl_enter();
    constexpr int HD = 64 * NH, ST = HD + 4, ND = 4 * NH; /* ND: output dims per thread and query */
    constexpr int T = 4 * BQ, PS = BQ + 4;   /* threads; row stride of the transposed weights */
    extern __shared__ float4 pf_smem4[];
    float *sq = (float *)pf_smem4;   /* [BQ][ST] queries * scale * log2(e) */
    float *skv = sq + BQ * ST;    /* [PF_BK][ST] the K tile, then the V tile */
    float *spt = skv + PF_BK * ST;   /* [PF_BK][PS] weights, key-major */
    __shared__ int rt[BQ], rh[BQ], rpos[BQ], rseq[BQ];
    const int tid = threadIdx.x, qg = tid / PF_QG, kg = tid % PF_QG;
    const int g = blockIdx.y;
    const int64_t v0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * BQ;
    if (tid < BQ) dl_attn_qvec(a, g, v0 + tid, &rt[tid], &rh[tid], &rpos[tid], &rseq[tid]);
    __syncthreads();
    const float qs = a.scale * PF_LOG2E;
    for (int e = tid; e < BQ * (HD / 4); e += T) {
        const int r = e / (HD / 4), c = e % (HD / 4);
        float4 f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (rpos[r] >= 0) f = *(const float4 *)(q + ((int64_t)rt[r] * a.nh + rh[r]) * HD + c * 4);
        *(float4 *)(sq + r * ST + c * 4) = make_float4(f.x * qs, f.y * qs, f.z * qs, f.w * qs);
    }

    float m[4], l[4], o[4][ND];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
#pragma unroll
        for (int d = 0; d < ND; d++) o[i][d] = 0.0f;
    }
    for (int i0 = 0; i0 < BQ; i0++) {
        int hi;
        if (!dl_attn_seq_first(rseq, rpos, BQ, i0, &hi)) continue;
        const int S = rseq[i0];
        int mp[4]; /* this thread's rows' positions in sequence S, else -1 */
#pragma unroll
        for (int i = 0; i < 4; i++) mp[i] = rseq[qg * 4 + i] == S ? rpos[qg * 4 + i] : -1;
        /* The V tile is requested before the scores and, at head_dim 64
         * with f16 rows, the next K tile before the V products, where the
         * registers allow it (others: the V tile after the scores, the K
         * tile at the top of its turn; with both at head_dim 128, 128
         * registers spill) */
        typedef pf_tile<KF16, HD, T> tile;
        constexpr bool VPRE = tile::NL <= 4, KPRE = KF16 && NH == 1;
        tile kt, vt;
        if (KPRE) kt.load(a.kc, a, S, 0, min(PF_BK, hi), g);
        for (int k0 = 0; k0 < hi; k0 += PF_BK) {
            const int nc = min(PF_BK, hi - k0);
            if (!KPRE) kt.load(a.kc, a, S, k0, nc, g);
            __syncthreads(); /* the previous tile's readers of skv / spt are done (and sq is staged) */
            kt.store(skv);
            __syncthreads();
            if (VPRE) vt.load(a.vc, a, S, k0, nc, g);
            float s[4][4];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) s[i][j] = 0.0f;
#pragma unroll 1
            for (int d = 0; d < HD; d += 4) {
                float4 qf[4], kf[4];
#pragma unroll
                for (int i = 0; i < 4; i++) qf[i] = *(const float4 *)(sq + (qg * 4 + i) * ST + d);
#pragma unroll
                for (int j = 0; j < 4; j++) kf[j] = *(const float4 *)(skv + (kg + 16 * j) * ST + d);
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        s[i][j] = fmaf(qf[i].x, kf[j].x, s[i][j]);
                        s[i][j] = fmaf(qf[i].y, kf[j].y, s[i][j]);
                        s[i][j] = fmaf(qf[i].z, kf[j].z, s[i][j]);
                        s[i][j] = fmaf(qf[i].w, kf[j].w, s[i][j]);
                    }
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float mx = -INFINITY;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (k0 + kg + 16 * j > mp[i]) s[i][j] = -INFINITY;
                    mx = fmaxf(mx, s[i][j]);
                }
                mx = pf_max16(mx);
                const float mn = fmaxf(m[i], mx);
                float ps = 0.0f;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    s[i][j] = s[i][j] == -INFINITY ? 0.0f : exp2f(s[i][j] - mn);
                    ps += s[i][j];
                }
                ps = pf_sum16(ps);
                const float corr = m[i] == -INFINITY ? 0.0f : exp2f(m[i] - mn);
                l[i] = fmaf(l[i], corr, ps);
                m[i] = mn;
#pragma unroll
                for (int d = 0; d < ND; d++) o[i][d] *= corr;
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
                *(float4 *)(spt + (kg + 16 * j) * PS + qg * 4) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
            __syncthreads(); /* every K read done, the weights visible */
            if (!VPRE) vt.load(a.vc, a, S, k0, nc, g);
            vt.store(skv);
            __syncthreads();
            if (KPRE && k0 + PF_BK < hi) kt.load(a.kc, a, S, k0 + PF_BK, min(PF_BK, hi - k0 - PF_BK), g);
            for (int c = 0; c < nc; c++) {
                const float4 pf = *(const float4 *)(spt + c * PS + qg * 4);
                const float pw[4] = {pf.x, pf.y, pf.z, pf.w};
#pragma unroll
                for (int h = 0; h < NH; h++) {
                    const float4 vf = *(const float4 *)(skv + c * ST + kg * 4 + 64 * h);
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        o[i][h * 4 + 0] = fmaf(pw[i], vf.x, o[i][h * 4 + 0]);
                        o[i][h * 4 + 1] = fmaf(pw[i], vf.y, o[i][h * 4 + 1]);
                        o[i][h * 4 + 2] = fmaf(pw[i], vf.z, o[i][h * 4 + 2]);
                        o[i][h * 4 + 3] = fmaf(pw[i], vf.w, o[i][h * 4 + 3]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int r = qg * 4 + i;
        if (rpos[r] < 0) continue;
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        float *dst = out + ((int64_t)rt[r] * a.nh + rh[r]) * HD;
#pragma unroll
        for (int h = 0; h < NH; h++)
            *(float4 *)(dst + kg * 4 + 64 * h) = make_float4(o[i][h * 4] * inv, o[i][h * 4 + 1] * inv,
                                                             o[i][h * 4 + 2] * inv, o[i][h * 4 + 3] * inv);
    }
}

extern "C" int gk_attn_pf_ok(const gk_attn *a, const float *q, const float *out) {
    if (a->hd != 64 && a->hd != 128) return 0;
    if (a->nkv <= 0 || a->nh % a->nkv) return 0;
    return ((((uintptr_t)a->kc) | ((uintptr_t)a->vc) | ((uintptr_t)q) | ((uintptr_t)out)) & 15) == 0;
}

template <int KF16, int NH, int BQ>
static void pf_launch_bq(cudaStream_t st, float *out, const float *q, const gk_attn *a) {
    static bool attr_set;
    const size_t sm = pf_smem(64 * NH, BQ);
    if (!attr_set) {
        (void)cudaFuncSetAttribute((const void *)dl_k_attn_pf<KF16, NH, BQ>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)sm);
        attr_set = true;
    }
    const int G = a->nh / a->nkv;
    dim3 grid((unsigned)DL_CDIV((int64_t)a->ntok * G, BQ), (unsigned)a->nkv);
    dl_launch(dl_k_attn_pf<KF16, NH, BQ>, grid, dim3(4 * BQ), sm, st, out, q, *a);
}

/* Query vectors per block: 0 = not yet read (DOTLM_GPU_ATTN_PF_BQ=32|64, an
 * experiment switch read once; CUDA only), else 32 or 64. Every row gets
 * the same bits either way: its tiles, chains and butterflies do not
 * depend on the block's other rows. */
static int g_pf_bq;

extern "C" int gk_attn_pf_bq_set(int bq) {
    const int old = g_pf_bq ? g_pf_bq : PF_BQ_DEF;
    g_pf_bq = bq == 32 || (bq == 64 && PF_BQ_DEF == 64) ? bq : PF_BQ_DEF;
    return old;
}

template <int KF16, int NH>
static void pf_launch(cudaStream_t st, float *out, const float *q, const gk_attn *a) {
    if (!g_pf_bq) {
        const char *e = getenv("DOTLM_GPU_ATTN_PF_BQ");
        (void)gk_attn_pf_bq_set(e ? atoi(e) : 0);
    }
#if PF_BQ_DEF == 64
    if (g_pf_bq == 64) {
        pf_launch_bq<KF16, NH, 64>(st, out, q, a);
        return;
    }
#endif
    pf_launch_bq<KF16, NH, 32>(st, out, q, a);
}

extern "C" void gk_attn_pf(void *s, float *out, const float *q, const gk_attn *a) {
    if (a->ntok <= 0) return;
    cudaStream_t st = (cudaStream_t)s;
    if (a->kv_f16) {
        if (a->hd == 64) pf_launch<1, 1>(st, out, q, a);
        else pf_launch<1, 2>(st, out, q, a);
    } else {
        if (a->hd == 64) pf_launch<0, 1>(st, out, q, a);
        else pf_launch<0, 2>(st, out, q, a);
    }
}
