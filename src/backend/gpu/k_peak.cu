/* Peak-throughput microbenchmarks for the instructions the matmul kernels
 * use (fp32 FMA, packed fp16 FMA / fp16 dot2, int8 dp4a), measured in the
 * same run as the kernels so GEMM efficiency is relative to this device. */
#include "gpu_common.cuh"

#define PK_ITERS 4096
#define PK_CH 8

__global__ void dl_k_peak_fp32(float *out, float seed) {
    float a[PK_CH];
    for (int c = 0; c < PK_CH; c++) a[c] = seed + threadIdx.x * 1e-7f + c;
    const float b = 0.999f, d = 1e-4f;
    for (int it = 0; it < PK_ITERS; it++)
#pragma unroll
        for (int c = 0; c < PK_CH; c++) a[c] = fmaf(a[c], b, d);
    float s = 0.0f;
    for (int c = 0; c < PK_CH; c++) s += a[c];
    if (s == 12345.0f) out[threadIdx.x] = s;
}

#if defined(DOTLM_HIP) || defined(__HIPCC__)
/* HIP: the fp16 instruction the design uses is v_dot2_f32_f16. */
__global__ void dl_k_h2_peak(float *out, float seed) {
    float a[PK_CH];
    __half2 x = __floats2half2_rn(seed, 0.5f), y = __floats2half2_rn(0.25f, seed);
    for (int c = 0; c < PK_CH; c++) a[c] = (float)c;
    for (int it = 0; it < PK_ITERS; it++)
#pragma unroll
        for (int c = 0; c < PK_CH; c++) a[c] = dl_hdot2(x, y, a[c]);
    float s = 0.0f;
    for (int c = 0; c < PK_CH; c++) s += a[c];
    if (s == 12345.0f) out[threadIdx.x] = s;
}
#define H2_OPS 4.0
#else
__global__ void dl_k_h2_peak(float *out, float seed) {
    __half2 a[PK_CH];
    const __half2 b = __floats2half2_rn(0.999f, 0.998f), d = __floats2half2_rn(1e-3f, 2e-3f);
    for (int c = 0; c < PK_CH; c++) a[c] = __floats2half2_rn(seed + c, seed - c);
    for (int it = 0; it < PK_ITERS; it++)
#pragma unroll
        for (int c = 0; c < PK_CH; c++) a[c] = __hfma2(a[c], b, d);
    float s = 0.0f;
    for (int c = 0; c < PK_CH; c++) s += __low2float(a[c]) + __high2float(a[c]);
    if (s == 12345.0f) out[threadIdx.x] = s;
}
#define H2_OPS 4.0
#endif

__global__ void dl_k_i8_peak(int *out, int seed) {
    int a[PK_CH];
    const int b = 0x01020304 ^ seed, d = 0x7f7f0101;
    for (int c = 0; c < PK_CH; c++) a[c] = seed + c + (int)threadIdx.x;
    for (int it = 0; it < PK_ITERS; it++)
#pragma unroll
        for (int c = 0; c < PK_CH; c++) a[c] = dl_dp4a(b, d, a[c]);
    int s = 0;
    for (int c = 0; c < PK_CH; c++) s += a[c];
    if (s == 12345) out[threadIdx.x] = s;
}

/* Runs `which` (0 fp32, 1 h2, 2 dp4a) and returns ops per second. */
static double run_peak(cudaStream_t st, int which) {
    cudaDeviceProp p;
    int dev = 0;
    (void)cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) return 0.0;
    void *buf = nullptr;
    if (cudaMalloc(&buf, 4096) != cudaSuccess) return 0.0;
    const int threads = 256, blocks = p.multiProcessorCount * 8;
    cudaEvent_t e0, e1;
    (void)cudaEventCreate(&e0);
    (void)cudaEventCreate(&e1);
    float best = 1e30f;
    for (int rep = 0; rep < 4; rep++) {
        (void)cudaEventRecord(e0, st);
        if (which == 0) dl_k_peak_fp32<<<blocks, threads, 0, st>>>((float *)buf, 1.0f);
        else if (which == 1) dl_k_h2_peak<<<blocks, threads, 0, st>>>((float *)buf, 1.0f);
        else dl_k_i8_peak<<<blocks, threads, 0, st>>>((int *)buf, 3);
        (void)cudaEventRecord(e1, st);
        (void)cudaEventSynchronize(e1);
        float ms = 0.0f;
        (void)cudaEventElapsedTime(&ms, e0, e1);
        if (rep > 0 && ms < best) best = ms; /* first run warms up */
    }
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    (void)cudaFree(buf);
    const double per = which == 0 ? 2.0 : which == 1 ? H2_OPS : 8.0;
    return (double)blocks * threads * PK_ITERS * PK_CH * per / (best * 1e-3);
}

extern "C" double gk_peak_fp32(void *s) { return run_peak((cudaStream_t)s, 0); }
extern "C" double gk_peak_hfma2(void *s) { return run_peak((cudaStream_t)s, 1); }
extern "C" double gk_peak_dp4a(void *s) { return run_peak((cudaStream_t)s, 2); }
