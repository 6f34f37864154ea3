/* Chain lab: what one dependent small kernel costs on the critical path of a
 * decode step, outside the engine. A decode step is a chain: weight-streaming
 * GEMVs with small kernels between them (norms, RoPE, attention, combine,
 * activation quantization), each reading what the kernel before it wrote.
 * Not part of the build; on a GPU machine:
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/chain_lab bench/lab/chain_lab.cu
 *   /tmp/chain_lab [LAYERS]
 * Kernels:
 *   small<B,T>  B blocks of T threads: after griddepcontrol.wait each block
 *               reads the 4096 floats the previous kernel wrote, reduces
 *               their squares (a norm's shape), writes 4096 floats scaled
 *               by the result; it lets the next kernel launch right after
 *               its wait, as the engine's small kernels do.
 *   gemv        a read-only stream of S bytes (grid-stride, 8 blocks of 4
 *               warps per SM, 4 x 16-byte loads in flight per lane, issued
 *               before its wait) that reads the 4096 floats too (so it
 *               depends on the kernel before it) and writes 4096 floats.
 * Chains, each of LAYERS repeats, captured into a CUDA graph and replayed
 * (programmatic launches, as the engine's decode graph), plain launches
 * without PDL for comparison; us per repeat:
 *   small x n      n small kernels back to back: a dependent kernel's
 *                  latency with nothing to hide behind
 *   gemv           the GEMV alone, back to back
 *   gemv + small   one GEMV then one small kernel: what the small kernel
 *                  adds behind a GEMV (the difference with "gemv")
 * The decode floor (weight bytes / copy bandwidth) cannot be approached
 * closer than these fixed costs allow; docs/gpu_backend.md, "The fixed
 * costs of a decode step", uses the figures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include <string>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static __device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
static __device__ __forceinline__ void pdl_go() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

#define D 4096

/* B blocks, each: its share of x (blocks split D), a block reduction of
 * the squares of ALL of x (every block reads x whole, as a norm would with
 * one block), then its share of y = x * rsqrt(mean). */
template <int T>
__global__ void __launch_bounds__(T) k_small(const float *__restrict__ x, float *__restrict__ y) {
    pdl_wait();
    pdl_go();
    __shared__ float red[T / 32];
    float s = 0.f;
    float v[D / T];
#pragma unroll
    for (int i = 0; i < D / T; i++) {
        v[i] = x[threadIdx.x + i * T];
        s = fmaf(v[i], v[i], s);
    }
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    float t = 0.f;
#pragma unroll
    for (int i = 0; i < T / 32; i++) t += red[i];
    const float r = rsqrtf(t / D + 1e-6f);
    const int per = D / gridDim.x, i0 = blockIdx.x * per;
    for (int i = threadIdx.x; i < per; i += T) y[i0 + i] = x[i0 + i] * r;
}

/* grid-stride read of n16 16-byte chunks (issued before the wait), then
 * y[i] = x[i] + xor of what this block read (x: the previous kernel's). */
__global__ void __launch_bounds__(128) k_gemv(const uint4 *__restrict__ w, size_t n16, const float *__restrict__ x,
                                              float *__restrict__ y) {
    const size_t T = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t acc = 0;
    uint4 v[4];
    bool first = true;
    for (; i < n16; i += 4 * T) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const uint4 *p = w + i + T * u;
            if (i + T * u < n16)
                asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p));
            else v[u] = make_uint4(0, 0, 0, 0);
        }
        if (first) {
            /* the first group's values feed a store that cannot happen: the
             * loads stay above the wait */
            uint32_t dep = v[0].x ^ v[1].y ^ v[2].z ^ v[3].w;
            if (blockDim.x == 0u) y[0] = __uint_as_float(dep);
            pdl_wait();
            first = false;
        }
#pragma unroll
        for (int u = 0; u < 4; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (first) pdl_wait();
    pdl_go();
    for (int o = 16; o; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    const int nb = gridDim.x < 32 ? gridDim.x : 32; /* the first 32 blocks write y: 128 floats each */
    if (blockIdx.x < (unsigned)nb && threadIdx.x < D / nb)
        for (int k = threadIdx.x; k < D / nb; k += 128) y[blockIdx.x * (D / nb) + k] = x[blockIdx.x * (D / nb) + k] + (float)(acc & 1u);
}

__global__ void k_fill(uint32_t *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = (h & 0x3f7fffffu) | 0x3c000000u; /* finite floats in [2^-7, 2) */
    }
}

struct ctx {
    cudaStream_t st;
    int pdl, sms;
    float *a, *b; /* the activation ping-pong */
    const uint4 *w;
    size_t wbytes, wcopies;
    size_t wi; /* rotating weight copy */
};

static void launch_small(ctx &c, int blocks, int threads) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cfg.stream = c.st;
    cfg.attrs = at;
    cfg.numAttrs = c.pdl;
    const float *x = c.a;
    float *y = c.b;
    void *args[] = {(void *)&x, (void *)&y};
    void *fn = threads == 256 ? (void *)k_small<256> : threads == 1024 ? (void *)k_small<1024> : (void *)k_small<128>;
    CK(cudaLaunchKernelExC(&cfg, fn, args));
    float *t = c.a; c.a = c.b; c.b = t;
}

static void launch_gemv(ctx &c) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(c.sms * 8);
    cfg.blockDim = dim3(128);
    cfg.stream = c.st;
    cfg.attrs = at;
    cfg.numAttrs = c.pdl;
    const uint4 *w = c.w + (c.wi++ % c.wcopies) * (c.wbytes / 16);
    size_t n16 = c.wbytes / 16;
    const float *x = c.a;
    float *y = c.b;
    void *args[] = {(void *)&w, (void *)&n16, (void *)&x, (void *)&y};
    CK(cudaLaunchKernelExC(&cfg, (void *)k_gemv, args));
    float *t = c.a; c.a = c.b; c.b = t;
}

/* pattern: 'g' a GEMV, 's' a small kernel (blocks x threads); us per repeat,
 * as a captured graph of `layers` repeats replayed 5 times (best of 5) */
static double time_chain(ctx &c, const char *pat, int layers, int blocks, int threads) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < layers; l++)
        for (const char *p = pat; *p; p++) *p == 'g' ? launch_gemv(c) : launch_small(c, blocks, threads);
    CK(cudaStreamEndCapture(c.st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaGraphLaunch(ge, c.st));
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(e0, c.st));
        CK(cudaGraphLaunch(ge, c.st));
        CK(cudaEventRecord(e1, c.st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        best = ms * 1e3 / layers < best ? ms * 1e3 / layers : best;
    }
    CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
    return best;
}

int main(int argc, char **argv) {
    const int layers = argc > 1 ? atoi(argv[1]) : 200;
    ctx c = {};
    CK(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
    const size_t big = (size_t)1 << 30;
    void *wb, *cb;
    CK(cudaMalloc(&wb, big)); CK(cudaMalloc(&cb, big));
    CK(cudaMalloc(&c.a, D * 4)); CK(cudaMalloc(&c.b, D * 4));
    k_fill<<<1024, 256, 0, c.st>>>((uint32_t *)wb, big / 4, 11u);
    k_fill<<<16, 256, 0, c.st>>>((uint32_t *)c.a, D, 5u);
    k_fill<<<16, 256, 0, c.st>>>((uint32_t *)c.b, D, 6u);
    /* copy bandwidth, as dotlm_gpu_bench: 1 GiB, (read + written) / time */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int i = 0; i < 2; i++) CK(cudaMemcpyAsync(cb, wb, big, cudaMemcpyDeviceToDevice, c.st));
    CK(cudaEventRecord(e0, c.st));
    for (int i = 0; i < 10; i++) CK(cudaMemcpyAsync(cb, wb, big, cudaMemcpyDeviceToDevice, c.st));
    CK(cudaEventRecord(e1, c.st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double copy_bw = 2.0 * big * 10 / (ms * 1e-3);
    CK(cudaFree(cb));
    c.w = (const uint4 *)wb;
    printf("chain lab: %d SMs, copy D2D (read+write) %.1f GB/s, %d repeats per graph, best of 5 replays\n", c.sms,
           copy_bw / 1e9, layers);

    struct sh { int blocks, threads; const char *what; };
    const sh smalls[] = {{1, 256, "1 x 256 (norm)"}, {1, 1024, "1 x 1024"}, {40, 128, "40 x 128 (qk_rope_kv)"},
                         {132, 128, "132 x 128"}};
    const size_t wsz[] = {(size_t)16 << 20, (size_t)25 << 20, (size_t)50 << 20, (size_t)100 << 20};
    printf("\nus per repeat (PDL graph / plain graph)\n");
    for (const sh &s : smalls) {
        for (int pdl = 1; pdl >= 0; pdl--) {
            c.pdl = pdl;
            c.wbytes = wsz[0]; c.wcopies = 16;
            const double t1 = time_chain(c, "s", layers, s.blocks, s.threads);
            printf("%-24s %-5s small x1 %6.2f", s.what, pdl ? "pdl" : "plain", t1);
            for (size_t wbytes : wsz) {
                c.wbytes = wbytes;
                c.wcopies = big / wbytes < 16 ? big / wbytes : 16;
                const double tg = time_chain(c, "g", layers, s.blocks, s.threads);
                const double tgs = time_chain(c, "gs", layers, s.blocks, s.threads);
                printf(" | %3zu MB: gemv %6.2f (%5.1f%%) +small %6.2f", wbytes >> 20, tg,
                       100.0 * wbytes / (tg * 1e-6) / copy_bw, tgs - tg);
            }
            printf("\n");
        }
    }
    c.pdl = 1;
    c.wbytes = wsz[0]; c.wcopies = 16;
    printf("\nsmall kernels back to back, PDL graph, 1 x 256: x2 %.2f, x4 %.2f us per repeat\n",
           time_chain(c, "ss", layers, 1, 256), time_chain(c, "ssss", layers, 1, 256));
    CK(cudaGetLastError());
    return 0;
}
