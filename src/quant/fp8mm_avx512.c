/* fp32-accumulating quantized matmul, AVX-512: register-widening GEMV for
 * fp8 at M <= 8, register-blocked tiles on a widened panel otherwise.
 *
 * Same numbers as fp8mm_rows_avx2 (and its M = 1 kernel), bit for bit: each
 * output (m, n) owns one 8-lane fp32 accumulator fed with FMAs of 8 k's at a
 * time in k order (the chunk holding the segment end zero-padded, no FMA past
 * it), reduced at the segment end by the tree ((l0+l4)+(l2+l6)) +
 * ((l1+l5)+(l3+l7)), then p * unscale [* xs] [* block scale] added to the
 * output's running sum. Only the packing differs: a zmm register holds the
 * 8-lane accumulators of two outputs (weight rows 2p and 2p+1), so one
 * 512-bit FMA advances two outputs, and a 6 x 8 tile (6 activation rows x 8
 * weight rows, 24 zmm accumulators) shares every weight load across 6 rows
 * and every activation load across 8 rows.
 *
 * Per panel of output rows and K segment: the weight codes are widened once
 * (the same exact fp16/F16C widening as the AVX2 kernel, e4m3 scaled by
 * 2^-8) into a buffer of row pairs, [pair][chunk of 8 k][row 2p | row 2p+1],
 * and the activation segment of every row is copied zero-padded to whole
 * chunks (once per call at M <= 8), then every (6-row, 8-row) tile runs over
 * the segment. At M <= 8 (fp8) the codes are instead widened in registers,
 * 32 per instruction, two weight rows per zmm (gemv8_t), for up to 4
 * activation rows at a time. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "core/rowspread.h"
#include "quant/qmatmul.h"

#define X512_FN __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")))
#define NB 64 /* output rows per panel (large M) */
#define MR 6  /* activation rows per tile */
#define NT 8  /* weight rows per tile (4 pairs) */

/* 64-byte aligned allocation (aligned_alloc wants a size multiple of 64). */
static void *amalloc(size_t n) { return aligned_alloc(64, (n + 63) / 64 * 64); }

#define F16B_FN X512_FN
#include "quant/fp8mm_f16bits.h"

/* 16 codes at src -> chunks c (d0) and c + 1 (d1) of a pair buffer. */
X512_FN static inline void widen16_to(dl_dtype dt, const uint8_t *src, float *d0, float *d1) {
    __m128i c = _mm_loadu_si128((const __m128i *)src);
    if (dt == DT_I8) {
        _mm256_store_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)));
        _mm256_store_ps(d1, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(c, 8))));
        return;
    }
    __m256i h = f16_bits(dt, c);
    _mm256_store_ps(d0, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    _mm256_store_ps(d1, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
}

/* Widen codes [0, len) of one weight row into its half (h = 0/1) of a pair
 * buffer dst ([nch][16] floats, nch even, 64-byte aligned); the chunks past
 * len are zero. dt is a compile-time constant in each caller. */
X512_FN static inline void widen_pair_t(dl_dtype dt, const uint8_t *src, int64_t len, int64_t nch,
                                        float *dst, int h) {
    int64_t i = 0;
    float *d = dst + h * 8;
    for (; i + 16 <= len; i += 16) widen16_to(dt, src + i, d + i * 2, d + i * 2 + 16);
    if (i < len) {
        uint8_t t[16] = {0};
        memcpy(t, src + i, (size_t)(len - i));
        widen16_to(dt, t, d + i * 2, d + i * 2 + 16);
        i += 16;
    }
    for (; i < nch * 8; i += 8) _mm256_store_ps(d + i * 2, _mm256_setzero_ps());
}

X512_FN static void widen_pair(dl_dtype dt, const uint8_t *src, int64_t len, int64_t nch,
                               float *dst, int h) {
    switch (dt) {
    case DT_F8E4M3: widen_pair_t(DT_F8E4M3, src, len, nch, dst, h); break;
    case DT_F8E5M2: widen_pair_t(DT_F8E5M2, src, len, nch, dst, h); break;
    default: widen_pair_t(DT_I8, src, len, nch, dst, h); break;
    }
}

/* a_{2p} holds outputs (m0, 2p | 2p+1), a_{2p+1} holds (m1, 2p | 2p+1).
 * Returns [m0: n0..n7 | m1: n0..n7], each the fixed-tree sum of its 8 lanes
 * (the same additions, same operand order, as hsum8 in fp8mm_avx2.c). */
X512_FN static inline __m512 reduce8(__m512 a0, __m512 a1, __m512 a2, __m512 a3, __m512 a4,
                                     __m512 a5, __m512 a6, __m512 a7) {
    /* lane i + lane i+4 of each 8-lane half: [a.A, a.B, b.A, b.B] quads */
#define Q(a, b) _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd))
    __m512 z01 = Q(a0, a1), z23 = Q(a2, a3), z45 = Q(a4, a5), z67 = Q(a6, a7);
#undef Q
    /* (s0 + s2), (s1 + s3) */
    __m512 t = _mm512_add_ps(_mm512_shuffle_ps(z01, z23, 0x44), _mm512_shuffle_ps(z01, z23, 0xee));
    __m512 u = _mm512_add_ps(_mm512_shuffle_ps(z45, z67, 0x44), _mm512_shuffle_ps(z45, z67, 0xee));
    /* (s0 + s2) + (s1 + s3) */
    __m512 r = _mm512_add_ps(_mm512_shuffle_ps(t, u, 0x88), _mm512_shuffle_ps(t, u, 0xdd));
    /* r = [m0: n0 n2 n4 n6 n1 n3 n5 n7 | m1: same] -> n order */
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), r);
}

/* Tile: p[i] = segment dots of activation rows x_i (i < 6, each [nch * 8],
 * zero-padded) with the 8 weight rows of pairs wb[0..3] (pair stride ps
 * floats). p[0..2] = rows (0,1), (2,3), (4,5) as returned by reduce8. */
X512_FN static void mk6x8(const float *const *x, const float *wb, int64_t ps, int64_t nch,
                          __m512 p[3]) {
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    __m512 a30 = a00, a31 = a00, a32 = a00, a33 = a00, a40 = a00, a41 = a00, a42 = a00, a43 = a00;
    __m512 a50 = a00, a51 = a00, a52 = a00, a53 = a00;
    const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3], *x4 = x[4], *x5 = x[5];
    const float *w0 = wb, *w1 = wb + ps, *w2 = wb + 2 * ps, *w3 = wb + 3 * ps;
    for (int64_t c = 0; c < nch; c++) {
        __m512 b0 = _mm512_load_ps(w0 + c * 16), b1 = _mm512_load_ps(w1 + c * 16);
        __m512 b2 = _mm512_load_ps(w2 + c * 16), b3 = _mm512_load_ps(w3 + c * 16);
#define ROW(i)                                                                   \
    {                                                                            \
        __m512 u = _mm512_broadcast_f32x8(_mm256_load_ps(x##i + c * 8));         \
        a##i##0 = _mm512_fmadd_ps(u, b0, a##i##0);                               \
        a##i##1 = _mm512_fmadd_ps(u, b1, a##i##1);                               \
        a##i##2 = _mm512_fmadd_ps(u, b2, a##i##2);                               \
        a##i##3 = _mm512_fmadd_ps(u, b3, a##i##3);                               \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
    }
    p[0] = reduce8(a00, a10, a01, a11, a02, a12, a03, a13);
    p[1] = reduce8(a20, a30, a21, a31, a22, a32, a23, a33);
    p[2] = reduce8(a40, a50, a41, a51, a42, a52, a43, a53);
}

/* Two activation rows: the same per-output operations as mk6x8. */
X512_FN static void mk2x8(const float *const *x, const float *wb, int64_t ps, int64_t nch,
                          __m512 p[1]) {
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    const float *x0 = x[0], *x1 = x[1];
    const float *w0 = wb, *w1 = wb + ps, *w2 = wb + 2 * ps, *w3 = wb + 3 * ps;
    for (int64_t c = 0; c < nch; c++) {
        __m512 b0 = _mm512_load_ps(w0 + c * 16), b1 = _mm512_load_ps(w1 + c * 16);
        __m512 b2 = _mm512_load_ps(w2 + c * 16), b3 = _mm512_load_ps(w3 + c * 16);
        __m512 u = _mm512_broadcast_f32x8(_mm256_load_ps(x0 + c * 8));
        __m512 v = _mm512_broadcast_f32x8(_mm256_load_ps(x1 + c * 8));
        a00 = _mm512_fmadd_ps(u, b0, a00), a01 = _mm512_fmadd_ps(u, b1, a01);
        a02 = _mm512_fmadd_ps(u, b2, a02), a03 = _mm512_fmadd_ps(u, b3, a03);
        a10 = _mm512_fmadd_ps(v, b0, a10), a11 = _mm512_fmadd_ps(v, b1, a11);
        a12 = _mm512_fmadd_ps(v, b2, a12), a13 = _mm512_fmadd_ps(v, b3, a13);
    }
    p[0] = reduce8(a00, a10, a01, a11, a02, a12, a03, a13);
}

static inline float scale_load(const dl_weight *w, int64_t i) {
    if (w->scale_dtype == DT_F32) return ((const float *)w->scale)[i];
    if (w->scale_dtype == DT_BF16) return bf16_to_f32(((const uint16_t *)w->scale)[i]);
    return f16_to_f32(((const uint16_t *)w->scale)[i]);
}

/* 32 codes -> 32 fp16 bit patterns (e4m3: w * 2^-8 with NaN codes left
 * finite, callers check for them; e5m2: exact incl. NaN / inf). The
 * sign-extended code shifted left by 7 has the sign on bits 15 and 14;
 * clearing bit 14 gives the AVX2 kernel's bits for every non-NaN code. */
X512_FN static inline __m512i words32(dl_dtype dt, __m256i c) {
    __m512i v = _mm512_cvtepi8_epi16(c);
    if (dt == DT_F8E5M2) return _mm512_slli_epi16(v, 8);
    return _mm512_and_si512(_mm512_slli_epi16(v, 7), _mm512_set1_epi16((short)0xbfff));
}

/* a_p holds outputs (2p | 2p+1), p < 4; returns them in lanes 0..7 (lanes
 * 8..15 repeat them), each reduced by the same tree as reduce8. */
X512_FN static inline __m512 reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
#define Q(a, b) _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd))
    __m512 z01 = Q(a0, a1), z23 = Q(a2, a3);
#undef Q
    __m512 t = _mm512_add_ps(_mm512_shuffle_ps(z01, z23, 0x44), _mm512_shuffle_ps(z01, z23, 0xee));
    __m512 r = _mm512_add_ps(_mm512_shuffle_ps(t, t, 0x88), _mm512_shuffle_ps(t, t, 0xdd));
    /* 128-bit lane L = [row L, row L+4, row L, row L+4] */
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 4, 8, 12, 1, 5, 9, 13), r);
}

/* gemv8_t: the fp16 widening (any AVX-512 CPU). The sign-extended code
 * shifted left by 7 with bit 14 cleared (words32) is the fp16 of the value
 * * 2^-8; two rows' codes interleaved per 8 make each vcvtph2ps zmm one
 * [row 2p | row 2p+1] chunk. */
#define G8_NAME gemv8_t
#define G8_FN X512_FN
#define G8_SETUP
#define G8_WIDEN(a, b)                                                                      \
    __m512i wl = words32(dt, _mm256_unpacklo_epi64(a, b));                                 \
    __m512i wh = words32(dt, _mm256_unpackhi_epi64(a, b));                                 \
    __m512 f0 = _mm512_cvtph_ps(_mm512_castsi512_si256(wl));                                \
    __m512 f1 = _mm512_cvtph_ps(_mm512_castsi512_si256(wh));                                \
    __m512 f2 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(wl, 1));                          \
    __m512 f3 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(wh, 1));
#include "quant/fp8mm_gemv8.h"
#undef G8_NAME
#undef G8_FN
#undef G8_SETUP
#undef G8_WIDEN

#define X512V_FN __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx2,fma,f16c")))

/* e4m3 magnitude codes 0..127 -> the bf16 of value * 2^-8 (exact: 3 mantissa
 * bits), high and low bytes; 0x7f (NaN) maps to a bf16 NaN, but a tile
 * segment holding a NaN code is recomputed on the exact path anyway. */
static const uint8_t VB_HI[128] = {
    0x00, 0x37, 0x37, 0x37, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38,
    0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39,
    0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a,
    0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b,
    0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c,
    0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d,
    0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e,
    0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x7f};
static const uint8_t VB_LO[128] = {
    0x00, 0x00, 0x80, 0xc0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xc0};
/* Byte order for 32 codes of row a (bytes 0..31) and of row b (32..63) such
 * that the byte / word unpacks below leave chunk c of 8 k (c < 4) as
 * [row a: 8 k | row b: 8 k] in one zmm, the layout of gemv8_t: position
 * 16 l + 4 d + i takes row (l < 2 ? a : b), k = 8 d + 4 (l & 1) + i. */
static const uint8_t VB_PERM[64] = {
    0,  1,  2,  3,  8,  9,  10, 11, 16, 17, 18, 19, 24, 25, 26, 27, 4,  5,  6,  7,  12, 13,
    14, 15, 20, 21, 22, 23, 28, 29, 30, 31, 32, 33, 34, 35, 40, 41, 42, 43, 48, 49, 50, 51,
    56, 57, 58, 59, 36, 37, 38, 39, 44, 45, 46, 47, 52, 53, 54, 55, 60, 61, 62, 63};

/* gemv8v_t: e4m3 with the table widening (AVX512-VBMI): per row pair and
 * 32 k, one vpermb puts the 64 codes in unpack order, two vpermi2b give the
 * bf16 bytes of value * 2^-8 (its sign OR-ed in from the code), and byte /
 * word unpacks with zero make the four fp32 chunk vectors: the same fp32
 * values as the fp16 widening (both exact), so the same bits; no
 * vcvtph2ps. Called with dt = DT_F8E4M3 only. */
#define G8_NAME gemv8v_t
#define G8_FN X512V_FN
#define G8_SETUP                                                                            \
    const __m512i th0 = _mm512_loadu_si512(VB_HI), th1 = _mm512_loadu_si512(VB_HI + 64);   \
    const __m512i tl0 = _mm512_loadu_si512(VB_LO), tl1 = _mm512_loadu_si512(VB_LO + 64);   \
    const __m512i perm = _mm512_loadu_si512(VB_PERM), sg = _mm512_set1_epi8((char)0x80);   \
    const __m512i z = _mm512_setzero_si512();
#define G8_WIDEN(a, b)                                                                      \
    __m512i q = _mm512_permutexvar_epi8(perm, _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1)); \
    __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(th0, q, th1), q, sg, 0xf8); \
    __m512i lo = _mm512_permutex2var_epi8(tl0, q, tl1);                                    \
    __m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi);          \
    __m512 f0 = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w0));                         \
    __m512 f1 = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w0));                         \
    __m512 f2 = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, w1));                         \
    __m512 f3 = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, w1));
#include "quant/fp8mm_gemv8.h"
#undef G8_NAME
#undef G8_FN
#undef G8_SETUP
#undef G8_WIDEN

/* gemv8v_t for 1..4 activation rows: gemv8 (AVX-512 target)
 * calls these VBMI-target functions, which are inlined once gemv8 sits
 * inside gemv_rows_vbmi. */
X512V_FN static inline int gemv8v1(const uint8_t *const *r, const float *x, int64_t xld, int64_t len, __m512 *p) {
    return gemv8v_t(DT_F8E4M3, 1, r, x, xld, len, p);
}
X512V_FN static inline int gemv8v2(const uint8_t *const *r, const float *x, int64_t xld, int64_t len, __m512 *p) {
    return gemv8v_t(DT_F8E4M3, 2, r, x, xld, len, p);
}
X512V_FN static inline int gemv8v3(const uint8_t *const *r, const float *x, int64_t xld, int64_t len, __m512 *p) {
    return gemv8v_t(DT_F8E4M3, 3, r, x, xld, len, p);
}
X512V_FN static inline int gemv8v4(const uint8_t *const *r, const float *x, int64_t xld, int64_t len, __m512 *p) {
    return gemv8v_t(DT_F8E4M3, 4, r, x, xld, len, p);
}

/* The register GEMV for MX = 1..4 activation rows (constant at each call),
 * with the table widening when vbmi (e4m3). */
#define G8_CALL(F, DT) \
    (MX == 4 ? F(DT, 4, r, x, xld, len, p) : MX == 3 ? F(DT, 3, r, x, xld, len, p) \
     : MX == 2 ? F(DT, 2, r, x, xld, len, p) : F(DT, 1, r, x, xld, len, p))
X512_FN static inline __attribute__((always_inline)) int gemv8(dl_dtype dt, int vbmi, int MX, const uint8_t *const *r,
                                                               const float *x, int64_t xld, int64_t len, __m512 *p) {
    if (dt == DT_F8E4M3 && vbmi)
        return MX == 4 ? gemv8v4(r, x, xld, len, p) : MX == 3 ? gemv8v3(r, x, xld, len, p)
               : MX == 2 ? gemv8v2(r, x, xld, len, p) : gemv8v1(r, x, xld, len, p);
    if (dt == DT_F8E4M3) return G8_CALL(gemv8_t, DT_F8E4M3);
    return G8_CALL(gemv8_t, DT_F8E5M2);
}
#undef G8_CALL

/* Small M over output rows [n0, n1) (fp8 dtypes): 8-row tiles (adjacent
 * rows, or spread out when j->spread: core/rowspread.h) through all
 * segments, activation rows four at a time, then the 3, 2 or 1 left (the
 * codes are widened again, from L1, for each group); a tile segment holding
 * an e4m3 NaN code goes through the widened buffer (exact NaN widening) and
 * mk2x8 instead, same bits otherwise. */
X512_FN static inline __attribute__((always_inline)) int gemv_rows(const qmm_f32job *j, int64_t n0, int64_t n1, const int vbmi,
                                                                   const int big) {
    const dl_weight *w = j->w;
    const int64_t K = w->k, seg = j->seg, nseg = (K + seg - 1) / seg;
    const int64_t nchm = (seg + 15) / 16 * 2, ps = nchm * 16;
    const int block = w->scale_kind == WS_BLOCK, M = j->M;
    const float us = w->dtype == DT_F8E4M3 ? 256.0f : 1.0f;
    float *wbuf = NULL, *xbuf = NULL; /* allocated on the first NaN code */
    int64_t nb0, st, nb; /* tile: rows nb0 + r st, r < nb (core/rowspread.h) */
    for (int64_t t = 0; (nb = rs_tile(n0, n1, NT, j->spread, t, &nb0, &st)) > 0; t++) {
        const uint8_t *rows[NT];
        for (int64_t r = 0; r < NT; r++) /* missing rows alias row 0; dropped */
            rows[r] = (const uint8_t *)w->data + (nb0 + (r < nb ? r : 0) * st) * w->ld;
        __m256 acc[QMM_F8_GEMV_MAX_M];
        for (int m = 0; m < M; m++) acc[m] = _mm256_setzero_ps();
        int64_t sidx[NT]; /* block layout: scale index of row r, segment g = sidx[r] + g */
        for (int64_t r = 0; block && r < NT; r++) sidx[r] = (nb0 + (r < nb ? r : 0) * st) / w->bn * nseg;
        for (int64_t g = 0; g < nseg; g++) {
            const int64_t k0 = g * seg, len = K - k0 < seg ? K - k0 : seg;
            const uint8_t *rk[NT];
            for (int r = 0; r < NT; r++) rk[r] = rows[r] + k0;
            __m256 sbv = _mm256_setzero_ps();
            if (block) {
                float sb[NT] __attribute__((aligned(32)));
                for (int64_t r = 0; r < NT; r++) sb[r] = scale_load(w, sidx[r] + g);
                sbv = _mm256_load_ps(sb);
            }
            for (int m0 = 0; m0 < M;) {
                /* groups of 4 rows, then of the 3, 2 or 1 left */
                const int mx = big ? (M - m0 >= 4 ? 4 : M - m0) : M - m0 >= 2 ? 2 : 1;
                const float *xm = j->x + (int64_t)m0 * K + k0;
                __m512 p[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
                /* the 4-row group as its own constant-MX call: the code measured above */
                if (mx == 4 ? gemv8(w->dtype, vbmi, 4, rk, xm, K, len, p)
                            : gemv8(w->dtype, vbmi, mx, rk, xm, K, len, p)) {
                    if (!wbuf) {
                        wbuf = amalloc((size_t)(NT / 2 * ps) * sizeof(float));
                        xbuf = amalloc((size_t)(4 * nchm * 8) * sizeof(float));
                        if (!wbuf || !xbuf) {
                            free(wbuf), free(xbuf);
                            return -1;
                        }
                    }
                    const int64_t nch = (len + 7) / 8, nch2 = (len + 15) / 16 * 2;
                    for (int r = 0; r < NT; r++)
                        widen_pair(w->dtype, rk[r], len, nch2, wbuf + r / 2 * ps, r & 1);
                    for (int i = 0; i < mx; i++) {
                        float *xd = xbuf + i * nch * 8;
                        memcpy(xd, xm + i * K, (size_t)len * sizeof(float));
                        memset(xd + len, 0, (size_t)(nch * 8 - len) * sizeof(float));
                    }
                    for (int q = 0; 2 * q < mx; q++) {
                        const int qb = 2 * q + 1 < mx ? 2 * q + 1 : mx - 1;
                        const float *xr[2] = {xbuf + 2 * q * nch * 8, xbuf + qb * nch * 8};
                        mk2x8(xr, wbuf, ps, nch, q ? p + 1 : p);
                    }
                }
                for (int i = 0; i < mx; i++) {
                    const int m = m0 + i;
                    const __m512 pi = i < 2 ? p[0] : p[1]; /* constant indices: p stays in registers */
                    __m256 t = i & 1 ? _mm512_extractf32x8_ps(pi, 1) : _mm512_castps512_ps256(pi);
                    t = _mm256_mul_ps(t, _mm256_set1_ps(us));
                    if (j->xs_mode == 2) t = _mm256_mul_ps(t, _mm256_set1_ps(j->xs[(int64_t)m * nseg + g]));
                    if (block) t = _mm256_mul_ps(t, sbv);
                    acc[m] = _mm256_add_ps(acc[m], t);
                }
                m0 += mx;
            }
        }
        for (int m = 0; m < M; m++) {
            float a[NT] __attribute__((aligned(32)));
            _mm256_store_ps(a, acc[m]);
            for (int64_t r = 0; r < nb; r++) {
                int64_t n = nb0 + r * st;
                float v = a[r];
                if (j->xs_mode == 1) v = v * j->xs[m];
                if (!block) v = v * w_scale_at(w, n, 0);
                if (w->bias) v += w_bias_at(w, n);
                j->y[(int64_t)m * w->n + n] = v;
            }
        }
    }
    free(wbuf), free(xbuf);
    return 0;
}

/* gemv_rows compiled four times: with the fp16 widening, and (e4m3, VBMI
 * CPUs) with the table widening inlined as well; for M <= 2 (groups of 1
 * and 2 rows only) and for M = 3..8 (groups of 4 and 3 too), so that the
 * 4-row groups' register pressure does not reach the decode loops. The
 * VBMI 3..8 form is flattened: GCC otherwise leaves its 3- and 4-row
 * groups out of line, reloading the tables per segment. */
X512_FN static int gemv_rows_plain(const qmm_f32job *j, int64_t n0, int64_t n1) { return gemv_rows(j, n0, n1, 0, 0); }
X512V_FN static int gemv_rows_vbmi(const qmm_f32job *j, int64_t n0, int64_t n1) { return gemv_rows(j, n0, n1, 1, 0); }
X512_FN static int gemv_rows_plain_big(const qmm_f32job *j, int64_t n0, int64_t n1) { return gemv_rows(j, n0, n1, 0, 1); }
X512V_FN __attribute__((flatten)) static int gemv_rows_vbmi_big(const qmm_f32job *j, int64_t n0, int64_t n1) {
    return gemv_rows(j, n0, n1, 1, 1);
}

X512_FN int fp8mm_rows_avx512(const qmm_f32job *j, int64_t n0, int64_t n1) {
    const dl_weight *w = j->w;
    if (j->M <= QMM_F8_GEMV_MAX_M && w->dtype != DT_I8)
        return j->M <= 2 ? (j->vbmi ? gemv_rows_vbmi(j, n0, n1) : gemv_rows_plain(j, n0, n1))
                         : (j->vbmi ? gemv_rows_vbmi_big(j, n0, n1) : gemv_rows_plain_big(j, n0, n1));
    if (j->M == 1) return fp8mm_rows_avx2(j, n0, n1);
    const int64_t K = w->k, seg = j->seg, nseg = (K + seg - 1) / seg;
    const int64_t nchm = (seg + 15) / 16 * 2;  /* chunks of 8 per segment, even */
    const int64_t ps = nchm * 16;              /* floats per row pair */
    const int block = w->scale_kind == WS_BLOCK, M = j->M;
    /* M <= 8 (memory-bound): 8-row panels, so the weights stream as 8
     * sequential rows (prefetch friendly), with the activations copied once
     * per call for all segments; larger M: 64-row panels, the activation
     * segment copied per panel */
    const int hoist = M <= 8;
    const int64_t pan = hoist ? NT : NB, xst = nchm * 8;
    const float us = j->w->dtype == DT_F8E4M3 ? 256.0f : 1.0f;
    /* acc: per pair of activation rows q and 8-row tile t, 16 floats
     * [row 2q: 8 outputs | row 2q+1: 8 outputs] (M rounded up to even; an odd
     * last row's duplicate lands in the padding) */
    const int64_t Mp = (M + 1) / 2 * 2, ntl = pan / NT;
#define ACC_AT(m, r) (((int64_t)(m) / 2 * ntl + (r) / NT) * 16 + ((m) & 1) * 8 + (r) % NT)
    float *wbuf = amalloc((size_t)(pan / 2 * ps) * sizeof(float));
    float *xbuf = amalloc((size_t)M * (size_t)(hoist ? nseg : 1) * (size_t)xst * sizeof(float));
    float *acc = amalloc((size_t)Mp * (size_t)pan * sizeof(float));
    if (!wbuf || !xbuf || !acc) {
        free(wbuf), free(xbuf), free(acc);
        return -1;
    }
    /* activation row m, segment g: xseg(g) + m * xst, zero-padded to whole chunks */
#define XSEG(g) (hoist ? xbuf + (int64_t)(g) * M * xst : xbuf)
    for (int64_t g = 0; g < (hoist ? nseg : 0); g++) {
        const int64_t k0 = g * seg, len = K - k0 < seg ? K - k0 : seg;
        for (int m = 0; m < M; m++) {
            float *xd = XSEG(g) + (int64_t)m * xst;
            memcpy(xd, j->x + (int64_t)m * K + k0, (size_t)len * sizeof(float));
            memset(xd + len, 0, (size_t)(xst - len) * sizeof(float));
        }
    }
    for (int64_t nb0 = n0; nb0 < n1; nb0 += pan) {
        const int64_t nb = n1 - nb0 < pan ? n1 - nb0 : pan, nbt = (nb + NT - 1) / NT * NT;
        memset(acc, 0, (size_t)Mp * (size_t)pan * sizeof(float));
        int64_t sidx[NB];
        for (int64_t r = 0; block && r < nb; r++) sidx[r] = (nb0 + r) / w->bn * nseg;
        for (int64_t g = 0; g < nseg; g++) {
            const int64_t k0 = g * seg, len = K - k0 < seg ? K - k0 : seg;
            const int64_t nch = (len + 7) / 8, nch2 = (len + 15) / 16 * 2;
            float sb[NB] __attribute__((aligned(32)));
            for (int64_t r = 0; r < nbt; r++) {
                /* rows past the panel end are zero (their outputs are dropped) */
                if (r < nb)
                    widen_pair(w->dtype, (const uint8_t *)w->data + (nb0 + r) * w->ld + k0, len,
                               nch2, wbuf + r / 2 * ps, (int)(r & 1));
                else
                    widen_pair(w->dtype, NULL, 0, nch2, wbuf + r / 2 * ps, (int)(r & 1));
                sb[r] = block && r < nb ? scale_load(w, sidx[r] + g) : 0.0f;
            }
            for (int m = 0; m < (hoist ? 0 : M); m++) {
                float *xd = xbuf + (int64_t)m * xst;
                memcpy(xd, j->x + (int64_t)m * K + k0, (size_t)len * sizeof(float));
                memset(xd + len, 0, (size_t)(nch * 8 - len) * sizeof(float));
            }
            const __m512 usv = _mm512_set1_ps(us);
            for (int m0 = 0; m0 < M;) {
                /* 6-row tiles, then 2-row tiles; an odd last row is paired
                 * with itself */
                const int mr = M - m0 >= MR ? MR : 2;
                const float *xr[MR];
                __m512 xsv[MR / 2]; /* xs_mode 2: [xs(row 2q) x 8 | xs(row 2q+1) x 8] */
                for (int i = 0; i < mr; i++) {
                    int m = m0 + i < M ? m0 + i : M - 1;
                    xr[i] = XSEG(g) + (int64_t)m * xst;
                }
                for (int q = 0; j->xs_mode == 2 && q < mr / 2; q++) {
                    int ma = m0 + 2 * q, mb = ma + 1 < M ? ma + 1 : M - 1;
                    xsv[q] = _mm512_insertf32x8(_mm512_set1_ps(j->xs[(int64_t)ma * nseg + g]),
                                                _mm256_set1_ps(j->xs[(int64_t)mb * nseg + g]), 1);
                }
                for (int64_t r0 = 0; r0 < nbt; r0 += NT) {
                    __m512 p[3];
                    if (mr == MR) mk6x8(xr, wbuf + r0 / 2 * ps, ps, nch, p);
                    else mk2x8(xr, wbuf + r0 / 2 * ps, ps, nch, p);
                    const __m512 sbv = _mm512_broadcast_f32x8(_mm256_load_ps(sb + r0));
                    for (int q = 0; q < mr / 2; q++) {
                        /* per output: t = p * us [* xs] [* s_block]; acc += t */
                        __m512 t = _mm512_mul_ps(p[q], usv);
                        if (j->xs_mode == 2) t = _mm512_mul_ps(t, xsv[q]);
                        if (block) t = _mm512_mul_ps(t, sbv);
                        float *ar = acc + ACC_AT(m0 + 2 * q, r0);
                        _mm512_store_ps(ar, _mm512_add_ps(_mm512_load_ps(ar), t));
                    }
                }
                m0 += mr;
            }
        }
        for (int64_t r = 0; r < nb; r++) {
            int64_t n = nb0 + r;
            float s_end = block ? 1.0f : w_scale_at(w, n, 0);
            float b = w->bias ? w_bias_at(w, n) : 0.0f;
            for (int m = 0; m < M; m++) {
                float v = acc[ACC_AT(m, r)];
                if (j->xs_mode == 1) v = v * j->xs[m];
                if (!block) v = v * s_end;
                if (w->bias) v += b;
                j->y[(int64_t)m * w->n + n] = v;
            }
        }
    }
#undef ACC_AT
#undef XSEG
    free(wbuf), free(xbuf), free(acc);
    return 0;
}
