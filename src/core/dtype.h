/* Storage dtypes as they appear in checkpoints, plus scalar conversions. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    DT_F32 = 0,
    DT_F16,
    DT_BF16,
    DT_F8E4M3,
    DT_F8E5M2,
    DT_I8,
    DT_I32,
    DT_I64,
    DT_U8,
    DT_F64,
    DT_BOOL,
    DT_COUNT
} dl_dtype;

/* Size of one element in bytes. */
size_t dt_size(dl_dtype t);
/* Canonical safetensors spelling ("BF16"...); "?" when unknown. */
const char *dt_name(dl_dtype t);
/* Parse a safetensors dtype string; returns -1 when unknown. */
int dt_parse(const char *s, dl_dtype *out);

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Round-to-nearest-even fp32 -> bf16 (NaN stays NaN). */
static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
