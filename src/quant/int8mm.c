/* W8A8 int8 matmul: scalar reference, AVX2 (maddubs/madd) and AVX-VNNI
 * (vpdpbusd) kernels. The int32 dot is exact and all three share the same
 * fp32 epilogue, so they give bitwise identical outputs.
 *
 * Signed x signed products use the sign trick: u = |w| (unsigned, so
 * w = -128 gives 128 exactly), s = x * sign(w) (safe: x is in [-127, 127]).
 * maddubs adds two products of at most 128 * 127 = 16256, i.e. <= 32512,
 * which fits int16 without saturation. int32 overflow needs
 * K > 2^31 / (127 * 128) (about 132000); qmm_matmul refuses such K. */
#include <immintrin.h>
#include <string.h>

#include "core/rowspread.h"
#include "quant/qmatmul.h"

#define NR 4  /* output rows per micro-kernel */

static int64_t seg_of(const dl_weight *w) { return w->scale_kind == WS_BLOCK ? w->bk : w->k; }

/* Epilogue. Block scales: f accumulates (float)acc_g * s(n, g) over the K
 * blocks in order, v = f * xs[m]. Otherwise acc is the whole-K dot and
 * v = ((float)acc * xs[m]) * s(n). Then + bias. */
static inline float blk_step(const dl_weight *w, float f, int32_t a, int64_t n, int64_t k0) {
    return f + (float)a * w_scale_at(w, n, k0);
}
static inline float finish(const qmm_i8job *j, int64_t n, int m, float f, int32_t a) {
    const dl_weight *w = j->w;
    float v = w->scale_kind == WS_BLOCK ? f * j->xs[m]
                                        : ((float)a * j->xs[m]) * w_scale_at(w, n, 0);
    if (w->bias) v += w_bias_at(w, n);
    return v;
}

void int8mm_rows_ref(const qmm_i8job *j, int64_t n0, int64_t n1) {
    const dl_weight *w = j->w;
    const int64_t K = w->k, seg = seg_of(w);
    for (int64_t n = n0; n < n1; n++) {
        const int8_t *row = (const int8_t *)w->data + n * w->ld;
        for (int m = 0; m < j->M; m++) {
            const int8_t *xr = j->xq + (int64_t)m * j->qld;
            float f = 0.0f;
            int32_t a = 0;
            for (int64_t k0 = 0; k0 < K; k0 += seg) {
                int64_t k1 = k0 + seg < K ? k0 + seg : K;
                a = 0;
                for (int64_t k = k0; k < k1; k++) a += (int32_t)xr[k] * (int32_t)row[k];
                if (w->scale_kind == WS_BLOCK) f = blk_step(w, f, a, n, k0);
            }
            j->y[(int64_t)m * w->n + n] = finish(j, n, m, f, a);
        }
    }
}

/* The SIMD kernels differ only in the 32-byte multiply-accumulate step, so
 * one body is instantiated twice with a different STEP and target. */
#define AVX2_STEP(acc, u, s) \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
#define VNNI_STEP(acc, u, s) acc = _mm256_dpbusd_avx_epi32(acc, u, s)

#define DEFINE_INT8_KERNEL(NAME, TARGET, STEP)                                                    \
    __attribute__((target(TARGET))) static inline int32_t NAME##_hsum(__m256i v) {              \
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));   \
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));                                       \
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));                                       \
        return _mm_cvtsi128_si32(s);                                                            \
    }                                                                                           \
    /* a[r] = dot(x[0, len), w_r[0, len)) exactly, for NR rows at stride ld. */                 \
    __attribute__((target(TARGET))) static void NAME##_dot(const int8_t *x, const int8_t *w0,   \
                                                           int64_t ld, int64_t len, int32_t *a) { \
        __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;                         \
        const int8_t *w1 = w0 + ld, *w2 = w1 + ld, *w3 = w2 + ld;                               \
        int64_t k = 0;                                                                          \
        for (;; k += 32) {                                                                      \
            __m256i xv, b0, b1, b2, b3;                                                         \
            if (k + 32 <= len) {                                                                \
                xv = _mm256_loadu_si256((const __m256i *)(x + k));                              \
                b0 = _mm256_loadu_si256((const __m256i *)(w0 + k));                             \
                b1 = _mm256_loadu_si256((const __m256i *)(w1 + k));                             \
                b2 = _mm256_loadu_si256((const __m256i *)(w2 + k));                             \
                b3 = _mm256_loadu_si256((const __m256i *)(w3 + k));                             \
            } else if (k < len) {                                                               \
                int8_t t[5][32];                                                                \
                memset(t, 0, sizeof t);                                                         \
                size_t r = (size_t)(len - k);                                                   \
                memcpy(t[0], x + k, r), memcpy(t[1], w0 + k, r), memcpy(t[2], w1 + k, r);       \
                memcpy(t[3], w2 + k, r), memcpy(t[4], w3 + k, r);                               \
                xv = _mm256_loadu_si256((const __m256i *)t[0]);                                 \
                b0 = _mm256_loadu_si256((const __m256i *)t[1]);                                 \
                b1 = _mm256_loadu_si256((const __m256i *)t[2]);                                 \
                b2 = _mm256_loadu_si256((const __m256i *)t[3]);                                 \
                b3 = _mm256_loadu_si256((const __m256i *)t[4]);                                 \
            } else                                                                              \
                break;                                                                          \
            STEP(c0, _mm256_abs_epi8(b0), _mm256_sign_epi8(xv, b0));                            \
            STEP(c1, _mm256_abs_epi8(b1), _mm256_sign_epi8(xv, b1));                            \
            STEP(c2, _mm256_abs_epi8(b2), _mm256_sign_epi8(xv, b2));                            \
            STEP(c3, _mm256_abs_epi8(b3), _mm256_sign_epi8(xv, b3));                            \
        }                                                                                       \
        a[0] = NAME##_hsum(c0), a[1] = NAME##_hsum(c1), a[2] = NAME##_hsum(c2);                 \
        a[3] = NAME##_hsum(c3);                                                                 \
    }                                                                                           \
    /* Tiles of NR rows (adjacent, or spread out when j->spread: core/rowspread.h), each    \
     * multiplied with every activation row while it is in L1. */                             \
    __attribute__((target(TARGET))) void NAME(const qmm_i8job *j, int64_t n0, int64_t n1) {    \
        const dl_weight *w = j->w;                                                              \
        const int64_t K = w->k, seg = seg_of(w), ld = w->ld;                                    \
        const int block = w->scale_kind == WS_BLOCK;                                            \
        int64_t n, st, nr;                                                                      \
        for (int64_t t = 0; (nr = rs_tile(n0, n1, NR, j->spread, t, &n, &st)) > 0; t++) {       \
            /* a partial tile runs row by row (rows past the end are not read) */               \
            int64_t rld = nr == NR ? st * ld : 0;                                               \
            const int8_t *wr = (const int8_t *)w->data + n * ld;                                \
            for (int m = 0; m < j->M; m++) {                                                    \
                const int8_t *xr = j->xq + (int64_t)m * j->qld;                                 \
                float f[NR] = {0};                                                              \
                int32_t a[NR];                                                                  \
                for (int64_t k0 = 0; k0 < K; k0 += seg) {                                       \
                    int64_t len = K - k0 < seg ? K - k0 : seg;                                  \
                    if (rld) NAME##_dot(xr + k0, wr + k0, rld, len, a);                         \
                    else                                                                        \
                        for (int64_t r = 0; r < nr; r++) {                                      \
                            int32_t tt[NR];                                                     \
                            NAME##_dot(xr + k0, wr + r * st * ld + k0, 0, len, tt);             \
                            a[r] = tt[0];                                                       \
                        }                                                                       \
                    if (block)                                                                  \
                        for (int64_t r = 0; r < nr; r++) f[r] = blk_step(w, f[r], a[r], n + r * st, k0); \
                }                                                                               \
                for (int64_t r = 0; r < nr; r++)                                                \
                    j->y[(int64_t)m * w->n + n + r * st] = finish(j, n + r * st, m, f[r], a[r]); \
            }                                                                                   \
        }                                                                                       \
    }

DEFINE_INT8_KERNEL(int8mm_rows_avx2, "avx2", AVX2_STEP)
DEFINE_INT8_KERNEL(int8mm_rows_avxvnni, "avx2,avxvnni", VNNI_STEP)
