/* INT8 W8A8 matmul with dp4a (CUDA __dp4a, HIP v_dot4_i32_i8):
 * y[m, n] = ((float)acc[m, n] * xs[m]) * ws[n] + bias[n],
 * acc = sum_k xq[m, k] * wq[n, k] exactly in int32 (|acc| <= 127^2 k).
 * Because the sum is exact, GEMV, GEMM and the reference agree bitwise and
 * a token's output does not depend on M or the rest of the batch.
 *
 * GEMV (M <= 8): a warp takes R rows, and one launch may cover up to three
 * weights sharing x (gk_int8_gemv_multi); each lane streams 16-byte weight
 * vectors (4 dp4a words, U in flight per row) against all M quantized rows.
 * GEMM: 128x128 tiles,
 * BK = 32 bytes (8 words), 256 threads with 8x8 outputs, double-buffered
 * shared memory (words stored k-major so the inner loop reads 16 bytes). */
#include "gpu_common.cuh"

#define I8_MAXT (DL_GEMV_MAXW * DL_WARP) /* threads per block at most (i8wpb 8; 4 on gfx906) */

static __device__ __forceinline__ float i8_epilogue(int acc, float xs, const gk_weight &w, int64_t n) {
    /* explicit roundings: no FMA contraction, so every path gives the same bits */
    float v = __fmul_rn(__fmul_rn((float)acc, xs), dl_rowscale(w, n));
    return w.bias ? __fadd_rn(v, w.bias[n]) : v;
}

/* One 16-byte weight chunk of each of R rows (w[r]) with the 16 codes a
 * of activation row m into acc[.][m]: four dp4a per row, bytes in order
 * (int32 sums: exact). */
template <int R, int MR, typename V>
static __device__ __forceinline__ void i8_dot16(const V (&w)[R], const int4 a, int m, int (&acc)[R][MR]) {
#pragma unroll
    for (int r = 0; r < R; r++) {
        int c = acc[r][m];
        c = dl_dp4a((int)w[r].x, a.x, c);
        c = dl_dp4a((int)w[r].y, a.y, c);
        c = dl_dp4a((int)w[r].z, a.z, c);
        c = dl_dp4a((int)w[r].w, a.w, c);
        acc[r][m] = c;
    }
}
/* The same for the codes of all MR activation rows at element kk (row
 * stride kp), each loaded as it is used. */
template <int R, int MR, typename V>
static __device__ __forceinline__ void i8_chunk(const V (&w)[R], const int8_t *__restrict__ xq, int kp, int kk,
                                                int (&acc)[R][MR]) {
#pragma unroll
    for (int m = 0; m < MR; m++) i8_dot16<R, MR>(w, *(const int4 *)(xq + (int64_t)m * kp + kk), m, acc);
}

/* The R weight rows of a row group starting at n0 (tail rows past g.n
 * recompute the last row, not stored). */
template <int R>
static __device__ __forceinline__ void i8_wrows(const dl_gv_sel &g, int n0, const int8_t *(&wrow)[R]) {
#pragma unroll
    for (int r = 0; r < R; r++) wrow[r] = (const int8_t *)g.data + (int64_t)(n0 + r < g.n ? n0 + r : g.n - 1) * g.ld;
}

/* W8A8 GEMV over a job of 1..3 weights (dl_gv_job): a warp takes R rows,
 * blockDim.x / DL_WARP warps per block; each lane streams 16-byte weight
 * vectors (4 dp4a words; U per row in flight, NA = L1 no-allocate) against
 * all MR quantized rows. A weight's K may be split over g.ks warps of the
 * block (lane chunks lane + 32 w + 32 ks c, as the float GEMV), whose int32
 * warp sums are added through shared memory. Integer sums are exact, so any
 * R / U / NA / ks / block shape gives the same bits (and the same as the
 * GEMM and the reference). Epilogue as i8_epilogue. Tail rows recompute the
 * last row, not stored. XQ (M = 1 only; knob i8xp): 0 loads a chunk's codes
 * as its dp4a need them; 1 loads them with the group's weights, one group
 * ahead (a second set of U int4 registers: 78 registers at R = U = 2
 * instead of 64). Same dp4a in the same order: the same bits. */
template <int MR, int R, int U, int NA, int XQ = 0>
__global__ void __launch_bounds__(I8_MAXT)
    dl_k_i8_gemv(const int8_t *__restrict__ xq, const float *__restrict__ xs, const dl_gv_job j, int kp, int spre) {
    const dl_gv_sel g = dl_gv_pick(j);
    const dl_gv_at at = dl_gv_place(g, g.ks, R);
    const int lane = at.lane, n0 = at.n0;
    if (g.ks == 1 && n0 >= g.n) return; /* split: every warp meets the epilogue's barrier (rows clamp) */
    const int K = (int)j.w[0].k; /* 32-bit index math in the hot loop */
    const int8_t *wrow[R];
    i8_wrows<R>(g, n0, wrow);
    int acc[R][MR];
    dl_gv_zero(acc);
    const int step = DL_WARP * g.ks * 16; /* a lane's chunks are step apart */
    /* two register buffers: the loads of the next group are issued before
     * the dp4a of the current one, so a warp keeps 2 * U * R vectors in
     * flight instead of stalling on each group's round trip */
    int4 wa[U][R], wb[U][R]; /* chunks past K are neither loaded nor used */
    auto load = [&](int4 (&wv)[U][R], int k0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int kk = k0 + u * step;
            if (kk < K) {
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const uint4 t = dl_ldw16<NA>(wrow[r] + kk);
                    wv[u][r] = make_int4((int)t.x, (int)t.y, (int)t.z, (int)t.w);
                }
            }
        }
    };
    static_assert(XQ == 0 || MR == 1, "i8xp: M = 1 only");
    /* XQ: the group's codes (row 0) at k0, loaded with its weights */
    auto loadx = [&](int4 (&xv)[XQ ? U : 1], int k0) {
        if constexpr (XQ) {
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int kk = k0 + u * step;
                if (kk < K) xv[u] = *(const int4 *)(xq + kk);
            }
        }
    };
    /* the group at k0: codes from xv (XQ), else loaded chunk by chunk */
    auto dot = [&](const int4 (&wv)[U][R], const int4 (&xv)[XQ ? U : 1], int k0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int kk = k0 + u * step;
            if (kk < K) {
                if constexpr (XQ) i8_dot16<R, MR>(wv[u], xv[u], 0, acc);
                else i8_chunk<R, MR>(wv[u], xq, kp, kk, acc);
            }
        }
    };
    const int kstep = step * U;
    int k0 = (lane + DL_WARP * at.wks) * 16;
    load(wa, k0); /* weights only: before the wait for the kernel that made xq */
    const gk_weight &w0 = j.w[0];
    /* spre: the rows' scales and bias too (no kernel writes them), so the
     * epilogue does not wait for a DRAM round trip at the block's end */
    float rs[R], rb[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int n = n0 + r;
        rs[r] = spre && n < g.n ? dl_gv_rowscale(w0.scale_kind, g.scale, n) : 0.0f;
        rb[r] = spre && n < g.n && g.bias ? g.bias[n] : 0.0f;
    }
    if (spre) {
        uint32_t dep = 0;
#pragma unroll
        for (int r = 0; r < R; r++) dep ^= __float_as_uint(rs[r]) ^ __float_as_uint(rb[r]);
        if (blockDim.x == 0u) *(uint32_t *)g.y = dep; /* never: keeps the loads above the wait below */
    }
    dl_pdl_enter_after_group<U, R>(wa, k0, step, K, (uint32_t *)g.y, !j.late);
    int4 xa[XQ ? U : 1], xb[XQ ? U : 1];
    loadx(xa, k0); /* XQ: the first group's codes, after the wait */
    while (k0 < K) { /* two groups per trip, so the buffers swap without copies */
        load(wb, k0 + kstep);
        loadx(xb, k0 + kstep);
        dot(wa, xa, k0);
        k0 += kstep;
        if (k0 >= K) break;
        load(wa, k0 + kstep);
        loadx(xa, k0 + kstep);
        dot(wb, xb, k0);
        k0 += kstep;
    }
    /* the warp sums; with a K split, the ks warps' sums in warp order.
     * Where R MR is a power of two they are scattered over the lanes
     * (dl_warp_sum_scatter: R MR - 1 shuffles instead of 5 R MR) and each
     * is finished and stored by the lane holding it (exact integer sums:
     * the same values either way) */
    constexpr int N = R * MR;
    if constexpr ((N & (N - 1)) == 0 && N <= DL_WARP) {
        int jv;
        bool hold;
        int v = dl_warp_sum_rows<int, R, MR>(acc, lane, &jv, &hold);
        if (g.ks > 1) {
            __shared__ int red[I8_MAXT / DL_WARP][N];
            const int wid = threadIdx.x / DL_WARP;
            if (hold) red[wid][jv] = v;
            __syncthreads();
            if (at.wks || !hold) return;
            v = red[wid][jv];
            for (int w = 1; w < g.ks; w++) v += red[wid + w][jv];
        }
        if (!hold) return;
        const int r = jv / MR, m = jv - r * MR, n = n0 + r;
        if (n >= g.n) return;
        float sr = rs[0], bb = rb[0]; /* row r's (the preloaded arrays by constant index: no local memory) */
#pragma unroll
        for (int i = 1; i < R; i++)
            if (r == i) sr = rs[i], bb = rb[i];
        if (!spre) sr = dl_gv_rowscale(w0.scale_kind, g.scale, n), bb = g.bias ? g.bias[n] : 0.0f;
        /* as i8_epilogue, with the picked weight's scale and bias */
        const float t = __fmul_rn(__fmul_rn((float)v, xs[m]), sr);
        g.y[(int64_t)m * g.n + n] = g.bias ? __fadd_rn(t, bb) : t;
    } else {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int m = 0; m < MR; m++)
                for (int o = DL_WARP / 2; o > 0; o >>= 1) acc[r][m] += dl_shfl_xor_i(acc[r][m], o);
        if (g.ks > 1) {
            __shared__ int red[I8_MAXT / DL_WARP][R * MR];
            const int wid = threadIdx.x / DL_WARP;
            if (lane == 0)
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int m = 0; m < MR; m++) red[wid][r * MR + m] = acc[r][m];
            __syncthreads();
            if (at.wks) return;
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int m = 0; m < MR; m++) {
                    int v = red[wid][r * MR + m];
                    for (int w = 1; w < g.ks; w++) v += red[wid + w][r * MR + m];
                    acc[r][m] = v;
                }
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int n = n0 + r;
            const float sr = spre ? rs[r] : n < g.n ? dl_gv_rowscale(w0.scale_kind, g.scale, n) : 0.0f;
#pragma unroll
            for (int m = 0; m < MR; m++) {
                const int v = acc[r][m];
                if (lane == 0 && n < g.n) {
                    /* as i8_epilogue, with the picked weight's scale and bias */
                    const float t = __fmul_rn(__fmul_rn((float)v, xs[m]), sr);
                    g.y[(int64_t)m * g.n + n] = g.bias ? __fadd_rn(t, spre ? rb[r] : g.bias[n]) : t;
                }
            }
        }
    }
}

/* dl_k_i8_gemv with the weight stream through shared memory (knob i8ring,
 * off by default: see cfg_default in k_matmul_float.cu; CUDA sm_80+), as
 * dl_k_gemv_fa for fp8: each thread's
 * 16-byte chunks go global -> its own slots of a two-stage ring
 * ([2][R][blockDim.x] x 16 bytes of dynamic shared memory) by cp.async,
 * so the next chunk of its R rows is in flight during the dp4a of the
 * current one without registers held for it; K is split over KS = ks
 * warps of the block (lane chunks lane + 32 w + 32 ks c), whose int32 warp
 * sums are added through shared memory. Integer sums are exact, so this is
 * bitwise the register kernel (and the GEMM and the reference). The next
 * kernel is let launch (PDL) as in dl_k_gemv_fa (late: after the K loop). */
template <int MR, int R>
__global__ void __launch_bounds__(I8_MAXT)
    dl_k_i8_gemv_fa(const int8_t *__restrict__ xq, const float *__restrict__ xs, const dl_gv_job j, int kp, int ks,
                    int late) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && DL_WARP == 32 && !defined(__HIPCC__)
    extern __shared__ uint4 dl_ring8[];
    __shared__ int red[I8_MAXT / DL_WARP][R * MR];
    const dl_gv_sel g = dl_gv_pick(j);
    const dl_gv_at at = dl_gv_place(g, ks, R);
    const int lane = at.lane, wid = threadIdx.x / DL_WARP, wks = at.wks, n0 = at.n0;
    const int K = (int)j.w[0].k;
    const int8_t *wrow[R];
    i8_wrows<R>(g, n0, wrow);
    int acc[R][MR];
    dl_gv_zero(acc);
    const int T_ = blockDim.x, step = DL_WARP * ks * 16, k1 = (lane + DL_WARP * wks) * 16;
    const int nc = k1 < K && n0 < g.n ? dl_cdiv_p2(K - k1, step) : 0; /* rows past n: no chunks */
    auto issue = [&](int c) {
        dl_ring_issue<R>(dl_ring8 + (c & 1) * R * T_ + threadIdx.x, T_, wrow, k1 + c * step, c < nc);
    };
    issue(0);
    dl_pdl_wait(); /* xq / xs are read, y written, only from here on */
    if (!late) dl_pdl_trigger();
    for (int c = 0; c < nc; c++) {
        dl_ring_wait();
        issue(c + 1);
        const uint4 *slot = dl_ring8 + (c & 1) * R * T_ + threadIdx.x;
        const int kk = k1 + c * step;
        uint4 wv[R];
#pragma unroll
        for (int r = 0; r < R; r++) wv[r] = slot[r * T_];
        i8_chunk<R, MR>(wv, xq, kp, kk, acc);
    }
    if (late) dl_pdl_trigger();
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int m = 0; m < MR; m++) {
            int v = acc[r][m];
            for (int o = DL_WARP / 2; o > 0; o >>= 1) v += dl_shfl_xor_i(v, o);
            if (lane == 0) red[wid][r * MR + m] = v;
        }
    __syncthreads();
    if (lane || wks) return;
    const gk_weight &w0 = j.w[0];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int n = n0 + r;
        if (n >= g.n) continue;
        const float rs = dl_gv_rowscale(w0.scale_kind, g.scale, n);
#pragma unroll
        for (int m = 0; m < MR; m++) {
            int v = 0;
            for (int w = 0; w < ks; w++) v += red[wid + w][r * MR + m];
            /* as i8_epilogue, with the picked weight's scale and bias */
            const float t = __fmul_rn(__fmul_rn((float)v, xs[m]), rs);
            g.y[(int64_t)m * g.n + n] = g.bias ? __fadd_rn(t, g.bias[n]) : t;
        }
    }
#else /* no cp.async: never launched (i8_rows) */
    (void)xq, (void)xs, (void)j, (void)kp, (void)ks, (void)late;
#endif
}

#define IB 128
#define IBW 8 /* words (4 bytes) of K per tile */

__global__ void __launch_bounds__(256)
    dl_k_i8_gemm(float *__restrict__ y, const int8_t *__restrict__ xq, const float *__restrict__ xs,
                 gk_weight w, int M, int kp) {
    dl_pdl_enter();
    __shared__ __align__(16) int As[2][IBW][IB];
    __shared__ __align__(16) int Bs[2][IBW][IB];
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const int64_t m0 = (int64_t)blockIdx.y * IB, n0 = (int64_t)blockIdx.x * IB;
    const int lr = t / 2, lc = (t % 2) * 4; /* row, first word */
    const int64_t am = m0 + lr, bn = n0 + lr;
    const bool aval = am < M, bval = bn < w.n;
    const int8_t *arow = xq + (aval ? am : 0) * kp;
    const int8_t *brow = (const int8_t *)w.data + (bval ? bn : 0) * w.ld;
    int acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0;
    int4 ra, rb;
    const int4 z = make_int4(0, 0, 0, 0);
#define I8_LOAD(k0)                                                          \
    do {                                                                     \
        ra = aval ? *(const int4 *)(arow + (k0) + lc * 4) : z;               \
        rb = bval ? *(const int4 *)(brow + (k0) + lc * 4) : z;               \
    } while (0)
#define I8_STORE(buf)                                                        \
    do {                                                                     \
        As[buf][lc + 0][lr] = ra.x; As[buf][lc + 1][lr] = ra.y;              \
        As[buf][lc + 2][lr] = ra.z; As[buf][lc + 3][lr] = ra.w;              \
        Bs[buf][lc + 0][lr] = rb.x; Bs[buf][lc + 1][lr] = rb.y;              \
        Bs[buf][lc + 2][lr] = rb.z; Bs[buf][lc + 3][lr] = rb.w;              \
    } while (0)
    const int64_t nk = w.k / (IBW * 4);
    I8_LOAD(0);
    I8_STORE(0);
    __syncthreads();
    for (int64_t kt = 0; kt < nk; kt++) {
        const int cur = (int)(kt & 1);
        if (kt + 1 < nk) I8_LOAD((kt + 1) * IBW * 4);
#pragma unroll
        for (int kw = 0; kw < IBW; kw++) {
            int4 a0 = *(const int4 *)&As[cur][kw][ty * 4];
            int4 a1 = *(const int4 *)&As[cur][kw][64 + ty * 4];
            int4 b0 = *(const int4 *)&Bs[cur][kw][tx * 4];
            int4 b1 = *(const int4 *)&Bs[cur][kw][64 + tx * 4];
            int a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            int b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = dl_dp4a(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < nk) I8_STORE(cur ^ 1);
        __syncthreads();
    }
#undef I8_LOAD
#undef I8_STORE
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (m >= M) continue;
        const float s = xs[m];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int64_t n = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (n < w.n) y[m * w.n + n] = i8_epilogue(acc[i][j], s, w, n);
        }
    }
}

/* Reference: one thread per output, byte by byte, any shape/alignment. */
__global__ void dl_k_int8_ref(float *__restrict__ y, const int8_t *__restrict__ xq,
                            const float *__restrict__ xs, gk_weight w, int kp) {
    dl_pdl_enter();
    const int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t m = blockIdx.y;
    if (n >= w.n) return;
    const int8_t *wr = (const int8_t *)w.data + n * w.ld;
    const int8_t *xr = xq + m * kp;
    int acc = 0;
    for (int64_t k = 0; k < w.k; k++) acc += (int)xr[k] * (int)wr[k];
    y[m * w.n + n] = i8_epilogue(acc, xs[m], w, n);
}

extern "C" int gk_int8_gemv_ok(const gk_weight *w) {
    return !((uintptr_t)w->data & 15) && w->ld % 16 == 0 && w->k % 16 == 0 && w->n <= INT32_MAX &&
           w->k <= INT32_MAX / 2;
}

extern "C" int gk_int8_gemm_ok(const gk_weight *w) {
    return !((uintptr_t)w->data & 15) && w->ld % 16 == 0 && w->k % (IBW * 4) == 0;
}

/* DOTLM_I8_SPRE=0 (experiment, read once): the W8A8 GEMV (register loop)
 * loads its rows' scales and bias in the epilogue, not before the PDL wait
 * (same bits). */
static int i8_spre() {
    static const int v = dl_env_int("DOTLM_I8_SPRE", 1) != 0;
    return v;
}

/* One W8A8 GEMV launch: weights, outputs, quantized x, knobs. */
struct i8_call {
    cudaStream_t st;
    const int8_t *xq;
    const float *xs;
    const gk_weight *w;
    float *const *y;
    int count, kp;
    dl_gemv_cfg cfg;
};

/* Warps splitting a weight's K in the register GEMV (none while
 * gk_int8_ksplit_allow(0), the cuda.int8_gemv_ksplit switch; knob i8ks: 1, 2 or 4
 * forced, for tests and A/B; 0 = by shape): as the 16-bit float GEMV,
 * weights with fewer than DOTLM_I8_KSMAXN (default 8192) rows split K over
 * 4 warps when each lane still gets >= 4 chunks of 16 bytes, else over 2
 * when it gets >= 4 at 2, else not (more warps streaming a weight whose
 * rows alone leave the GPU half idle). Any split gives the same bits
 * (exact int32 sums). */
#define I8_KS_MAXN 8192 /* the row bound of the opt-in split, unless DOTLM_I8_KSMAXN */
static unsigned long long g_i8ks_n = 0; /* launches with a split weight */
static int g_i8ks_allow = 1;
extern "C" unsigned long long gk_int8_ksplit_launches(void) { return g_i8ks_n; }
extern "C" void gk_int8_ksplit_allow(int on) { g_i8ks_allow = on != 0; }
static int i8_ks(const gk_weight &w, int knob) {
    const int64_t chunks = DL_CDIV(w.k, (int64_t)DL_WARP * 16); /* per lane, unsplit */
    if (!g_i8ks_allow) return 1;
    if (knob) return knob;
    static const int maxn = dl_env_int("DOTLM_I8_KSMAXN", I8_KS_MAXN);
    return dl_ks_by_shape(w.n, chunks, maxn);
}

/* M = 1 register GEMV launches that load a group's activation codes with
 * its weights (knob i8xp=1; i8xp=2 for weights with k > I8_XP_MINK only;
 * both opt-in) so far (the cuda.int8_gemv_xp dispatch counter), and their
 * gate (gk_int8_gemv_xp_allow): off, each chunk's codes are loaded as used. */
#define I8_XP_MINK 4096 /* i8xp=2: weights with k above this only */
static unsigned long long g_i8xp_n = 0;
static int g_i8xp_allow = 1;
extern "C" unsigned long long gk_int8_gemv_xp_launches(void) { return g_i8xp_n; }
extern "C" void gk_int8_gemv_xp_allow(int on) { g_i8xp_allow = on != 0; }

template <int MR, int R, int U, int NA>
static void i8_go(const i8_call &c) {
    dl_gv_job j;
    int kss[GK_MULTI_MAX] = {1, 1, 1};
    int split = 0;
    for (int i = 0; i < c.count; i++) split |= (kss[i] = i8_ks(c.w[i], c.cfg.i8ks)) > 1;
    g_i8ks_n += split;
    const unsigned grid = dl_gv_job_make(&j, c.w, c.y, c.count, c.cfg.i8wpb, R, kss);
    const int th = c.cfg.i8wpb * DL_WARP;
    if constexpr (MR == 1) {
        /* i8xp=2: only weights with k > I8_XP_MINK (one warp per row group then streams > 8 chunks per lane) */
        if (c.cfg.i8xp && g_i8xp_allow && (c.cfg.i8xp == 1 || c.w[0].k > I8_XP_MINK)) {
            g_i8xp_n++;
            auto k = dl_k_i8_gemv<1, R, U, NA, 1>;
            return dl_launch(k, grid, th, dl_occ_pad((const void *)k, grid, th, 0, c.cfg.i8occ), c.st, c.xq, c.xs, j,
                             c.kp, i8_spre());
        }
    }
    /* (the M = 1 blocks per SM capped by knob i8occ: dl_occ_pad) */
    auto k = dl_k_i8_gemv<MR, R, U, NA>;
    dl_launch(k, grid, th, MR == 1 ? dl_occ_pad((const void *)k, grid, th, 0, c.cfg.i8occ) : 0, c.st, c.xq, c.xs, j,
              c.kp, i8_spre());
}

/* The ring kernel: 4 rows per warp at M = 1 and 2 above (as the fp8 ring,
 * which measured best with 4; bitwise the same either way), K over 2 warps
 * when every lane keeps >= 4 chunks (any split: integer sums are exact). */
template <int MR>
static void i8_ring(const i8_call &c) {
    constexpr int R = MR == 1 ? 4 : 2;
    const int64_t chunks = DL_CDIV(c.w[0].k, (int64_t)DL_WARP * 16);
    const int ks = chunks >= 4 ? 2 : 1;
    int kss[GK_MULTI_MAX] = {ks, ks, ks};
    dl_gv_job j;
    const unsigned grid = dl_gv_job_make(&j, c.w, c.y, c.count, c.cfg.i8wpb, R, kss);
    const size_t smem = (size_t)2 * R * c.cfg.i8wpb * DL_WARP * sizeof(uint4); /* <= 32 KiB */
    dl_ring_note();
    dl_launch(dl_k_i8_gemv_fa<MR, R>, grid, c.cfg.i8wpb * DL_WARP, smem, c.st, c.xq, c.xs, j, c.kp, ks, j.late);
}

/* Knobs -> template: U = 4 only at M <= 2 (auto: when R = 1); R = 1 only at
 * M = 1; rows per warp default 1 at M = 1 and 2 at M > 1. */
template <int MR, int R>
static void i8_un(const i8_call &c) {
    if constexpr (MR <= 2) {
        if (c.cfg.i8u == 4 || (c.cfg.i8u == 0 && R == 1)) { /* auto: 4 when one row per warp */
            if (c.cfg.i8na) return i8_go<MR, R, 4, 1>(c);
            return i8_go<MR, R, 4, 0>(c);
        }
    }
    if (c.cfg.i8na) return i8_go<MR, R, 2, 1>(c);
    return i8_go<MR, R, 2, 0>(c);
}

template <int MR>
static void i8_rows(const i8_call &c) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    if (c.cfg.i8ring && dl_ring_ok()) return i8_ring<MR>(c);
#endif
    int r = MR == 1 ? c.cfg.i8r1 : c.cfg.i8rm;
    if (!r) r = MR == 1 ? 1 : 2;
    if (r == 4) return i8_un<MR, 4>(c);
    if constexpr (MR == 1) {
        if (r == 1) return i8_un<1, 1>(c);
    }
    return i8_un<MR, 2>(c);
}

static void i8_run(const i8_call &c, int M) {
    switch (M) {
    case 1: i8_rows<1>(c); break;
    case 2: i8_rows<2>(c); break;
    case 3: i8_rows<3>(c); break;
    case 4: i8_rows<4>(c); break;
    case 5: i8_rows<5>(c); break;
    case 6: i8_rows<6>(c); break;
    case 7: i8_rows<7>(c); break;
    default: i8_rows<8>(c); break;
    }
}

extern "C" void gk_int8_gemv(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w,
                             int M, int kp) {
    const i8_call c = {(cudaStream_t)s, xq, xs, w, &y, 1, kp, dl_gemv_cfg_now()};
    i8_run(c, M);
}

/* Same scale kind and k for every weight, each fit for the GEMV alone. */
extern "C" int gk_int8_gemv_multi_ok(const gk_multi *mw) {
    if (!mw || mw->count < 1 || mw->count > GK_MULTI_MAX) return 0;
    for (int i = 0; i < mw->count; i++) {
        const gk_weight *b = &mw->w[i];
        if (!gk_int8_gemv_ok(b) || !mw->y[i]) return 0;
        if (b->dtype != mw->w[0].dtype || b->scale_kind != mw->w[0].scale_kind || b->k != mw->w[0].k) return 0;
    }
    return 1;
}

extern "C" void gk_int8_gemv_multi(void *s, const gk_multi *mw, const int8_t *xq, const float *xs, int M, int kp) {
    const i8_call c = {(cudaStream_t)s, xq, xs, mw->w, mw->y, mw->count, kp, dl_gemv_cfg_now()};
    i8_run(c, M);
}

extern "C" void gk_int8_gemm(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w,
                             int M, int kp) {
    dim3 grid((unsigned)DL_CDIV(w->n, IB), (unsigned)DL_CDIV(M, IB)), block(256);
    dl_launch(dl_k_i8_gemm, grid, block, 0, (cudaStream_t)s, y, xq, xs, *w, M, kp);
}

extern "C" void gk_int8_ref(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w,
                            int M, int kp) {
    dim3 grid((unsigned)DL_CDIV(w->n, 128), (unsigned)M), block(128);
    dl_launch(dl_k_int8_ref, grid, block, 0, (cudaStream_t)s, y, xq, xs, *w, kp);
}
