/* Weight quantization into the checkpoint formats (fixtures, tests, sweep):
 * symmetric scale = amax(group)/qmax per tensor, channel or block, codes by
 * round-to-nearest-even with saturation. */
#include <math.h>
#include <string.h>

#include "core/err.h"
#include "quant/fp8.h"
#include "quant/qmatmul.h"

static float qmax_of(dl_dtype t) {
    return t == DT_F8E4M3 ? 448.0f : t == DT_F8E5M2 ? 57344.0f : 127.0f;
}

static uint8_t encode(dl_dtype t, float v) {
    if (t == DT_F8E4M3) return fp8_e4m3_from_f32(v);
    if (t == DT_F8E5M2) return fp8_e5m2_from_f32(v);
    float r = rintf(v);
    if (!(r >= -127.0f)) r = -127.0f;
    if (r > 127.0f) r = 127.0f;
    return (uint8_t)(int8_t)r;
}

/* amax over rows [r0, r1) x cols [c0, c1). */
static float amax_rect(const float *src, int64_t k, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    float a = 0.0f;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++)
            if (fabsf(src[r * k + c]) > a) a = fabsf(src[r * k + c]);
    return a;
}

int qmm_quantize_weight(dl_weight *w, const float *src, int64_t n, int64_t k, int64_t ld,
                        dl_dtype dtype, dl_wscale kind, int bn, int bk, uint8_t *codes,
                        float *scales) {
    if (dtype != DT_F8E4M3 && dtype != DT_F8E5M2 && dtype != DT_I8)
        return dl_err("qmm_quantize_weight: dtype %s is not a quantized dtype", dt_name(dtype));
    if (n <= 0 || k <= 0 || ld < k) return dl_err("qmm_quantize_weight: bad shape");
    if (kind == WS_BLOCK && (bn <= 0 || bk <= 0)) return dl_err("qmm_quantize_weight: bad block size");
    const float qmax = qmax_of(dtype);
    int64_t nbr = kind == WS_BLOCK ? (n + bn - 1) / bn : 1;
    int64_t nbc = kind == WS_BLOCK ? (k + bk - 1) / bk : 1;
    if (kind == WS_TENSOR) {
        float a = amax_rect(src, k, 0, n, 0, k);
        scales[0] = a > 0.0f ? a / qmax : 1.0f;
    } else if (kind == WS_CHANNEL) {
        for (int64_t r = 0; r < n; r++) {
            float a = amax_rect(src, k, r, r + 1, 0, k);
            scales[r] = a > 0.0f ? a / qmax : 1.0f;
        }
    } else if (kind == WS_BLOCK) {
        for (int64_t i = 0; i < nbr; i++)
            for (int64_t j = 0; j < nbc; j++) {
                int64_t r1 = (i + 1) * bn < n ? (i + 1) * bn : n;
                int64_t c1 = (j + 1) * bk < k ? (j + 1) * bk : k;
                float a = amax_rect(src, k, i * bn, r1, j * bk, c1);
                scales[i * nbc + j] = a > 0.0f ? a / qmax : 1.0f;
            }
    }
    memset(w, 0, sizeof *w);
    w->dtype = dtype, w->n = n, w->k = k, w->ld = ld, w->data = codes;
    w->scale_kind = kind, w->scale_dtype = DT_F32, w->scale = kind == WS_NONE ? NULL : scales;
    w->bn = bn, w->bk = bk, w->actq = ACT_NATIVE;
    for (int64_t r = 0; r < n; r++) {
        for (int64_t c = 0; c < k; c++) {
            float s = kind == WS_NONE ? 1.0f : w_scale_at(w, r, c);
            codes[r * ld + c] = encode(dtype, src[r * k + c] / s);
        }
        memset(codes + r * ld + k, 0, (size_t)(ld - k));
    }
    return 0;
}
