/* Elementwise and row ops: embed, RMSNorm, RoPE, KV-cache write, SiLU*up,
 * residual add, row gather. Each output element is produced by one thread
 * with a fixed order of operations (RMSNorm's sum: fixed per-thread stride
 * then a fixed tree), so results are reproducible and per-row. */
#include "gpu_common.cuh"
#include "k_rope.cuh"

#define OP_T DL_NORM_T

__global__ void dl_k_embed(float *__restrict__ x, gk_weight e, const int32_t *__restrict__ tokens) {
    dl_pdl_enter();
    const int64_t i = blockIdx.x, d = e.k;
    const int32_t tok = tokens[i];
    const bool ok = tok >= 0 && tok < e.n;
    const float s = ok ? dl_rowscale(e, tok) : 0.0f;
    for (int64_t j = threadIdx.x + (int64_t)blockIdx.y * blockDim.x; j < d; j += (int64_t)blockDim.x * gridDim.y)
        x[i * d + j] = ok ? dl_load_elem(e.data, e.dtype, (int64_t)tok * e.ld + j) * s : 0.0f;
}

/* Sum over the block in a fixed order: warp butterflies, then warp totals
 * added in warp order. Every thread gets the result. */
static __device__ float block_sum(float v, float *red) {
    v = dl_warp_sum(v);
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    if (lane == 0) red[wid] = v;
    __syncthreads();
    float r = 0.0f;
    for (int i = 0; i < (int)(blockDim.x / DL_WARP); i++) r += red[i];
    return r;
}

/* 1 / rms of row xr [d] (+ eps): the one reduction order every norm kernel
 * here uses (per-thread stride over blockDim, then block_sum), so fused and
 * separate kernels agree bitwise. All threads of the block call it. */
static __device__ __forceinline__ float row_inv_rms(const float *xr, int d, float eps, float *red) {
    float ss = 0.0f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) ss = fmaf(xr[i], xr[i], ss);
    ss = block_sum(ss, red);
    return 1.0f / sqrtf(ss / (float)d + eps);
}

__global__ void __launch_bounds__(OP_T)
    dl_k_rmsnorm(float *y, const float *x, const void *__restrict__ w, int wdt, int d, float eps, int zc) {
    dl_pdl_enter();
    __shared__ float red[OP_T / 16 + 1];
    const int64_t r = blockIdx.x;
    const float *xr = x + r * d;
    const float inv = row_inv_rms(xr, d, eps, red);
    float *yr = y + r * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) yr[i] = (xr[i] * inv) * norm_w(w, wdt, i, zc);
}

/* x[r] += res[r]; y[r] = rmsnorm(x[r]) * w. Bitwise equal to dl_k_add then
 * dl_k_rmsnorm: each thread adds exactly the elements it later reduces and
 * normalises, and res may alias y (read before the reduction's barrier,
 * written after). */
__global__ void __launch_bounds__(OP_T)
    dl_k_add_rmsnorm(float *x, const float *res, float *y, const void *__restrict__ w, int wdt, int d, float eps,
                     int zc) {
    dl_pdl_enter();
    __shared__ float red[OP_T / 16 + 1];
    const int64_t r = blockIdx.x;
    float *xr = x + r * d;
    const float *rr = res + r * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) xr[i] += rr[i];
    const float inv = row_inv_rms(xr, d, eps, red);
    float *yr = y + r * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) yr[i] = (xr[i] * inv) * norm_w(w, wdt, i, zc);
}

/* Wide rows (hidden sizes: 1024 <= d <= 8192, d % 4 == 0, 16-byte aligned
 * rows): each thread holds its float4 chunks c = tid + j * OP_T in registers
 * (all loads issued before use), so a decode-sized norm is one round trip
 * instead of d / OP_T dependent ones. One fixed order (chunks ascending,
 * elements in order, then block_sum) for the plain and the fused kernel. */
#define NV4 8 /* float4 chunks per thread: d <= 4 * OP_T * NV4 = 8192 */

template <bool ADD, bool QUANT, bool PRE>
__global__ void __launch_bounds__(OP_T)
    dl_k_norm_v4(float *x, const float *res, float *y, const void *__restrict__ w, int wdt, int d, float eps, int zc,
                 int8_t *xq, float *xs, int kp, float *yt) {
    if (!PRE) dl_pdl_enter();
    __shared__ float red[OP_T / 16 + 1];
    const int64_t r = blockIdx.x;
    float4 *xr = (float4 *)(x + r * d);
    const float4 *rr = ADD ? (const float4 *)(res + r * d) : nullptr;
    float4 *yr = (float4 *)(y + r * d);
    const int n4 = d / 4;
    /* the norm weights first: no kernel writes them, so with PRE they are
     * loaded before the PDL wait, while the kernel ahead still runs (else
     * before the reduction's barrier, overlapping it) */
    float4 nw[NV4];
#pragma unroll
    for (int j = 0; j < NV4; j++) {
        const int c = threadIdx.x + j * OP_T, i = 4 * c;
        nw[j] = c < n4 ? make_float4(norm_w(w, wdt, i, zc), norm_w(w, wdt, i + 1, zc), norm_w(w, wdt, i + 2, zc),
                                     norm_w(w, wdt, i + 3, zc))
                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    if (PRE) {
        uint32_t dep = 0;
#pragma unroll
        for (int j = 0; j < NV4; j++)
            dep ^= __float_as_uint(nw[j].x) ^ __float_as_uint(nw[j].y) ^ __float_as_uint(nw[j].z) ^
                   __float_as_uint(nw[j].w);
        dl_pdl_enter_after(dep, (uint32_t *)y);
    }
    float4 v[NV4];
#pragma unroll
    for (int j = 0; j < NV4; j++) {
        const int c = threadIdx.x + j * OP_T;
        v[j] = c < n4 ? xr[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    if (ADD) {
        float4 a[NV4];
#pragma unroll
        for (int j = 0; j < NV4; j++) {
            const int c = threadIdx.x + j * OP_T;
            a[j] = c < n4 ? rr[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int j = 0; j < NV4; j++) {
            const int c = threadIdx.x + j * OP_T;
            v[j].x += a[j].x; v[j].y += a[j].y; v[j].z += a[j].z; v[j].w += a[j].w;
            if (c < n4) xr[c] = v[j];
        }
    }
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < NV4; j++) {
        ss = fmaf(v[j].x, v[j].x, ss); ss = fmaf(v[j].y, v[j].y, ss);
        ss = fmaf(v[j].z, v[j].z, ss); ss = fmaf(v[j].w, v[j].w, ss);
    }
    ss = block_sum(ss, red); /* its barrier also orders the reads of res before the writes of y */
    const float inv = 1.0f / sqrtf(ss / (float)d + eps);
#pragma unroll
    for (int j = 0; j < NV4; j++) {
        const int c = threadIdx.x + j * OP_T;
        if (c >= n4) continue;
        float4 o;
        o.x = (v[j].x * inv) * nw[j].x;
        o.y = (v[j].y * inv) * nw[j].y;
        o.z = (v[j].z * inv) * nw[j].z;
        o.w = (v[j].w * inv) * nw[j].w;
        yr[c] = o;
        if (yt) *(float4 *)(yt + dl_xp1_at(4 * (int64_t)c)) = o; /* one row: y's twin (gk_norm_twin) */
        if (QUANT) v[j] = o;
    }
    if (QUANT) { /* per-token int8 codes of y, as gk_actq_int8 would make them from y */
        float a = 0.0f;
#pragma unroll
        for (int j = 0; j < NV4; j++) {
            const int c = threadIdx.x + j * OP_T;
            if (c < n4) a = dl_amax4(a, v[j]);
        }
        const float amax = dl_block_max(a, red); /* red is reused: it syncs first */
        const float sc = dl_q8_scale(amax);
        uint32_t *q = (uint32_t *)(xq + r * kp);
#pragma unroll
        for (int j = 0; j < NV4; j++) {
            const int c = threadIdx.x + j * OP_T;
            if (c < n4)
                q[c] = dl_q8x4(v[j].x, v[j].y, v[j].z, v[j].w, sc);
        }
        for (int c = n4 + threadIdx.x; c < kp / 4; c += blockDim.x) q[c] = 0u;
        if (threadIdx.x == 0) xs[r] = sc;
    }
}

/* Wide-row norms and qk_rope_kv with their norm weights loaded before the
 * PDL wait (gk_norm_prewait_set; the backend's <backend>.norm_prewait
 * switch) and the launches made so (its dispatch counter). */
static int g_norm_pre = 1;
static unsigned long long g_norm_pre_n;
extern "C" void gk_norm_prewait_set(int on) { g_norm_pre = on != 0; }
extern "C" unsigned long long gk_norm_prewait_launches(void) { return g_norm_pre_n; }

/* dl_k_norm_v4<ADD, QUANT, PRE> with PRE = g_norm_pre (one grid row per block). */
template <bool ADD, bool QUANT>
static void norm_v4_launch(cudaStream_t s, int rows, float *x, const float *res, float *y, const void *w, int wdt,
                           int d, float eps, int zc, int8_t *xq, float *xs, int kp, float *yt = nullptr) {
    if (g_norm_pre) {
        g_norm_pre_n++;
        dl_launch(dl_k_norm_v4<ADD, QUANT, true>, rows, OP_T, 0, s, x, res, y, w, wdt, d, eps, zc, xq, xs, kp, yt);
    } else {
        dl_launch(dl_k_norm_v4<ADD, QUANT, false>, rows, OP_T, 0, s, x, res, y, w, wdt, d, eps, zc, xq, xs, kp, yt);
    }
}

static bool v4_ok(int d, const void *a, const void *b, const void *c) {
    return d % 4 == 0 && d >= 1024 && d <= 4 * OP_T * NV4 && ((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0 &&
           ((uintptr_t)c & 15) == 0;
}

__global__ void dl_k_rope(float *x, int nh, int hd, int half, rope_freq fr, const int32_t *__restrict__ pos) {
    dl_pdl_enter();
    const int64_t t = blockIdx.x;
    const int h = blockIdx.y;
    const float p = (float)pos[t];
    float *xh = x + (t * nh + h) * hd;
    for (int i = threadIdx.x; i < half; i += blockDim.x) rope_pair(&xh[i], &xh[i + half], p, fr.f[i]);
}

/* Fused attention prologue, one block per (token, head) over nh query heads
 * then nkv key heads: optional RMSNorm of the head row (qw / kw, NULL = none),
 * RoPE, written back in place; key heads (and the matching value rows) are
 * also written into the paged cache. Bitwise equal to rmsnorm + rope +
 * kv_write issued separately (same reduction, same pair arithmetic). */
typedef struct {
    const void *qw, *kw;
    int wdt, zc;
    float eps;
} qk_norm;

template <bool PRE>
__global__ void __launch_bounds__(OP_T)
    dl_k_qk_rope_kv(float *q, float *k, const float *__restrict__ v, int nh, int nkv, int hd, int half, qk_norm nm,
                    rope_freq fr, void *kc, void *vc, int kv_f16, int bs, int mbps, const int32_t *__restrict__ seq,
                    const int32_t *__restrict__ pos, const int32_t *__restrict__ btab) {
    if (!PRE) dl_pdl_enter();
    __shared__ float red[OP_T / 16 + 1];
    __shared__ float row[512];
    const int64_t t = blockIdx.x;
    const int h = blockIdx.y;
    const bool isq = h < nh;
    float *xr = isq ? q + (t * nh + h) * hd : k + (t * nkv + (h - nh)) * hd;
    const void *w = isq ? nm.qw : nm.kw;
    /* everything that does not depend on the reduction is loaded before its
     * barriers (one round trip instead of three): the thread's elements i =
     * tid + j * OP_T (j < 2: hd <= 512), their norm weights, the position,
     * the cache page and the value row (key heads) */
    const int ps = pos[t];
    const int64_t width = (int64_t)nkv * hd;
    const int blk = isq ? -1 : btab[(int64_t)seq[t] * mbps + ps / bs];
    const float *vr = v + t * width + (int64_t)(h - nh) * hd;
    float nw[2], vv[2];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int i = threadIdx.x + j * OP_T;
        nw[j] = w && i < hd ? norm_w(w, nm.wdt, i, nm.zc) : 0.0f;
    }
    /* PRE: the norm weights, the position and the cache page (written by no
     * kernel of this forward: the batch is uploaded before its first kernel,
     * and every kernel waits before it triggers) are loaded before the PDL
     * wait, while the q/k/v GEMV ahead still runs */
    if (PRE) dl_pdl_enter_after(__float_as_uint(nw[0]) ^ __float_as_uint(nw[1]) ^ (uint32_t)ps ^ (uint32_t)blk,
                                (uint32_t *)q);
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int i = threadIdx.x + j * OP_T;
        vv[j] = blk >= 0 && i < hd ? vr[i] : 0.0f;
    }
    if (w) {
        const float inv = row_inv_rms(xr, hd, nm.eps, red);
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int i = threadIdx.x + j * OP_T;
            if (i < hd) row[i] = (xr[i] * inv) * nw[j];
        }
    } else {
        for (int i = threadIdx.x; i < hd; i += blockDim.x) row[i] = xr[i];
    }
    __syncthreads();
    const float p = (float)ps;
    for (int i = threadIdx.x; i < half; i += blockDim.x) rope_pair(&row[i], &row[i + half], p, fr.f[i]);
    __syncthreads();
    for (int i = threadIdx.x; i < hd; i += blockDim.x) xr[i] = row[i];
    if (blk < 0) return; /* query head, or a row without a cache page */
    const int64_t base = ((int64_t)blk * bs + ps % bs) * width + (int64_t)(h - nh) * hd;
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const int i = threadIdx.x + j * OP_T;
        if (i >= hd) continue;
        if (kv_f16) {
            ((__half *)kc)[base + i] = __float2half_rn(row[i]);
            ((__half *)vc)[base + i] = __float2half_rn(vv[j]);
        } else {
            ((float *)kc)[base + i] = row[i];
            ((float *)vc)[base + i] = vv[j];
        }
    }
}

__global__ void dl_k_kv_write(void *kc, void *vc, int kv_f16, const float *__restrict__ k,
                              const float *__restrict__ v, int width, int bs, int mbps,
                              const int32_t *__restrict__ seq, const int32_t *__restrict__ pos,
                              const int32_t *__restrict__ btab) {
    dl_pdl_enter();
    const int64_t t = blockIdx.x;
    const int p = pos[t];
    const int blk = btab[(int64_t)seq[t] * mbps + p / bs];
    if (blk < 0) return;
    const int64_t base = ((int64_t)blk * bs + p % bs) * width;
    for (int j = threadIdx.x; j < width; j += blockDim.x) {
        float kv = k[t * width + j], vv = v[t * width + j];
        if (kv_f16) {
            ((__half *)kc)[base + j] = __float2half_rn(kv);
            ((__half *)vc)[base + j] = __float2half_rn(vv);
        } else {
            ((float *)kc)[base + j] = kv;
            ((float *)vc)[base + j] = vv;
        }
    }
}

__global__ void dl_k_silu_mul(float *out, const float *gate, const float *up, size_t n) {
    dl_pdl_enter();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        out[i] = dl_silu_mul1(gate[i], up[i]);
    }
}

__global__ void dl_k_add(float *y, const float *x, size_t n) {
    dl_pdl_enter();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

__global__ void dl_k_sigmoid_mul(float *y, const float *gate, size_t n) {
    dl_pdl_enter();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] *= 1.0f / (1.0f + expf(-gate[i]));
}

__global__ void dl_k_copy2d(float *__restrict__ dst, int dst_ld, const float *__restrict__ src, int src_ld, int cols) {
    dl_pdl_enter();
    const int64_t r = blockIdx.x;
    for (int c = threadIdx.x + blockIdx.y * blockDim.x; c < cols; c += blockDim.x * gridDim.y)
        dst[r * dst_ld + c] = src[r * src_ld + c];
}

#define GATHER_CHUNK 256

typedef struct {
    int32_t i[GATHER_CHUNK];
} gather_idx;

__global__ void dl_k_gather(float *__restrict__ dst, const float *__restrict__ src, gather_idx idx, int d) {
    dl_pdl_enter();
    const int r = blockIdx.x;
    const int64_t s = idx.i[r];
    for (int j = threadIdx.x + blockIdx.y * blockDim.x; j < d; j += blockDim.x * gridDim.y)
        dst[(int64_t)r * d + j] = src[s * d + j];
}

static unsigned grid1(size_t n) {
    size_t g = (n + OP_T - 1) / OP_T;
    return (unsigned)(g > 65535 ? 65535 : (g ? g : 1));
}

extern "C" void gk_embed(void *s, float *x, const gk_weight *emb, const int32_t *tokens, int ntok) {
    if (ntok <= 0) return;
    dim3 grid((unsigned)ntok, (unsigned)DL_CDIV(emb->k, 4 * OP_T));
    dl_launch(dl_k_embed, grid, OP_T, 0, (cudaStream_t)s, x, *emb, tokens);
}

extern "C" void gk_rmsnorm(void *s, float *y, const float *x, const void *w, int wdtype, int rows, int d,
                           float eps, int zc) {
    if (rows <= 0) return;
    if (v4_ok(d, x, y, y))
        norm_v4_launch<false, false>((cudaStream_t)s, rows, (float *)x, nullptr, y, w, wdtype, d, eps, zc, nullptr,
                                     nullptr, 0);
    else
        dl_launch(dl_k_rmsnorm, rows, OP_T, 0, (cudaStream_t)s, y, x, w, wdtype, d, eps, zc);
}

extern "C" void gk_rope(void *s, float *x, int ntok, int nh, int hd, int rot, const float *inv_freq,
                        const int32_t *pos) {
    if (ntok <= 0 || rot <= 0) return;
    rope_freq fr;
    int half = rot / 2;
    if (half > 256) half = 256; /* host checks rot <= 512 */
    rope_fill_freq(&fr, inv_freq, half);
    dim3 grid((unsigned)ntok, (unsigned)nh);
    dl_launch(dl_k_rope, grid, half < 32 ? 32 : (half > 128 ? 128 : half), 0, (cudaStream_t)s, x, nh, hd, half, fr, pos);
}

extern "C" void gk_add_rmsnorm(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int rows,
                               int d, float eps, int zc) {
    if (rows <= 0) return;
    if (v4_ok(d, x, y, y) && !v4_ok(d, x, y, res)) { /* the plain norm would take the wide path: match it */
        gk_add(s, x, res, (size_t)rows * d);
        gk_rmsnorm(s, y, x, w, wdtype, rows, d, eps, zc);
    } else if (v4_ok(d, x, y, res)) {
        norm_v4_launch<true, false>((cudaStream_t)s, rows, x, res, y, w, wdtype, d, eps, zc, nullptr, nullptr, 0);
    } else {
        dl_launch(dl_k_add_rmsnorm, rows, OP_T, 0, (cudaStream_t)s, x, res, y, w, wdtype, d, eps, zc);
    }
}

extern "C" int gk_norm_q(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int rows, int d,
                         float eps, int zc, int8_t *xq, float *xs, int kp) {
    if (rows <= 0 || !v4_ok(d, x, y, res ? res : y) || kp < d || kp % 16) return 0;
    if (res)
        norm_v4_launch<true, true>((cudaStream_t)s, rows, x, res, y, w, wdtype, d, eps, zc, xq, xs, kp);
    else
        norm_v4_launch<false, true>((cudaStream_t)s, rows, x, nullptr, y, w, wdtype, d, eps, zc, xq, xs, kp);
    return 1;
}

/* The wide norm's conditions (those of gk_rmsnorm / gk_add_rmsnorm taking
 * dl_k_norm_v4), whole groups of 16 and an aligned twin. */
extern "C" int gk_norm_twin_ok(int d, const void *x, const void *res, const void *y, const void *yt) {
    return yt && d % 16 == 0 && v4_ok(d, x, y, res ? res : y) && ((uintptr_t)yt & 15) == 0;
}

extern "C" int gk_norm_twin(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int d,
                            float eps, int zc, float *yt) {
    if (!gk_norm_twin_ok(d, x, res, y, yt)) return 0;
    if (res)
        norm_v4_launch<true, false>((cudaStream_t)s, 1, x, res, y, w, wdtype, d, eps, zc, nullptr, nullptr, 0, yt);
    else
        norm_v4_launch<false, false>((cudaStream_t)s, 1, x, nullptr, y, w, wdtype, d, eps, zc, nullptr, nullptr, 0, yt);
    return 1;
}

extern "C" void gk_qk_rope_kv(void *s, float *q, float *k, const float *v, int ntok, int nh, int nkv, int hd,
                              const void *qw, const void *kw, int wdtype, float eps, int zc, int rot,
                              const float *inv_freq, void *kc, void *vc, int kv_f16, int bs, int mbps,
                              const int32_t *seq, const int32_t *pos, const int32_t *btab) {
    if (ntok <= 0) return;
    rope_freq fr;
    const int half = rot / 2; /* host checks rot <= hd <= 256 */
    rope_fill_freq(&fr, inv_freq, half);
    qk_norm nm = {qw, kw, wdtype, zc, eps};
    dim3 grid((unsigned)ntok, (unsigned)(nh + nkv));
    if (g_norm_pre) g_norm_pre_n++;
    dl_launch(g_norm_pre ? dl_k_qk_rope_kv<true> : dl_k_qk_rope_kv<false>, grid, OP_T, 0, (cudaStream_t)s, q, k, v,
              nh, nkv, hd, half, nm, fr, kc, vc, kv_f16, bs, mbps, seq, pos, btab);
}

extern "C" void gk_kv_write(void *s, void *kc, void *vc, int kv_f16, const float *k, const float *v, int ntok,
                            int nkv, int hd, int bs, int mbps, const int32_t *seq, const int32_t *pos,
                            const int32_t *btab) {
    if (ntok <= 0) return;
    dl_launch(dl_k_kv_write, ntok, OP_T, 0, (cudaStream_t)s, kc, vc, kv_f16, k, v, nkv * hd, bs, mbps, seq, pos, btab);
}

extern "C" void gk_silu_mul(void *s, float *out, const float *gate, const float *up, size_t n) {
    if (!n) return;
    dl_launch(dl_k_silu_mul, grid1(n), OP_T, 0, (cudaStream_t)s, out, gate, up, n);
}

extern "C" void gk_add(void *s, float *y, const float *x, size_t n) {
    if (!n) return;
    dl_launch(dl_k_add, grid1(n), OP_T, 0, (cudaStream_t)s, y, x, n);
}

extern "C" void gk_gather_rows(void *s, float *dst, const float *src, const int32_t *idx, int n, int d) {
    for (int c = 0; c < n; c += GATHER_CHUNK) {
        gather_idx gi;
        int cn = n - c < GATHER_CHUNK ? n - c : GATHER_CHUNK;
        for (int i = 0; i < GATHER_CHUNK; i++) gi.i[i] = i < cn ? idx[c + i] : 0;
        dim3 grid((unsigned)cn, (unsigned)DL_CDIV(d, 4 * OP_T));
        dl_launch(dl_k_gather, grid, OP_T, 0, (cudaStream_t)s, dst + (int64_t)c * d, src, gi, d);
    }
}

extern "C" void gk_sigmoid_mul(void *s, float *y, const float *gate, size_t n) {
    if (!n) return;
    dl_launch(dl_k_sigmoid_mul, grid1(n), OP_T, 0, (cudaStream_t)s, y, gate, n);
}

extern "C" void gk_copy2d(void *s, float *dst, int dst_ld, const float *src, int src_ld, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    dim3 grid((unsigned)rows, (unsigned)DL_CDIV(cols, 4 * OP_T));
    dl_launch(dl_k_copy2d, grid, OP_T, 0, (cudaStream_t)s, dst, dst_ld, src, src_ld, cols);
}
