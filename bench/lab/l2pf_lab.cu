/* L2 prefetch lab: can the HBM-idle time of a decode step's small kernels
 * (norms, RoPE, attention) and of a GEMV's last wave be filled by pulling
 * the next weight into L2, so the next GEMV reads part of it from L2?
 * Not part of the build; on a GPU machine:
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/l2pf bench/lab/l2pf_lab.cu && /tmp/l2pf
 * Kernels:
 *   k_read   a GEMV-like stream: block b reads its 64 KB of W (16-byte
 *            loads, L1 no-allocate, 4 in flight per thread), XORs them;
 *            optionally its last PB blocks then prefetch the head of the
 *            next weight (the "tail" scheme).
 *   k_small  one block spins C cycles (a norm / attention stand-in using
 *            no bandwidth); NB extra blocks prefetch a range meanwhile.
 * Prefetch modes: 1 prefetch.global.L2 per 128 B, 2 the same ::evict_last,
 * 3 cp.async.bulk.prefetch.L2 per 4 KB, 4 prefetch.global.L2 per 32 B.
 * Weights rotate over copies totalling > 8x the L2, so each read is cold
 * unless prefetched. Times are per iteration (events over ITERS). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static __device__ __forceinline__ uint4 ldw(const uint4 *p) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}

/* prefetch [p, p + n) into L2 with threads t of nt */
static __device__ __forceinline__ void pf_range(const char *p, size_t n, int mode, size_t t, size_t nt) {
    if (mode == 5 || mode == 6) { /* real loads: 5 every byte (16 B loads), 6 4 bytes per 32 B sector */
        uint32_t acc = 0;
        size_t st = mode == 5 ? 16 : 32;
#pragma unroll 4
        for (size_t o = t * st; o < n; o += nt * st) {
            if (mode == 5) { uint4 v = ldw((const uint4 *)(p + o)); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
            else { uint32_t v; asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p + o)); acc ^= v; }
        }
        if (acc == 0x9e3779b9u) *(volatile uint32_t *)p = acc; /* never: keeps the loads */
        return;
    }
    if (mode == 3) {
        for (size_t o = t * 4096; o < n; o += nt * 4096) {
            uint32_t sz = (uint32_t)((n - o) < 4096 ? (n - o) : 4096);
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p + o), "r"(sz) : "memory");
        }
        return;
    }
    size_t st = mode == 4 ? 32 : 128;
    for (size_t o = t * st; o < n; o += nt * st) {
        if (mode == 2) asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p + o));
        else asm volatile("prefetch.global.L2 [%0];" :: "l"(p + o));
    }
}

#define CH 4096 /* uint4 per block: 64 KB */
__global__ void __launch_bounds__(256) k_read(const uint4 *w, uint32_t *out, const char *pf, size_t pfn, int pfb, int mode) {
    const uint4 *b = w + (size_t)blockIdx.x * CH;
    uint32_t acc = 0;
#pragma unroll 1
    for (int i = threadIdx.x; i < CH; i += 256 * 4) {
        uint4 a0 = ldw(b + i), a1 = ldw(b + i + 256), a2 = ldw(b + i + 512), a3 = ldw(b + i + 768);
        acc ^= a0.x ^ a0.y ^ a0.z ^ a0.w ^ a1.x ^ a1.y ^ a1.z ^ a1.w ^ a2.x ^ a2.y ^ a2.z ^ a2.w ^ a3.x ^ a3.y ^ a3.z ^ a3.w;
    }
    out[blockIdx.x * 256 + threadIdx.x] = acc;
    if (pf && (int)blockIdx.x >= (int)gridDim.x - pfb) {
        size_t j = blockIdx.x - (gridDim.x - pfb);
        pf_range(pf, pfn, mode, j * 256 + threadIdx.x, (size_t)pfb * 256);
    }
}

__global__ void k_small(long long cyc, const char *pf, size_t pfn, int mode, uint32_t *out) {
    if (blockIdx.x == 0) {
        long long t0 = clock64();
        while (clock64() - t0 < cyc) { }
        if (threadIdx.x == 0) out[0] = (uint32_t)t0;
        return;
    }
    pf_range(pf, pfn, mode, (size_t)(blockIdx.x - 1) * 256 + threadIdx.x, (size_t)(gridDim.x - 1) * 256);
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    int dev = 0, nsm = 0, l2 = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    printf("SMs %d, L2 %d MB\n", nsm, l2 >> 20);
    const size_t pool = (size_t)1 << 31; /* 2 GB of weights */
    char *base;
    CK(cudaMalloc(&base, pool));
    CK(cudaMemset(base, 0x5a, pool));
    uint32_t *out;
    CK(cudaMalloc(&out, 64 << 20));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    auto timeit = [&](auto fn) {
        for (int i = 0; i < 10; i++) fn(i);
        CK(cudaEventRecord(e0, s));
        for (int i = 0; i < iters; i++) fn(i);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1000.0 / iters;
    };
    /* copy bandwidth */
    {
        size_t n = (size_t)1 << 30;
        double us = timeit([&](int) { CK(cudaMemcpyAsync(base + n, base, n / 2, cudaMemcpyDeviceToDevice, s)); });
        printf("copy bandwidth %.0f GB/s\n", 2.0 * (n / 2) / us / 1e3);
    }
    const size_t sizes[] = {(size_t)4 << 20, (size_t)8 << 20, (size_t)16 << 20, (size_t)24 << 20, (size_t)48 << 20, (size_t)96 << 20};
    const long long cycs[] = {6000, 16000};
    for (size_t S : sizes) {
        int nc = (int)(pool / S); if (nc > 64) nc = 64;
        int blocks = (int)(S / (CH * 16));
        auto W = [&](int i) { return base + (size_t)(i % nc) * S; };
        double rd = timeit([&](int i) { k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0); });
        double hot = timeit([&](int) { k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(0), out, nullptr, 0, 0, 0); });
        printf("\n== W %zu MB (%d blocks): read alone %.2f us = %.0f GB/s; same W every time (L2-hot) %.2f us\n", S >> 20, blocks, rd, S / rd / 1e3, hot);
        {   /* does a prefetch, finished long before, make the read L2-hot? */
            long long cy = 60000; /* ~30 us */
            double cold = timeit([&](int i) {
                k_small<<<1, 256, 0, s>>>(cy, nullptr, 0, 0, out);
                k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0);
            });
            double byload = timeit([&](int i) {
                k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out + (1 << 20), nullptr, 0, 0, 0);
                k_small<<<1, 256, 0, s>>>(cy, nullptr, 0, 0, out);
                k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0);
            });
            double rd1 = rd;
            printf("  after a 30 us spin: cold %.2f us; warmed by a read first: %.2f us (minus one read: %.2f)\n", cold, byload, byload - rd1);
            for (int mode = 1; mode <= 6; mode++) {
                double t = timeit([&](int i) {
                    k_small<<<1 + 132, 256, 0, s>>>(cy, W(i), S, mode, out);
                    k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0);
                });
                printf("    prefetched all of W (mode %d) during the spin: %.2f us (%+.2f vs cold)\n", mode, t, t - cold);
            }
        }
        if (getenv("HOTONLY")) continue;
        for (long long cy : cycs) {
            double sm = timeit([&](int) { k_small<<<1, 256, 0, s>>>(cy, nullptr, 0, 0, out); });
            double base_t = timeit([&](int i) {
                k_small<<<1, 256, 0, s>>>(cy, nullptr, 0, 0, out);
                k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0);
            });
            printf("  small %lld cyc alone %.2f us; small+read %.2f us\n", cy, sm, base_t);
            for (int mode : {1, 5, 6}) {
                for (size_t pfn : {(size_t)8 << 20, (size_t)16 << 20, S}) {
                    if (pfn > S) continue;
                    for (int nb : {32, 132}) {
                        double t = timeit([&](int i) {
                            k_small<<<1 + nb, 256, 0, s>>>(cy, W(i), pfn, mode, out);
                            k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0);
                        });
                        printf("    mode %d pf %2zu MB by %3d blocks: %.2f us (%+.2f)\n", mode, pfn >> 20, nb, t, t - base_t);
                    }
                }
            }
        }
        /* tail scheme: chain of reads, each read's last pfb blocks prefetch the next weight's head */
        double ch0 = timeit([&](int i) { k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, nullptr, 0, 0, 0); });
        printf("  chain no prefetch %.2f us\n", ch0);
        for (int mode : {1, 3}) for (int pfb : {132, 264, 528}) for (size_t pfn : {(size_t)4 << 20, (size_t)8 << 20, (size_t)16 << 20}) {
            if (pfb > blocks || pfn > S) continue;
            double t = timeit([&](int i) { k_read<<<blocks, 256, 0, s>>>((const uint4 *)W(i), out, W(i + 1), pfn, pfb, mode); });
            printf("    tail mode %d, last %d blocks prefetch %2zu MB: %.2f us (%+.2f)\n", mode, pfb, pfn >> 20, t, t - ch0);
        }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
