/* AVX2/FMA/F16C helpers shared by the CPU fast kernels. Every function
 * carries its own target attribute so the library stays generic x86-64. */
#pragma once
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>

#define CPU_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CPU_AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* 8 bf16 -> 8 fp32 (exact). */
CPU_AVX2_INLINE __m256 cpu_ld_bf16(const uint16_t *p) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
/* 8 f16 -> 8 fp32 (exact). */
CPU_AVX2_INLINE __m256 cpu_ld_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
CPU_AVX2_INLINE __m256 cpu_ld_f32(const float *p) { return _mm256_loadu_ps(p); }

/* Fixed-order horizontal sum: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
CPU_AVX2_INLINE float cpu_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
CPU_AVX2_INLINE float cpu_hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* exp(x) for fp32 lanes, ~2 ulp: x = n ln2 + r, |r| <= ln2/2, degree-6
 * Taylor polynomial for e^r, scaled by 2^n through the exponent bits.
 * Inputs are clamped to [-87.3, 88.3] (results stay normal / finite). */
CPU_AVX2_INLINE __m256 cpu_exp(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* Mask for the first `n` (0..8) lanes. */
CPU_AVX2_INLINE __m256i cpu_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif
