/* Causal GQA attention over the paged KV cache (fp16 or fp32 KV, fp32
 * softmax and accumulation). Two paths:
 *
 *  - tiled (prefill, any batch): a block takes AT_QV consecutive
 *    (token, head-in-group) query vectors of one KV head, stages CK
 *    keys/values at a time in shared memory (widened to fp32) and reuses
 *    them for all its queries; rows of different sequences in one block are
 *    handled in separate passes. Chunk boundaries are multiples of CK from
 *    position 0.
 *  - split (decode, ntok <= 8): the positions [0, pos] of a token are cut
 *    into fixed segments aligned at 0 (a->segl positions, or by the row's
 *    own position: 32 below GK_ATTN_SEG_LONG, 64 from there), so the
 *    number of segments grows with the context. One block takes one
 *    (token, KV head, segment) and all query heads of the GQA group (or a
 *    fixed chunk of them), reads each K/V row once with 16-byte loads and
 *    writes the segment's unnormalised partial (max, sum, output); a
 *    combine kernel merges a row's segments in segment order, or (fused
 *    mode) the last segment block of each (token, KV head x head chunk) to
 *    finish merges them, with the same code (da_merge) and so the same bits,
 *    or (cluster mode, CUDA sm_90+, rows of 2..16 segments) the segment
 *    blocks of a (token, KV head x head chunk) form one thread block
 *    cluster, store their partials into its first block's shared memory
 *    and that block merges them with da_merge_rt's arithmetic (da_merge_cl):
 *    the same bits again, and no combine launch.
 *
 * Every reduction has a fixed order that depends only on the row's own
 * sequence, position and the model shape (head_dim, heads, KV dtype), never
 * on the rest of the batch: no float atomics, same bits run to run, and a
 * row's result is the same in any batch of the same path. */
#include <math.h>
#include <string.h>

#include "gpu_common.cuh"
#include "k_rope.cuh"

/* ------------------------------------------------------------------------
 * Tiled path
 * ---------------------------------------------------------------------- */

#define AT_WARPS 4
#define AT_QV 16
#define AT_RPW (AT_QV / AT_WARPS) /* query rows per warp */
#define AT_MAXD 256
#define AT_DPL (AT_MAXD / DL_WARP) /* output dims per lane (upper bound) */

static int at_ck(int hd) { return hd <= 128 ? 32 : 16; }
static size_t at_smem(int hd) {
    int ck = at_ck(hd);
    return ((size_t)AT_QV * hd + (size_t)ck * (hd + 1) + (size_t)ck * hd) * sizeof(float);
}

template <int KF16>
static __device__ __forceinline__ float kv_ld(const void *p, int64_t i) {
    return KF16 ? __half2float(((const __half *)p)[i]) : ((const float *)p)[i];
}

/* Tiled causal attention for query vectors [blockIdx.x * AT_QV, +AT_QV) of
 * KV head blockIdx.y (vector v = token * G + head-in-group). vec != 0: K/V
 * rows are 16-byte aligned and a multiple of 16 bytes (staged with 16-byte
 * loads, one block-table lookup per vector); else element by element.
 * Lane c of a warp scores key c of the chunk (sequential dot product over
 * head_dim); each lane accumulates output dims lane, lane + WARP, ... over
 * the chunk's keys in key order, with an online softmax per query row. */
template <int KF16>
__global__ void __launch_bounds__(AT_WARPS *DL_WARP)
    dl_k_attn(float *__restrict__ out, const float *__restrict__ q, gk_attn a, int ck, int vec) {
    dl_pdl_enter();
    extern __shared__ float smem[];
    const int hd = a.hd, g = blockIdx.y;
    float *sq = smem;                       /* [AT_QV][hd] */
    float *sk = sq + AT_QV * hd;            /* [ck][hd + 1] */
    float *sv = sk + ck * (hd + 1);         /* [ck][hd] */
    __shared__ int rt[AT_QV], rpos[AT_QV], rseq[AT_QV], rh[AT_QV];
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    const int64_t v0 = (int64_t)blockIdx.x * AT_QV;
    const int qv = AT_QV;

    for (int i = threadIdx.x; i < AT_QV; i += blockDim.x) dl_attn_qvec(a, g, v0 + i, &rt[i], &rh[i], &rpos[i], &rseq[i]);
    __syncthreads();
    for (int i = 0; i < qv; i++) {
        if (rpos[i] < 0) continue;
        const float *qr = q + ((int64_t)rt[i] * a.nh + rh[i]) * hd;
        for (int d = threadIdx.x; d < hd; d += blockDim.x) sq[i * hd + d] = qr[d];
    }

    float m[AT_RPW], l[AT_RPW], o[AT_RPW][AT_DPL];
#pragma unroll
    for (int r = 0; r < AT_RPW; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int j = 0; j < AT_DPL; j++) o[r][j] = 0.0f;
    }
    const int64_t width = (int64_t)a.nkv * hd;

    for (int i0 = 0; i0 < qv; i0++) {
        int hi;
        if (!dl_attn_seq_first(rseq, rpos, qv, i0, &hi)) continue;
        const int S = rseq[i0];
        for (int c0 = 0; c0 < hi; c0 += ck) {
            __syncthreads();
            const int nc = min(ck, hi - c0);
            if (vec) {
                constexpr int VE = KF16 ? 8 : 4; /* elements per 16-byte vector */
                const int nv = hd / VE;
                for (int e = threadIdx.x; e < ck * nv; e += blockDim.x) {
                    const int c = e / nv, j = e - c * nv;
                    uint4 kr = make_uint4(0, 0, 0, 0), vr = kr;
                    if (c < nc) {
                        const int row = dl_kv_row(a, S, c0 + c);
                        if (row >= 0) {
                            const int64_t idx = (int64_t)row * width + (int64_t)g * hd + j * VE;
                            kr = *(const uint4 *)((const char *)a.kc + idx * (KF16 ? 2 : 4));
                            vr = *(const uint4 *)((const char *)a.vc + idx * (KF16 ? 2 : 4));
                        }
                    }
                    float kf[VE], vf[VE];
                    dl_wt<KF16 ? DT_F16 : DT_F32>::cvt16(kr, kf, nullptr);
                    dl_wt<KF16 ? DT_F16 : DT_F32>::cvt16(vr, vf, nullptr);
#pragma unroll
                    for (int u = 0; u < VE; u++) {
                        sk[c * (hd + 1) + j * VE + u] = kf[u];
                        sv[c * hd + j * VE + u] = vf[u];
                    }
                }
            } else {
                for (int e = threadIdx.x; e < ck * hd; e += blockDim.x) {
                    const int c = e / hd, d = e % hd;
                    float kvv = 0.0f, vvv = 0.0f;
                    if (c < nc) {
                        const int row = dl_kv_row(a, S, c0 + c);
                        if (row >= 0) {
                            const int64_t idx = (int64_t)row * width + (int64_t)g * hd + d;
                            kvv = kv_ld<KF16>(a.kc, idx);
                            vvv = kv_ld<KF16>(a.vc, idx);
                        }
                    }
                    sk[c * (hd + 1) + d] = kvv;
                    sv[c * hd + d] = vvv;
                }
            }
            __syncthreads();
#pragma unroll
            for (int r = 0; r < AT_RPW; r++) {
                const int i = wid + r * AT_WARPS;
                if (i >= qv || rseq[i] != S) continue;
                const int pi = rpos[i];
                if (c0 > pi) continue;
                float sc = -INFINITY;
                if (lane < nc && c0 + lane <= pi) {
                    const float *qq = sq + i * hd, *kk = sk + lane * (hd + 1);
                    float dot = 0.0f;
                    for (int d = 0; d < hd; d++) dot = fmaf(qq[d], kk[d], dot);
                    sc = dot * a.scale;
                }
                const float mx = dl_warp_max(sc);
                const float mn = fmaxf(m[r], mx);
                const float p = sc == -INFINITY ? 0.0f : expf(sc - mn);
                const float corr = m[r] == -INFINITY ? 0.0f : expf(m[r] - mn);
                l[r] = l[r] * corr + dl_warp_sum(p);
                m[r] = mn;
#pragma unroll
                for (int j = 0; j < AT_DPL; j++) o[r][j] *= corr;
                for (int c = 0; c < nc; c++) {
                    const float pc = dl_shfl(p, c);
#pragma unroll
                    for (int j = 0; j < AT_DPL; j++) {
                        const int d = lane + j * DL_WARP;
                        if (d < hd) o[r][j] = fmaf(pc, sv[c * hd + d], o[r][j]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < AT_RPW; r++) {
        const int i = wid + r * AT_WARPS;
        if (i >= qv || rpos[i] < 0) continue;
        const int64_t vec_i = (int64_t)rt[i] * a.nh + rh[i];
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
        for (int j = 0; j < AT_DPL; j++) {
            const int d = lane + j * DL_WARP;
            if (d < hd) out[vec_i * hd + d] = o[r][j] * inv;
        }
    }
}

/* ------------------------------------------------------------------------
 * Split (decode) path
 *
 * Block = (segment blockIdx.x, KV head g and head chunk blockIdx.y, token
 * blockIdx.z), DA_NW warps. Warp w owns the KW = SEG / DA_NW positions
 * [seg * SEG + w * KW, + KW) of the segment, clipped to [0, pos].
 * A K/V row (hd elements) is NCH 16-byte vectors; T = 2^lt lanes share one
 * key (lane ti of the group holds vectors ti, ti + T, ... : CPL of them),
 * so a warp covers KPW = WARP / T keys per load instruction and each lane
 * loads KB keys per batch: all 2 * KB * CPL vectors of a batch are issued
 * before any is used. The GM (>= gb) query heads of the block live in
 * registers (the lane's slice of each), so every K/V load serves all of
 * them. Per batch: partial dots (sequential over the lane's elements),
 * butterfly over the T lanes of the group, running max shared by the warp
 * (log2 domain: scores are scaled by scale * log2(e) and exp2f is used),
 * then p * V accumulated per lane in key order. At the end the groups of a
 * warp are summed by a butterfly, and the DA_NW warps are merged in warp
 * order through shared memory.
 * ---------------------------------------------------------------------- */

#define DA_NW 4                         /* warps per block */
/* log2 of a row's segment length: segl (32 or 64, gk_attn_seg_ok), or by
 * its own position (segl = 0): 32 below GK_ATTN_SEG_LONG, 64 from there
 * (a function of the row alone, so a row's bits never depend on the
 * batch). */
static __host__ __device__ __forceinline__ int da_rsh(int segl, int pos) {
    if (segl > 64) return segl == 128 ? 7 : 8; /* the key-lane kernel's segments (k_attn_kl.cu), combine only */
    return (segl ? segl == 32 : pos < GK_ATTN_SEG_LONG) ? 5 : 6;
}
#define DA_TMAX 16                      /* at most 16 lanes per key */
#define DA_SO 1024                      /* merge buffer floats per warp (>= GM * hd) */
#define DC_T 256                        /* combine threads */
#define DA_EU 8                         /* fused merge: output elements per thread in flight together */
#define DA_CL_MAXF 7680                 /* cluster merge: rank 0's partial slots, 30 KB at most (with the
                                         * kernel's 16.5 KB of static shared memory, under the 48 KB a block
                                         * gets without an opt-in) */
#define DA_LOG2E 1.4426950408889634f

/* Keys per lane per batch: 4 K vectors (+ 4 V) in flight per lane, halved
 * when the query/accumulator registers are large (GM * EPL >= 64). */
static constexpr __host__ __device__ int da_kb(int gm, int cpl, int epl) {
    return ((gm * epl >= 64 ? 2 : 4) + cpl - 1) / cpl; /* at least 1 */
}

/* Final normalisation shared by the direct (one segment) write and the
 * combine, so that a one-segment row gets the same bits either way. */
static __device__ __forceinline__ float da_final(float o, float l) { return l > 0.0f ? o * (1.0f / l) : 0.0f; }

/* Load of a segment partial. The fused merge reads partials other blocks of
 * the running grid wrote (ordered by their __threadfence + counter and the
 * merging block's __threadfence), so it must not hit a stale L1 line: CUDA
 * loads at L2 (ld.global.cg); on HIP the acquire fence already invalidated
 * the vector L1. */
static __device__ __forceinline__ float da_ldp(const float *p) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    return __ldcg(p);
#else
    return *p;
#endif
}

/* Merges the segment partials of the nv query vectors vec0 .. vec0 + nv - 1
 * (one token: segments 0 .. n - 1 each, segment stride nseg; wml / wo laid
 * out as dl_k_attn_dec writes them) into out, using every thread of the
 * block (any blockDim). The arithmetic of output (vec, d) depends only on
 * that vector's partials and hd, never on nv or blockDim, so the combine
 * kernel (nv = 1, DC_T threads) and the fused merge in dl_k_attn_dec (nv =
 * gb, DA_NW warps) give the same bits:
 *   M = max_s m_s;  w_s = m_s == M ? 1 : 2^(m_s - M)
 *   L = fmaf(l_s, w_s, L) over s = 0, 1, .., n - 1, from 0
 *   P = DC_T / hd slices: slice j = fmaf(o_s[d], w_s, .) from -0.0 over the
 *     segments s with (s % DC_T) % P == j, in segment order
 *   out = da_final(slice 0 + slice 1 + .. + slice P - 1 (in order), L)
 * Slices without a segment stay -0.0 (the identity of +), so a one-segment
 * row gives exactly da_final(O, L), as the direct write does. Shared
 * memory: sw [nv * DC_T] (the chunk's weights), sacc [nv * P * hd] (slice
 * partials, <= nv * DC_T), sml [2 * nv] (M, L); the caller guarantees no
 * thread still uses them; the first access follows a __syncthreads. n >= 1.
 * EU: slice elements a thread works on together (speed only).
 * WIDE (EU = 1: the combine kernel unless cuda.attention.combine_wide is
 * off): a merge is a chain of dependent passes, each an L2 round trip, so
 * each pass issues its loads together:
 * M with 8 loads per lane in flight; L by warp v % nw for vector v, every
 * lane loading its 8 of the chunk's l_s at once, then the one sequential
 * fmaf chain above run on every lane (values broadcast by shuffles); the
 * slices with UI = 32 segments per element loaded before their FMAs (one
 * round trip up to 32 P segments, 4096 positions at hd = 128). Not WIDE
 * (the fused merge, whose registers the wide form raises from 128 to 151
 * in dl_k_attn_dec, and the switch's way back): thread v sums L from
 * global memory (8 loads in flight), the slices load in their FMA loop;
 * the combine kernel so took 26.5 us after 4096 positions (H200,
 * 2026-11-30, ncu, caches flushed). The same arithmetic, so the same bits,
 * either way. */
template <int EU, bool WIDE>
static __device__ __forceinline__ void da_merge(float *__restrict__ out, const float *wml, const float *wo,
                                                int64_t vec0, int nv, int n, int nseg, int hd, float *sw,
                                                float *sacc, float *sml) {
    static_assert(!WIDE || EU == 1, "the wide merge takes one slice element per thread");
    const int P = DC_T / hd, PH = P * hd;
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP, nw = blockDim.x / DL_WARP;
    /* M per vector: one warp per vector (max is order-free); L starts at 0 */
    for (int v = wid; v < nv; v += nw) {
        const float *ml = wml + (vec0 + v) * nseg * 2;
        float mx = -INFINITY;
        if constexpr (WIDE) { /* 8 loads in flight */
#pragma unroll 8
            for (int s = lane; s < n; s += DL_WARP) mx = fmaxf(mx, da_ldp(ml + 2 * s));
        } else {
            for (int s = lane; s < n; s += DL_WARP) mx = fmaxf(mx, da_ldp(ml + 2 * s));
        }
        mx = dl_warp_max(mx);
        if (lane == 0) {
            sml[v] = mx;
            if (WIDE) sml[nv + v] = 0.0f;
        }
    }
    float Lr = 0.0f; /* fused merge: thread v < nv, L of vector v */
    for (int s0 = 0; s0 < n; s0 += DC_T) {
        const int cnt = min(DC_T, n - s0);
        __syncthreads(); /* M is ready; the previous chunk's weights are consumed */
        for (int e = threadIdx.x; e < nv * cnt; e += blockDim.x) {
            const int v = e / cnt, i = e - v * cnt;
            const float ms = da_ldp(wml + ((vec0 + v) * nseg + s0 + i) * 2), M = sml[v];
            sw[v * DC_T + i] = ms == M ? 1.0f : exp2f(ms - M);
        }
        __syncthreads();
        /* L of vector v. Combine kernel (EU = 1): by warp v % nw, running
         * value in sml[nv + v], the chunk's l_s loaded by all lanes at once
         * (lane + 32 c), then L = fmaf(l_s, w_s, L) in segment order on every
         * lane. Fused merge: by thread v (in Lr) from global memory. The
         * same chain either way. */
        if constexpr (!WIDE) {
            if ((int)threadIdx.x < nv) {
                const float *ml = wml + ((vec0 + threadIdx.x) * nseg + s0) * 2 + 1, *w = sw + threadIdx.x * DC_T;
#pragma unroll 8
                for (int i = 0; i < cnt; i++) Lr = fmaf(da_ldp(ml + 2 * i), w[i], Lr);
            }
        } else for (int v = wid; v < nv; v += nw) {
            const float *ml = wml + ((vec0 + v) * nseg + s0) * 2 + 1, *w = sw + v * DC_T;
            constexpr int LC = DC_T / DL_WARP; /* l_s per lane */
            float lv[LC];
#pragma unroll
            for (int c = 0; c < LC; c++) lv[c] = lane + c * DL_WARP < cnt ? da_ldp(ml + 2 * (lane + c * DL_WARP)) : 0.0f;
            float L = sml[nv + v];
#pragma unroll
            for (int c = 0; c < LC; c++) {
                if (c * DL_WARP >= cnt) break;
                for (int i = 0; i < DL_WARP; i++) {
                    const float ls = dl_shfl(lv[c], i);
                    if (c * DL_WARP + i < cnt) L = fmaf(ls, w[c * DL_WARP + i], L);
                }
            }
            if (lane == 0) sml[nv + v] = L;
        }
        /* slice partials: EU elements e per thread at a time (the fused
         * merge: 8 per thread at Qwen3-8B's shape; the combine kernel: 1)
         * and UI segments of each (32 for EU = 1), so that their loads are
         * in flight together; each e still takes its segments j, j + P, ...
         * in order */
        constexpr int UI = WIDE ? 32 : EU == 1 ? 8 : 2;
        for (int e0 = threadIdx.x; e0 < nv * PH; e0 += EU * blockDim.x) {
            float acc[EU];
            const float *op[EU], *wv[EU];
            int jj[EU];
#pragma unroll
            for (int u = 0; u < EU; u++) {
                const int e = e0 + u * blockDim.x;
                const bool in = e < nv * PH;
                const int v = in ? e / PH : 0, r = in ? e - v * PH : 0, j = r / hd, d = r - j * hd;
                op[u] = wo + ((vec0 + v) * nseg + s0) * hd + d;
                wv[u] = sw + v * DC_T;
                jj[u] = in ? j : cnt; /* out of range: no term */
                acc[u] = in && s0 > 0 ? sacc[e] : -0.0f;
            }
            /* combine kernel: UI segments per element, all loads (predicated,
             * no branch), then the FMAs in segment order; the fused merge:
             * the loads in the FMA loop. The same chain either way. */
            if constexpr (WIDE) {
                for (int i0 = 0; i0 < cnt; i0 += P * UI) {
                    float ov[UI];
#pragma unroll
                    for (int k = 0; k < UI; k++) {
                        const int ii = i0 + k * P + jj[0];
                        ov[k] = ii < cnt ? da_ldp(op[0] + (int64_t)ii * hd) : 0.0f;
                    }
#pragma unroll
                    for (int k = 0; k < UI; k++) {
                        const int ii = i0 + k * P + jj[0];
                        if (ii < cnt) acc[0] = fmaf(ov[k], wv[0][ii], acc[0]);
                    }
                }
            } else {
#pragma unroll UI
                for (int i = 0; i < cnt; i += P)
#pragma unroll
                    for (int u = 0; u < EU; u++) {
                        const int ii = i + jj[u];
                        if (ii < cnt) acc[u] = fmaf(da_ldp(op[u] + (int64_t)ii * hd), wv[u][ii], acc[u]);
                    }
            }
#pragma unroll
            for (int u = 0; u < EU; u++)
                if (e0 + u * (int)blockDim.x < nv * PH) sacc[e0 + u * blockDim.x] = acc[u];
        }
    }
    if (!WIDE && (int)threadIdx.x < nv) sml[nv + threadIdx.x] = Lr;
    __syncthreads();
    for (int e = threadIdx.x; e < nv * hd; e += blockDim.x) {
        const int v = e / hd, d = e - v * hd;
        const float *sa = sacc + v * PH + d;
        float tot = sa[0];
        for (int j = 1; j < P; j++) tot += sa[j * hd];
        out[(vec0 + v) * hd + d] = da_final(tot, sml[nv + v]);
    }
}

/* The combine kernel's merge of ONE query vector vec over n <= DC_T
 * segments (blockDim = DC_T), with every load issued in one round trip:
 * thread s loads (m_s, l_s), and each thread the first UI segments of its
 * slice element, before any value is used; M is a block max, thread s
 * makes w_s into sw and puts l_s into sl, then warp 0 runs the L chain
 * from shared memory while every thread runs its slice's FMAs on the
 * values it already holds (further rounds of UI segments, n > P * UI,
 * load later). da_merge<1, true> took four dependent L2 round trips for
 * the same values (m for the max, m again for the weights, l for L, then
 * o). The arithmetic is da_merge's (same M, w_s, L chain in segment order,
 * slice chains in segment order, slice sum and da_final), so the bits are
 * the same. red: DC_T / WARP + 1 floats (the warps' maxima, then L). */
static __device__ __forceinline__ void da_merge_rt(float *__restrict__ out, const float *wml, const float *wo,
                                                   int64_t vec, int n, int nseg, int hd, float *sw, float *sl,
                                                   float *sacc, float *red) {
    constexpr int UI = 32;
    const int P = DC_T / hd, PH = P * hd;
    const int tid = threadIdx.x, lane = tid % DL_WARP, wid = tid / DL_WARP;
    const bool in = tid < PH;
    const int j = in ? tid / hd : 0, d = tid - j * hd;
    const float *ml = wml + vec * nseg * 2, *op = wo + vec * nseg * hd + d;
    float2 mlv = make_float2(-INFINITY, 0.0f);
    if (tid < n) mlv = *(const float2 *)(ml + 2 * tid);
    float ov[UI];
#pragma unroll
    for (int k = 0; k < UI; k++) {
        const int ii = k * P + j;
        ov[k] = in && ii < n ? op[(int64_t)ii * hd] : 0.0f;
    }
    float mx = dl_warp_max(mlv.x);
    if (lane == 0) red[wid] = mx;
    __syncthreads();
    float M = red[0];
    for (int w = 1; w < DC_T / DL_WARP; w++) M = fmaxf(M, red[w]);
    if (tid < n) {
        sw[tid] = mlv.x == M ? 1.0f : exp2f(mlv.x - M);
        sl[tid] = mlv.y;
    }
    __syncthreads();
    if (wid == 0) { /* L = fmaf(l_s, w_s, L) over s in order, from 0 (every lane; lane 0 keeps it) */
        float L = 0.0f;
#pragma unroll 8
        for (int s = 0; s < n; s++) L = fmaf(sl[s], sw[s], L);
        if (lane == 0) red[DC_T / DL_WARP] = L;
    }
    float acc = -0.0f;
    if (in) {
#pragma unroll
        for (int k = 0; k < UI; k++) {
            const int ii = k * P + j;
            if (ii < n) acc = fmaf(ov[k], sw[ii], acc);
        }
        for (int i0 = P * UI; i0 < n; i0 += P * UI) { /* n > P * UI: later rounds */
#pragma unroll
            for (int k = 0; k < UI; k++) {
                const int ii = i0 + k * P + j;
                ov[k] = ii < n ? op[(int64_t)ii * hd] : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < UI; k++) {
                const int ii = i0 + k * P + j;
                if (ii < n) acc = fmaf(ov[k], sw[ii], acc);
            }
        }
        sacc[tid] = acc;
    }
    __syncthreads();
    if (tid < hd) {
        float tot = sacc[tid];
        for (int s = 1; s < P; s++) tot += sacc[s * hd + tid];
        out[vec * hd + tid] = da_final(tot, red[DC_T / DL_WARP]);
    }
}

/* Thread block clusters (CUDA sm_90+; da_cl_avail on the host says where
 * a launch may use them). The cluster merge: a cluster is the nseg <=
 * GK_ATTN_CL_MAXSEG segment blocks of one (token, KV head x head chunk);
 * each stores its segment partial into block 0's shared memory
 * (st.shared::cluster), one barrier with release / acquire semantics at
 * cluster scope publishes them, and block 0 merges: no partials through
 * global memory, no combine launch. Elsewhere these are never reached
 * (the host launches no cluster) and compile to nothing. */
static __device__ __forceinline__ void da_cl_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && DL_WARP == 32 && !defined(__HIPCC__)
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
#endif
}
/* The shared::cluster address of p (this block's shared memory) in the
 * cluster's block `rank`. */
static __device__ __forceinline__ unsigned da_cl_map(const void *p, unsigned rank) {
    unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && DL_WARP == 32 && !defined(__HIPCC__)
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
#else
    (void)p, (void)rank;
#endif
    return r;
}
static __device__ __forceinline__ void da_cl_st(unsigned addr, float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && DL_WARP == 32 && !defined(__HIPCC__)
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(v) : "memory");
#else
    (void)addr, (void)v;
#endif
}

/* The cluster merge of the gb query vectors vec0 .. vec0 + gb - 1 over
 * their n segments, from shared memory: bo [s * gb * hd + h * hd + d] the
 * segment outputs, bml [(s * gb + h) * 2] their (m, l). da_merge_rt's
 * arithmetic exactly, so the bits of the combine kernel: M = max m_s;
 * w_s = m_s == M ? 1 : 2^(m_s - M); L = fmaf(l_s, w_s, L) over s in order
 * from 0; P = DC_T / hd slices, slice j = fmaf(o_s, w_s, .) over s = j,
 * j + P, .. in order from -0.0; out = da_final(slice 0 + slice 1 + ..,
 * L) (slices without a segment are -0.0, the identity of +, so they are
 * skipped). One thread per output element. */
static __device__ __forceinline__ void da_merge_cl(float *__restrict__ out, const float *bo, const float *bml,
                                                   int64_t vec0, int gb, int n, int hd) {
    const int P = DC_T / hd, np = n < P ? n : P;
    for (int e = threadIdx.x; e < gb * hd; e += blockDim.x) {
        const int h = e / hd, d = e - h * hd;
        const float *ml = bml + 2 * h; /* segment s: ml[2 * s * gb], ml[2 * s * gb + 1] */
        float M = -INFINITY;
        for (int s = 0; s < n; s++) M = fmaxf(M, ml[2 * s * gb]);
        /* w_s (recomputed where a slice needs it: the same value) */
        auto wt = [&](int s) {
            const float ms = ml[2 * s * gb];
            return ms == M ? 1.0f : exp2f(ms - M);
        };
        float L = 0.0f;
        for (int s = 0; s < n; s++) L = fmaf(ml[2 * s * gb + 1], wt(s), L);
        float tot = 0.0f;
        for (int j = 0; j < np; j++) {
            float acc = -0.0f;
            for (int s = j; s < n; s += P) acc = fmaf(bo[s * gb * hd + e], wt(s), acc);
            tot = j == 0 ? acc : tot + acc;
        }
        out[(vec0 + h) * hd + d] = da_final(tot, L);
    }
}

/* The q/k norm + RoPE + KV write prologue of the decode kernel (qk
 * fusion, gk_attn_split_qk): k == NULL means none (q is read as given). */
typedef struct {
    const float *k, *v; /* the batch's k / v rows as the q/k/v matmul wrote them [ntok, nkv * hd] */
    const void *qw, *kw; /* q / k norm weights [hd] (one dtype wdt), NULL = no norm */
    int wdt, zc, half;   /* half = rot / 2: pairs (i, i + half), i < half, are rotated */
    float eps;
    rope_freq fr;
} da_qk;

/* Index constants of a split launch, made on the host (integer divisions
 * by runtime values would otherwise run in every block's prologue): the
 * GQA group G = nh / nkv, its head chunks nhc = G / gb and nhsh =
 * log2(nhc) (-1 when not a power of two: then a division), hdm = ceil(2^32
 * / hd) (umulhi(i, hdm) = i / hd for the merge's element index i < 2^16,
 * hd <= 256), bsh = log2(bs) when the page size is a power of two, else
 * -1. */
typedef struct {
    int G, nhc, nhsh, bsh;
    unsigned hdm;
} da_ix;
static int da_log2(int n) { /* log2(n) for a power of two n > 0, else -1 */
    int l = 0;
    while ((1 << l) < n) l++;
    return n > 0 && (1 << l) == n ? l : -1;
}

/* Norm weights of one lane's elements i = lane + j * WARP of a head row. */
#define DA_QKW (DL_NORM_T / DL_WARP)

/* row[0, hd) = RoPE(RMSNorm(x) * w) (nw = false: RoPE(x)) of one head row,
 * by ONE warp, bitwise what dl_k_qk_rope_kv writes for it: the lane's norm
 * weights wv (norm_w, loaded earlier), the reduction order of
 * dl_row_sumsq_warp, and each pair's rope_rot with the cos / sin table cs
 * ([2][half], rope_cs of the position). Shared-memory row; the caller
 * synchronises before others read it. */
static __device__ __forceinline__ void da_qk_row(float *row, const float *x, bool nw, const float (&wv)[DA_QKW],
                                                 const float *cs, float eps, int hd, int half, int lane) {
    if (nw) {
        const float inv = 1.0f / sqrtf(dl_row_sumsq_warp(x, hd, lane) / (float)hd + eps);
#pragma unroll
        for (int j = 0; j < DA_QKW; j++) {
            const int i = lane + j * DL_WARP;
            if (i < hd) row[i] = (x[i] * inv) * wv[j];
        }
    } else {
        for (int i = lane; i < hd; i += DL_WARP) row[i] = x[i];
    }
    /* each lane rotates the pairs whose first element it wrote (i = lane +
     * j * WARP, i < half <= hd / 2) and their partners i + half, which another
     * lane wrote: a warp barrier orders those writes first */
#if DL_WARP == 32 && !defined(__HIPCC__)
    __syncwarp();
#else
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
    for (int i = lane; i < half; i += DL_WARP) rope_rot(&row[i], &row[i + half], cs[i], cs[half + i]);
}

/* gfx906: a 256-thread block is one wave per SIMD; the shapes that fit 128
 * VGPRs (GM <= 4 and GM * EPL <= 32; the Qwen3-8B shape needed 129) ask for
 * 2 waves per SIMD. CUDA: ptxas picks (128 registers for those shapes,
 * -Xptxas -v). */
#if DL_WARP == 64
#define DA_BOUNDS(gm, epl) __launch_bounds__(DA_NW * DL_WARP, (gm) <= 4 && (gm) * (epl) <= 32 ? 2 : 1)
#else
#define DA_BOUNDS(gm, epl) __launch_bounds__(DA_NW * DL_WARP)
#endif

/* One (segment blockIdx.x, KV head g = blockIdx.y / nhc and head chunk
 * blockIdx.y % nhc, token blockIdx.z) block. lt: log2 lanes per key; gb:
 * query heads per block (<= GM, a divisor of G); nseg: gridDim.x, the
 * workspace's segment stride; c2 = scale * log2(e). nseg == 1: writes
 * out (normalised); else wml[(vec * nseg + seg) * 2 + {0, 1}] = (max, sum)
 * in the log2 domain and wo[(vec * nseg + seg) * hd + d] = unnormalised
 * output, vec = token * nh + head. Segments past the token's pos write
 * nothing. cnt != NULL (fused, nseg > 1): a token with one segment
 * (pos < SEG) writes out directly (the bits the combine gives for n = 1);
 * else each block, after its partials, adds 1 to the arrival counter
 * cnt[token * gridDim.y + blockIdx.y] (all zero at entry), and the block
 * that arrives last (pos / SEG + 1 blocks of the token write) resets it to
 * 0 and merges the group's gb heads (da_merge, as the combine does).
 * qk.k != NULL (gk_attn_split_qk; nhc == 1, one token per sequence): q and
 * qk.k are raw matmul rows, normed and rotated in the prologue, and the
 * block holding pos writes that position's K/V rows first. qk.k != NULL or
 * a.warm: the K/V rows of positions < pos are loaded before the PDL wait. */
template <int KF16, int CPL, int GM>
__global__ void DA_BOUNDS(GM, CPL *(KF16 ? 8 : 4))
    dl_k_attn_dec(float *__restrict__ out, float *__restrict__ wml, float *__restrict__ wo,
                  unsigned int *__restrict__ cnt, const float *__restrict__ q, gk_attn a, int lt, int gb, int nseg,
                  float c2, const da_qk qk, int ncl, int cllate, const da_ix ix) {
    /* pre: the block first loads what no kernel of this forward writes, then
     * waits (below); else it waits first */
    if (a.diag_empty) { /* DOTLM_GPU_DIAG_SKIP=attnwork: the launch without its work */
        dl_pdl_enter();
        return;
    }
    const bool pre = qk.k || a.warm;
    const bool ipre = !pre && a.ipre; /* only the indices before the wait */
    /* cluster merge with cllate: the next kernel launches only as the
     * blocks pass the cluster barrier (below) */
    const bool trig = !(ncl && cllate);
    if (!pre && !ipre) {
        dl_pdl_wait();
        if (trig) dl_pdl_trigger();
    }
    constexpr int DT = KF16 ? DT_F16 : DT_F32;
    constexpr int VE = dl_wt<DT>::VEC; /* elements per 16-byte vector */
    constexpr int EPL = CPL * VE;      /* elements of a row held by one lane */
    constexpr int KB = da_kb(GM, CPL, EPL);
    static_assert(DC_T == GK_ATTN_RT_MAXSEG, "da_merge_rt: one segment per thread");
    static_assert(DA_NW * DA_SO >= 2 * 8 * DC_T, "fused merge: weights + slice partials of 8 heads fit in so");
    __shared__ float so[DA_NW * DA_SO];
    __shared__ float sm[DA_NW * GM], sl[DA_NW * GM];
    __shared__ int slast;
    extern __shared__ float da_clb[]; /* cluster launches: ncl * (gb * hd + 2 * gb) floats (rank 0's) */

    const int t = blockIdx.z, seg = blockIdx.x;
    const int pos = a.pos[t];
    const int ssh = da_rsh(a.segl, pos);                /* the row's segment length, as a shift */
    const int SEG = 1 << ssh, KW = SEG / DA_NW;        /* positions per segment, per warp */
    const int p0 = seg * SEG;
    if (p0 > pos) { /* beyond this row: no partial (the merge stops before it) */
        if (ncl) { /* a cluster's idle block still meets its barrier */
            dl_pdl_trigger();
            da_cl_sync();
        }
        return;
    }
    const int S = a.seq[t], hd = a.hd, G = ix.G, nhc = ix.nhc;
    const int g = ix.nhsh >= 0 ? (int)blockIdx.y >> ix.nhsh : (int)blockIdx.y / nhc;
    const int h0 = g * G + ((int)blockIdx.y - g * nhc) * gb;
    const int T = 1 << lt, KPW = DL_WARP >> lt;
    const int lane = threadIdx.x % DL_WARP, w = threadIdx.x / DL_WARP;
    const int ti = lane & (T - 1), gi = lane >> lt;
    const int nch = hd / VE;
    const int64_t rowb = (int64_t)hd * (KF16 ? 2 : 4);
    const char *kc = (const char *)a.kc, *vc = (const char *)a.vc;
    const int32_t *bt = a.btab + (int64_t)S * a.mbps;
    /* the cache page of the warp's first position (bs = 16: all its
     * KW <= 16 positions); with ipre loaded before the PDL wait, with
     * pos and seq (uploaded before the forward's first kernel), so that
     * after the wait the K/V loads are the first round trip */
    const int kw0 = p0 + w * KW, kpg0 = ix.bsh >= 0 ? kw0 >> ix.bsh : kw0 / a.bs, kbase = kpg0 * a.bs;
    const int blk0 = kw0 <= pos ? bt[kpg0] : -1;
    /* K/V byte offsets: the first page's row of head g, and one position's stride (the warp's keys
     * mostly lie in that page) */
    const int64_t pstr = (int64_t)a.nkv * rowb, base0 = ((int64_t)blk0 * a.bs * a.nkv + g) * rowb;
    if (ipre) dl_pdl_enter_after((uint32_t)blk0, (uint32_t *)out, trig);

    const float *qsrc = q;
    int64_t qoff = (int64_t)t * a.nh + h0;
    float wq[DA_QKW], wk[DA_QKW]; /* qk prologue: the lane's q / k norm weights */
    float *const cs = so + DA_NW * DA_SO - 2 * 128; /* and the position's cos / sin table */
    if (pre) {
        /* before the PDL wait, what no kernel of this forward writes (pos,
         * seq and the block table are uploaded before its first kernel, and
         * every kernel waits before it triggers, so those uploads are
         * complete): this warp's K/V rows of positions < pos, written by
         * earlier forwards (every token of the batch is of its own sequence,
         * so pos is the only position this forward writes), loaded once
         * into L1 for the loop below; with the qk prologue also the norm
         * weights and the cos / sin table. The kernel ahead still runs
         * meanwhile. */
        uint32_t dep = 0;
        if (qk.k) {
            const float p = (float)pos;
            for (int i = threadIdx.x; i < qk.half; i += blockDim.x) rope_cs(p, qk.fr.f[i], &cs[i], &cs[qk.half + i]);
#pragma unroll
            for (int j = 0; j < DA_QKW; j++) {
                const int i = lane + j * DL_WARP;
                wq[j] = qk.qw && i < hd ? norm_w(qk.qw, qk.wdt, i, qk.zc) : 0.0f;
                wk[j] = qk.kw && i < hd ? norm_w(qk.kw, qk.wdt, i, qk.zc) : 0.0f;
            }
            dep = __float_as_uint(wq[0]) ^ __float_as_uint(wk[0]);
        }
        const int w0 = p0 + w * KW, w1 = min(w0 + KW, pos); /* old positions of the warp */
        const int nv = (w1 - w0) * nch;                           /* their 16-byte K vectors */
        for (int e = lane; e < nv; e += DL_WARP) {
            const int pp = w0 + e / nch, c = e % nch;
            const int row = dl_kv_row(a, S, pp, ix.bsh);
            if (row < 0) continue;
            const int64_t off = ((int64_t)row * a.nkv + g) * rowb + c * 16;
            dep ^= dl_xor4(*(const uint4 *)(kc + off)) ^ dl_xor4(*(const uint4 *)(vc + off));
        }
        dl_pdl_enter_after(dep, (uint32_t *)out, trig);
    }
    if (qk.k) {
        /* the block's gb query heads normed and rotated into so (q itself is
         * left as the matmul wrote it); the block whose segment holds pos
         * also makes the token's key row of head g and writes it and the
         * value row into the cache at pos, before any warp reads that
         * position (the caller guarantees one head chunk per KV head and one
         * token per sequence, so no other block reads or writes it) */
        const bool wr = pos < p0 + SEG;
        const int nrow = gb + (wr ? 1 : 0);
        __syncthreads(); /* cs */
        for (int r = w; r < nrow; r += DA_NW) {
            const bool isq = r < gb;
            const float *x = isq ? q + (qoff + r) * hd : qk.k + ((int64_t)t * a.nkv + g) * hd;
            /* the weights picked by value: picking the array by address put
             * wq and wk in scratch / local memory (tools/gpu_gate.sh) */
            float wv[DA_QKW];
#pragma unroll
            for (int j = 0; j < DA_QKW; j++) wv[j] = isq ? wq[j] : wk[j];
            da_qk_row(so + r * hd, x, qk.qw != nullptr, wv, cs, qk.eps, hd, qk.half, lane);
        }
        __syncthreads();
        const int row = wr ? dl_kv_row(a, S, pos, ix.bsh) : -1;
        if (row >= 0) {
            const int64_t base = ((int64_t)row * a.nkv + g) * hd;
            const float *vr = qk.v + ((int64_t)t * a.nkv + g) * hd, *kr = so + gb * hd;
            for (int i = threadIdx.x; i < hd; i += blockDim.x) {
                if (KF16) {
                    ((__half *)a.kc)[base + i] = __float2half_rn(kr[i]);
                    ((__half *)a.vc)[base + i] = __float2half_rn(vr[i]);
                } else {
                    ((float *)a.kc)[base + i] = kr[i];
                    ((float *)a.vc)[base + i] = vr[i];
                }
            }
            __syncthreads(); /* the block's cache writes are visible to its own loads below */
        }
        qsrc = so;
        qoff = 0;
    }
    float qr[GM][EPL];
#pragma unroll
    for (int h = 0; h < GM; h++) {
        const float *qh = qsrc + (qoff + h) * hd;
#pragma unroll
        for (int cl = 0; cl < CPL; cl++) {
            const int c = cl * T + ti;
            const bool ok = h < gb && c < nch;
#pragma unroll
            for (int e = 0; e < VE; e++) qr[h][cl * VE + e] = ok ? qh[c * VE + e] : 0.0f;
        }
    }
    if (qk.k) __syncthreads(); /* so is free again (the merge reuses it) */
    float m[GM], l[GM], acc[GM][EPL];
#pragma unroll
    for (int h = 0; h < GM; h++) {
        m[h] = -INFINITY;
        l[h] = 0.0f;
#pragma unroll
        for (int j = 0; j < EPL; j++) acc[h][j] = 0.0f;
    }

    const int kw1 = min(kw0 + KW, pos + 1);
    for (int k0 = kw0; k0 < kw1; k0 += KPW * KB) { /* warp-uniform bounds */
        uint4 kr[KB][CPL], vr[KB][CPL];
        bool ok[KB];
#pragma unroll
        for (int kb = 0; kb < KB; kb++) {
            const int p = k0 + kb * KPW + gi; /* same for the T lanes of a group */
            ok[kb] = p < kw1;
            int64_t off = -1;
            if (ok[kb]) {
                const int rel = p - kbase; /* p >= kbase */
                if (rel < a.bs) { /* the first page: no division, one multiply */
                    if (blk0 >= 0) off = base0 + rel * pstr;
                } else { /* past it (bs < KW) */
                    const int blk = bt[p / a.bs];
                    if (blk >= 0) off = (((int64_t)blk * a.bs + p % a.bs) * a.nkv + g) * rowb;
                }
            }
#pragma unroll
            for (int cl = 0; cl < CPL; cl++) {
                const int c = cl * T + ti;
                kr[kb][cl] = make_uint4(0, 0, 0, 0);
                vr[kb][cl] = make_uint4(0, 0, 0, 0);
                if (off >= 0 && c < nch) {
                    kr[kb][cl] = *(const uint4 *)(kc + off + c * 16);
                    vr[kb][cl] = *(const uint4 *)(vc + off + c * 16);
                }
            }
        }
        /* partial dots over the lane's elements, then over the group's lanes */
        float s[KB][GM];
#pragma unroll
        for (int kb = 0; kb < KB; kb++)
#pragma unroll
            for (int h = 0; h < GM; h++) s[kb][h] = 0.0f;
#pragma unroll
        for (int kb = 0; kb < KB; kb++)
#pragma unroll
            for (int cl = 0; cl < CPL; cl++) {
                float kf[VE];
                dl_wt<DT>::cvt16(kr[kb][cl], kf, nullptr);
#pragma unroll
                for (int h = 0; h < GM; h++)
#pragma unroll
                    for (int e = 0; e < VE; e++) s[kb][h] = fmaf(qr[h][cl * VE + e], kf[e], s[kb][h]);
            }
        for (int o = T >> 1; o > 0; o >>= 1)
#pragma unroll
            for (int kb = 0; kb < KB; kb++)
#pragma unroll
                for (int h = 0; h < GM; h++) s[kb][h] += dl_shfl_xor(s[kb][h], o);
        /* online softmax, max shared by the warp; slot kb = 0 of group 0
         * (position k0 < kw1) is always valid, so the max is finite */
#pragma unroll
        for (int h = 0; h < GM; h++) {
            float bm = -INFINITY;
#pragma unroll
            for (int kb = 0; kb < KB; kb++) {
                s[kb][h] = ok[kb] ? s[kb][h] * c2 : -INFINITY;
                bm = fmaxf(bm, s[kb][h]);
            }
            for (int o = T; o < DL_WARP; o <<= 1) bm = fmaxf(bm, dl_shfl_xor(bm, o));
            const float mn = fmaxf(m[h], bm);
            const float corr = exp2f(m[h] - mn); /* m = -inf on the first batch: 0 */
            m[h] = mn;
            float ps = 0.0f;
#pragma unroll
            for (int kb = 0; kb < KB; kb++) {
                s[kb][h] = exp2f(s[kb][h] - mn); /* masked slot: exp2(-inf) = 0 */
                ps += s[kb][h];
            }
            l[h] = fmaf(l[h], corr, ps);
#pragma unroll
            for (int j = 0; j < EPL; j++) acc[h][j] *= corr;
        }
#pragma unroll
        for (int kb = 0; kb < KB; kb++)
#pragma unroll
            for (int cl = 0; cl < CPL; cl++) {
                float vf[VE];
                dl_wt<DT>::cvt16(vr[kb][cl], vf, nullptr);
#pragma unroll
                for (int h = 0; h < GM; h++)
#pragma unroll
                    for (int e = 0; e < VE; e++) acc[h][cl * VE + e] = fmaf(s[kb][h], vf[e], acc[h][cl * VE + e]);
            }
    }
    /* sum the KPW key groups of the warp (same max): fixed butterfly */
    for (int o = T; o < DL_WARP; o <<= 1)
#pragma unroll
        for (int h = 0; h < GM; h++) {
            l[h] += dl_shfl_xor(l[h], o);
#pragma unroll
            for (int j = 0; j < EPL; j++) acc[h][j] += dl_shfl_xor(acc[h][j], o);
        }
    if (gi == 0) {
#pragma unroll
        for (int h = 0; h < GM; h++) {
            if (h >= gb) continue;
#pragma unroll
            for (int cl = 0; cl < CPL; cl++) {
                const int c = cl * T + ti;
                if (c < nch)
#pragma unroll
                    for (int e = 0; e < VE; e++) so[w * DA_SO + h * hd + c * VE + e] = acc[h][cl * VE + e];
            }
            if (ti == 0) {
                sm[w * GM + h] = m[h];
                sl[w * GM + h] = l[h];
            }
        }
    }
    __syncthreads();
    /* blocks of this token that write (p0 <= pos); one: direct write. pos
     * is re-read here so that it does not hold a register through the loop */
    const int nact = min((__ldg(a.pos + t) >> ssh) + 1, nseg);
    const bool direct = nseg == 1 || (cnt && nact == 1);
    /* cluster merge: this segment's partial goes into rank 0's da_clb
     * (segment slot seg: gb * hd outputs, then the (M, L) pairs after all
     * ncl slots) */
    const unsigned clb = ncl ? da_cl_map(da_clb, 0) : 0u;
    const int cls = gb * hd;
    /* merge the warps in warp order; warp 0 always has keys (p0 <= pos) */
    for (int i = threadIdx.x; i < gb * hd; i += blockDim.x) {
        const int h = (int)__umulhi((unsigned)i, ix.hdm), d = i - h * hd;
        float M = sm[h];
#pragma unroll
        for (int u = 1; u < DA_NW; u++) M = fmaxf(M, sm[u * GM + h]);
        float L = 0.0f, O = 0.0f;
#pragma unroll
        for (int u = 0; u < DA_NW; u++) {
            const float mu = sm[u * GM + h];
            const float f = mu == M ? 1.0f : exp2f(mu - M); /* empty warp: m = -inf -> 0 */
            L = fmaf(sl[u * GM + h], f, L);
            O = fmaf(so[u * DA_SO + i], f, O);
        }
        const int64_t vec = (int64_t)t * a.nh + h0 + h;
        if (direct) {
            out[vec * hd + d] = da_final(O, L);
        } else if (ncl) {
            da_cl_st(clb + 4u * (unsigned)(seg * cls + i), O);
            if (d == 0) {
                const unsigned ml = clb + 4u * (unsigned)(ncl * cls + (seg * gb + h) * 2);
                da_cl_st(ml, M);
                da_cl_st(ml + 4u, L);
            }
        } else {
            const int64_t r = vec * nseg + seg;
            wo[r * hd + d] = O;
            if (d == 0) {
                wml[2 * r] = M;
                wml[2 * r + 1] = L;
            }
        }
    }
    if (ncl && !direct) {
        /* every block of the cluster has stored its partial into rank 0
         * (release / acquire at cluster scope); rank 0 (segment 0, which
         * always holds positions) merges them */
        if (cllate && seg != 0) dl_pdl_trigger();
        da_cl_sync();
        if (seg != 0) return;
        if (cllate) dl_pdl_trigger();
        da_merge_cl(out, da_clb, da_clb + ncl * cls, (int64_t)t * a.nh + h0, gb, nact, hd);
        return;
    }
    if (direct || !cnt) return;
    /* fused: publish the partials, count the arrival; the last block merges */
    __threadfence();
    __syncthreads(); /* also: so / sm are free for da_merge */
    unsigned int *c = cnt + (int64_t)t * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) slast = atomicAdd(c, 1u) == (unsigned int)(nact - 1);
    __syncthreads();
    if (!slast) return;
    __threadfence(); /* acquire: the other blocks' partials */
    if (threadIdx.x == 0) *c = 0; /* every block of the group has counted */
    da_merge<DA_EU, false>(out, wml, wo, (int64_t)t * a.nh + h0, gb, nact, nseg, hd, so, so + gb * DC_T, sm);
}

/* out[vec] = sum_s O_s 2^(m_s - M) / sum_s L_s 2^(m_s - M) over the row's
 * segments s < pos / SEG + 1 (da_merge, which documents the order). One
 * block per (token, head); the reference for the fused merge in
 * dl_k_attn_dec (same function, same bits). */
template <int MODE> /* 0: da_merge's first form, 1: its wide form, 2: da_merge_rt (nseg <= DC_T) */
__global__ void __launch_bounds__(DC_T)
    dl_k_attn_combine(float *__restrict__ out, const float *__restrict__ wml, const float *__restrict__ wo,
                      gk_attn a, int nseg) {
    if (!a.ipre) dl_pdl_enter();
    __shared__ float sw[DC_T], sacc[DC_T], sl[DC_T], sml[2 * DC_T / DL_WARP + 2];
    const int64_t vec = blockIdx.x;
    const int t = (int)(vec / a.nh);
    const int n = min((a.pos[t] >> da_rsh(a.segl, a.pos[t])) + 1, nseg);
    if (a.ipre) dl_pdl_enter_after((uint32_t)n, (uint32_t *)out); /* pos: uploaded before the forward */
    if constexpr (MODE == 2) da_merge_rt(out, wml, wo, vec, n, nseg, a.hd, sw, sl, sacc, sml);
    else da_merge<1, MODE == 1>(out, wml, wo, vec, 1, n, nseg, a.hd, sw, sacc, sml);
}

/* ------------------------------------------------------------------------
 * Host side
 * ---------------------------------------------------------------------- */

extern "C" int gk_attn_ok(int hd) { return hd > 0 && hd <= AT_MAXD && hd % 2 == 0; }

/* Split-kernel configuration for a: lanes per key 2^lt, 16-byte vectors
 * per lane cpl, query heads per block gb (a divisor of G), register slots
 * gm >= gb. Returns 0 when the shape cannot take 16-byte K/V loads. */
typedef struct {
    int lt, cpl, gb, gm;
    int gfull; /* the group's full head chunk (gb without the rule or the cap) */
} da_cfg;

/* Cap on the query heads per split block (gk_attn_gb_set; 0: by the rule
 * in da_pick). */
static int g_da_gbmax = 0;
extern "C" void gk_attn_gb_set(int n) { g_da_gbmax = n > 0 ? n : 0; }
static int g_da_seg = GK_ATTN_SEG;
extern "C" int gk_attn_seg_ok(int n) { return n == GK_ATTN_SEG_BYPOS || n == 32 || n == 64; }
extern "C" void gk_attn_seg_set(int n) { g_da_seg = gk_attn_seg_ok(n) ? n : GK_ATTN_SEG; }
extern "C" int gk_attn_seg_get(void) { return g_da_seg; }
extern "C" int gk_attn_row_seg(int segl, int pos) { return 1 << da_rsh(segl, pos); }
/* Segments of the longest row a grid sized by maxlen can hold: every row
 * position p < maxlen has (p + 1) / seg(p) rounded up of them; by
 * position that is maxlen / 32 up to GK_ATTN_SEG_LONG, then the larger of
 * GK_ATTN_SEG_LONG / 32 and maxlen / 64. */
static_assert(GK_ATTN_SEG_LONG % 32 == 0, "gk_attn_nseg counts whole 32-position segments below the switch");
extern "C" int gk_attn_nseg(int segl, int maxlen) {
    if (maxlen <= 0) return 1;
    if (segl) return (int)DL_CDIV(maxlen, segl);
    if (maxlen <= GK_ATTN_SEG_LONG) return (int)DL_CDIV(maxlen, 32);
    const int a = GK_ATTN_SEG_LONG / 32, b = (int)DL_CDIV(maxlen, 64);
    return a > b ? a : b;
}
extern "C" int gk_attn_gb_get(void) { return g_da_gbmax; }
static unsigned long long g_da_narrow_n; /* launches with gb < gfull */
extern "C" unsigned long long gk_attn_narrow_launches(void) { return g_da_narrow_n; }

/* Multiprocessors the backend's kernels may use (gpurt_sm_count; 80 if
 * unknown: only the heads-per-block rule uses it). */
static int da_sms(void) {
    const int v = gpurt_sm_count();
    return v > 0 ? v : 80;
}

static int da_pick(const gk_attn *a, da_cfg *c, bool rule = true) {
    const int es = a->kv_f16 ? 2 : 4, ve = 16 / es;
    if (!gk_attn_seg_ok(a->segl)) return 0;
    if (!gk_attn_ok(a->hd) || a->nkv <= 0 || a->nh % a->nkv || (a->hd * es) % 16) return 0;
    if ((((uintptr_t)a->kc) | ((uintptr_t)a->vc)) & 15) return 0;
    const int nch = a->hd / ve; /* f16: <= 32, f32: <= 64 */
    int lt = 0;
    while ((1 << lt) < nch && (1 << lt) < DA_TMAX) lt++;
    const int per = DL_CDIV(nch, 1 << lt);
    c->lt = lt;
    c->cpl = per <= 1 ? 1 : per <= 2 ? 2 : 4;
    const int epl = c->cpl * ve, gmax = epl >= 16 ? 4 : 8; /* GM * EPL <= 64 registers each */
    const int G = a->nh / a->nkv;
    int gb = G < gmax ? G : gmax;
    while (G % gb) gb--;
    c->gfull = gb;
    /* the register slots of gb heads (a power of two), and the keys per
     * lane per batch they give; the batch sets the online softmax's steps,
     * so a smaller gb is taken only where it keeps the same kb */
    auto slots = [](int n) { int m = 1; while (m < n) m *= 2; return m; };
    const int kb = da_kb(slots(gb), c->cpl, epl);
    int want = gb;
    if (g_da_gbmax > 0) {
        want = g_da_gbmax;
    } else if (rule && a->gbrule && gk_attn_nseg(a->segl, a->maxlen) > 1) {
        /* Heads per block by the expected number of working blocks: a
         * block's warps run its heads one after another on their keys, so
         * with few blocks (short contexts) every SM holds one or two and
         * their serial arithmetic is the critical path, while many blocks
         * (long contexts) queue in waves and re-read each K/V row once per
         * head chunk. maxlen is an upper bound (graph recordings round it
         * up to a power of two), so about 3/4 of the grid's segments hold
         * positions. Largest gb whose grid keeps >= 8 working blocks per
         * SM, else 1 (H200, Qwen3-8B fp8 decode: after 512 positions gb =
         * 1 gave 281.5 / 278.1 tok/s, 2: 273.5 / 275.3, 4: 261.2 / 261.6;
         * after 4096, 2: 242.2, 4: 235.3, 1: 225.6). */
        const int64_t segs = (3 * (int64_t)gk_attn_nseg(a->segl, a->maxlen) + 3) / 4;
        const int64_t need = 8 * (int64_t)da_sms();
        while (want > 1 && segs * a->ntok * a->nkv * DL_CDIV(G, want) < need) want--;
    }
    /* the largest divisor of G <= want with the same kb (gb itself at worst) */
    for (int n = want < gb ? want : gb; n >= 1; n--)
        if (G % n == 0 && da_kb(slots(n), c->cpl, epl) == kb) {
            gb = n;
            break;
        }
    c->gb = gb;
    c->gm = slots(gb);
    return 1;
}

static int da_nseg(const gk_attn *a) { return gk_attn_nseg(a->segl, a->maxlen); }

extern "C" int gk_attn_split_ok(const gk_attn *a) {
    da_cfg c;
    return da_pick(a, &c);
}

/* nseg > 1: GK_ATTN_NCNT arrival counters at offset 0 (fixed, so a smaller
 * later launch never finds a counter where partials were), then wml
 * [ntok * nh * nseg * 2] and wo [ntok * nh * nseg * hd] floats. */
#define DA_CNT_BYTES ((size_t)GK_ATTN_NCNT * sizeof(unsigned int))

extern "C" size_t gk_attn_split_ws(const gk_attn *a) {
    const int nseg = da_nseg(a);
    if (nseg <= 1) return 0;
    return DA_CNT_BYTES + (size_t)a->ntok * a->nh * nseg * (a->hd + 2) * sizeof(float);
}

/* ws: the partials (wml then wo; NULL when nseg == 1); cnt: the arrival
 * counters (NULL: not fused); ncl > 0: a cluster launch of ncl = nseg
 * segment blocks (the cluster merge; returns false, nothing launched,
 * where that kernel's cluster does not fit: the caller falls back). */
template <int KF16, int CPL, int GM>
static bool da_launch(cudaStream_t st, float *out, const float *q, const gk_attn *a, const da_cfg *c, int nseg,
                      float *ws, unsigned int *cnt, const da_qk &qk, int ncl) {
    const int G = a->nh / a->nkv;
    dim3 grid((unsigned)nseg, (unsigned)(a->nkv * (G / c->gb)), (unsigned)a->ntok);
    float *wml = ws, *wo = ws ? ws + (size_t)a->ntok * a->nh * nseg * 2 : nullptr;
    auto k = dl_k_attn_dec<KF16, CPL, GM>;
    da_ix ix;
    ix.G = G;
    ix.nhc = G / c->gb;
    ix.nhsh = da_log2(ix.nhc);
    ix.bsh = da_log2(a->bs);
    ix.hdm = (unsigned)(((1ull << 32) + (unsigned)a->hd - 1) / (unsigned)a->hd);
    if (ncl) {
        /* rank 0's partial slots: ncl x (gb * hd outputs + gb (m, l) pairs) */
        const size_t sm = (size_t)ncl * (c->gb * a->hd + 2 * c->gb) * sizeof(float);
        /* per instance, cluster size and KB of slots (checked at the bucket's
         * top, so a size that passes fits): 0 unknown, 1 fits, -1 not */
        static signed char fits[GK_ATTN_CL_MAXSEG + 1][DA_CL_MAXF * 4 / 1024 + 1];
        const size_t kb = DL_CDIV(sm, 1024);
        signed char &f = fits[ncl][kb];
        if (!f) f = dl_cluster_ok(k, (unsigned)ncl, dim3(DA_NW * DL_WARP), kb * 1024) ? 1 : -1;
        return f > 0 && dl_launch_cluster(k, grid, dim3(DA_NW * DL_WARP), sm, st, (unsigned)ncl, out, wml, wo, cnt, q,
                                          *a, c->lt, c->gb, nseg, a->scale * DA_LOG2E, qk, ncl, a->cllate, ix);
    }
    dl_launch(k, grid, DA_NW * DL_WARP, 0, st, out, wml, wo, cnt, q, *a, c->lt, c->gb, nseg, a->scale * DA_LOG2E, qk,
              0, 0, ix);
    return true;
}

/* GM * EPL <= 64: GM = 8 only where EPL <= 8. */
template <int KF16, int CPL>
static bool da_launch_gm(cudaStream_t st, float *out, const float *q, const gk_attn *a, const da_cfg *c, int nseg,
                         float *ws, unsigned int *cnt, const da_qk &qk, int ncl) {
    constexpr int EPL = CPL * (KF16 ? 8 : 4);
    switch (c->gm) {
    case 1: return da_launch<KF16, CPL, 1>(st, out, q, a, c, nseg, ws, cnt, qk, ncl);
    case 2: return da_launch<KF16, CPL, 2>(st, out, q, a, c, nseg, ws, cnt, qk, ncl);
    case 4: return da_launch<KF16, CPL, 4>(st, out, q, a, c, nseg, ws, cnt, qk, ncl);
    default:
        if constexpr (EPL <= 8) return da_launch<KF16, CPL, 8>(st, out, q, a, c, nseg, ws, cnt, qk, ncl);
        return true;
    }
}

/* The split kernel instance of cfg c (KV dtype, vectors per lane, head
 * slots), launched as da_launch. */
static bool da_launch_cfg(cudaStream_t st, float *out, const float *q, const gk_attn *a, const da_cfg &c, int nseg,
                          float *ws, unsigned int *cnt, const da_qk &qk, int ncl) {
    if (a->kv_f16) {
        if (c.cpl == 1) return da_launch_gm<1, 1>(st, out, q, a, &c, nseg, ws, cnt, qk, ncl);
        return da_launch_gm<1, 2>(st, out, q, a, &c, nseg, ws, cnt, qk, ncl);
    }
    if (c.cpl == 1) return da_launch_gm<0, 1>(st, out, q, a, &c, nseg, ws, cnt, qk, ncl);
    if (c.cpl == 2) return da_launch_gm<0, 2>(st, out, q, a, &c, nseg, ws, cnt, qk, ncl);
    return da_launch_gm<0, 4>(st, out, q, a, &c, nseg, ws, cnt, qk, ncl);
}

extern "C" int gk_attn_cluster_avail(void) {
    static int avail = -1;
    if (avail < 0) {
        avail = dl_cluster_ok(dl_k_attn_dec<1, 1, 1>, 2u, dim3(DA_NW * DL_WARP), 0);
    }
    return avail;
}

static void tiled_launch(cudaStream_t st, float *out, const float *q, const gk_attn *a) {
    static bool attr_set[2];
    const size_t sm = at_smem(a->hd);
    const int G = a->nh / a->nkv, es = a->kv_f16 ? 2 : 4;
    const int vec = (a->hd * es) % 16 == 0 && ((((uintptr_t)a->kc) | ((uintptr_t)a->vc)) & 15) == 0;
    dim3 grid((unsigned)DL_CDIV((int64_t)a->ntok * G, AT_QV), (unsigned)a->nkv);
    dim3 block(AT_WARPS * DL_WARP);
    if (a->kv_f16) {
        if (!attr_set[1]) {
            (void)cudaFuncSetAttribute((const void *)dl_k_attn<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
            attr_set[1] = true;
        }
        dl_launch(dl_k_attn<1>, grid, block, sm, st, out, q, *a, at_ck(a->hd), vec);
    } else {
        if (!attr_set[0]) {
            (void)cudaFuncSetAttribute((const void *)dl_k_attn<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
            attr_set[0] = true;
        }
        dl_launch(dl_k_attn<0>, grid, block, sm, st, out, q, *a, at_ck(a->hd), vec);
    }
}

extern "C" void gk_attn_tiled(void *s, float *out, const float *q, const gk_attn *a) {
    if (a->ntok <= 0) return;
    tiled_launch((cudaStream_t)s, out, q, a);
}

/* The combine over nseg segments (gpu_kernels.h): the one-round-trip form
 * where crt allows it (set only where nseg <= DC_T; the test is a guard for
 * callers), else the wide or the first form. */
extern "C" void gk_attn_combine(void *s, float *out, const float *w, const gk_attn *a, int nseg) {
    dl_launch(a->crt && nseg <= DC_T ? dl_k_attn_combine<2> : a->cwide ? dl_k_attn_combine<1> : dl_k_attn_combine<0>,
              (unsigned)((int64_t)a->ntok * a->nh), DC_T, 0, (cudaStream_t)s, out, w,
              w + (size_t)a->ntok * a->nh * nseg * 2, *a, nseg);
}

/* Split-KV decode: segments of a->segl positions, grid sized by
 * a->maxlen (any value >= the batch's max pos + 1 gives the same results);
 * one segment for every row (maxlen <= SEG): the block writes the output
 * directly; else, with a->fuse (and at most GK_ATTN_NCNT (token, KV head x
 * head chunk) groups), the last block of each group merges; else with
 * a->clu and 2..GK_ATTN_CL_MAXSEG segments, the group's blocks form a
 * cluster whose block 0 merges (where the cluster fits the device); else
 * partials to ws and the combine kernel. Every form gives the same bits.
 * Shapes da_pick refuses (K/V rows not 16-byte vectors) run the tiled
 * kernel. */
/* The split launch (cfg c from da_pick) with the qk prologue qk (qk.k
 * NULL: none); returns 1 when the fused merge ran, 2 when the cluster
 * merge did, else 0. */
static int da_split(cudaStream_t st, float *out, const float *q, const gk_attn *a, const da_cfg &c, void *ws,
                    const da_qk &qk) {
    const int nseg = da_nseg(a);
    const int64_t ngrp = (int64_t)a->ntok * a->nkv * (a->nh / a->nkv / c.gb);
    const int fused = nseg > 1 && a->fuse && ngrp <= GK_ATTN_NCNT;
    float *w = nseg > 1 ? (float *)((char *)ws + DA_CNT_BYTES) : nullptr;
    unsigned int *cnt = fused ? (unsigned int *)ws : nullptr;
    if (c.gb < c.gfull) g_da_narrow_n++;
    /* the cluster merge: one cluster of nseg blocks per (token, KV head x
     * head chunk), rank 0's partial slots within DA_CL_MAXF floats */
    if (!fused && a->clu && nseg > 1 && nseg <= GK_ATTN_CL_MAXSEG &&
        (int64_t)nseg * (c.gb * a->hd + 2 * c.gb) <= DA_CL_MAXF &&
        da_launch_cfg(st, out, q, a, c, nseg, w, nullptr, qk, nseg))
        return 2;
    (void)da_launch_cfg(st, out, q, a, c, nseg, w, cnt, qk, 0);
    if (nseg > 1 && !fused && !a->diag_nocombine)
        gk_attn_combine(st, out, w, a, nseg);
    return fused;
}

extern "C" int gk_attn_split(void *s, float *out, const float *q, const gk_attn *a, void *ws) {
    if (a->ntok <= 0) return 0;
    cudaStream_t st = (cudaStream_t)s;
    da_cfg c;
    if (!da_pick(a, &c)) {
        tiled_launch(st, out, q, a);
        return 0;
    }
    da_qk none;
    memset(&none, 0, sizeof none);
    return da_split(st, out, q, a, c, ws, none);
}

/* da_pick for the qk prologue: also one head chunk per KV head and a
 * shape and rope it takes (see gk_attn_split_qk_ok). */
static int da_pick_qk(const gk_attn *a, const gk_attn_qk *qk, da_cfg *c) {
    return da_pick(a, c, false) && a->nh / a->nkv == c->gb && a->ntok <= GK_ATTN_QK_MAXTOK && qk->rot % 2 == 0 &&
           qk->rot <= a->hd && qk->k && qk->v && !qk->qw == !qk->kw;
}

extern "C" int gk_attn_split_qk_ok(const gk_attn *a, const gk_attn_qk *qk) {
    da_cfg c;
    return da_pick_qk(a, qk, &c);
}

extern "C" int gk_attn_split_qk(void *s, float *out, const float *q, const gk_attn *a, const gk_attn_qk *qk,
                                void *ws) {
    if (a->ntok <= 0) return 0;
    da_cfg c;
    if (!da_pick_qk(a, qk, &c)) return -1;
    da_qk d;
    memset(&d, 0, sizeof d);
    d.k = qk->k;
    d.v = qk->v;
    d.qw = qk->qw;
    d.kw = qk->kw;
    d.wdt = qk->wdt;
    d.zc = qk->zc;
    d.half = qk->rot / 2;
    d.eps = qk->eps;
    rope_fill_freq(&d.fr, qk->inv_freq, d.half);
    return da_split((cudaStream_t)s, out, q, a, c, ws, d);
}
