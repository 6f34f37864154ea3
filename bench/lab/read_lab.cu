/* Read lab: how close to the copy bandwidth can a kernel that only READS a
 * decode GEMV's weight bytes come, at the sizes the M = 1 GEMV targets are
 * set for? Not part of the build; on a GPU machine:
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/read_lab bench/lab/read_lab.cu
 *   /tmp/read_lab [ITERS [SET]]   (SET 1: the W8A8 arithmetic, i8g / i8s, beside
 *                                  the same reads, row)
 * The kernels do no arithmetic beyond an XOR per 16-byte load (kept by a
 * per-warp store), so what they reach is a ceiling for any GEMV that reads
 * its weights once in that launch shape:
 *   row<U,R,W>   one warp per R rows (W warps per block), lane-strided
 *                16-byte chunks as the engine's GEMVs, U chunks of each row
 *                requested before any is used (U >= chunks per lane: the
 *                whole row in flight at once); the first group is issued
 *                before griddepcontrol.wait, as the engine's GEMVs do (a
 *                store that never happens depends on them, so ptxas keeps
 *                them above it).
 *   i8g, i8s     row with the W8A8 GEMV's arithmetic: 4 dp4a per chunk and
 *                row against the activation codes, read per chunk from
 *                global memory (i8g, as the engine) or from a copy in
 *                shared memory made after the wait (i8s).
 *   flat<U,B>    B blocks of 4 warps per SM, grid-stride over the whole
 *                buffer, U chunks in flight per lane (no tail wave).
 * Each variant runs over rotating copies (together > 5x the L2), timed
 * plainly, as a PDL chain with the trigger at the top (early), and with
 * the trigger after the loads (late), as % of the measured
 * device-to-device copy bandwidth (bytes read + written / time, 1 GiB).
 * Last, per variant, a least-squares fit t = t0 + bytes / bw over the
 * shapes: t0 is the launch's fixed cost (ramp and tail), bw its streaming
 * rate; both say what % a size can reach at best. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include <string>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static __device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
static __device__ __forceinline__ void pdl_go() { asm volatile("griddepcontrol.launch_dependents;"); }
static __device__ __forceinline__ uint4 ldg16(const uint4 *p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

/* MODE: 0 no trigger (plain launches), 1 trigger at the top, 2 after the
 * loads. XM: 0 an XOR per load (a pure read); 1 the W8A8 GEMV's arithmetic,
 * 4 dp4a per 16-byte chunk and row against the int8 activation row xq read
 * from global memory per chunk (L1 hits, as dl_k_i8_gemv); 2 the same with
 * xq copied into shared memory by the block after the wait. */
template <int U, int R, int MODE, int XM>
__global__ void __launch_bounds__(512) k_row(const uint4 *__restrict__ w, int k16, int nrows, uint32_t *out,
                                             const int4 *__restrict__ xq) {
    if (MODE == 1) pdl_go();
    __shared__ int4 xs[XM == 2 ? 17408 / 16 : 1];
    const int lane = threadIdx.x & 31;
    const int gw = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int r0 = gw * R;
    if (XM != 2 && r0 >= nrows) return;
    const uint4 *row[R];
#pragma unroll
    for (int r = 0; r < R; r++) row[r] = w + (size_t)(r0 + r < nrows ? r0 + r : nrows - 1) * k16;
    uint32_t acc = 0;
    int dacc[R];
#pragma unroll
    for (int r = 0; r < R; r++) dacc[r] = 0;
    uint4 v[R][U];
    bool first = true;
    for (int c0 = lane; c0 < k16; c0 += 32 * U) {
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int c = c0 + 32 * u;
                v[r][u] = c < k16 ? ldg16(row[r] + c) : make_uint4(0, 0, 0, 0);
            }
        if (first) { /* the first group feeds a store that cannot happen: its loads stay above the wait */
            uint32_t dep = 0;
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int r = 0; r < R; r++) dep ^= v[r][u].x;
            if (blockDim.x == 0u) out[0] = dep;
            pdl_wait();
            if (XM == 2) {
                for (int i = threadIdx.x; i < k16; i += blockDim.x) xs[i] = xq[i];
                __syncthreads();
            }
            first = false;
        }
        if (XM == 0) {
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int r = 0; r < R; r++) acc ^= v[r][u].x ^ v[r][u].y ^ v[r][u].z ^ v[r][u].w;
        } else {
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int c = c0 + 32 * u;
                if (c < k16) {
                    const int4 a = XM == 1 ? xq[c] : xs[c];
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        int d = dacc[r];
                        d = __dp4a((int)v[r][u].x, a.x, d);
                        d = __dp4a((int)v[r][u].y, a.y, d);
                        d = __dp4a((int)v[r][u].z, a.z, d);
                        d = __dp4a((int)v[r][u].w, a.w, d);
                        dacc[r] = d;
                    }
                }
            }
        }
    }
    if (MODE == 2) pdl_go();
    if constexpr (XM != 0) {
        if (r0 >= nrows) return;
#pragma unroll
        for (int r = 0; r < R; r++) {
            int d = dacc[r];
            for (int o = 16; o; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            if (lane == 0 && r0 + r < nrows) out[r0 + r] = (uint32_t)d;
        }
    } else {
        for (int o = 16; o; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) out[gw] = acc;
    }
}

template <int U, int MODE>
__global__ void __launch_bounds__(128) k_flat(const uint4 *__restrict__ w, size_t n16, uint32_t *out) {
    if (MODE == 1) pdl_go();
    const size_t T = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t acc = 0;
    uint4 v[U];
    bool first = true;
    for (; i < n16; i += T * U) {
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = i + T * u < n16 ? ldg16(w + i + T * u) : make_uint4(0, 0, 0, 0);
        if (first) { /* as k_row: the first group's loads stay above the wait */
            uint32_t dep = 0;
#pragma unroll
            for (int u = 0; u < U; u++) dep ^= v[u].x;
            if (blockDim.x == 0u) out[0] = dep;
            pdl_wait();
            first = false;
        }
#pragma unroll
        for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (MODE == 2) pdl_go();
    for (int o = 16; o; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) >> 5] = acc;
}

__global__ void k_fill(uint32_t *p, size_t n, uint32_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = h;
    }
}

struct shape { int n, k; const char *what; };
static const shape SH[] = {
    {4096, 4096, "o_proj"}, {6144, 4096, "q/k/v"}, {6144, 5120, "target"}, {4096, 12288, "down"},
    {17408, 5120, "target"}, {5120, 17408, "target"}, {24576, 4096, "gate/up"},
};
static const int NSH = (int)(sizeof SH / sizeof SH[0]);

struct variant {
    std::string name;
    void *fn[3];      /* per MODE */
    int threads, rpb; /* rpb: rows per block (row kernels); 0: flat */
    int bpsm;         /* flat: blocks per SM */
};

template <int U, int R, int W, int XM = 0>
static variant vrow() {
    variant v;
    v.name = std::string(XM == 0 ? "row" : XM == 1 ? "i8g" : "i8s") + " U" + std::to_string(U) + " R" +
             std::to_string(R) + " W" + std::to_string(W);
    v.fn[0] = (void *)k_row<U, R, 0, XM>; v.fn[1] = (void *)k_row<U, R, 1, XM>; v.fn[2] = (void *)k_row<U, R, 2, XM>;
    v.threads = 32 * W; v.rpb = R * W; v.bpsm = 0;
    return v;
}
template <int U>
static variant vflat(int b) {
    variant v;
    v.name = "flat U" + std::to_string(U) + " B" + std::to_string(b);
    v.fn[0] = (void *)k_flat<U, 0>; v.fn[1] = (void *)k_flat<U, 1>; v.fn[2] = (void *)k_flat<U, 2>;
    v.threads = 128; v.rpb = 0; v.bpsm = b;
    return v;
}

static const int4 *xq; /* the int8 activation row (17408 codes at most) */
static void launch(const variant &v, int mode, const uint4 *w, const shape &s, uint32_t *out, int sms, cudaStream_t st) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.blockDim = dim3(v.threads);
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = mode ? 1 : 0;
    const int k16 = s.k / 16;
    if (v.rpb) {
        cfg.gridDim = dim3((unsigned)((s.n + v.rpb - 1) / v.rpb));
        void *args[] = {(void *)&w, (void *)&k16, (void *)&s.n, (void *)&out, (void *)&xq};
        CK(cudaLaunchKernelExC(&cfg, v.fn[mode], args));
    } else {
        size_t n16 = (size_t)s.n * k16;
        cfg.gridDim = dim3((unsigned)(sms * v.bpsm));
        void *args[] = {(void *)&w, (void *)&n16, (void *)&out};
        CK(cudaLaunchKernelExC(&cfg, v.fn[mode], args));
    }
}

int main(int argc, char **argv) {
    const int iters = argc > 1 ? atoi(argv[1]) : 200;
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));

    /* copy bandwidth, as dotlm_gpu_bench: 1 GiB, (read + written) / time */
    const size_t cb = (size_t)1 << 30;
    void *ca, *cbuf;
    CK(cudaMalloc(&ca, cb)); CK(cudaMalloc(&cbuf, cb));
    k_fill<<<1024, 256, 0, st>>>((uint32_t *)ca, cb / 4, 7u);
    for (int i = 0; i < 2; i++) CK(cudaMemcpyAsync(cbuf, ca, cb, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < 10; i++) CK(cudaMemcpyAsync(cbuf, ca, cb, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double copy_bw = 2.0 * cb * 10 / (ms * 1e-3);
    CK(cudaFree(cbuf));
    printf("read lab: %d SMs, L2 %d MB, copy D2D (read+write) %.1f GB/s, %d launches per figure\n", sms, l2 >> 20,
           copy_bw / 1e9, iters);

    /* rotating copies: the largest shape's bytes, copies together >= 5 L2s */
    size_t maxb = 0;
    for (int i = 0; i < NSH; i++) maxb = maxb > (size_t)SH[i].n * SH[i].k ? maxb : (size_t)SH[i].n * SH[i].k;
    const uint4 *base = (const uint4 *)ca; /* 1 GiB of hashed bytes */
    uint32_t *out;
    CK(cudaMalloc(&out, 1 << 22));

    CK(cudaMalloc((void **)&xq, 17408));
    k_fill<<<16, 256, 0, st>>>((uint32_t *)xq, 17408 / 4, 3u);
    std::vector<variant> vs;
    if (argc > 2 && atoi(argv[2]) == 1) { /* set 1: the W8A8 arithmetic beside its pure reads */
        vs.push_back(vrow<2, 2, 4, 0>());
        vs.push_back(vrow<2, 2, 4, 1>());
        vs.push_back(vrow<2, 2, 4, 2>());
        vs.push_back(vrow<4, 1, 4, 0>());
        vs.push_back(vrow<4, 1, 4, 1>());
        vs.push_back(vrow<4, 1, 4, 2>());
        vs.push_back(vrow<10, 1, 8, 0>());
        vs.push_back(vrow<10, 1, 8, 1>());
        vs.push_back(vrow<10, 1, 8, 2>());
        vs.push_back(vrow<4, 2, 4, 1>());
        vs.push_back(vrow<4, 2, 4, 2>());
    } else {
    vs.push_back(vrow<2, 1, 4>());
    vs.push_back(vrow<4, 1, 4>());
    vs.push_back(vrow<10, 1, 4>());
    vs.push_back(vrow<4, 2, 4>());
    vs.push_back(vrow<4, 1, 8>());
    vs.push_back(vrow<10, 1, 8>());
    vs.push_back(vrow<10, 1, 16>());
    vs.push_back(vrow<2, 4, 4>());
    vs.push_back(vflat<4>(4));
    vs.push_back(vflat<4>(8));
    vs.push_back(vflat<8>(4));
    vs.push_back(vflat<8>(8));
    vs.push_back(vflat<4>(16));
    }

    static const char *MN[3] = {"plain", "early", "late"};
    printf("\n%% of copy bandwidth (weight bytes / time per launch)\n%-16s %-6s", "variant", "mode");
    for (int i = 0; i < NSH; i++) printf(" %11dx%-5d", SH[i].n, SH[i].k);
    printf("   t0 us  bw/copy\n");
    for (const variant &v : vs) {
        for (int mode = 0; mode < 3; mode++) {
            printf("%-16s %-6s", v.name.c_str(), MN[mode]);
            double sx = 0, sy = 0, sxx = 0, sxy = 0;
            for (int i = 0; i < NSH; i++) {
                const shape &s = SH[i];
                const size_t b = (size_t)s.n * s.k;
                int ncopy = (int)((size_t)(5 * (size_t)l2) / b) + 2;
                if ((size_t)ncopy * b > cb) ncopy = (int)(cb / b);
                for (int j = 0; j < 3 * ncopy; j++) launch(v, mode, base + (j % ncopy) * (b / 16), s, out, sms, st);
                CK(cudaEventRecord(e0, st));
                for (int j = 0; j < iters; j++) launch(v, mode, base + (j % ncopy) * (b / 16), s, out, sms, st);
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms, e0, e1));
                const double t = ms * 1e-3 / iters;
                printf(" %17.1f", 100.0 * b / t / copy_bw);
                sx += b; sy += t; sxx += (double)b * b; sxy += (double)b * t;
            }
            const double slope = (NSH * sxy - sx * sy) / (NSH * sxx - sx * sx), t0 = (sy - slope * sx) / NSH;
            printf("   %5.2f  %6.3f\n", t0 * 1e6, 1.0 / slope / copy_bw);
        }
    }
    CK(cudaGetLastError());
    return 0;
}
