/* Activation quantizers (see actq.h). The reference versions follow the
 * formulas literally; the fast versions vectorize the same operations
 * (IEEE division, round-half-even, clamp), so both give the same bits. */
#include "quant/actq.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "quant/fp8.h"

#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

/* ---------------------------------------------------------------- int8 */

static float amax_ref(const float *x, int64_t n) {
    float a = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        if (v > a) a = v; /* NaN never wins */
    }
    return a;
}

static int8_t q8_one(float x, float s) {
    float r = rintf(x / s); /* default rounding mode: half to even */
    if (!(r >= -127.0f)) r = -127.0f; /* also NaN */
    if (r > 127.0f) r = 127.0f;
    return (int8_t)r;
}

void actq_int8_token_ref(int8_t *q, int64_t qld, float *xs, const float *x, int M, int64_t k) {
    for (int m = 0; m < M; m++) {
        const float *xr = x + (int64_t)m * k;
        float a = amax_ref(xr, k);
        float s = a > 0.0f ? a / 127.0f : 1.0f;
        xs[m] = s;
        int8_t *qr = q + (int64_t)m * qld;
        for (int64_t i = 0; i < k; i++) qr[i] = q8_one(xr[i], s);
        memset(qr + k, 0, (size_t)(qld - k));
    }
}

AVX2_FN static float amax_avx2(const float *x, int64_t n) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) a = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), absm), a);
    float t[8];
    _mm256_storeu_ps(t, a);
    float r = 0.0f;
    for (int j = 0; j < 8; j++)
        if (t[j] > r) r = t[j];
    for (; i < n; i++) {
        float v = fabsf(x[i]);
        if (v > r) r = v;
    }
    return r;
}

AVX2_FN static __m256i q8_vec(const float *x, __m256 s) {
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    __m256 v = _mm256_div_ps(_mm256_loadu_ps(x), s);
    v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_max_ps(v, lo); /* NaN -> -127 as q8_one */
    v = _mm256_min_ps(v, hi);
    return _mm256_cvtps_epi32(v);
}

AVX2_FN void actq_int8_token_avx2(int8_t *q, int64_t qld, float *xs, const float *x, int M,
                                  int64_t k) {
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int m = 0; m < M; m++) {
        const float *xr = x + (int64_t)m * k;
        float a = amax_avx2(xr, k);
        float s = a > 0.0f ? a / 127.0f : 1.0f;
        xs[m] = s;
        __m256 sv = _mm256_set1_ps(s);
        int8_t *qr = q + (int64_t)m * qld;
        int64_t i = 0;
        for (; i + 32 <= k; i += 32) {
            __m256i a0 = q8_vec(xr + i, sv), a1 = q8_vec(xr + i + 8, sv);
            __m256i a2 = q8_vec(xr + i + 16, sv), a3 = q8_vec(xr + i + 24, sv);
            __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a0, a1), _mm256_packs_epi32(a2, a3));
            _mm256_storeu_si256((__m256i *)(qr + i), _mm256_permutevar8x32_epi32(p, perm));
        }
        for (; i < k; i++) qr[i] = q8_one(xr[i], s);
        memset(qr + k, 0, (size_t)(qld - k));
    }
}

/* ----------------------------------------------------------------- fp8 */

uint8_t actq_e4m3_encode(float f) {
    if (f != f) return 0x7f;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    float a = fabsf(f);
    if (a >= 448.0f) return (uint8_t)(sign | 0x7e);
    if (a < 0.015625f) /* below 2^-6: subnormal step 2^-9, exact scaling */
        return (uint8_t)(sign | (uint8_t)(int)rintf(a * 512.0f));
    memcpy(&u, &a, 4);
    u = u + 0x7ffffu + ((u >> 20) & 1u); /* RNE to 3 mantissa bits */
    return (uint8_t)(sign | (uint8_t)((u >> 20) - 960u));
}

/* Per-group scale from amax (1 when the group is all zero). */
static float fp8_scale(float amax) { return amax > 0.0f ? amax / 448.0f : 1.0f; }

/* Ranges [k0, k1) of x row r quantized with scale s, written as values. */
static void fp8_span_ref(float *xw, const float *x, int64_t n, float s) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] / s;
        if (v > 448.0f) v = 448.0f;
        if (v < -448.0f) v = -448.0f;
        xw[i] = fp8_e4m3_to_f32(fp8_e4m3_from_f32(v));
    }
}

typedef void (*span_fn)(float *xw, const float *x, int64_t n, float s);
typedef float (*amax_fn)(const float *x, int64_t n);

static void fp8_drive(float *xw, float *xs, const float *x, int M, int64_t k, int64_t group,
                      float static_scale, span_fn span, amax_fn amax) {
    for (int m = 0; m < M; m++) {
        const float *xr = x + (int64_t)m * k;
        float *wr = xw + (int64_t)m * k;
        if (group > 0) {
            int64_t ng = (k + group - 1) / group;
            for (int64_t g = 0; g < ng; g++) {
                int64_t k0 = g * group, len = k - k0 < group ? k - k0 : group;
                float s = fp8_scale(amax(xr + k0, len));
                xs[(int64_t)m * ng + g] = s;
                span(wr + k0, xr + k0, len, s);
            }
        } else {
            float s = static_scale > 0.0f ? static_scale : fp8_scale(amax(xr, k));
            xs[m] = s;
            span(wr, xr, k, s);
        }
    }
}

void actq_fp8_ref(float *xw, float *xs, const float *x, int M, int64_t k, int64_t group,
                  float static_scale) {
    fp8_drive(xw, xs, x, M, k, group, static_scale, fp8_span_ref, amax_ref);
}

/* Vector form of actq_e4m3_encode followed by the table decode: the value
 * of the nearest e4m3 code, computed by rounding the fp32 bits. */
AVX2_FN static __m256 e4m3_round_vec(__m256 v) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    __m256 sgn = _mm256_andnot_ps(absm, v);
    __m256 a = _mm256_min_ps(_mm256_and_ps(v, absm), _mm256_set1_ps(448.0f));
    /* subnormal range: rint(a * 2^9) * 2^-9 */
    __m256 sub = _mm256_mul_ps(
        _mm256_round_ps(_mm256_mul_ps(a, _mm256_set1_ps(512.0f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
        _mm256_set1_ps(1.0f / 512.0f));
    __m256i u = _mm256_castps_si256(a);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 20), _mm256_set1_epi32(1));
    u = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7ffff), odd));
    u = _mm256_and_si256(u, _mm256_set1_epi32((int)0xfff00000u));
    __m256 nrm = _mm256_castsi256_ps(u);
    __m256 issub = _mm256_cmp_ps(a, _mm256_set1_ps(0.015625f), _CMP_LT_OQ);
    __m256 r = _mm256_or_ps(_mm256_blendv_ps(nrm, sub, issub), sgn);
    return _mm256_blendv_ps(r, _mm256_set1_ps(NAN), nan);
}

AVX2_FN static void fp8_span_avx2(float *xw, const float *x, int64_t n, float s) {
    __m256 sv = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(xw + i, e4m3_round_vec(_mm256_div_ps(_mm256_loadu_ps(x + i), sv)));
    if (i < n) {
        float t[8] = {0};
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(t, e4m3_round_vec(_mm256_div_ps(_mm256_loadu_ps(t), sv)));
        memcpy(xw + i, t, (size_t)(n - i) * sizeof(float));
    }
}

void actq_fp8_fast(float *xw, float *xs, const float *x, int M, int64_t k, int64_t group,
                   float static_scale) {
    fp8_drive(xw, xs, x, M, k, group, static_scale, fp8_span_avx2, amax_avx2);
}
