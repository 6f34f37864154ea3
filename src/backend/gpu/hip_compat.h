/* One source for CUDA and HIP. Kernels include this header (never the
 * vendor headers directly) and use only the names defined here for things
 * that differ between the two: runtime calls, warp width, shuffles and the
 * two dot-product instructions the design relies on.
 *
 *   DL_WARP            lanes per warp/wavefront: 32 on NVIDIA, 64 on gfx906.
 *                      Never write 32: reductions loop from DL_WARP/2 down.
 *   dl_shfl_xor(v, o)  butterfly exchange across the full warp.
 *   dl_dp4a(a, b, c)   c + dot(int8x4 a, int8x4 b), exact int32
 *                      (CUDA __dp4a -> PTX dp4a; HIP sdot4 -> v_dot4_i32_i8).
 *   dl_hdot2(a, b, c)  c + dot(half2 a, half2 b) with fp32 accumulation.
 *                      HIP: v_dot2_f32_f16 (products exact in fp32).
 *                      CUDA: one packed fma.rn.f16x2 pair, then widened into
 *                      c (products rounded to fp16: ~1e-3 relative).
 * No matrix-core instruction is reachable through this header. */
#pragma once

#if defined(DOTLM_HIP) || defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#define DL_WARP 64
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaStream_t hipStream_t
#define cudaEvent_t hipEvent_t
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceProp hipDeviceProp_t
#define cudaSetDevice hipSetDevice
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy

static __device__ __forceinline__ float dl_shfl_xor(float v, int o) { return __shfl_xor(v, o); }
static __device__ __forceinline__ int dl_shfl_xor_i(int v, int o) { return __shfl_xor(v, o); }
static __device__ __forceinline__ float dl_shfl(float v, int src) { return __shfl(v, src); }
static __device__ __forceinline__ int dl_dp4a(int a, int b, int c) {
    return __builtin_amdgcn_sdot4(a, b, c, false);
}
typedef _Float16 dl_h2v __attribute__((ext_vector_type(2)));
static __device__ __forceinline__ float dl_hdot2(__half2 a, __half2 b, float c) {
    dl_h2v va, vb;
    __builtin_memcpy(&va, &a, 4);
    __builtin_memcpy(&vb, &b, 4);
    return __builtin_amdgcn_fdot2(va, vb, c, false);
}
/* Two half2 pairs into one fp32 accumulator. */
static __device__ __forceinline__ float dl_hdot2x2(__half2 a0, __half2 b0, __half2 a1, __half2 b1,
                                                   float c) {
    return dl_hdot2(a1, b1, dl_hdot2(a0, b0, c));
}

#else /* CUDA */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define DL_WARP 32
static __device__ __forceinline__ float dl_shfl_xor(float v, int o) {
    return __shfl_xor_sync(0xffffffffu, v, o);
}
static __device__ __forceinline__ int dl_shfl_xor_i(int v, int o) {
    return __shfl_xor_sync(0xffffffffu, v, o);
}
static __device__ __forceinline__ float dl_shfl(float v, int src) {
    return __shfl_sync(0xffffffffu, v, src);
}
static __device__ __forceinline__ int dl_dp4a(int a, int b, int c) { return __dp4a(a, b, c); }
/* Two half2 pairs: packed mul + packed fma (fma.rn.f16x2), then both
 * lanes of the fp16 partial widened into the fp32 accumulator. */
static __device__ __forceinline__ float dl_hdot2x2(__half2 a0, __half2 b0, __half2 a1, __half2 b1,
                                                   float c) {
    __half2 p = __hmul2(a0, b0);
    p = __hfma2(a1, b1, p);
    float2 f = __half22float2(p);
    return c + f.x + f.y;
}
#endif

/* Butterfly sum over the whole warp; every lane gets the same value, and
 * the order of additions is fixed (deterministic). */
static __device__ __forceinline__ float dl_warp_sum(float v) {
    for (int o = DL_WARP / 2; o > 0; o >>= 1) v += dl_shfl_xor(v, o);
    return v;
}

/* Log2 of a power of two, at compile time. */
static constexpr __host__ __device__ int dl_lg2(int v) { return v <= 1 ? 0 : 1 + dl_lg2(v / 2); }
static __device__ __forceinline__ float dl_shfl_xor_v(float v, int o) { return dl_shfl_xor(v, o); }
static __device__ __forceinline__ int dl_shfl_xor_v(int v, int o) { return dl_shfl_xor_i(v, o); }
/* One step of dl_warp_sum_scatter: H pairs of values, lanes O apart
 * (templates, so that every index is a constant and a[] stays in
 * registers), then the next step. */
template <int H, int O, typename V, int N>
static __device__ __forceinline__ void dl_scatter_step(V (&a)[N], int lane) {
    if constexpr (H >= 1) {
        const bool up = (lane & O) != 0;
#pragma unroll
        for (int i = 0; i < H; i++) {
#if DL_WARP == 64
            /* gfx906: both values read first; picking a[i] or a[i + H] by
             * address put a[] in scratch at N = 32 (tools/gpu_gate.sh) */
            const V lo = a[i], hi = a[i + H];
            const V send = up ? lo : hi, keep = up ? hi : lo;
#else
            const V send = up ? a[i] : a[i + H], keep = up ? a[i + H] : a[i];
#endif
            a[i] = keep + dl_shfl_xor_v(send, O);
        }
        dl_scatter_step<H / 2, O / 2, V, N>(a, lane);
    }
}
/* The warp sums of a lane's N values (N a power of two, <= DL_WARP) as N
 * dl_warp_sum calls make them (the same pairs added in the same steps, so
 * every bit), but each lane ends with one of them: value j = lane >>
 * (lg2(DL_WARP) - lg2(N)), in a[0]. In each of the butterfly's first
 * lg2(N) steps a lane keeps half of its values (the upper half where its
 * lane bit of that step is set) and adds its partner's copies of those:
 * N - 1 shuffles there instead of N lg2(N); the steps left are plain
 * butterfly steps on a[0]. V: float or int. */
template <typename V, int N> static __device__ __forceinline__ void dl_warp_sum_scatter(V (&a)[N], int lane) {
    static_assert(N >= 1 && (N & (N - 1)) == 0 && N <= DL_WARP, "a power of two up to the warp size");
    dl_scatter_step<N / 2, DL_WARP / 2, V, N>(a, lane);
#pragma unroll
    for (int o = DL_WARP / (2 * N); o > 0; o >>= 1) a[0] += dl_shfl_xor_v(a[0], o);
}
/* The warp sums of a lane's R x MR values acc (R MR a power of two, <=
 * DL_WARP) by dl_warp_sum_scatter: returns the sum this lane holds, of
 * value *j = r MR + m, and *hold = whether the lane is the first of those
 * holding it (the one to store it). */
template <typename V, int R, int MR>
static __device__ __forceinline__ V dl_warp_sum_rows(const V (&acc)[R][MR], int lane, int *j, bool *hold) {
    constexpr int N = R * MR, SH = dl_lg2(DL_WARP) - dl_lg2(N); /* lanes 2^SH apart hold distinct values */
    V a[N];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int m = 0; m < MR; m++) a[r * MR + m] = acc[r][m];
    dl_warp_sum_scatter<V, N>(a, lane);
    *j = lane >> SH;
    *hold = (lane & ((1 << SH) - 1)) == 0;
    return a[0];
}
static __device__ __forceinline__ float dl_warp_max(float v) {
    for (int o = DL_WARP / 2; o > 0; o >>= 1) v = fmaxf(v, dl_shfl_xor(v, o));
    return v;
}
