#include "core/dtype.h"

#include <math.h>

static const struct {
    const char *name;
    size_t size;
} k_dt[DT_COUNT] = {
    [DT_F32] = {"F32", 4},     [DT_F16] = {"F16", 2},         [DT_BF16] = {"BF16", 2},
    [DT_F8E4M3] = {"F8_E4M3", 1}, [DT_F8E5M2] = {"F8_E5M2", 1}, [DT_I8] = {"I8", 1},
    [DT_I32] = {"I32", 4},     [DT_I64] = {"I64", 8},         [DT_U8] = {"U8", 1},
    [DT_F64] = {"F64", 8},     [DT_BOOL] = {"BOOL", 1},
};

size_t dt_size(dl_dtype t) { return (unsigned)t < DT_COUNT ? k_dt[t].size : 0; }
const char *dt_name(dl_dtype t) { return (unsigned)t < DT_COUNT ? k_dt[t].name : "?"; }

int dt_parse(const char *s, dl_dtype *out) {
    for (int i = 0; i < DT_COUNT; i++)
        if (!strcmp(s, k_dt[i].name)) {
            *out = (dl_dtype)i;
            return 0;
        }
    return -1;
}

/* IEEE half -> float, exact for every code including subnormals/inf/nan. */
float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (exp == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float -> IEEE half, round-to-nearest-even, overflow to inf. */
uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65536 */
    if (a < 0x38800000u) {                                  /* subnormal or zero */
        float m;
        memcpy(&m, &a, 4);
        /* value / 2^-24, rounded to nearest even by the FPU */
        float q = nearbyintf(m * 16777216.0f);
        return (uint16_t)(sign | (uint32_t)q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}
