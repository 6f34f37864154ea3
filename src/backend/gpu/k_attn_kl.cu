/* Decode attention with a lane per key (cuda.attention.keylanes).
 *
 * The split kernel (k_attention.cu) lets T lanes share a key and a lane hold
 * a slice of every query head: every batch of 8 keys pays butterflies over
 * the T lanes, a warp-wide max, a rescale of all accumulators, and each
 * warp's 16 positions a merge. After 4096 positions (Qwen3-8B shapes) ncu
 * counted 7.6 M warp instructions per launch, ~58 per (position, query
 * head) against ~12 for the products and conversions themselves: the kernel
 * issues instructions at 0.6 per scheduler-cycle and never waits on memory
 * (H200, 2026-12-01, bench/h200-2026-12-01h/run5).
 *
 * Here a block takes KL_SEG = KL_NW x warp-width consecutive positions of
 * one (token, KV head) and all G query heads of its group (G <= GM); warp w
 * takes the warp-width positions from p0 + w * width:
 *   scores: lane j takes key p = kb + j whole: its K row in 16-byte chunks
 *     (8 halves each), converted once and multiplied into the G heads'
 *     queries read from shared memory (layout [dim][head], broadcast
 *     reads), one sequential fmaf chain over the dims per head; scaled by
 *     scale * log2(e), masked keys -inf;
 *   softmax: the warp's max and the sum of 2^(s - max) by fixed xor
 *     butterflies (every lane ends with the same bits);
 *   values: lane j takes dims [j * DPL, (j + 1) * DPL) of every head; for
 *     the warp's keys in position order it reads the key's weights (shared
 *     memory, broadcast) and its V row slice (coalesced across the warp)
 *     and accumulates with fmaf;
 *   merge: the KL_NW warps' (max, sum, output) in warp order through shared
 *     memory, as the split kernel merges its warps.
 * The block writes the segment's unnormalised partial in the split kernel's
 * layout (wml: max, sum per (row, head, segment); wo: outputs), merged by
 * its combine kernel (gk_attn_combine, segment length KL_SEG), or the
 * normalised output when the grid has one segment. Every order depends
 * only on the row's own position and the shape: the same bits run to run
 * and in any batch. It is its own summation order (not the split kernel's
 * bits); tests compare it with the CPU reference.
 *
 * Shapes: fp16 KV, head_dim = DPL x warp width with DPL 2, 4 or 8, G <= 8
 * with GM x DPL <= 32 (GM: G rounded up to a power of two), 16-byte
 * aligned cache rows. Others take the split kernel (gk_attn_kl_ok).
 *
 * Latency: a lane keeps its whole K row (16 chunks at head_dim 128) and 32
 * V slices (16 at DPL 8) in flight at once, and requests the K row before
 * the block stages its queries, so a warp makes about three dependent
 * round trips (128 registers at Qwen3-8B's shape). With 4 chunks and 8 V
 * slices at a time (8 round trips, 76 registers) it was no faster than the
 * split kernel after 4096 positions and 10% slower after 512. Measured
 * (H200, 2026-12-01, Qwen3-8B decode, against DOTLM_GPU_ATTN_KL=0 in the
 * same call, bench/h200-2026-12-01h/run7, run8): after 4096 positions fp8
 * 279.9 / 284.3 tok/s against 272.0 / 271.3, int8 283.9 / 283.2 against
 * 277.8 / 275.6; after 2048 fp8 291.1 / 292.2 against 285.1 / 290.0. A
 * short row has few keys per KV head, so few warps (after 512: 160 for the
 * whole GPU) and the split kernel's many small blocks win: on by default
 * for grids of >= KL_MINLEN positions (the grid bound is pos + 1 rounded
 * up to a power of two, so rows past position 2048). */
#include <math.h>

#include "gpu_common.cuh"

#define KL_NW 4
#define KL_SEG (KL_NW * DL_WARP)

/* A lane's V slice of DPL halves: its register type, zero and widening. */
template <int DPL> struct kl_vt;
template <> struct kl_vt<2> {
    typedef uint32_t T;
    static __device__ __forceinline__ T zero() { return 0u; }
    static __device__ __forceinline__ void cvt(T v, float *f) { dl_f16x2(v, f); }
};
template <> struct kl_vt<4> {
    typedef uint2 T;
    static __device__ __forceinline__ T zero() { return make_uint2(0, 0); }
    static __device__ __forceinline__ void cvt(T v, float *f) { dl_f16x2(v.x, f), dl_f16x2(v.y, f + 2); }
};
template <> struct kl_vt<8> {
    typedef uint4 T;
    static __device__ __forceinline__ T zero() { return make_uint4(0, 0, 0, 0); }
    static __device__ __forceinline__ void cvt(T v, float *f) {
        dl_f16x2(v.x, f), dl_f16x2(v.y, f + 2), dl_f16x2(v.z, f + 4), dl_f16x2(v.w, f + 6);
    }
};

template <int DPL, int GM>
__global__ void __launch_bounds__(KL_NW *DL_WARP)
    dl_k_attn_kl(float *__restrict__ out, float *__restrict__ wml, float *__restrict__ wo,
                 const float *__restrict__ q, const gk_attn a, int nseg, float c2, int bsh) {
    dl_pdl_wait(); /* q was just written; K/V at pos too */
    dl_pdl_trigger();
    if (a.diag_empty) return; /* DOTLM_GPU_DIAG_SKIP=attnwork: the launch without its work */
    constexpr int HD = DPL * DL_WARP, NC = HD / 8;
    __shared__ __align__(16) float qs[HD * GM];            /* [dim][head] */
    __shared__ __align__(16) float sp[KL_NW][DL_WARP][GM]; /* a warp's key weights */
    __shared__ int srow[KL_NW][DL_WARP];        /* and its keys' cache rows (-1: none) */
    __shared__ float sm[KL_NW][GM], sl[KL_NW][GM];
    __shared__ float so[KL_NW][GM * HD];
    const int t = blockIdx.z, g = blockIdx.y, seg = blockIdx.x;
    const int pos = a.pos[t];
    const int p0 = seg * KL_SEG;
    if (p0 > pos) return; /* beyond this row: no partial (the combine stops before it) */
    const int G = a.nh / a.nkv, S = a.seq[t];
    const int lane = threadIdx.x % DL_WARP, w = threadIdx.x / DL_WARP;
    const int64_t qrow = (int64_t)t * a.nh + (int64_t)g * G; /* the group's first query head */
    const int kb = p0 + w * DL_WARP; /* the warp's first key */
    const int64_t rowb = (int64_t)HD * 2, pstr = (int64_t)a.nkv * rowb;
    /* the lane's key and the first chunks of its K row, requested before
     * the queries are staged (two round trips overlapped) */
    const int p = kb + lane;
    const int row = p <= pos ? dl_kv_row(a, S, p, bsh) : -1; /* the key's cache row */
    const char *kp = (const char *)a.kc + (int64_t)(row >= 0 ? row : 0) * pstr + (int64_t)g * rowb;
    constexpr int KG = NC < 16 ? NC : 16; /* K chunks in flight per lane */
    uint4 kr[KG];
#pragma unroll
    for (int u = 0; u < KG; u++) kr[u] = row >= 0 ? *(const uint4 *)(kp + u * 16) : make_uint4(0, 0, 0, 0);
    for (int i = threadIdx.x; i < GM * HD; i += blockDim.x) {
        const int h = i / HD, d = i % HD; /* HD a power of two: shifts */
        qs[d * GM + h] = h < G ? q[(qrow + h) * HD + d] : 0.0f;
    }
    __syncthreads();
    float m[GM], l[GM], acc[GM][DPL];
#pragma unroll
    for (int h = 0; h < GM; h++) {
        m[h] = -INFINITY;
        l[h] = 0.0f;
#pragma unroll
        for (int e = 0; e < DPL; e++) acc[h][e] = 0.0f;
    }
    if (kb <= pos) { /* warp-uniform; lane 0's key kb is then valid */
        float s[GM];
#pragma unroll
        for (int h = 0; h < GM; h++) s[h] = 0.0f;
#pragma unroll
        for (int c0 = 0; c0 < NC; c0 += KG) {
            if (c0)
#pragma unroll
                for (int u = 0; u < KG; u++)
                    kr[u] = row >= 0 ? *(const uint4 *)(kp + (c0 + u) * 16) : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int u = 0; u < KG; u++) {
                float kf[8];
                dl_wt<DT_F16>::cvt16(kr[u], kf, nullptr);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const float *qd = qs + ((c0 + u) * 8 + e) * GM;
#pragma unroll
                    for (int h = 0; h < GM; h++) s[h] = fmaf(kf[e], qd[h], s[h]);
                }
            }
        }
#pragma unroll
        for (int h = 0; h < GM; h++) {
            const float sc = row >= 0 ? s[h] * c2 : -INFINITY;
            float mx = sc;
            for (int o = 1; o < DL_WARP; o <<= 1) mx = fmaxf(mx, dl_shfl_xor(mx, o));
            const float pr = exp2f(sc - mx); /* masked: exp2(-inf) = 0 */
            float sum = pr;
            for (int o = 1; o < DL_WARP; o <<= 1) sum += dl_shfl_xor(sum, o);
            m[h] = mx;
            l[h] = sum;
            sp[w][lane][h] = pr;
        }
        srow[w][lane] = row;
#if DL_WARP == 32 && !defined(__HIPCC__)
        __syncwarp(); /* the warp's weights and rows, written by every lane, read by all */
#else
        __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
        __builtin_amdgcn_wave_barrier();
        __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
        const int nk = min(DL_WARP, pos - kb + 1); /* the warp's keys, warp-uniform */
        const char *vb = (const char *)a.vc + (int64_t)g * rowb + lane * DPL * 2;
        typedef typename kl_vt<DPL>::T VT;
        constexpr int VB = DPL == 8 ? 16 : 32; /* V slices in flight per lane */
        for (int j0 = 0; j0 < nk; j0 += VB) {
            VT vr[VB];
#pragma unroll
            for (int u = 0; u < VB; u++) {
                const int j = j0 + u;
                const int rj = j < nk ? srow[w][j] : -1;
                vr[u] = rj >= 0 ? *(const VT *)(vb + (int64_t)rj * pstr) : kl_vt<DPL>::zero();
            }
#pragma unroll
            for (int u = 0; u < VB; u++) {
                if (j0 + u >= nk) break;
                float vf[DPL];
                kl_vt<DPL>::cvt(vr[u], vf);
#pragma unroll
                for (int h = 0; h < GM; h++) {
                    const float pj = sp[w][j0 + u][h];
#pragma unroll
                    for (int e = 0; e < DPL; e++) acc[h][e] = fmaf(pj, vf[e], acc[h][e]);
                }
            }
        }
    }
    /* merge the warps in warp order (empty warps: m = -inf, weight 0) */
    if (lane == 0)
#pragma unroll
        for (int h = 0; h < GM; h++) sm[w][h] = m[h], sl[w][h] = l[h];
#pragma unroll
    for (int h = 0; h < GM; h++)
#pragma unroll
        for (int e = 0; e < DPL; e++) so[w][h * HD + lane * DPL + e] = acc[h][e];
    __syncthreads();
    for (int i = threadIdx.x; i < G * HD; i += blockDim.x) {
        const int h = i / HD, d = i % HD;
        float M = sm[0][h];
#pragma unroll
        for (int u = 1; u < KL_NW; u++) M = fmaxf(M, sm[u][h]);
        float L = 0.0f, O = 0.0f;
#pragma unroll
        for (int u = 0; u < KL_NW; u++) {
            const float mu = sm[u][h];
            const float f = mu == M ? 1.0f : exp2f(mu - M);
            L = fmaf(sl[u][h], f, L);
            O = fmaf(so[u][i], f, O);
        }
        const int64_t vec = qrow + h;
        if (nseg == 1) {
            out[vec * HD + d] = L > 0.0f ? O * (1.0f / L) : 0.0f;
        } else {
            const int64_t r = vec * nseg + seg;
            wo[r * HD + d] = O;
            if (d == 0) {
                wml[2 * r] = M;
                wml[2 * r + 1] = L;
            }
        }
    }
}

static int g_kl_mode = -1; /* gk_attn_kl_set; -1: not set (DOTLM_GPU_ATTN_KL, else the default) */
static int g_kl_minlen = -1;

extern "C" void gk_attn_kl_set(int mode, int minlen) {
    g_kl_mode = mode;
    g_kl_minlen = minlen;
}

/* The mode and minimum grid length in force: the setter's, else
 * DOTLM_GPU_ATTN_KL=0|1 and DOTLM_GPU_ATTN_KL_MIN=N (read once), else on
 * from KL_MINLEN positions. */
#define KL_MINLEN 4096
static void kl_cfg(int *mode, int *minlen) {
    static const int env_mode = dl_env_int("DOTLM_GPU_ATTN_KL", 1);
    static const int env_min = dl_env_int("DOTLM_GPU_ATTN_KL_MIN", KL_MINLEN);
    *mode = g_kl_mode >= 0 ? g_kl_mode : env_mode;
    *minlen = g_kl_minlen >= 0 ? g_kl_minlen : env_min;
}

/* Template slots of a: DPL (0: not taken) and GM. */
static int kl_pick(const gk_attn *a, int *dpl, int *gm) {
    if (!a->kv_f16 || a->nkv <= 0 || a->nh % a->nkv || a->ntok <= 0) return 0;
    if (a->hd % DL_WARP) return 0;
    const int d = a->hd / DL_WARP;
    if (d != 2 && d != 4 && d != 8) return 0;
    if ((((uintptr_t)a->kc) | ((uintptr_t)a->vc)) & 15) return 0;
    const int G = a->nh / a->nkv;
    int s = 1;
    while (s < G) s *= 2;
    if (s > 8 || s * d > 32) return 0;
    *dpl = d;
    *gm = s;
    return 1;
}

extern "C" int gk_attn_kl_ok(const gk_attn *a) {
    int mode = 0, minlen = 0, d = 0, s = 0;
    kl_cfg(&mode, &minlen);
    return mode > 0 && a->maxlen >= minlen && kl_pick(a, &d, &s);
}

template <int DPL, int GM>
static void kl_launch(cudaStream_t st, float *out, const float *q, const gk_attn *a, int nseg, float *w) {
    float *wml = w, *wo = w ? w + (size_t)a->ntok * a->nh * nseg * 2 : nullptr;
    int bsh = -1;
    for (int sh = 0; sh < 31; sh++)
        if ((1 << sh) == a->bs) bsh = sh;
    dim3 grid((unsigned)nseg, (unsigned)a->nkv, (unsigned)a->ntok);
    dl_launch(dl_k_attn_kl<DPL, GM>, grid, dim3(KL_NW * DL_WARP), 0, st, out, wml, wo, q, *a, nseg,
              a->scale * 1.4426950408889634f, bsh);
}

template <int DPL>
static void kl_launch_gm(cudaStream_t st, float *out, const float *q, const gk_attn *a, int gm, int nseg, float *w) {
    switch (gm) {
    case 1: kl_launch<DPL, 1>(st, out, q, a, nseg, w); break;
    case 2: kl_launch<DPL, 2>(st, out, q, a, nseg, w); break;
    case 4: kl_launch<DPL, 4>(st, out, q, a, nseg, w); break;
    default: if constexpr (DPL <= 4) kl_launch<DPL, 8>(st, out, q, a, nseg, w); /* GM x DPL <= 32 (kl_pick) */
    }
}

extern "C" int gk_attn_kl(void *s, float *out, const float *q, const gk_attn *a, void *ws) {
    int dpl = 0, gm = 0;
    if (!kl_pick(a, &dpl, &gm)) return 0;
    cudaStream_t st = (cudaStream_t)s;
    gk_attn b = *a;
    b.segl = KL_SEG; /* the combine's segment length */
    const int nseg = (int)DL_CDIV(a->maxlen, KL_SEG);
    float *w = nseg > 1 ? (float *)((char *)ws + (size_t)GK_ATTN_NCNT * sizeof(unsigned int)) : nullptr;
    if (dpl == 2) kl_launch_gm<2>(st, out, q, &b, gm, nseg, w);
    else if (dpl == 4) kl_launch_gm<4>(st, out, q, &b, gm, nseg, w);
    else kl_launch_gm<8>(st, out, q, &b, gm, nseg, w);
    if (nseg > 1 && !a->diag_nocombine) gk_attn_combine(s, out, w, &b, nseg);
    return 1;
}
