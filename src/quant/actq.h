/* Activation quantizers for the declared policies (FORMATS.md
 * "Activation policy"). Reference and fast versions produce bitwise the
 * same codes and scales (tested); the fast ones are chosen by the caller
 * through kreg (cpu.actq.*). */
#pragma once
#include <stdint.h>

/* Per-token symmetric int8: xs[m] = amax(x[m,:])/127 (1 when amax == 0),
 * q[m, k] = clamp(round_half_even(x/xs), -127, 127); q rows have stride
 * qld >= k and the padding [k, qld) is zeroed. x: [M, k] stride k. */
void actq_int8_token_ref(int8_t *q, int64_t qld, float *xs, const float *x, int M, int64_t k);
void actq_int8_token_avx2(int8_t *q, int64_t qld, float *xs, const float *x, int M, int64_t k);

/* fp8 e4m3 activations, written as the exact widened code values (fp32):
 * xw[m, k] = e4m3(clamp(x/s, -448, 448)) with round-to-nearest-even.
 * group > 0: per token, per group-wide K group, xs[m * ngroups + g] =
 *   amax(group)/448 (1 when 0), ngroups = ceil(k/group);
 * group == 0 and static_scale <= 0: per token, xs[m] = amax(row)/448;
 * group == 0 and static_scale > 0: xs[m] = static_scale for every m. */
void actq_fp8_ref(float *xw, float *xs, const float *x, int M, int64_t k, int64_t group,
                  float static_scale);
void actq_fp8_fast(float *xw, float *xs, const float *x, int M, int64_t k, int64_t group,
                  float static_scale);

/* e4m3 encode (RNE, saturating to +-448, NaN -> 0x7f) by bit arithmetic;
 * equal to fp8_e4m3_from_f32 for every input (tested). */
uint8_t actq_e4m3_encode(float f);
