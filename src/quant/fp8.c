#include "quant/fp8.h"

#include <math.h>

#include "core/dtype.h"

static float g_e4m3[256], g_e5m2[256];
static uint16_t g_e4m3_h[256], g_e5m2_h[256];

const float *const fp8_e4m3_f32 = g_e4m3;
const float *const fp8_e5m2_f32 = g_e5m2;
const uint16_t *const fp8_e4m3_f16 = g_e4m3_h;
const uint16_t *const fp8_e5m2_f16 = g_e5m2_h;

/* Decode one code from its fields; exact in float (and in fp16: every e4m3
 * and e5m2 value is representable in fp16). */
static float decode(unsigned c, int ebits, int mbits, int bias, int ieee) {
    int sign = (c >> 7) & 1;
    int e = (int)(c >> mbits) & ((1 << ebits) - 1);
    int m = (int)c & ((1 << mbits) - 1);
    float v;
    if (ieee && e == (1 << ebits) - 1) v = m ? NAN : INFINITY;
    else if (!ieee && e == (1 << ebits) - 1 && m == (1 << mbits) - 1) v = NAN;
    else if (e == 0) v = ldexpf((float)m, 1 - bias - mbits);
    else v = ldexpf((float)((1 << mbits) | m), e - bias - mbits);
    return sign ? -v : v;
}

__attribute__((constructor)) static void fp8_init(void) {
    for (unsigned c = 0; c < 256; c++) {
        g_e4m3[c] = decode(c, 4, 3, 7, 0);
        g_e5m2[c] = decode(c, 5, 2, 15, 1);
        g_e4m3_h[c] = f32_to_f16(g_e4m3[c]);
        g_e5m2_h[c] = f32_to_f16(g_e5m2[c]);
    }
}

/* Nearest code by scanning the monotone positive half; ties to even code. */
static uint8_t encode(float f, const float *tab, float maxv, int max_code) {
    if (isnan(f)) return 0x7f;
    uint8_t sign = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (a >= maxv) return (uint8_t)(sign | max_code);
    int lo = 0, hi = max_code; /* tab[lo] <= a < tab[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (tab[mid] <= a) lo = mid;
        else hi = mid;
    }
    float dl = a - tab[lo], dh = tab[hi] - a;
    int c = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
    return (uint8_t)(sign | c);
}

uint8_t fp8_e4m3_from_f32(float f) { return encode(f, g_e4m3, 448.0f, 0x7e); }
uint8_t fp8_e5m2_from_f32(float f) { return encode(f, g_e5m2, 57344.0f, 0x7b); }
