/* fp8 codes -> fp16 bit patterns for the x86 fp8 GEMM/GEMV kernels
 * (fp8mm_avx2.c, fp8mm_avx512.c). The includer defines F16B_FN, its target
 * attribute (AVX2 at least), and includes <immintrin.h> and
 * "quant/qmatmul.h" before including it; no include guard, one
 * definition per including file. */

/* 16 codes c -> 16 fp16 bit patterns: e5m2 exactly (the code is the fp16's
 * top byte); e4m3 as the value * 2^-8 (the caller folds 2^8 back in), NaN
 * codes (0x7f, 0xff) as fp16 NaN. int8 is not handled here (callers convert
 * it directly). */
F16B_FN static inline __m256i f16_bits(dl_dtype dt, __m128i c) {
    __m256i v = _mm256_cvtepu8_epi16(c);
    if (dt == DT_F8E5M2) return _mm256_slli_epi16(v, 8);
    /* code << 7 puts the magnitude in place and the sign on bit 14; adding
     * bit 14 to itself carries it to bit 15. NaN codes get a non-zero
     * mantissa under an all-ones exponent. */
    __m256i h = _mm256_slli_epi16(v, 7);
    h = _mm256_add_epi16(h, _mm256_and_si256(h, _mm256_set1_epi16(0x4000)));
    __m256i nan = _mm256_cmpeq_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x3f80)),
                                     _mm256_set1_epi16(0x3f80));
    return _mm256_or_si256(h, _mm256_and_si256(nan, _mm256_set1_epi16(0x7e00)));
}
