/* Causal GQA attention over the paged KV cache (fp16 or fp32 KV, fp32
 * softmax). One kernel serves both modes:
 *
 *  - tiled (prefill): a block takes QV consecutive (token, head-in-group)
 *    query vectors of one KV head, stages CK keys/values at a time in shared
 *    memory (widened to fp32) and reuses them for all its queries; rows of
 *    different sequences in one block are handled in separate passes.
 *  - split (decode): a block takes the query heads of one token that share a
 *    KV head, and one of GK_ATTN_NSEG fixed segments of that token's
 *    [0, pos]; a combine kernel merges the segments in segment order.
 *
 * Inside a warp: lane c scores key c of the chunk (sequential dot product
 * over head_dim), online softmax per query row, and each lane accumulates
 * the output dims lane, lane + WARP, ... over the chunk's keys in key order.
 * Chunk boundaries are multiples of CK from position 0 (tiled) or from the
 * segment start, so a row's result depends only on its own position and
 * sequence, never on the rest of the block or batch. */
#include <math.h>

#include "gpu_common.cuh"

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

template <int KF16>
__global__ void __launch_bounds__(AT_WARPS *DL_WARP)
    dl_k_attn(float *__restrict__ out, const float *__restrict__ q, gk_attn a, int qv, int nseg,
              float *__restrict__ part, int ck) {
    extern __shared__ float smem[];
    const int hd = a.hd, G = a.nh / a.nkv, g = blockIdx.y, seg = blockIdx.z;
    float *sq = smem;                       /* [AT_QV][hd] */
    float *sk = sq + AT_QV * hd;            /* [ck][hd + 1] */
    float *sv = sk + ck * (hd + 1);         /* [ck][hd] */
    __shared__ int rt[AT_QV], rpos[AT_QV], rseq[AT_QV], rh[AT_QV];
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    const int64_t v0 = (int64_t)blockIdx.x * qv, nvec = (int64_t)a.ntok * G;

    for (int i = threadIdx.x; i < AT_QV; i += blockDim.x) {
        int64_t v = v0 + i;
        bool ok = i < qv && v < nvec;
        int t = ok ? (int)(v / G) : 0;
        rt[i] = t;
        rh[i] = g * G + (int)(v % G);
        rpos[i] = ok ? a.pos[t] : -1;
        rseq[i] = ok ? a.seq[t] : -1;
    }
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
        const int S = rseq[i0];
        if (S < 0) continue;
        bool first = true;
        for (int i = 0; i < i0; i++)
            if (rseq[i] == S) first = false;
        if (!first) continue;
        int hi = 0;
        for (int i = i0; i < qv; i++)
            if (rseq[i] == S && rpos[i] + 1 > hi) hi = rpos[i] + 1;
        int lo = 0;
        if (nseg > 1) { /* all rows of the block are one token: same pos */
            int sl = DL_CDIV(DL_CDIV(hi, nseg), ck) * ck;
            lo = seg * sl;
            hi = min(hi, lo + sl);
        }
        for (int c0 = lo; c0 < hi; c0 += ck) {
            __syncthreads();
            const int nc = min(ck, hi - c0);
            for (int e = threadIdx.x; e < ck * hd; e += blockDim.x) {
                const int c = e / hd, d = e % hd;
                float kvv = 0.0f, vvv = 0.0f;
                if (c < nc) {
                    const int p = c0 + c;
                    const int blk = a.btab[(int64_t)S * a.mbps + p / a.bs];
                    if (blk >= 0) {
                        const int64_t idx = ((int64_t)blk * a.bs + p % a.bs) * width + (int64_t)g * hd + d;
                        kvv = kv_ld<KF16>(a.kc, idx);
                        vvv = kv_ld<KF16>(a.vc, idx);
                    }
                }
                sk[c * (hd + 1) + d] = kvv;
                sv[c * hd + d] = vvv;
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
        const int64_t vec = (int64_t)rt[i] * a.nh + rh[i];
        if (!part) {
            const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
            for (int j = 0; j < AT_DPL; j++) {
                const int d = lane + j * DL_WARP;
                if (d < hd) out[vec * hd + d] = o[r][j] * inv;
            }
        } else {
            float *po = part + (vec * nseg + seg) * (hd + 2);
#pragma unroll
            for (int j = 0; j < AT_DPL; j++) {
                const int d = lane + j * DL_WARP;
                if (d < hd) po[2 + d] = o[r][j];
            }
            if (lane == 0) {
                po[0] = m[r];
                po[1] = l[r];
            }
        }
    }
}

/* out[vec] = sum_s o_s e^(m_s - M) / sum_s l_s e^(m_s - M), segments in order. */
__global__ void dl_k_attn_combine(float *__restrict__ out, const float *__restrict__ part, int nseg, int hd) {
    const int64_t vec = blockIdx.x;
    const float *pv = part + vec * nseg * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < nseg; s++) M = fmaxf(M, pv[s * (hd + 2)]);
    float L = 0.0f;
    for (int s = 0; s < nseg; s++) {
        const float ms = pv[s * (hd + 2)];
        if (ms != -INFINITY) L += pv[s * (hd + 2) + 1] * expf(ms - M);
    }
    const float inv = L > 0.0f ? 1.0f / L : 0.0f;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s < nseg; s++) {
            const float ms = pv[s * (hd + 2)];
            if (ms != -INFINITY) acc = fmaf(pv[s * (hd + 2) + 2 + d], expf(ms - M), acc);
        }
        out[vec * hd + d] = acc * inv;
    }
}

extern "C" int gk_attn_ok(int hd) { return hd > 0 && hd <= AT_MAXD && hd % 2 == 0; }

extern "C" size_t gk_attn_split_ws(const gk_attn *a) {
    return (size_t)a->ntok * a->nh * GK_ATTN_NSEG * (a->hd + 2) * sizeof(float);
}

static void launch(cudaStream_t st, float *out, const float *q, const gk_attn *a, int qv, int nseg, float *part) {
    static bool attr_set[2];
    const size_t sm = at_smem(a->hd);
    const int G = a->nh / a->nkv;
    dim3 grid((unsigned)DL_CDIV((int64_t)a->ntok * G, qv), (unsigned)a->nkv, (unsigned)nseg);
    dim3 block(AT_WARPS * DL_WARP);
    if (a->kv_f16) {
        if (!attr_set[1]) {
            (void)cudaFuncSetAttribute((const void *)dl_k_attn<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
            attr_set[1] = true;
        }
        dl_k_attn<1><<<grid, block, sm, st>>>(out, q, *a, qv, nseg, part, at_ck(a->hd));
    } else {
        if (!attr_set[0]) {
            (void)cudaFuncSetAttribute((const void *)dl_k_attn<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
            attr_set[0] = true;
        }
        dl_k_attn<0><<<grid, block, sm, st>>>(out, q, *a, qv, nseg, part, at_ck(a->hd));
    }
}

extern "C" void gk_attn_tiled(void *s, float *out, const float *q, const gk_attn *a) {
    if (a->ntok <= 0) return;
    launch((cudaStream_t)s, out, q, a, AT_QV, 1, nullptr);
}

extern "C" void gk_attn_split(void *s, float *out, const float *q, const gk_attn *a, void *ws) {
    if (a->ntok <= 0) return;
    const int G = a->nh / a->nkv;
    int qv = AT_QV;
    while (G % qv) qv--; /* blocks never straddle two tokens */
    launch((cudaStream_t)s, out, q, a, qv, GK_ATTN_NSEG, (float *)ws);
    dl_k_attn_combine<<<(unsigned)((int64_t)a->ntok * a->nh), 128, 0, (cudaStream_t)s>>>(out, (const float *)ws,
                                                                                      GK_ATTN_NSEG, a->hd);
}
