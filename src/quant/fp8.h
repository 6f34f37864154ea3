/* FP8 decoding by 256-entry tables (exact for every finite code).
 * e4m3fn: bias 7, no infinities, 0x7f/0xff NaN, max 448.
 * e5m2:   bias 15, IEEE-like (inf, NaN), max 57344. */
#pragma once
#include <stdint.h>

extern const float *const fp8_e4m3_f32;  /* [256] */
extern const float *const fp8_e5m2_f32;  /* [256] */
extern const uint16_t *const fp8_e4m3_f16; /* [256] fp16 bit patterns */
extern const uint16_t *const fp8_e5m2_f16; /* [256] */

static inline float fp8_e4m3_to_f32(uint8_t c) { return fp8_e4m3_f32[c]; }
static inline float fp8_e5m2_to_f32(uint8_t c) { return fp8_e5m2_f32[c]; }
/* Round-to-nearest-even, saturating to +-max (as torch's float8 cast with clamp). */
uint8_t fp8_e4m3_from_f32(float f);
uint8_t fp8_e5m2_from_f32(float f);
