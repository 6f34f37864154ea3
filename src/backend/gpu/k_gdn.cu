/* Gated DeltaNet kernels: depthwise causal conv1d + SiLU with per-slot
 * state, row l2 norm, the beta / g gates, gated RMSNorm, and the gated delta
 * rule (token-by-token recurrence, state resident in registers for a
 * sequence's whole run in the batch). Every output is produced by one fixed
 * order of operations (per-lane strided sums, then a butterfly), so results
 * are reproducible run to run; no atomics. fp32 throughout. */
#include "gpu_common.cuh"
#include "gpu_gdn.h"

#define GDN_T 128 /* threads per block of the row / elementwise kernels */

static __device__ __forceinline__ float gdn_silu(float x) { return x / (1.0f + expf(-x)); }
static __device__ __forceinline__ float gdn_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ---------------- conv1d + SiLU ----------------
 * State layout [slot, K-1, C]: entry j of a slot holds the input K-1-j steps
 * before the slot's next token (j = K-2 is the most recent). */

/* Input `dist` (>= 1) steps before batch row t in its sequence: walks the
 * in-batch chain of previous rows, then falls back to the slot's state
 * (as it was before this batch), or to zero past a position-0 row. */
static __device__ __forceinline__ float conv_in(const float *__restrict__ x, const float *state,
                                                const gk_gdn_batch &b, int t, int dist, int c, int C,
                                                int K1) {
    int u = t;
    for (int m = 0; m < dist; m++) {
        const int p = b.prev[u];
        if (p < 0) {
            if (b.pos[u] == 0) return 0.0f;
            return state[((size_t)b.seq[u] * K1 + (K1 - (dist - m))) * C + c];
        }
        u = p;
    }
    return x[(size_t)u * C + c];
}

/* y[t, c] = silu(w[c, K-1] x[t, c] + sum_j w[c, j] * input(K-1-j steps back)).
 * grid (ntok, C / GDN_T); reads the state only. */
__global__ void __launch_bounds__(GDN_T)
    dl_k_gdn_conv(float *__restrict__ y, const float *__restrict__ x, const void *__restrict__ w, int wdt,
                  int64_t wld, int K, const float *state, int C, gk_gdn_batch b) {
    const int t = blockIdx.x, c = blockIdx.y * GDN_T + threadIdx.x;
    if (c >= C) return;
    const int K1 = K - 1;
    const int64_t wr = (int64_t)c * wld;
    float acc = dl_load_elem(w, wdt, wr + K1) * x[(size_t)t * C + c];
    for (int j = 0; j < K1; j++) acc += dl_load_elem(w, wdt, wr + j) * conv_in(x, state, b, t, K1 - j, c, C, K1);
    y[(size_t)t * C + c] = gdn_silu(acc);
}

/* New state of each slot in the batch: the last K-1 inputs up to its last
 * row. grid (ngrp, C / GDN_T); one thread owns one (slot, channel) column,
 * reads all it needs before writing. */
__global__ void __launch_bounds__(GDN_T)
    dl_k_gdn_conv_state(const float *__restrict__ x, int K, float *state, int C, gk_gdn_batch b) {
    const int gi = blockIdx.x, c = blockIdx.y * GDN_T + threadIdx.x;
    if (c >= C) return;
    const int K1 = K - 1;
    const int last = b.idx[b.off[gi + 1] - 1];
    float nv[GK_GDN_MAXK];
    for (int j = 0; j < K1; j++) {
        const int dist = K1 - 1 - j;
        nv[j] = dist == 0 ? x[(size_t)last * C + c] : conv_in(x, state, b, last, dist, c, C, K1);
    }
    float *st = state + (size_t)b.slot[gi] * K1 * C + c;
    for (int j = 0; j < K1; j++) st[(size_t)j * C] = nv[j];
}

extern "C" void gk_gdn_conv1d_silu(void *s, float *y, const float *x, const void *w, int wdt, int64_t wld,
                                   int K, float *state, int C, const gk_gdn_batch *b) {
    if (b->ntok <= 0 || C <= 0) return;
    dim3 g1(b->ntok, DL_CDIV(C, GDN_T));
    dl_k_gdn_conv<<<g1, GDN_T, 0, (cudaStream_t)s>>>(y, x, w, wdt, wld, K, state, C, *b);
    if (K > 1) {
        dim3 g2(b->ngrp, DL_CDIV(C, GDN_T));
        dl_k_gdn_conv_state<<<g2, GDN_T, 0, (cudaStream_t)s>>>(x, K, state, C, *b);
    }
}

/* ---------------- row ops: one warp per row ---------------- */

__global__ void __launch_bounds__(GDN_T) dl_k_gdn_l2norm(float *x, int rows, int d, float eps, float scale) {
    const int r = blockIdx.x * (GDN_T / DL_WARP) + threadIdx.x / DL_WARP, lane = threadIdx.x % DL_WARP;
    if (r >= rows) return; /* whole warp leaves together */
    float *xr = x + (size_t)r * d;
    float ss = 0.0f;
    for (int j = lane; j < d; j += DL_WARP) ss = fmaf(xr[j], xr[j], ss);
    ss = dl_warp_sum(ss);
    const float inv = (1.0f / sqrtf(ss + eps)) * scale;
    for (int j = lane; j < d; j += DL_WARP) xr[j] *= inv;
}

extern "C" void gk_gdn_l2norm(void *s, float *x, int rows, int d, float eps, float scale) {
    if (rows <= 0 || d <= 0) return;
    const int rpb = GDN_T / DL_WARP;
    dl_k_gdn_l2norm<<<DL_CDIV(rows, rpb), GDN_T, 0, (cudaStream_t)s>>>(x, rows, d, eps, scale);
}

__global__ void __launch_bounds__(GDN_T)
    dl_k_gdn_grms(float *y, const float *x, const float *__restrict__ z, const void *__restrict__ w, int wdt,
                  int rows, int d, float eps) {
    const int r = blockIdx.x * (GDN_T / DL_WARP) + threadIdx.x / DL_WARP, lane = threadIdx.x % DL_WARP;
    if (r >= rows) return;
    const float *xr = x + (size_t)r * d, *zr = z + (size_t)r * d;
    float *yr = y + (size_t)r * d;
    float ss = 0.0f;
    for (int j = lane; j < d; j += DL_WARP) ss = fmaf(xr[j], xr[j], ss);
    ss = dl_warp_sum(ss);
    const float inv = 1.0f / sqrtf(ss / (float)d + eps);
    /* each lane rewrites only the elements it read: y may alias x */
    for (int j = lane; j < d; j += DL_WARP) yr[j] = xr[j] * inv * dl_load_elem(w, wdt, j) * gdn_silu(zr[j]);
}

extern "C" void gk_gdn_gated_rmsnorm(void *s, float *y, const float *x, const float *z, const void *w, int wdt,
                                     int rows, int d, float eps) {
    if (rows <= 0 || d <= 0) return;
    const int rpb = GDN_T / DL_WARP;
    dl_k_gdn_grms<<<DL_CDIV(rows, rpb), GDN_T, 0, (cudaStream_t)s>>>(y, x, z, w, wdt, rows, d, eps);
}

/* ---------------- gates ---------------- */

__global__ void __launch_bounds__(GDN_T)
    dl_k_gdn_gates(float *g, float *beta, const float *__restrict__ a, const float *__restrict__ bb,
                   const void *__restrict__ A_log, int adt, const void *__restrict__ dt_bias, int bdt, size_t n,
                   int Hv) {
    const size_t i = (size_t)blockIdx.x * GDN_T + threadIdx.x;
    if (i >= n) return;
    const int h = (int)(i % (size_t)Hv);
    const float A = expf(dl_load_elem(A_log, adt, h));
    const float x = a[i] + dl_load_elem(dt_bias, bdt, h);
    const float sp = x > 20.0f ? x : log1pf(expf(x)); /* torch softplus, threshold 20 */
    g[i] = -A * sp;
    beta[i] = gdn_sigmoid(bb[i]);
}

extern "C" void gk_gdn_gates(void *s, float *g, float *beta, const float *a, const float *b, const void *A_log,
                             int adt, const void *dt_bias, int bdt, int ntok, int Hv) {
    const size_t n = (size_t)(ntok > 0 ? ntok : 0) * (size_t)(Hv > 0 ? Hv : 0);
    if (!n) return;
    dl_k_gdn_gates<<<(unsigned)DL_CDIV(n, (size_t)GDN_T), GDN_T, 0, (cudaStream_t)s>>>(g, beta, a, b, A_log, adt,
                                                                                       dt_bias, bdt, n, Hv);
}

/* ---------------- gated delta rule: recurrence ----------------
 * Block = (slot group, value head, tile of GDN_BV value columns). The value
 * columns of the state are independent under the rule, so each warp owns
 * GDN_CPW columns; lane l holds rows l, l + W, ... (R = ceil(Dk / W) rows)
 * of each, in registers for the group's whole run: the state is read once
 * before and written once after the run. The k^T S and q^T S reductions are
 * per-lane sums in row order, then a butterfly (fixed order). Token inputs
 * are staged through shared memory GDN_TT tokens at a time so their loads
 * overlap instead of stalling every step. */
#define GDN_NW 4
#define GDN_CPW 4
#define GDN_BV (GDN_NW * GDN_CPW)
#define GDN_TT 16

template <int R>
__global__ void __launch_bounds__(GDN_NW * DL_WARP)
    dl_k_gdn_rec(float *__restrict__ out, const float *__restrict__ q, const float *__restrict__ k,
                 const float *__restrict__ v, const float *__restrict__ g, const float *__restrict__ beta,
                 float *__restrict__ state, int Hk, int Hv, int Dk, int Dv, gk_gdn_batch b) {
    __shared__ float sq[GDN_TT * GK_GDN_MAXD], sk[GDN_TT * GK_GDN_MAXD];
    __shared__ float sv[GDN_TT * GDN_BV], sg[GDN_TT], sb[GDN_TT];
    __shared__ int srow[GDN_TT], sreset[GDN_TT];
    const int gi = blockIdx.x, h = blockIdx.y;
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    const int jb = blockIdx.z * GDN_BV, j0 = jb + wid * GDN_CPW;
    const int kh = h / (Hv / Hk);
    const int t0 = b.off[gi], t1 = b.off[gi + 1];
    const size_t ldq = (size_t)Hk * Dk, ldv = (size_t)Hv * Dv;
    float *S = state + ((size_t)b.slot[gi] * Hv + h) * (size_t)Dk * Dv;

    float st[GDN_CPW][R];
#pragma unroll
    for (int c = 0; c < GDN_CPW; c++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int d = lane + r * DL_WARP, j = j0 + c;
            st[c][r] = (d < Dk && j < Dv) ? S[(size_t)d * Dv + j] : 0.0f;
        }

    for (int a = t0; a < t1; a += GDN_TT) {
        const int n = t1 - a < GDN_TT ? t1 - a : GDN_TT;
        __syncthreads(); /* the previous tile is consumed */
        for (int e = threadIdx.x; e < n * Dk; e += blockDim.x) {
            const int i = e / Dk, d = e - i * Dk;
            const size_t row = (size_t)b.idx[a + i];
            sq[i * GK_GDN_MAXD + d] = q[row * ldq + (size_t)kh * Dk + d];
            sk[i * GK_GDN_MAXD + d] = k[row * ldq + (size_t)kh * Dk + d];
        }
        for (int e = threadIdx.x; e < n * GDN_BV; e += blockDim.x) {
            const int i = e / GDN_BV, c = e - i * GDN_BV, j = jb + c;
            const size_t row = (size_t)b.idx[a + i];
            sv[e] = j < Dv ? v[row * ldv + (size_t)h * Dv + j] : 0.0f;
        }
        if ((int)threadIdx.x < n) {
            const int row = b.idx[a + threadIdx.x];
            srow[threadIdx.x] = row;
            sg[threadIdx.x] = g[(size_t)row * Hv + h];
            sb[threadIdx.x] = beta[(size_t)row * Hv + h];
            sreset[threadIdx.x] = b.pos[row] == 0;
        }
        __syncthreads();
        for (int i = 0; i < n; i++) {
            if (sreset[i]) {
#pragma unroll
                for (int c = 0; c < GDN_CPW; c++)
#pragma unroll
                    for (int r = 0; r < R; r++) st[c][r] = 0.0f;
            }
            const float e = expf(sg[i]), bt = sb[i];
            float kr[R], qr[R];
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int d = lane + r * DL_WARP;
                kr[r] = d < Dk ? sk[i * GK_GDN_MAXD + d] : 0.0f;
                qr[r] = d < Dk ? sq[i * GK_GDN_MAXD + d] : 0.0f;
            }
            float mine = 0.0f;
#pragma unroll
            for (int c = 0; c < GDN_CPW; c++) {
                /* decay, then u = k^T S */
                float p = 0.0f;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    st[c][r] *= e;
                    p = fmaf(kr[r], st[c][r], p);
                }
                const float u = dl_warp_sum(p);
                const float du = (sv[i * GDN_BV + wid * GDN_CPW + c] - u) * bt;
                /* rank-1 update, then out = q^T S */
                float po = 0.0f;
#pragma unroll
                for (int r = 0; r < R; r++) {
                    st[c][r] = fmaf(kr[r], du, st[c][r]);
                    po = fmaf(qr[r], st[c][r], po);
                }
                const float o = dl_warp_sum(po);
                if (lane == c) mine = o;
            }
            if (lane < GDN_CPW && j0 + lane < Dv) out[(size_t)srow[i] * ldv + (size_t)h * Dv + j0 + lane] = mine;
        }
    }

#pragma unroll
    for (int c = 0; c < GDN_CPW; c++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int d = lane + r * DL_WARP, j = j0 + c;
            if (d < Dk && j < Dv) S[(size_t)d * Dv + j] = st[c][r];
        }
}

extern "C" void gk_gdn_recurrent(void *s, float *out, const float *q, const float *k, const float *v,
                                 const float *g, const float *beta, float *state, int Hk, int Hv, int Dk, int Dv,
                                 const gk_gdn_batch *b) {
    if (b->ntok <= 0 || b->ngrp <= 0) return;
    dim3 grid(b->ngrp, Hv, DL_CDIV(Dv, GDN_BV));
    const int nt = GDN_NW * DL_WARP;
    cudaStream_t st = (cudaStream_t)s;
    switch (DL_CDIV(Dk, DL_WARP)) {
#define GDN_CASE(R_)                                                                                \
    case R_:                                                                                        \
        dl_k_gdn_rec<R_><<<grid, nt, 0, st>>>(out, q, k, v, g, beta, state, Hk, Hv, Dk, Dv, *b); \
        break;
        GDN_CASE(1)
        GDN_CASE(2)
        GDN_CASE(3)
        GDN_CASE(4)
#if DL_WARP < 64
        GDN_CASE(5)
        GDN_CASE(6)
        GDN_CASE(7)
        GDN_CASE(8)
#endif
#undef GDN_CASE
    default: break; /* Dk > GK_GDN_MAXD: rejected by the caller */
    }
}
