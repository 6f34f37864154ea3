/* Activation quantization (one block per token row).
 * int8 (W8A8, as FORMATS.md and quant/actq.h define it): xs = amax(|x|)/127
 *   (1 when amax == 0), xq = round-half-even(x / xs) clamped to +-127 (NaN
 *   -> -127, as the CPU), padded with zeros up to kp columns.
 * fp8 (declared fp8 activation policies): per (row, group) scale
 *   amax/448 (1 when 0; or a static scale), xo = e4m3(x / scale) * scale, i.e. the
 *   dequantized value the fp8 product would see; RNE, saturating at 448. */
#include "gpu_common.cuh"

#define AQ_T 256
#define AQ_T8 1024 /* int8: one row per block, wide so M = 1 is not latency-bound */

/* int8 quantization of x[m, :]; grid (M, ceil(kp / AQ_CH)): every block
 * recomputes the row's amax (cheap, from L2) and quantizes its own chunk,
 * so a single long row is spread over several SMs. */
#define AQ_CH (4 * AQ_T8)

__global__ void __launch_bounds__(AQ_T8)
    dl_k_actq_int8(int8_t *__restrict__ xq, float *__restrict__ xs, const float *__restrict__ x, int k,
                   int kp) {
    dl_pdl_enter();
    __shared__ float red[AQ_T8 / 16 + 1];
    const int64_t m = blockIdx.x;
    const float *xr = x + m * k;
    const bool vec = (k & 3) == 0 && ((uintptr_t)xr & 15) == 0;
    float a = 0.0f;
    if (vec) {
        for (int i = threadIdx.x; i < k / 4; i += blockDim.x) {
            a = dl_amax4(a, ((const float4 *)xr)[i]);
        }
    } else {
        for (int i = threadIdx.x; i < k; i += blockDim.x) a = fmaxf(a, fabsf(xr[i]));
    }
    const float amax = dl_block_max(a, red);
    const float s = dl_q8_scale(amax);
    uint32_t *q = (uint32_t *)(xq + m * kp); /* kp % 16 == 0: 4-byte aligned rows */
    const int i0 = blockIdx.y * AQ_CH, i1 = min(kp, i0 + AQ_CH);
    for (int i = i0 + 4 * threadIdx.x; i < i1; i += 4 * blockDim.x) {
        float v0, v1, v2, v3;
        if (vec && i + 3 < k) {
            const float4 t = *(const float4 *)(xr + i);
            v0 = t.x, v1 = t.y, v2 = t.z, v3 = t.w;
        } else {
            v0 = i < k ? xr[i] : 0.0f;
            v1 = i + 1 < k ? xr[i + 1] : 0.0f;
            v2 = i + 2 < k ? xr[i + 2] : 0.0f;
            v3 = i + 3 < k ? xr[i + 3] : 0.0f;
        }
        q[i / 4] = dl_q8x4(v0, v1, v2, v3, s);
    }
    if (blockIdx.y == 0 && threadIdx.x == 0) xs[m] = s;
}

/* h = SiLU(gate) * up for row m (out[m, :k], as dl_k_silu_mul) and its int8
 * codes (as dl_k_actq_int8 of h): bitwise the two kernels in one launch.
 * One block per row: out may alias gate or up (the MLP computes in place),
 * so the row is read whole for its amax before the block's barrier and
 * each element is then read and written by the same thread. */
__global__ void __launch_bounds__(AQ_T8)
    dl_k_silu_actq_int8(float *__restrict__ out, int8_t *__restrict__ xq, float *__restrict__ xs,
                        const float *__restrict__ gate, const float *__restrict__ up, int k, int kp) {
    dl_pdl_enter();
    __shared__ float red[AQ_T8 / 16 + 1];
    const int64_t m = blockIdx.x;
    const float *gr = gate + m * k, *ur = up + m * k;
    float *orow = out + m * k;
    const bool vec = (k & 3) == 0 && (((uintptr_t)gr | (uintptr_t)ur | (uintptr_t)orow) & 15) == 0;
    float a = 0.0f;
    if (vec) {
        for (int i = threadIdx.x; i < k / 4; i += blockDim.x) {
            const float4 g4 = ((const float4 *)gr)[i], u4 = ((const float4 *)ur)[i];
            a = dl_amax4(a, make_float4(dl_silu_mul1(g4.x, u4.x), dl_silu_mul1(g4.y, u4.y), dl_silu_mul1(g4.z, u4.z),
                                        dl_silu_mul1(g4.w, u4.w)));
        }
    } else {
        for (int i = threadIdx.x; i < k; i += blockDim.x) a = fmaxf(a, fabsf(dl_silu_mul1(gr[i], ur[i])));
    }
    const float amax = dl_block_max(a, red);
    const float s = dl_q8_scale(amax);
    uint32_t *q = (uint32_t *)(xq + m * kp);
    for (int i = 4 * threadIdx.x; i < kp; i += 4 * blockDim.x) {
        float v0, v1, v2, v3;
        if (vec && i + 3 < k) {
            const float4 g4 = *(const float4 *)(gr + i), u4 = *(const float4 *)(ur + i);
            v0 = dl_silu_mul1(g4.x, u4.x), v1 = dl_silu_mul1(g4.y, u4.y);
            v2 = dl_silu_mul1(g4.z, u4.z), v3 = dl_silu_mul1(g4.w, u4.w);
            *(float4 *)(orow + i) = make_float4(v0, v1, v2, v3);
        } else {
            v0 = i < k ? dl_silu_mul1(gr[i], ur[i]) : 0.0f;
            v1 = i + 1 < k ? dl_silu_mul1(gr[i + 1], ur[i + 1]) : 0.0f;
            v2 = i + 2 < k ? dl_silu_mul1(gr[i + 2], ur[i + 2]) : 0.0f;
            v3 = i + 3 < k ? dl_silu_mul1(gr[i + 3], ur[i + 3]) : 0.0f;
            if (i < k) orow[i] = v0;
            if (i + 1 < k) orow[i + 1] = v1;
            if (i + 2 < k) orow[i + 2] = v2;
            if (i + 3 < k) orow[i + 3] = v3;
        }
        q[i / 4] = dl_q8x4(v0, v1, v2, v3, s);
    }
    if (threadIdx.x == 0) xs[m] = s;
}

/* dl_k_silu_actq_int8 for rows that fit the block's registers (d % 4 == 0,
 * 16-byte aligned rows, kp <= 4 * AQ_T8 * NV): each thread loads its NV
 * float4 chunks c = tid + j * AQ_T8 of gate and up at once (one round trip
 * instead of one per chunk and pass), keeps h = SiLU(gate) * up in
 * registers for the amax and the codes, and writes h and the codes of the
 * same chunks. Bitwise dl_k_silu_actq_int8: the same h per element, the
 * same amax (a max ignores order), the same scale and codes; every
 * element is still read and written by one thread, after the loads and
 * before nothing else reads it (out may alias gate or up). */
template <int NV>
__global__ void __launch_bounds__(AQ_T8)
    dl_k_silu_actq_v4(float *__restrict__ out, int8_t *__restrict__ xq, float *__restrict__ xs,
                      const float *__restrict__ gate, const float *__restrict__ up, int k, int kp) {
    dl_pdl_enter();
    __shared__ float red[AQ_T8 / 16 + 1];
    const int64_t m = blockIdx.x;
    const float4 *gr = (const float4 *)(gate + m * k), *ur = (const float4 *)(up + m * k);
    float4 *orow = (float4 *)(out + m * k);
    const int n4 = k / 4;
    float4 g4[NV], u4[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = threadIdx.x + j * AQ_T8;
        g4[j] = c < n4 ? gr[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        u4[j] = c < n4 ? ur[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float a = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = threadIdx.x + j * AQ_T8;
        if (c >= n4) continue;
        float4 h;
        h.x = dl_silu_mul1(g4[j].x, u4[j].x), h.y = dl_silu_mul1(g4[j].y, u4[j].y);
        h.z = dl_silu_mul1(g4[j].z, u4[j].z), h.w = dl_silu_mul1(g4[j].w, u4[j].w);
        g4[j] = h;
        orow[c] = h;
        a = dl_amax4(a, h);
    }
    const float amax = dl_block_max(a, red);
    const float s = dl_q8_scale(amax);
    uint32_t *q = (uint32_t *)(xq + m * kp);
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = threadIdx.x + j * AQ_T8;
        if (c < n4)
            q[c] = dl_q8x4(g4[j].x, g4[j].y, g4[j].z, g4[j].w, s);
        else if (c < kp / 4)
            q[c] = 0u; /* padding codes: dl_q8(0) */
    }
    if (threadIdx.x == 0) xs[m] = s;
}

/* Nearest e4m3fn value of a (finite), RNE, saturating at +-448. */
static __device__ __forceinline__ float e4m3_round(float a) {
    float s = a < 0.0f ? -1.0f : 1.0f;
    float v = fabsf(a);
    if (!(v == v)) return a;
    if (v >= 448.0f) return s * 448.0f;
    int e;
    frexpf(v, &e);             /* v = f * 2^e, f in [0.5, 1) -> unbiased exponent e-1 */
    int ue = e - 1;
    if (ue < -6) ue = -6;      /* subnormal spacing 2^-9 */
    float q = ldexpf(rintf(ldexpf(v, 3 - ue)), ue - 3);
    return s * fminf(q, 448.0f);
}

__global__ void __launch_bounds__(AQ_T)
    dl_k_actq_fp8(float *__restrict__ xo, const float *__restrict__ x, int k, int group,
                  float static_scale) {
    dl_pdl_enter();
    __shared__ float red[AQ_T / 16 + 1];
    const int64_t m = blockIdx.x;
    const int g0 = blockIdx.y * group;
    const int g1 = min(k, g0 + group);
    const float *xr = x + m * k;
    float s = static_scale;
    if (!(s > 0.0f)) {
        float a = 0.0f;
        for (int i = g0 + threadIdx.x; i < g1; i += blockDim.x) a = fmaxf(a, fabsf(xr[i]));
        const float amax = dl_block_max(a, red);
        s = amax > 0.0f ? amax / 448.0f : 1.0f;
    }
    for (int i = g0 + threadIdx.x; i < g1; i += blockDim.x) xo[m * k + i] = e4m3_round(xr[i] / s) * s;
}

extern "C" void gk_actq_int8(void *s, int8_t *xq, float *xs, const float *x, int M, int k, int kp) {
    dim3 grid((unsigned)M, (unsigned)DL_CDIV(kp, AQ_CH));
    dl_launch(dl_k_actq_int8, grid, AQ_T8, 0, (cudaStream_t)s, xq, xs, x, k, kp);
}

/* Launches of the register-resident silu_actq (gk_silu_actq_v4_set: on by
 * default; off runs the two-pass kernel, the same bits) and their count. */
static int g_sq_v4 = 1;
static unsigned long long g_sq_v4_n;
extern "C" void gk_silu_actq_v4_set(int on) { g_sq_v4 = on != 0; }
extern "C" unsigned long long gk_silu_actq_v4_launches(void) { return g_sq_v4_n; }

extern "C" void gk_silu_actq_int8(void *s, float *out, int8_t *xq, float *xs, const float *gate, const float *up, int M,
                                  int k, int kp) {
    const int nv = DL_CDIV(kp / 4, AQ_T8); /* float4 chunks per thread */
    const bool al = (((uintptr_t)out | (uintptr_t)gate | (uintptr_t)up) & 15) == 0; /* 16-byte rows */
    const bool v4 = g_sq_v4 && k % 4 == 0 && al && nv <= 4;
    if (v4) {
        g_sq_v4_n++;
        auto kern = nv <= 1 ? dl_k_silu_actq_v4<1> : nv == 2 ? dl_k_silu_actq_v4<2> : nv == 3 ? dl_k_silu_actq_v4<3>
                                                                                            : dl_k_silu_actq_v4<4>;
        dl_launch(kern, dim3((unsigned)M), AQ_T8, 0, (cudaStream_t)s, out, xq, xs, gate, up, k, kp);
        return;
    }
    dl_launch(dl_k_silu_actq_int8, dim3((unsigned)M), AQ_T8, 0, (cudaStream_t)s, out, xq, xs, gate, up, k, kp);
}

extern "C" void gk_actq_fp8(void *s, float *xo, const float *x, int M, int k, int group,
                            float static_scale) {
    if (group <= 0 || group > k) group = k;
    dim3 grid((unsigned)M, (unsigned)DL_CDIV(k, group));
    dl_launch(dl_k_actq_fp8, grid, AQ_T, 0, (cudaStream_t)s, xo, x, k, group, static_scale);
}
