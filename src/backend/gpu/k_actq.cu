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
            const float4 v = ((const float4 *)xr)[i];
            a = fmaxf(fmaxf(a, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
        }
    } else {
        for (int i = threadIdx.x; i < k; i += blockDim.x) a = fmaxf(a, fabsf(xr[i]));
    }
    const float amax = dl_block_max(a, red);
    const float s = amax > 0.0f ? amax / 127.0f : 1.0f;
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
        q[i / 4] = dl_q8(v0, s) | (dl_q8(v1, s) << 8) | (dl_q8(v2, s) << 16) |
                   (dl_q8(v3, s) << 24);
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
            a = fmaxf(fmaxf(a, fmaxf(fabsf(dl_silu_mul1(g4.x, u4.x)), fabsf(dl_silu_mul1(g4.y, u4.y)))),
                      fmaxf(fabsf(dl_silu_mul1(g4.z, u4.z)), fabsf(dl_silu_mul1(g4.w, u4.w))));
        }
    } else {
        for (int i = threadIdx.x; i < k; i += blockDim.x) a = fmaxf(a, fabsf(dl_silu_mul1(gr[i], ur[i])));
    }
    const float amax = dl_block_max(a, red);
    const float s = amax > 0.0f ? amax / 127.0f : 1.0f;
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
        q[i / 4] = dl_q8(v0, s) | (dl_q8(v1, s) << 8) | (dl_q8(v2, s) << 16) | (dl_q8(v3, s) << 24);
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

extern "C" void gk_silu_actq_int8(void *s, float *out, int8_t *xq, float *xs, const float *gate, const float *up, int M,
                                  int k, int kp) {
    dl_launch(dl_k_silu_actq_int8, dim3((unsigned)M), AQ_T8, 0, (cudaStream_t)s, out, xq, xs, gate, up, k, kp);
}

extern "C" void gk_actq_fp8(void *s, float *xo, const float *x, int M, int k, int group,
                            float static_scale) {
    if (group <= 0 || group > k) group = k;
    dim3 grid((unsigned)M, (unsigned)DL_CDIV(k, group));
    dl_launch(dl_k_actq_fp8, grid, AQ_T, 0, (cudaStream_t)s, xo, x, k, group, static_scale);
}
