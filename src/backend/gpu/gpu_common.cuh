/* Device helpers shared by the kernels: exact fp8 decoding, per-dtype
 * loaders that widen stored weights to fp32, and launch helpers. */
#pragma once
#include <stdint.h>

#include "hip_compat.h"
#include "core/dtype.h"
#include "quant/weight.h"
#include "gpu_kernels.h"

#define DL_CDIV(a, b) (((a) + (b) - 1) / (b))

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

static inline int dl_is_fp8(int dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }
