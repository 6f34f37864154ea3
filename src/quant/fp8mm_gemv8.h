/* Template of the AVX-512 fp8 GEMV tile (fp8mm_avx512.c), included once per
 * widening. The includer defines
 *   G8_NAME            the function's name,
 *   G8_FN              its target attribute,
 *   G8_SETUP           declarations made once per call (tables, constants),
 *   G8_WIDEN(a, b)     declarations of __m512 f0..f3, chunks 0..3 of 8 k of
 *                      the 32 codes a (row 2p) and b (row 2p+1), each as
 *                      [row 2p: 8 k | row 2p+1: 8 k] fp32 values * 2^-8
 *                      (e4m3) or exact (e5m2), dt the weight dtype,
 * and reduce4 / reduce8; everything else (loads, NaN check, FMA order,
 * tails, reductions) is this text, so every widening gives the same bits.
 * No include guard: meant to be included more than once.
 *
 * Small M (1..4 activation rows, MX): segment dots of x rows x[i xld,
 * i xld + len) (i < MX) with 8 weight rows r[0..7] (codes at the segment
 * start), widened in registers, two weight rows per zmm: per output the FMA
 * sequence of the widened-buffer kernels (ceil(len / 8) FMAs in k order,
 * the last chunk zero-padded). p: MX = 1: outputs in lanes 0..7 of p[0];
 * MX = 2: p[0] = [row 0: 8 outputs | row 1: 8 outputs]; MX = 3, 4: p[0] as
 * at MX = 2, p[1] the same for rows 2, 3 (row 3's half undefined at MX = 3):
 * the codes are widened once for 3 or 4 rows (the 16 x chunks of a 32-k step then no longer fit in registers
 * next to the 16 accumulators; GCC keeps some on the stack, which measured
 * faster than loading them again for every pair). Returns 1 (and leaves p
 * undefined) when an e4m3 NaN code was met: the caller recomputes with the
 * exact widening. */
G8_FN static inline __attribute__((always_inline)) int G8_NAME(dl_dtype dt, int MX, const uint8_t *const *r,
                                                                const float *x, int64_t xld, int64_t len,
                                                                __m512 *p) {
    G8_SETUP
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, d0 = c0, d1 = c0, d2 = c0, d3 = c0;
    __m512 e0 = c0, e1 = c0, e2 = c0, e3 = c0, g0 = c0, g1 = c0, g2 = c0, g3 = c0;
    __m256i mx = _mm256_setzero_si256();
    const __m256i hb = _mm256_set1_epi8((char)0x80);
    const uint8_t *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3], *r4 = r[4], *r5 = r[5],
                  *r6 = r[6], *r7 = r[7];
    const float *xb = x + (MX >= 2 ? xld : 0), *xc = x + (MX >= 3 ? 2 * xld : 0),
                *xd = x + (MX == 4 ? 3 * xld : 0);
    int64_t k = 0;
    /* one weight row pair, 32 codes each: chunks 0..3 of 8 go to the
     * accumulators in k order; FULL = 0 masks the codes and skips chunks
     * past len */
#define FMA4(acc, u0, u1, u2, u3)                                                           \
    acc = _mm512_fmadd_ps(u0, f0, acc);                                                    \
    if (FULL || rem > 8) acc = _mm512_fmadd_ps(u1, f1, acc);                               \
    if (FULL || rem > 16) acc = _mm512_fmadd_ps(u2, f2, acc);                              \
    if (FULL || rem > 24) acc = _mm512_fmadd_ps(u3, f3, acc);
#define PAIR(acc, acc2, acc3, acc4, ra, rb)                                                \
    {                                                                                      \
        __m256i a = FULL ? _mm256_loadu_si256((const __m256i *)(ra + k))                   \
                         : _mm256_maskz_loadu_epi8(mk, ra + k);                            \
        __m256i b = FULL ? _mm256_loadu_si256((const __m256i *)(rb + k))                   \
                         : _mm256_maskz_loadu_epi8(mk, rb + k);                            \
        if (dt == DT_F8E4M3)                                                               \
            mx = _mm256_max_epu8(                                                          \
                mx, _mm256_max_epu8(_mm256_or_si256(a, hb), _mm256_or_si256(b, hb)));      \
        G8_WIDEN(a, b)                                                                     \
        if (MX >= 3) {                                                                     \
            FMA4(acc, XL(x, 0), XL(x, 1), XL(x, 2), XL(x, 3))                              \
            FMA4(acc2, XL(xb, 0), XL(xb, 1), XL(xb, 2), XL(xb, 3))                         \
            FMA4(acc3, XL(xc, 0), XL(xc, 1), XL(xc, 2), XL(xc, 3))                         \
            if (MX == 4) {                                                                 \
                FMA4(acc4, XL(xd, 0), XL(xd, 1), XL(xd, 2), XL(xd, 3))                     \
            }                                                                              \
        } else {                                                                           \
            FMA4(acc, x0, x1, x2, x3)                                                      \
            if (MX == 2) {                                                                 \
                FMA4(acc2, y0, y1, y2, y3)                                                 \
            }                                                                              \
        }                                                                                  \
    }
#define ALL_PAIRS                                                                          \
    PAIR(c0, d0, e0, g0, r0, r1) PAIR(c1, d1, e1, g1, r2, r3) PAIR(c2, d2, e2, g2, r4, r5) \
    PAIR(c3, d3, e3, g3, r6, r7)
    /* one step of 32 k with the x chunk loader XL: at MX <= 2 the chunks are
     * loaded once for all pairs, at MX >= 3 inside each pair */
#define STEP                                                                               \
    __m512 x0, x1, x2, x3, y0, y1, y2, y3;                                                 \
    if (MX <= 2) {                                                                         \
        x0 = XL(x, 0), x1 = XL(x, 1), x2 = XL(x, 2), x3 = XL(x, 3);                        \
        y0 = x0, y1 = x1, y2 = x2, y3 = x3;                                                \
        if (MX == 2) y0 = XL(xb, 0), y1 = XL(xb, 1), y2 = XL(xb, 2), y3 = XL(xb, 3);       \
    }                                                                                      \
    ALL_PAIRS
#define XL(v, i) _mm512_broadcast_f32x8(_mm256_loadu_ps(v + k + 8 * i))
    for (; k + 32 <= len; k += 32) {
        enum { FULL = 1 };
        const int64_t rem = 32;
        const __mmask32 mk = ~(__mmask32)0;
        (void)rem, (void)mk;
        STEP
    }
#undef XL
    if (k < len) {
        enum { FULL = 0 };
        const int64_t rem = len - k;
        const __mmask32 mk = (__mmask32)(((uint64_t)1 << rem) - 1);
#define XL(v, i)                                                                                \
    _mm512_broadcast_f32x8(_mm256_maskz_loadu_ps(                                               \
        rem > 8 * i ? (__mmask8)(rem - 8 * i >= 8 ? 0xff : (1u << (rem - 8 * i)) - 1) : 0,      \
        v + k + 8 * i))
        STEP
#undef XL
    }
#undef STEP
#undef ALL_PAIRS
#undef PAIR
#undef FMA4
    if (dt == DT_F8E4M3 && _mm256_cmpeq_epi8_mask(mx, _mm256_set1_epi8((char)0xff))) return 1;
    p[0] = MX >= 2 ? reduce8(c0, d0, c1, d1, c2, d2, c3, d3) : reduce4(c0, c1, c2, c3);
    if (MX >= 3) p[1] = reduce8(e0, g0, e1, g1, e2, g2, e3, g3);
    return 0;
}
