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
 * and decode attention (32 query heads, 8 KV heads, head_dim 128, fp16 K/V
 * contiguous per KV head, one token after L positions, rotating K/V copies
 * so each repeat reads DRAM) behind a small kernel, in two shapes:
 *   split+combine  blocks of 32 positions x 1 query head (4 warps of 8
 *                  keys) writing partials, then a combine block per head:
 *                  the engine's split shape at 512 positions, simplified
 *   whole, W warps one block per query head, W warps over all L positions,
 *                  merged in the block: one launch, no partials
 * each checked against a float64 reference (max relative error printed).
 * The decode floor (weight bytes / copy bandwidth) cannot be approached
 * closer than these fixed costs allow; docs/gpu_backend.md, "The fixed
 * costs of a decode step", uses the figures. */
#include <cuda_fp16.h>
#include <math.h>
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


/* Decode attention over a contiguous fp16 K/V cache: 32 query heads, 8 KV
 * heads (GQA 4), head_dim 128, L positions, one token. Lanes: 16 per key
 * (8 fp16 each), so one 16-byte load per lane covers 2 keys; a batch is 8
 * keys (4 K + 4 V loads per lane issued before any is used); online softmax
 * in the log2 domain per half-warp, halves merged by shuffles. q is what
 * the kernel ahead wrote (4096 floats); the output (4096 floats) feeds the
 * kernel after. */
#define AH 32
#define AKV 8
#define AD 128
struct att_acc {
    float m, l, o[8];
};
static __device__ __forceinline__ void att_batch(att_acc &a, const float (&q)[8], const uint4 *kp, const uint4 *vp) {
    uint4 kv[4], vv[4];
#pragma unroll
    for (int j = 0; j < 4; j++) kv[j] = kp[j * 2 * (AD / 8)], vv[j] = vp[j * 2 * (AD / 8)];
    float sc[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const __half2 *h = (const __half2 *)&kv[j];
        float d = 0.f;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(h[i]);
            d = fmaf(q[2 * i], f.x, d);
            d = fmaf(q[2 * i + 1], f.y, d);
        }
#pragma unroll
        for (int o = 8; o; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        sc[j] = d;
    }
    float mn = a.m;
#pragma unroll
    for (int j = 0; j < 4; j++) mn = fmaxf(mn, sc[j]);
    const float corr = exp2f(a.m - mn);
    a.l *= corr;
#pragma unroll
    for (int i = 0; i < 8; i++) a.o[i] *= corr;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float pj = exp2f(sc[j] - mn);
        a.l += pj;
        const __half2 *h = (const __half2 *)&vv[j];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(h[i]);
            a.o[2 * i] = fmaf(pj, f.x, a.o[2 * i]);
            a.o[2 * i + 1] = fmaf(pj, f.y, a.o[2 * i + 1]);
        }
    }
    a.m = mn;
}
/* merge the two half-warps (keys even / odd) */
static __device__ __forceinline__ void att_halves(att_acc &a) {
    const float mo = __shfl_xor_sync(0xffffffffu, a.m, 16), lo = __shfl_xor_sync(0xffffffffu, a.l, 16);
    const float mt = fmaxf(a.m, mo), c0 = exp2f(a.m - mt), c1 = exp2f(mo - mt);
    a.l = a.l * c0 + lo * c1;
#pragma unroll
    for (int i = 0; i < 8; i++) a.o[i] = a.o[i] * c0 + __shfl_xor_sync(0xffffffffu, a.o[i], 16) * c1;
    a.m = mt;
}
static __device__ __forceinline__ void att_q(float (&q)[8], const float *x, int h, int sub) {
    const float sc = 0.08838834764831845f * 1.4426950408889634f; /* 1/sqrt(128) * log2 e */
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = x[h * AD + sub * 8 + i] * sc;
}
/* the warps' (m, l, o) through shared memory, merged in warp order by the
 * first AD threads; writes o / l (norm = 1) or the partial (m, l, o) */
template <int W>
static __device__ __forceinline__ void att_block_merge(const att_acc &a, float *out, float *pm, float *pl, bool norm) {
    __shared__ float wm[W], wl[W], wo[W][AD];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, sub = lane & 15;
    if (lane == 0) wm[w] = a.m, wl[w] = a.l;
    if (lane < 16)
#pragma unroll
        for (int i = 0; i < 8; i++) wo[w][sub * 8 + i] = a.o[i];
    __syncthreads();
    if (threadIdx.x < AD) {
        float M = wm[0];
        for (int i = 1; i < W; i++) M = fmaxf(M, wm[i]);
        float L = 0.f, O = 0.f;
        for (int i = 0; i < W; i++) {
            const float c = exp2f(wm[i] - M);
            L = fmaf(wl[i], c, L);
            O = fmaf(wo[i][threadIdx.x], c, O);
        }
        if (norm) out[threadIdx.x] = O / L;
        else {
            out[threadIdx.x] = O;
            if (threadIdx.x == 0) *pm = M, *pl = L;
        }
    }
}
/* split: block (segment of 32 positions, query head), 4 warps of 8 keys;
 * writes the segment's partial (the engine's split kernel at 512, gb = 1) */
__global__ void __launch_bounds__(128) k_att_split(const float *__restrict__ x, const __half *__restrict__ kc,
                                                   const __half *__restrict__ vc, int L, float *__restrict__ pm,
                                                   float *__restrict__ pl, float *__restrict__ po) {
    pdl_wait();
    pdl_go();
    const int seg = blockIdx.x, h = blockIdx.y, kvh = h / (AH / AKV), lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int sub = lane & 15, kg = lane >> 4, p0 = seg * 32 + w * 8;
    float q[8];
    att_q(q, x, h, sub);
    att_acc a = {-INFINITY, 0.f, {0, 0, 0, 0, 0, 0, 0, 0}};
    const size_t base = ((size_t)kvh * L + p0 + kg) * AD + sub * 8;
    att_batch(a, q, (const uint4 *)(kc + base), (const uint4 *)(vc + base));
    att_halves(a);
    const int ns = gridDim.x;
    att_block_merge<4>(a, po + ((size_t)h * ns + seg) * AD, pm + h * ns + seg, pl + h * ns + seg, false);
}
/* combine: block per head, thread per dim, segments merged in order */
__global__ void __launch_bounds__(128) k_att_combine(const float *__restrict__ pm, const float *__restrict__ pl,
                                                     const float *__restrict__ po, int ns, float *__restrict__ y) {
    pdl_wait();
    pdl_go();
    const int h = blockIdx.x, d = threadIdx.x;
    float M = pm[h * ns];
    for (int s = 1; s < ns; s++) M = fmaxf(M, pm[h * ns + s]);
    float L = 0.f, O = 0.f;
    for (int s = 0; s < ns; s++) {
        const float c = exp2f(pm[h * ns + s] - M);
        L = fmaf(pl[h * ns + s], c, L);
        O = fmaf(po[((size_t)h * ns + s) * AD + d], c, O);
    }
    y[h * AD + d] = O / L;
}
/* whole: block per query head, W warps over all L positions (batches of 8
 * keys), merged in the block: no combine launch */
template <int W>
__global__ void __launch_bounds__(W * 32) k_att_whole(const float *__restrict__ x, const __half *__restrict__ kc,
                                                      const __half *__restrict__ vc, int L, float *__restrict__ y) {
    pdl_wait();
    pdl_go();
    const int h = blockIdx.x, kvh = h / (AH / AKV), lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int sub = lane & 15, kg = lane >> 4, per = L / W;
    float q[8];
    att_q(q, x, h, sub);
    att_acc a = {-INFINITY, 0.f, {0, 0, 0, 0, 0, 0, 0, 0}};
    for (int p0 = w * per; p0 < (w + 1) * per; p0 += 8) {
        const size_t base = ((size_t)kvh * L + p0 + kg) * AD + sub * 8;
        att_batch(a, q, (const uint4 *)(kc + base), (const uint4 *)(vc + base));
    }
    att_halves(a);
    att_block_merge<W>(a, y + h * AD, nullptr, nullptr, true);
}

/* fp16 values in [-1, 1) from a hash */
__global__ void k_fill_h(__half *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
        p[i] = __float2half((float)(h & 0xffffu) / 32768.0f - 1.0f);
    }
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
    const __half *kv;  /* rotating K/V copies: [copies][2][AKV][L][AD] */
    int L, kvcopies;
    size_t ki;
    float *pm, *pl, *po; /* split partials */
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

static void launch_att(ctx &c, char kind) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.stream = c.st;
    cfg.attrs = at;
    cfg.numAttrs = c.pdl;
    const size_t one = (size_t)AKV * c.L * AD;
    const __half *k = c.kv + (c.ki++ % c.kvcopies) * 2 * one, *v = k + one;
    const float *x = c.a;
    float *y = c.b;
    int L = c.L, ns = c.L / 32;
    if (kind == 'a') { /* split, then the combine ('c' below is launched by the pattern) */
        cfg.gridDim = dim3(ns, AH);
        cfg.blockDim = dim3(128);
        void *args[] = {(void *)&x, (void *)&k, (void *)&v, (void *)&L, (void *)&c.pm, (void *)&c.pl, (void *)&c.po};
        CK(cudaLaunchKernelExC(&cfg, (void *)k_att_split, args));
        return; /* x stays: the combine writes y */
    }
    if (kind == 'c') {
        cfg.gridDim = dim3(AH);
        cfg.blockDim = dim3(128);
        void *args[] = {(void *)&c.pm, (void *)&c.pl, (void *)&c.po, (void *)&ns, (void *)&y};
        CK(cudaLaunchKernelExC(&cfg, (void *)k_att_combine, args));
    } else {
        const int W = kind == 'w' ? 16 : 32;
        cfg.gridDim = dim3(AH);
        cfg.blockDim = dim3(W * 32);
        void *args[] = {(void *)&x, (void *)&k, (void *)&v, (void *)&L, (void *)&y};
        CK(cudaLaunchKernelExC(&cfg, W == 16 ? (void *)k_att_whole<16> : (void *)k_att_whole<32>, args));
    }
    float *t = c.a; c.a = c.b; c.b = t;
}

/* pattern: 'g' a GEMV, 's' a small kernel (blocks x threads); us per repeat,
 * as a captured graph of `layers` repeats replayed 5 times (best of 5) */
static double time_chain(ctx &c, const char *pat, int layers, int blocks, int threads) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < layers; l++)
        for (const char *p = pat; *p; p++) {
            if (*p == 'g') launch_gemv(c);
            else if (*p == 's') launch_small(c, blocks, threads);
            else launch_att(c, *p);
        }
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

    /* decode attention, 32 query heads / 8 KV heads / head_dim 128, fp16 K/V
     * in rotating copies (each token of the chain reads another layer's) */
    printf("\ndecode attention after L positions, PDL graph: us it adds behind a 1 x 256 small kernel\n");
    printf("%6s %14s %14s %14s %14s   max rel err vs float64 (split+combine / whole 16 / whole 32)\n", "L",
           "small alone", "split+combine", "whole, 16 w", "whole, 32 w");
    for (int L : {512, 1024, 2048, 4096}) {
        const size_t one = (size_t)AKV * L * AD, bytes = 2 * one * sizeof(__half);
        int copies = (int)(((size_t)160 << 20) / bytes);
        if (copies < 4) copies = 4;
        __half *kv;
        CK(cudaMalloc(&kv, bytes * copies));
        k_fill_h<<<1024, 256, 0, c.st>>>(kv, 2 * one * copies, 77u + L);
        CK(cudaMalloc(&c.pm, AH * (L / 32) * 4)); CK(cudaMalloc(&c.pl, AH * (L / 32) * 4));
        CK(cudaMalloc(&c.po, (size_t)AH * (L / 32) * AD * 4));
        c.kv = kv; c.L = L; c.kvcopies = copies; c.ki = 0; c.pdl = 1;
        const double ts = time_chain(c, "s", layers, 1, 256);
        const double ta = time_chain(c, "sac", layers, 1, 256) - ts;
        const double tw = time_chain(c, "sw", layers, 1, 256) - ts;
        const double tv = time_chain(c, "sv", layers, 1, 256) - ts;
        /* check: q = a known row, K/V copy 0, against float64 */
        std::vector<float> hq(D), hy(D);
        std::vector<__half> hkv(2 * one);
        k_fill<<<16, 256, 0, c.st>>>((uint32_t *)c.a, D, 9u);
        CK(cudaMemcpyAsync(hq.data(), c.a, D * 4, cudaMemcpyDeviceToHost, c.st));
        CK(cudaMemcpyAsync(hkv.data(), kv, bytes, cudaMemcpyDeviceToHost, c.st));
        CK(cudaStreamSynchronize(c.st));
        std::vector<double> ref(D);
        for (int h = 0; h < AH; h++) {
            const int g = h / (AH / AKV);
            std::vector<double> sc(L);
            double mx = -1e300, sum = 0;
            for (int p = 0; p < L; p++) {
                double d = 0;
                for (int i = 0; i < AD; i++) d += (double)hq[h * AD + i] * (double)__half2float(hkv[((size_t)g * L + p) * AD + i]);
                sc[p] = d / sqrt((double)AD);
                mx = sc[p] > mx ? sc[p] : mx;
            }
            for (int p = 0; p < L; p++) sum += (sc[p] = exp(sc[p] - mx));
            for (int i = 0; i < AD; i++) {
                double o = 0;
                for (int p = 0; p < L; p++) o += sc[p] * (double)__half2float(hkv[one + ((size_t)g * L + p) * AD + i]);
                ref[h * AD + i] = o / sum;
            }
        }
        double err[3] = {0, 0, 0};
        const char *pats[3] = {"ac", "w", "v"};
        for (int v = 0; v < 3; v++) {
            c.pdl = 0;
            c.ki = 0;
            float *q0 = c.a; /* the known row */
            for (const char *pp = pats[v]; *pp; pp++) launch_att(c, *pp);
            CK(cudaMemcpyAsync(hy.data(), c.a, D * 4, cudaMemcpyDeviceToHost, c.st));
            CK(cudaStreamSynchronize(c.st));
            if (c.a != q0) { float *t = c.a; c.a = c.b; c.b = t; } /* back to the known row */
            for (int i = 0; i < D; i++) {
                const double e = fabs(hy[i] - ref[i]) / (fabs(ref[i]) + 1e-3);
                err[v] = e > err[v] ? e : err[v];
            }
        }
        printf("%6d %14.2f %14.2f %14.2f %14.2f   %.1e / %.1e / %.1e\n", L, ts, ta, tw, tv, err[0], err[1], err[2]);
        CK(cudaFree(kv)); CK(cudaFree(c.pm)); CK(cudaFree(c.pl)); CK(cudaFree(c.po));
    }
    CK(cudaGetLastError());
    return 0;
}
