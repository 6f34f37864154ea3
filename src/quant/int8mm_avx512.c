/* W8A8 int8 matmul for the batches qmm_i8_tiles_at picks (M >= 3, and M = 2
 * at K >= 4096), AVX-512 VNNI, register-blocked.
 *
 * vpdpbusd multiplies unsigned by signed bytes, so the activations enter as
 * u = x + 128 (stored as x ^ 0x80, in [1, 255]) against the signed weights:
 * sum(u * w) = sum(x * w) + 128 * sum(w). The row sums of w are taken per
 * segment with the same instruction (u = 1) and subtracted. vpdpbusd does
 * not saturate, and every step is exact modulo 2^32 while the true dot fits
 * int32 (qmm_matmul bounds K), so the int32 dot, and with the epilogue of
 * int8mm.c every output, is bitwise that of the other int8 kernels.
 *
 * Tiles of 4 activation rows x 6 weight rows (24 zmm accumulators): each
 * 64-byte weight load serves 4 rows, each activation load 6; the last
 * M mod 4 rows take a 1..3-row tile of the same loop; the segment tail
 * uses masked (zeroing) loads, so padding bytes are never read. */
#include <immintrin.h>
#include <stdlib.h>

#include "quant/qmatmul.h"

#define V512_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni")))
#define NB 64 /* output rows per panel */
#define MR 4  /* activation rows per tile */
#define NR 6  /* weight rows per tile */

/* a += vpdpbusd(u, w) for the tile's 24 accumulators. GCC 12 kept most of
 * them in memory inside the K loop when written with the intrinsic (31 zmm
 * live: each step reloaded and stored them), and the tile ran at ~40% of
 * the instruction's peak (bench/lab/cpu_i8tile.c: 212 GOP/s on one core
 * against 469); the same instruction as a register-tied asm operand keeps
 * them in registers (427, 91%), as clang does with the intrinsic. */
#if defined(__GNUC__) && !defined(__clang__)
#define DPBUSD(a, u, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(u), "v"(w))
#else
#define DPBUSD(a, u, w) ((a) = _mm512_dpbusd_epi32(a, u, w))
#endif

/* Same epilogue as int8mm.c (block: f += (float)acc_g * s; then f * xs[m];
 * channel/tensor: ((float)acc * xs[m]) * s[n]; then + bias). */
static inline float blk_step(float f, int32_t a, float s) { return f + (float)a * s; }
/* ws: the row's channel/tensor scale (unused with block scales), b its bias
 * (read only when the weight has one): looked up once per row, not per
 * output (the lookups were ~20% of the kernel at M = 256) */
static inline float finish(const qmm_i8job *j, int m, float f, int32_t a, float ws, float b) {
    const dl_weight *w = j->w;
    float v = w->scale_kind == WS_BLOCK ? f * j->xs[m] : ((float)a * j->xs[m]) * ws;
    if (w->bias) v += b;
    return v;
}

V512_FN static inline __mmask64 tail_mask(int64_t rem) {
    return rem >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << rem) - 1);
}

/* Sum of the 16 int32 lanes modulo 2^32 (vector adds wrap; the compiler's
 * reduce helper adds in C int, whose overflow is undefined). */
V512_FN static inline uint32_t hsum_u32(__m512i v) {
    __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(s);
}

/* s = sum of w[0, len) (signed bytes), exact. */
V512_FN static int32_t row_sum(const int8_t *w, int64_t len) {
    __m512i a = _mm512_setzero_si512(), one = _mm512_set1_epi8(1);
    for (int64_t k = 0; k < len; k += 64)
        a = _mm512_dpbusd_epi32(a, one, _mm512_maskz_loadu_epi8(tail_mask(len - k), w + k));
    return (int32_t)hsum_u32(a);
}

/* o[i][r] = sum over k < len of u_i[k] * w_r[k] (mod 2^32), i < R, r < 6;
 * R (1..4) is a constant at each call (mkRx6 below), so the accumulators of
 * rows past R are dead and dropped. */
V512_FN static inline __attribute__((always_inline)) void mk_x6(const int R, const uint8_t *const *u,
                                                                const int8_t *const *wr, int64_t len,
                                                                uint32_t o[MR][NR]) {
#define Z _mm512_setzero_si512()
    __m512i a00 = Z, a01 = Z, a02 = Z, a03 = Z, a04 = Z, a05 = Z;
    __m512i a10 = Z, a11 = Z, a12 = Z, a13 = Z, a14 = Z, a15 = Z;
    __m512i a20 = Z, a21 = Z, a22 = Z, a23 = Z, a24 = Z, a25 = Z;
    __m512i a30 = Z, a31 = Z, a32 = Z, a33 = Z, a34 = Z, a35 = Z;
#undef Z
    const uint8_t *u0 = u[0], *u1 = u[R > 1 ? 1 : 0], *u2 = u[R > 2 ? 2 : 0], *u3 = u[R > 3 ? 3 : 0];
    const int8_t *w0 = wr[0], *w1 = wr[1], *w2 = wr[2], *w3 = wr[3], *w4 = wr[4], *w5 = wr[5];
    /* whole 64-byte steps with plain loads, then the tail with zeroing masked
     * loads (the same zeros, so the same sums) */
#define STEP(LD)                                                                  \
    {                                                                             \
        __m512i b0 = LD(w0 + k), b1 = LD(w1 + k), b2 = LD(w2 + k);                \
        __m512i b3 = LD(w3 + k), b4 = LD(w4 + k), b5 = LD(w5 + k);                \
        ROW(LD, 0) ROW(LD, 1) ROW(LD, 2) ROW(LD, 3)                               \
    }
#define ROW(LD, i)                                                                \
    if (i < R) {                                                                  \
        __m512i x = LD(u##i + k);                                                 \
        DPBUSD(a##i##0, x, b0);                                                   \
        DPBUSD(a##i##1, x, b1);                                                   \
        DPBUSD(a##i##2, x, b2);                                                   \
        DPBUSD(a##i##3, x, b3);                                                   \
        DPBUSD(a##i##4, x, b4);                                                   \
        DPBUSD(a##i##5, x, b5);                                                   \
    }
#define LD_FULL(p) _mm512_loadu_si512((const void *)(p))
#define LD_TAIL(p) _mm512_maskz_loadu_epi8(mk, (p))
    int64_t k = 0;
    for (; k + 64 <= len; k += 64) STEP(LD_FULL)
    if (k < len) {
        const __mmask64 mk = tail_mask(len - k);
        STEP(LD_TAIL)
    }
#undef LD_FULL
#undef LD_TAIL
#undef ROW
#undef STEP
#define OUT(i)                                                                      \
    if (i < R) {                                                                    \
        o[i][0] = hsum_u32(a##i##0), o[i][1] = hsum_u32(a##i##1), o[i][2] = hsum_u32(a##i##2); \
        o[i][3] = hsum_u32(a##i##3), o[i][4] = hsum_u32(a##i##4), o[i][5] = hsum_u32(a##i##5); \
    }
    OUT(0) OUT(1) OUT(2) OUT(3)
#undef OUT
}
V512_FN static void mk4x6(const uint8_t *const *u, const int8_t *const *wr, int64_t len, uint32_t o[MR][NR]) {
    mk_x6(4, u, wr, len, o);
}
V512_FN static void mk3x6(const uint8_t *const *u, const int8_t *const *wr, int64_t len, uint32_t o[MR][NR]) {
    mk_x6(3, u, wr, len, o);
}
V512_FN static void mk2x6(const uint8_t *const *u, const int8_t *const *wr, int64_t len, uint32_t o[MR][NR]) {
    mk_x6(2, u, wr, len, o);
}
V512_FN static void mk1x6(const uint8_t *const *u, const int8_t *const *wr, int64_t len, uint32_t o[MR][NR]) {
    mk_x6(1, u, wr, len, o);
}

V512_FN void int8mm_rows_avx512vnni(const qmm_i8job *j, int64_t n0, int64_t n1) {
    const dl_weight *w = j->w;
    const int64_t K = w->k, seg = w->scale_kind == WS_BLOCK ? w->bk : K, ld = w->ld;
    const int block = w->scale_kind == WS_BLOCK, M = j->M;
    /* per panel: running block sum f (block scales) or the whole-K dot a */
    float *f = malloc((size_t)M * NB * sizeof(float));
    int32_t *a = malloc((size_t)M * NB * sizeof(int32_t));
    if (!f || !a || !j->xu) { /* no memory: the allocation-free kernel, same bits */
        free(f), free(a);
        int8mm_rows_avxvnni(j, n0, n1);
        return;
    }
    for (int64_t nb0 = n0; nb0 < n1; nb0 += NB) {
        const int64_t nb = n1 - nb0 < NB ? n1 - nb0 : NB;
        for (int64_t i = 0; i < (int64_t)M * NB; i++) f[i] = 0.0f, a[i] = 0;
        for (int64_t k0 = 0; k0 < K; k0 += seg) {
            const int64_t len = K - k0 < seg ? K - k0 : seg;
            uint32_t rs[NB];
            float bsc[NB]; /* block scales of the segment, per row */
            for (int64_t r = 0; r < nb; r++) {
                rs[r] = 128u * (uint32_t)row_sum((const int8_t *)w->data + (nb0 + r) * ld + k0, len);
                bsc[r] = block ? w_scale_at(w, nb0 + r, k0) : 0.0f;
            }
            for (int m0 = 0; m0 < M; m0 += MR) {
                const uint8_t *u[MR];
                for (int i = 0; i < MR; i++)
                    u[i] = j->xu + (int64_t)(m0 + i < M ? m0 + i : M - 1) * j->qld + k0;
                for (int64_t r0 = 0; r0 < nb; r0 += NR) {
                    const int8_t *wr[NR]; /* rows past the panel alias its last row */
                    for (int r = 0; r < NR; r++)
                        wr[r] = (const int8_t *)w->data + (nb0 + (r0 + r < nb ? r0 + r : nb - 1)) * ld + k0;
                    uint32_t o[MR][NR];
                    switch (M - m0 < MR ? M - m0 : MR) { /* the last M mod 4 rows: a narrower tile */
                    case 1: mk1x6(u, wr, len, o); break;
                    case 2: mk2x6(u, wr, len, o); break;
                    case 3: mk3x6(u, wr, len, o); break;
                    default: mk4x6(u, wr, len, o); break;
                    }
                    for (int i = 0; i < MR && m0 + i < M; i++)
                        for (int r = 0; r < NR && r0 + r < nb; r++) {
                            int32_t d = (int32_t)(o[i][r] - rs[r0 + r]);
                            int64_t q = (int64_t)(m0 + i) * NB + r0 + r;
                            if (block) f[q] = blk_step(f[q], d, bsc[r0 + r]);
                            else a[q] = d;
                        }
                }
            }
        }
        float rsc[NB], rbi[NB];
        for (int64_t r = 0; r < nb; r++) {
            rsc[r] = block ? 0.0f : w_scale_at(w, nb0 + r, 0);
            rbi[r] = w->bias ? w_bias_at(w, nb0 + r) : 0.0f;
        }
        for (int m = 0; m < M; m++)
            for (int64_t r = 0; r < nb; r++)
                j->y[(int64_t)m * w->n + nb0 + r] =
                    finish(j, m, f[(int64_t)m * NB + r], a[(int64_t)m * NB + r], rsc[r], rbi[r]);
    }
    free(f), free(a);
}
