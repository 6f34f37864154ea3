/* Device helpers shared by the kernels: exact fp8 decoding, per-dtype
 * loaders that widen stored weights to fp32, and launch helpers. */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hip_compat.h"
#include "core/dtype.h"
#include "quant/weight.h"
#include "gpu_kernels.h"

#define DL_CDIV(a, b) (((a) + (b) - 1) / (b))

/* Warps per block of the decode GEMVs at most (knobs wpb and i8wpb; their
 * launch bounds). gfx906 (wave64): 4. A bound of 8 wavefronts puts 2 on
 * each SIMD, so the compiler caps every GEMV at 128 of the 256 VGPRs, and
 * the 4-row kernels (the fp8 defaults at every M, 16-bit weights at
 * M >= 2) spilled to scratch inside the K loop: the fp8 M = 1 kernel 52
 * VGPRs, 42 scratch loads/stores per iteration, ~10.7 KB of scratch traffic
 * per wavefront against the 8 KB of weights it reads (tools/gpu_gate.sh
 * reports every kernel's VGPRs and spills, and fails on a spill or a
 * scratch access in a loop; docs/gpu_backend.md, "gfx906 registers"). */
#if DL_WARP == 64
#define DL_GEMV_MAXW 4
#else
#define DL_GEMV_MAXW 8
#endif

/* Experiment variables (host; each read once into its caller's static):
 * dl_env_is: 1 when `name` is set to `word`; dl_env_int: its integer value,
 * or dflt when unset. */
static inline int dl_env_is(const char *name, const char *word) {
    const char *e = getenv(name);
    return e && !strcmp(e, word) ? 1 : 0;
}
static inline int dl_env_int(const char *name, int dflt) {
    const char *e = getenv(name);
    return e ? atoi(e) : dflt;
}

/* Warps splitting the K of a GEMV weight of n rows whose lanes would each
 * stream `chunks` 16-byte chunks unsplit: below maxn rows, 4 warps when
 * each lane still keeps >= 4 chunks, else 2 when it keeps >= 4 at 2, else
 * 1; maxn rows or more: 1 (one warp per row group already fills the GPU).
 * The rule of the 16-bit float GEMV (gv_ks) and of the W8A8 GEMV's opt-in
 * split (i8_ks); each passes its own row bound (GV_KS_MAXN_F, I8_KS_MAXN). */
static inline int dl_ks_by_shape(int64_t n, int64_t chunks, int maxn) {
    if (n >= maxn) return 1;
    return chunks >= 16 ? 4 : chunks >= 8 ? 2 : 1;
}

/* Exact fp8 -> fp32 for every code (e4m3fn: 0x7f/0xff NaN; e5m2: IEEE-like). */
static __device__ __forceinline__ float dl_fp8_decode(uint32_t c, int e5m2) {
    float sgn = (c & 0x80u) ? -1.0f : 1.0f;
    if (!e5m2) {
        int e = (c >> 3) & 15, m = c & 7;
        if (e == 15 && m == 7) return __int_as_float(0x7fc00000);
        if (e == 0) return sgn * ldexpf((float)m, -9);
        return sgn * ldexpf((float)(8 + m), e - 10);
    }
    int e = (c >> 2) & 31, m = c & 3;
    if (e == 31) return m ? __int_as_float(0x7fc00000) : sgn * __int_as_float(0x7f800000);
    if (e == 0) return sgn * ldexpf((float)m, -16);
    return sgn * ldexpf((float)(4 + m), e - 17);
}

/* Fill a 256-entry fp32 table in shared memory (all threads call; syncs). */
static __device__ __forceinline__ void dl_fp8_table(float *tab, int e5m2) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) tab[i] = dl_fp8_decode((uint32_t)i, e5m2);
    __syncthreads();
}

/* One stored element as fp32 (reference paths; any alignment). */
static __device__ __forceinline__ float dl_load_elem(const void *p, int dt, int64_t i) {
    switch (dt) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F16: return __half2float(((const __half *)p)[i]);
    case DT_BF16: return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    case DT_F8E4M3: return dl_fp8_decode(((const uint8_t *)p)[i], 0);
    case DT_F8E5M2: return dl_fp8_decode(((const uint8_t *)p)[i], 1);
    case DT_I8: return (float)((const int8_t *)p)[i];
    default: return 0.0f;
    }
}

/* Scale of element (row, col) from the fp32 scale copy. */
static __device__ __forceinline__ float dl_scale_at(const gk_weight &w, int64_t row, int64_t col) {
    switch (w.scale_kind) {
    case WS_TENSOR: return w.scale[0];
    case WS_CHANNEL: return w.scale[row];
    case WS_BLOCK: return w.scale[(row / w.bn) * w.kb + col / w.bk];
    default: return 1.0f;
    }
}

/* Row scale applied in epilogues (tensor/channel); block scales are folded
 * inside the K loop instead. */
static __device__ __forceinline__ float dl_rowscale(const gk_weight &w, int64_t row) {
    if (w.scale_kind == WS_TENSOR) return w.scale[0];
    if (w.scale_kind == WS_CHANNEL) return w.scale[row];
    return 1.0f;
}

static __device__ __forceinline__ void dl_bf16x2(uint32_t v, float *f) {
    f[0] = __uint_as_float(v << 16);
    f[1] = __uint_as_float(v & 0xffff0000u);
}
static __device__ __forceinline__ void dl_f16x2(uint32_t v, float *f) {
    __half2 h;
    __builtin_memcpy(&h, &v, 4);
    float2 t = __half22float2(h);
    f[0] = t.x;
    f[1] = t.y;
}
static __device__ __forceinline__ void dl_b8x4(uint32_t v, float *f, const float *tab) {
    f[0] = tab[v & 255];
    f[1] = tab[(v >> 8) & 255];
    f[2] = tab[(v >> 16) & 255];
    f[3] = tab[v >> 24];
}
static __device__ __forceinline__ void dl_i8x4(uint32_t v, float *f) {
    f[0] = (float)(int8_t)(v & 255);
    f[1] = (float)(int8_t)((v >> 8) & 255);
    f[2] = (float)(int8_t)((v >> 16) & 255);
    f[3] = (float)(int8_t)(v >> 24);
}

/* Per-dtype traits: VEC elements per 16-byte load, widening of one 16-byte
 * vector (GEMV) and of one 4-element group (GEMM). `tab` is the shared fp8
 * table (unused for other types). */
template <int DT> struct dl_wt;
template <> struct dl_wt<DT_F32> {
    static const int VEC = 4, ES = 4;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f, const float *) {
        f[0] = __uint_as_float(r.x); f[1] = __uint_as_float(r.y);
        f[2] = __uint_as_float(r.z); f[3] = __uint_as_float(r.w);
    }
    static __device__ __forceinline__ void load4(const char *p, float *f, const float *) {
        float4 v = *(const float4 *)p;
        f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
    }
};
template <> struct dl_wt<DT_BF16> {
    static const int VEC = 8, ES = 2;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f, const float *) {
        dl_bf16x2(r.x, f); dl_bf16x2(r.y, f + 2); dl_bf16x2(r.z, f + 4); dl_bf16x2(r.w, f + 6);
    }
    static __device__ __forceinline__ void load4(const char *p, float *f, const float *) {
        uint2 v = *(const uint2 *)p;
        dl_bf16x2(v.x, f); dl_bf16x2(v.y, f + 2);
    }
};
template <> struct dl_wt<DT_F16> {
    static const int VEC = 8, ES = 2;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f, const float *) {
        dl_f16x2(r.x, f); dl_f16x2(r.y, f + 2); dl_f16x2(r.z, f + 4); dl_f16x2(r.w, f + 6);
    }
    static __device__ __forceinline__ void load4(const char *p, float *f, const float *) {
        uint2 v = *(const uint2 *)p;
        dl_f16x2(v.x, f); dl_f16x2(v.y, f + 2);
    }
};
template <int DT> struct dl_wt_b8 {
    static const int VEC = 16, ES = 1;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f, const float *tab) {
        dl_b8x4(r.x, f, tab); dl_b8x4(r.y, f + 4, tab); dl_b8x4(r.z, f + 8, tab); dl_b8x4(r.w, f + 12, tab);
    }
    static __device__ __forceinline__ void load4(const char *p, float *f, const float *tab) {
        dl_b8x4(*(const uint32_t *)p, f, tab);
    }
};
template <> struct dl_wt<DT_F8E4M3> : dl_wt_b8<DT_F8E4M3> {};
template <> struct dl_wt<DT_F8E5M2> : dl_wt_b8<DT_F8E5M2> {};
template <> struct dl_wt<DT_I8> {
    static const int VEC = 16, ES = 1;
    static __device__ __forceinline__ void cvt16(uint4 r, float *f, const float *) {
        dl_i8x4(r.x, f); dl_i8x4(r.y, f + 4); dl_i8x4(r.z, f + 8); dl_i8x4(r.w, f + 12);
    }
    static __device__ __forceinline__ void load4(const char *p, float *f, const float *) {
        dl_i8x4(*(const uint32_t *)p, f);
    }
};

/* Block-wide max of v (>= 0; NaN ignored as fmaxf does); order-independent,
 * so deterministic. red: >= blockDim.x / DL_WARP floats of shared memory;
 * all threads call it and get the result. */
static __device__ __forceinline__ float dl_block_max(float v, float *red) {
    v = dl_warp_max(v);
    const int lane = threadIdx.x % DL_WARP, wid = threadIdx.x / DL_WARP;
    __syncthreads();
    if (lane == 0) red[wid] = v;
    __syncthreads();
    float r = 0.0f;
    for (int i = 0; i < (int)(blockDim.x / DL_WARP); i++) r = fmaxf(r, red[i]);
    return r;
}

/* The W8A8 activation code of v at scale s, as quant/actq.c defines it:
 * round half even, clamp to +-127, NaN -> -127; the byte, zero-extended.
 * Every kernel that quantizes activations uses this one definition. */
static __device__ __forceinline__ uint32_t dl_q8(float v, float s) {
    float r = rintf(v / s);
    if (!(r >= -127.0f)) r = -127.0f;
    if (r > 127.0f) r = 127.0f;
    return (uint32_t)((int)r & 255);
}

/* The W8A8 per-token scale of a row whose largest |value| is amax (1 for
 * an all-zero row), and four codes dl_q8(v., s) packed into one word, x in
 * the low byte: the one definition every quantizing kernel uses. */
static __device__ __forceinline__ float dl_q8_scale(float amax) { return amax > 0.0f ? amax / 127.0f : 1.0f; }
static __device__ __forceinline__ uint32_t dl_q8x4(float x, float y, float z, float w, float s) {
    return dl_q8(x, s) | dl_q8(y, s) << 8 | dl_q8(z, s) << 16 | dl_q8(w, s) << 24;
}
/* max(a, |v.x|, |v.y|, |v.z|, |v.w|): the per-float4 step of every
 * quantizing kernel's amax (a max ignores order, so any grouping gives the
 * same value). */
static __device__ __forceinline__ float dl_amax4(float a, float4 v) {
    return fmaxf(fmaxf(a, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
}

/* SiLU(g) * u, the one expression every kernel that makes an MLP's hidden
 * activation uses (so fused and separate kernels agree bitwise). */
static __device__ __forceinline__ float dl_silu_mul1(float g, float u) { return g / (1.0f + expf(-g)) * u; }

static inline int dl_is_fp8(int dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }

/* prmt.b32 in its generic mode: result byte i is byte (s >> 4i) & 7 of the
 * 8-byte value b:a, or, when bit 3 of that selector nibble is set, the sign
 * of that byte replicated over 8 bits (0x00 / 0xff). CUDA: one PRMT through
 * inline PTX (the __byte_perm intrinsic masks the selector to 3 bits per
 * nibble, dropping the sign mode; so does HIP's). HIP spells it out (s is a
 * constant at every call site, so this folds to a few shifts and masks). */
static __device__ __forceinline__ uint32_t dl_prmt(uint32_t a, uint32_t b, uint32_t s) {
#if DL_WARP == 32
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
    return r;
#else
    const uint64_t v = ((uint64_t)b << 32) | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        const uint32_t nib = (s >> (4 * i)) & 15u;
        uint32_t byte = (uint32_t)(v >> (8 * (nib & 7u))) & 255u;
        if (nib & 8u) byte = (byte & 0x80u) ? 255u : 0u;
        r |= byte << (8 * i);
    }
    return r;
#endif
}

/* One 16-byte weight vector that is read exactly once (GEMV weight stream).
 * NA = 1 asks the L1 not to keep it (CUDA ld.global.nc.L1::no_allocate), so
 * the activation rows every warp re-reads stay cached; NA = 0 is the plain
 * read-only load. Same bits either way. p must be 16-byte aligned. */
template <int NA> static __device__ __forceinline__ uint4 dl_ldw16(const void *p) {
#if DL_WARP == 32
    if (NA) {
        uint4 r;
        asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
            : "l"(p));
        return r;
    }
#endif
    return *(const uint4 *)p;
}

/* Weight rings (the GEMV ring kernels; CUDA sm_80+ only, callers guard
 * with __CUDA_ARCH__ >= 800): thread-private slots of a 2- or 3-stage ring in
 * dynamic shared memory, filled by cp.async. dl_ring_issue() copies the
 * 16-byte chunk at src[r] + off of each of R rows into slot + r * stride
 * (all when `live`, else none) and commits them as one group (an empty
 * group keeps the count uniform); dl_ring_wait<N>() returns when at most
 * the N most recently committed groups are still in flight (N = 0: all
 * have landed). The "memory" clobbers keep the compiler from
 * moving shared-memory reads of a slot past the copy that refills it. */
#if DL_WARP == 32 && !defined(__HIPCC__)
/* One 16-byte cp.async of global src into shared dst; ef (uniform) adds the
 * L2 evict_first policy (weights read once per token leave L2 before what a
 * decode step reads again; a hint only, the same bits), else the unhinted
 * copy. */
static __device__ __forceinline__ void dl_cp16(unsigned dst, const void *src, int ef) {
    if (ef) {
        uint64_t pol;
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "l"(pol)
                     : "memory");
    } else {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
    }
}
template <int R, typename P>
static __device__ __forceinline__ void dl_ring_issue(uint4 *slot, int stride, const P *const (&src)[R], int off,
                                                     bool live) {
    if (live) {
#pragma unroll
        for (int r = 0; r < R; r++) dl_cp16((unsigned)__cvta_generic_to_shared(slot + r * stride), src[r] + off, 0);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
/* The same with the slot as a shared-window address (sa; rows rstride
 * bytes apart) and the rows' chunk addresses src[r] themselves; ef: the L2
 * evict_first policy (dl_cp16). */
template <int R>
static __device__ __forceinline__ void dl_ring_issue_s(unsigned sa, unsigned rstride, const char *const (&src)[R],
                                                       bool live, int ef) {
    if (live) {
#pragma unroll
        for (int r = 0; r < R; r++) dl_cp16(sa + r * rstride, src[r], ef);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N = 0> static __device__ __forceinline__ void dl_ring_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif

/* Programmatic dependent launch (PDL; CUDA on sm_90 and later, see
 * docs/gpu_backend.md "PDL"). A kernel that dl_launch() starts while PDL is
 * on may begin before the kernel ahead of it on the stream has finished, so
 * each such kernel calls dl_pdl_wait() before it reads anything an earlier
 * kernel wrote or writes anything an earlier kernel reads; only data that
 * no kernel writes during a forward (weights, scales) may be read before.
 * dl_pdl_wait() returns once every earlier kernel on the stream has finished
 * and its writes are visible (each kernel waited for its own predecessor,
 * so the wait is transitive). dl_pdl_trigger() lets the next kernel start
 * launching now instead of when this one's blocks exit; its blocks then sit
 * in their own dl_pdl_wait(). Both are no-ops for a plain launch, before
 * sm_90 and on HIP. */
static __device__ __forceinline__ void dl_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void dl_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* Both, at the top of a kernel that reads nothing before. */
static __device__ __forceinline__ void dl_pdl_enter() {
    dl_pdl_wait();
    dl_pdl_trigger();
}

/* dl_pdl_enter() for a kernel that first loaded data no kernel writes
 * (weights): dep is any value computed from every such load (e.g. their
 * XOR). Without a use, the compiler sinks those loads below the wait and
 * nothing overlaps the kernel ahead; the store that never happens
 * (blockDim.x is never 0) keeps the dependency in the machine code, so the
 * loads are issued, and land, before the wait. */
static __device__ __forceinline__ void dl_pdl_enter_after(uint32_t dep, uint32_t *sink, bool trig = true) {
    if (blockDim.x == 0u) *sink = dep;
    dl_pdl_wait();
    if (trig) dl_pdl_trigger(); /* else the next kernel launches as this one's blocks exit */
}
static __device__ __forceinline__ uint32_t dl_xor4(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }
static __device__ __forceinline__ uint32_t dl_xor4(int4 v) { return (uint32_t)(v.x ^ v.y ^ v.z ^ v.w); }
/* dl_pdl_enter_after() for a GEMV's first weight group v[U][R] (chunk u
 * at element k0 + u * step, loaded when < K): dep is the XOR of every loaded
 * word. trig = false: no early trigger (a GEMV followed by another GEMV). */
template <int U, int R, typename V>
static __device__ __forceinline__ void dl_pdl_enter_after_group(const V (&v)[U][R], int k0, int step, int K,
                                                                uint32_t *sink, bool trig = true) {
    uint32_t dep = 0;
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int r = 0; r < R; r++) dep ^= k0 + u * step < K ? dl_xor4(v[u][r]) : 0u;
    dl_pdl_enter_after(dep, sink, trig);
}

/* Paged KV cache: the cache row (page * bs + p % bs) of position p of
 * sequence S, or -1 when that page is unmapped. bsh = log2(a.bs) when the
 * page size is a power of two (a shift instead of a division), else -1. */
static __device__ __forceinline__ int dl_kv_row(const gk_attn &a, int S, int p, int bsh = -1) {
    const int pg = bsh >= 0 ? p >> bsh : p / a.bs;
    const int blk = a.btab[(int64_t)S * a.mbps + pg];
    return blk >= 0 ? blk * a.bs + (p - pg * a.bs) : -1;
}

/* Query vector v of an attention block of KV head g (v = token * G + head
 * within the group, G = nh / nkv): its token *t, query head *h, position
 * *pos and sequence *seq; past the batch (v >= ntok * G) *pos and *seq
 * are -1 and *t is 0. */
static __device__ __forceinline__ void dl_attn_qvec(const gk_attn &a, int g, int64_t v, int *t, int *h, int *pos,
                                                    int *seq) {
    const int G = a.nh / a.nkv;
    const bool ok = v < (int64_t)a.ntok * G;
    const int tt = ok ? (int)(v / G) : 0;
    *t = tt;
    *h = g * G + (int)(v % G);
    *pos = ok ? a.pos[tt] : -1;
    *seq = ok ? a.seq[tt] : -1;
}

/* For a block's query rows 0..n-1 with sequences rseq and positions rpos
 * (-1: no row): 1 when row i0 is the first row of its sequence
 * S = rseq[i0] >= 0, with *hi = 1 + the largest position of S among rows
 * i0..n-1 (the keys 0..*hi-1 the block reads for S); else 0. */
static __device__ __forceinline__ bool dl_attn_seq_first(const int *rseq, const int *rpos, int n, int i0, int *hi) {
    const int S = rseq[i0];
    if (S < 0) return false;
    for (int i = 0; i < i0; i++)
        if (rseq[i] == S) return false;
    int h = 0;
    for (int i = i0; i < n; i++)
        if (rseq[i] == S && rpos[i] + 1 > h) h = rpos[i] + 1;
    *hi = h;
    return true;
}

/* PDL state of the launching thread's process: dl_pdl_on (set through
 * gk_pdl_set) and the number of launches made with the attribute
 * (gk_pdl_launches). Owned by gpu_rt.cu. */
extern int dl_pdl_on;
extern unsigned long long dl_pdl_n;

/* Launch kernel k<<<grid, block, smem, st>>>(a...), with the PDL attribute
 * when dl_pdl_on (CUDA only). Only kernels that call dl_pdl_wait() as above
 * may be launched through it. A refused attributed launch falls back to a
 * plain one (and is not counted). */
template <typename... P, typename... A>
static inline void dl_launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, A... a) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    if (dl_pdl_on) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = st;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        if (cudaLaunchKernelEx(&cfg, k, ((P)a)...) == cudaSuccess) {
            dl_pdl_n++;
            return;
        }
        (void)cudaGetLastError();
    }
#endif
    k<<<grid, block, smem, st>>>(((P)a)...);
}

/* Blocks per SM capped by padded shared memory (knobs occ and i8occ,
 * gpu_tune.h; defined in k_matmul_float.cu): for occ > 0, the cap allowed
 * (gk_gemv_occ_allow, the backend's cuda.gemv_occ) and a grid of at most
 * occ blocks per SM in use (one wave under the cap), the dynamic shared
 * memory that kernel k (`threads` per block, `smem` bytes asked) launches
 * with so that at most occ of its blocks fit on an SM, when registers and
 * smem would let more fit; else smem. A padded launch is counted
 * (gk_gemv_occ_launches), and its kernel's dynamic shared-memory limit and
 * carve-out raised once. A grid capped below what fits leaves slots that a
 * PDL successor's early blocks fill evenly, instead of some SMs taking
 * many of them and finishing last (docs/gpu_backend.md, "Occupancy
 * caps"). The kernel's results do not depend on it. Host side, the
 * launching thread; HIP: smem. */
size_t dl_occ_pad(const void *k, unsigned grid, int threads, size_t smem, int occ);

#if DL_WARP == 32 && !defined(__HIPCC__)
/* cfg for grid x block (smem dynamic bytes, stream st) in clusters of
 * csize x 1 x 1 blocks: its attribute goes into at[0], and the PDL one into
 * at[1] when pdl. */
static inline void dl_cluster_cfg(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *at, dim3 grid, dim3 block,
                                  size_t smem, cudaStream_t st, unsigned csize, bool pdl) {
    *cfg = cudaLaunchConfig_t{};
    cfg->gridDim = grid;
    cfg->blockDim = block;
    cfg->dynamicSmemBytes = smem;
    cfg->stream = st;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = csize;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg->attrs = at;
    cfg->numAttrs = 1;
    if (pdl) {
        at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[1].val.programmaticStreamSerializationAllowed = 1;
        cfg->numAttrs = 2;
    }
}
#endif

/* dl_launch() as a cluster launch of csize x 1 x 1 blocks (CUDA sm_90+; the
 * caller checked the kernel can take it, e.g. with dl_cluster_ok), with the
 * PDL attribute when dl_pdl_on. Returns false (nothing launched, the error
 * cleared) where the launch is refused, and always on HIP. */
template <typename... P, typename... A>
static inline bool dl_launch_cluster(void (*k)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                     unsigned csize, A... a) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    dl_cluster_cfg(&cfg, at, grid, block, smem, st, csize, dl_pdl_on != 0);
    if (cudaLaunchKernelEx(&cfg, k, ((P)a)...) == cudaSuccess) {
        if (dl_pdl_on) dl_pdl_n++;
        return true;
    }
    (void)cudaGetLastError();
#else
    (void)k, (void)grid, (void)block, (void)smem, (void)st, (void)csize;
    ((void)a, ...);
#endif
    return false;
}

/* 1 if kernel k (compiled for sm_90 or later) can run clusters of csize x
 * 1 x 1 blocks of `block` threads and smem dynamic bytes on the current
 * device: non-portable sizes (> 8) are allowed on it, and at least one such
 * cluster fits. 0 on HIP, before sm_90, or when the runtime says no. */
template <typename... P>
static inline int dl_cluster_ok(void (*k)(P...), unsigned csize, dim3 block, size_t smem) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, (const void *)k) != cudaSuccess || fa.binaryVersion < 90) {
        (void)cudaGetLastError();
        return 0;
    }
    if (csize > 8 && cudaFuncSetAttribute((const void *)k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                         cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    dl_cluster_cfg(&cfg, at, dim3(csize, 1, 1), block, smem, 0, csize, false);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, (const void *)k, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n > 0;
#else
    (void)k, (void)csize, (void)block, (void)smem;
    return 0;
#endif
}

/* GEMV tuning knobs (variants). None of them changes a result bit: every
 * variant widens each weight to the same fp32 value and keeps the same
 * per-row FMA order (lane-strided 16-byte chunks, chunk partial, fixed
 * butterfly); they change instruction counts, loads in flight and the
 * launch shape only. Set once from DOTLM_GEMV (and the older
 * DOTLM_GEMV_R1/RM, DOTLM_I8_R1/RM) at first use, changed by gk_gemv_tune()
 * (gpu_tune.h) for tests and benchmarks. Owned by k_matmul_float.cu. */
enum { DL_FP8_F32 = 0, DL_FP8_H2 = 1, DL_FP8_FOLD = 2, DL_FP8_F32S = 3 };
struct dl_gemv_cfg {
    int fp8;            /* fp8 widening: DL_FP8_* */
    int u, na, wpb;     /* float GEMV: vectors in flight per lane and row (2, 4; 0 = 4 when R = 1, else 2), L1 no-allocate weights, warps per block (4, 8) */
    int r1, rm;         /* float GEMV rows per warp at M = 1 / M > 1 (1, 2, 4; 0 = per-format default) */
    int i8u, i8na, i8wpb, i8r1, i8rm; /* the same for the int8 W8A8 GEMV */
    int ring;           /* fp8 float GEMV: weights through a shared-memory ring (dl_k_gemv_fa; CUDA sm_80+) */
    int i8ring;         /* the same for the int8 W8A8 GEMV (dl_k_i8_gemv_fa) */
    int i8ks;           /* W8A8 register GEMV: warps splitting K (0 = by shape, see i8_ks; 1, 2, 4 forced) */
    int mlb;            /* fp8 float GEMV at M >= 3 with x permuted: 1 = the ring (every M to 8) capped at 128 registers (CUDA sm_80+); 2 = at M <= 4; 3 = 2 and the M >= 5 register loop capped (gpu_tune.h) */
    int xpf;            /* fp8 two-stage ring at M = 1: chunk c + 1's activations and scales loaded during chunk c (dl_k_gemv_fa PF) */
    int i8xp;           /* W8A8 register GEMV at M = 1: 0 each chunk's codes loaded as used, 1 with its weights one group ahead (dl_k_i8_gemv XQ), 2 as 1 where k > 4096 */
    int occ, i8occ;     /* at most this many blocks per SM (0 = no cap) for the fp8 two-stage ring at M = 1 / the W8A8 register GEMV at M = 1 (dl_occ_pad; CUDA only) */
};
const dl_gemv_cfg &dl_gemv_cfg_now();
/* The weight rings (k_matmul_float.cu): 1 if allowed (gk_gemv_ring_allow)
 * and the device can run them; dl_ring_note() counts one launch
 * (gk_gemv_ring_launches). Host side. */
int dl_ring_ok();
void dl_ring_note();
/* Whether the next fp8 ring launch's weight copies carry the L2
 * evict_first policy (gk_gemv_l2ef_allow; CUDA only), and the count of
 * those launches (dl_gemv_l2ef_note, gk_gemv_l2ef_launches). Host side. */
int dl_gemv_l2ef();
void dl_gemv_l2ef_note(int l2ef);


/* Weights sharing one activation x in one GEMV launch (gk_gemv_multi,
 * gk_int8_gemv_multi; gk_gemv is the one-weight case). Blocks are numbered
 * over the concatenated rows: blocks [0, b1) take w[0], [b1, b2) w[1],
 * [b2, grid) w[2]; every block runs the same code on its weight, so a
 * weight's output is bitwise the same whichever job it is part of. The
 * weights share dtype, scale kind, block sizes and k (read from w[0]). */
/* Permuted activations (XP, gk_gemv_xperm_ws): the layout dl_k_xperm
 * writes and dl_gv_chunk reads. K is cut into groups of G = DL_WARP * VEC
 * elements, one chunk of VEC per lane (a lane's chunks are whole groups
 * apart, with or without a K split); the last group is padded to G. Within
 * a group the MR activation rows are interleaved: quad q (4 floats) of row
 * m of lane l's chunk is float4 (q MR + m) DL_WARP + l of the group, which
 * is G MR floats long. So a warp's load of one quad of one row is 16 * DL_WARP
 * contiguous bytes, and every quad and row of a chunk sits at a constant
 * offset from the chunk's first (immediate offsets, no per-row address
 * arithmetic). The same values, hence the same products and bits. */
template <int VEC> static constexpr __host__ __device__ int dl_xp_g() { return DL_WARP * VEC; }
/* Floats of the permuted copy of MR rows of K: K padded to whole groups. */
template <int VEC> static __host__ __device__ __forceinline__ int64_t dl_xp_len(int MR, int64_t K) {
    return (int64_t)MR * DL_CDIV(K, dl_xp_g<VEC>()) * dl_xp_g<VEC>();
}
/* Where the chunk at element kk (a lane's: kk % VEC == 0) starts: quad q of
 * row m is then at + 4 (q MR + m) DL_WARP floats. */
template <int VEC, int MR, typename I = int> static __host__ __device__ __forceinline__ I dl_xp_at(I kk) {
    constexpr int G = dl_xp_g<VEC>();
    return (kk / G) * (G * MR) + ((kk % G) / VEC) * 4;
}

/* The permuted twin of one activation row (gk_gemv_twin) is that layout at
 * M = 1 for 16-element chunks (8-bit weights). The float offset of element
 * i: its chunk's start, then quad (i % 16) / 4 of the chunk, then i % 4. */
static __host__ __device__ __forceinline__ int64_t dl_xp1_at(int64_t i) {
    return dl_xp_at<16, 1, int64_t>(i - i % 16) + ((i % 16) / 4) * (4 * DL_WARP) + i % 4;
}

struct dl_gv_job {
    gk_weight w[GK_MULTI_MAX];
    float *y[GK_MULTI_MAX];
    int ks[GK_MULTI_MAX]; /* warps splitting each weight's K (float GEMV; 1 = none) */
    unsigned b1, b2;
    unsigned bk_magic; /* WS_BLOCK: ceil(2^32 / bk), so kk / bk = umulhi(kk, bk_magic) for kk * bk < 2^32; else 0 */
    float *silu;       /* float GEMV gate/up pair (gk_gemv_silu): w[0] gate, w[1] up, silu[m, n] written; else NULL */
    float *silut;      /* M = 1 pair: silu's permuted twin also written (dl_xp1_at), else NULL */
    int late;          /* PDL (the rings, the W8A8 register GEMV): no early trigger (dl_gemv_late) */
    int l2ef;          /* the fp8 rings' weight copies carry the L2 evict_first policy (dl_cp16, dl_gemv_l2ef) */
};
/* What one block needs of its weight: picked field by field with constant
 * parameter indices (a dynamic index would copy the job to local memory). */
struct dl_gv_sel {
    const char *data;
    const float *scale, *bias;
    float *y;
    int n;
    int64_t ld;
    int ks;     /* warps sharing a row group, each over every ks-th warp-wide chunk span */
    unsigned b; /* block index inside this weight */
    float *silu; /* pair mode (dl_gv_job::silu): rows R/2.. of a group are up's (data2, scale2, bias2) */
    float *silut; /* and silu's twin (dl_gv_job::silut) or NULL */
    const char *data2;
    const float *scale2, *bias2;
};
static __device__ __forceinline__ dl_gv_sel dl_gv_pick(const dl_gv_job &j) {
    const unsigned bid = blockIdx.x;
    const int i = bid < j.b1 ? 0 : (bid < j.b2 ? 1 : 2);
    dl_gv_sel g;
    g.data = (const char *)(i == 0 ? j.w[0].data : i == 1 ? j.w[1].data : j.w[2].data);
    g.scale = i == 0 ? j.w[0].scale : i == 1 ? j.w[1].scale : j.w[2].scale;
    g.bias = i == 0 ? j.w[0].bias : i == 1 ? j.w[1].bias : j.w[2].bias;
    g.y = i == 0 ? j.y[0] : i == 1 ? j.y[1] : j.y[2];
    g.n = (int)(i == 0 ? j.w[0].n : i == 1 ? j.w[1].n : j.w[2].n);
    g.ld = i == 0 ? j.w[0].ld : i == 1 ? j.w[1].ld : j.w[2].ld;
    g.ks = i == 0 ? j.ks[0] : i == 1 ? j.ks[1] : j.ks[2];
    g.b = bid - (i == 0 ? 0u : i == 1 ? j.b1 : j.b2);
    g.silu = j.silu;
    g.silut = j.silut;
    g.data2 = (const char *)j.w[1].data;
    g.scale2 = j.w[1].scale;
    g.bias2 = j.w[1].bias;
    return g;
}
/* Where this thread works in a GEMV block of blockDim.x / DL_WARP warps,
 * ks warps per row group of R rows: its lane, its warp's share of the K
 * split (wks < ks) and the group's first row n0 in the block's weight (a
 * gate/up pair passes R / 2: n0 is then the group's first output column). */
struct dl_gv_at {
    int lane, wks, n0;
};
/* ks is a power of two (every K split is 1, 2 or 4 warps): shifts and a
 * mask instead of three integer divisions (~25 instructions each, in every
 * warp's prologue). */
static __device__ __forceinline__ dl_gv_at dl_gv_place(const dl_gv_sel &g, int ks, int R) {
    const int wid = threadIdx.x / DL_WARP, wpb = blockDim.x / DL_WARP, sh = __ffs(ks) - 1;
    return dl_gv_at{(int)(threadIdx.x % DL_WARP), wid & (ks - 1), ((int)g.b * (wpb >> sh) + (wid >> sh)) * R};
}
/* ceil(a / d) for a >= 0 and d a power of two (a lane's chunks: d is the
 * warp-wide chunk span times the K split), without a division. */
static __device__ __forceinline__ int dl_cdiv_p2(int a, int d) { return (a + d - 1) >> (__ffs(d) - 1); }
/* Zero a GEMV accumulator a[R][MR] (float or int). */
template <typename V, int R, int MR> static __device__ __forceinline__ void dl_gv_zero(V (&a)[R][MR]) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int m = 0; m < MR; m++) a[r][m] = 0;
}
/* Row scale of the epilogue (tensor/channel; block scales are folded per chunk). */
static __device__ __forceinline__ float dl_gv_rowscale(int scale_kind, const float *scale, int64_t row) {
    if (scale_kind == WS_TENSOR) return scale[0];
    if (scale_kind == WS_CHANNEL) return scale[row];
    return 1.0f;
}
/* Host: 1 when every row group of g rows (a multiple of g from row 0) of
 * weight w reads one row of chunk scales: no block scales (the constant
 * 1), or block scales whose row blocks (bn rows) hold whole groups. The
 * fp8 ring kernel relies on it (one scale load per chunk); callers pass
 * the group's rows of one weight (R, or R / 2 for a gate/up pair). */
static inline bool dl_gv_scale_shared(const gk_weight &w, int g) {
    return w.scale_kind != WS_BLOCK || (w.bn > 0 && w.bn % g == 0);
}
/* Host (k_matmul_float.cu): 1 when the GEMVs let the next kernel launch
 * (PDL) only after their K loop (the fp8 and W8A8 rings) or when their
 * grid ends (the W8A8 register GEMV) instead of right after their wait:
 * DOTLM_GEMV_TRIG=late, or gk_gemv_trig_late(1). The float register loops
 * always trigger after their wait (but the gate/up pair): testing j.late
 * there left their SASS loop unchanged but made the bf16 M = 1 GEMV ~4%
 * slower in the same run (H200, 2026-11-30: 83.9 / 87.7 / 75.6% of the
 * copy bandwidth against 87.2 / 92.4 / 79.3%). Faster between
 * back-to-back GEMVs (the next grid's blocks do not take SM slots early),
 * slower in a decode step, where a small kernel follows; the engine's
 * gate/up launch always triggers late (a GEMV follows it). */
int dl_gemv_late();
/* Host: fill a job for `count` weights, blocks of wpb warps with R rows per
 * row group and ks[i] warps per row group of weight i (ks NULL: 1), so
 * wpb / ks[i] * R rows per block; returns the grid size (total blocks). */
static inline unsigned dl_gv_job_make(dl_gv_job *j, const gk_weight *w, float *const *y, int count, int wpb, int R,
                                      const int *ks) {
    unsigned start[GK_MULTI_MAX + 1] = {0, 0, 0, 0};
    for (int i = 0; i < GK_MULTI_MAX; i++) {
        if (i < count) {
            j->w[i] = w[i];
            j->y[i] = y[i];
            j->ks[i] = ks ? ks[i] : 1;
            start[i + 1] = start[i] + (unsigned)DL_CDIV(w[i].n, (int64_t)(wpb / j->ks[i] * R));
        } else {
            j->w[i] = w[0];
            j->y[i] = y[0];
            j->ks[i] = j->ks[0];
            start[i + 1] = start[i];
        }
    }
    j->b1 = start[1];
    j->b2 = start[2];
    j->silu = nullptr;
    j->silut = nullptr;
    j->late = dl_gemv_late();
    j->l2ef = dl_gemv_l2ef();
    j->bk_magic = w[0].scale_kind == WS_BLOCK && w[0].bk > 0
                      ? (unsigned)((0x100000000ull + (uint64_t)w[0].bk - 1) / (uint64_t)w[0].bk)
                      : 0u;
    return start[3];
}