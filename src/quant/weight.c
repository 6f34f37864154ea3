#include "quant/weight.h"

#include "quant/fp8.h"

static float load_as_f32(dl_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DT_F32: return ((const float *)p)[i];
    case DT_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case DT_F8E4M3: return fp8_e4m3_to_f32(((const uint8_t *)p)[i]);
    case DT_F8E5M2: return fp8_e5m2_to_f32(((const uint8_t *)p)[i]);
    case DT_I8: return (float)((const int8_t *)p)[i];
    default: return 0.0f;
    }
}

float w_scale_at(const dl_weight *w, int64_t row, int64_t col) {
    switch (w->scale_kind) {
    case WS_NONE: return 1.0f;
    case WS_TENSOR: return load_as_f32(w->scale_dtype, w->scale, 0);
    case WS_CHANNEL: return load_as_f32(w->scale_dtype, w->scale, row);
    case WS_BLOCK: {
        int64_t kb = (w->k + w->bk - 1) / w->bk;
        return load_as_f32(w->scale_dtype, w->scale, (row / w->bn) * kb + col / w->bk);
    }
    }
    return 1.0f;
}

float w_bias_at(const dl_weight *w, int64_t row) {
    return w->bias ? load_as_f32(w->bias_dtype, w->bias, row) : 0.0f;
}

float w_get(const dl_weight *w, int64_t row, int64_t col) {
    return load_as_f32(w->dtype, w->data, row * w->ld + col) * w_scale_at(w, row, col);
}

size_t w_bytes(const dl_weight *w) {
    size_t b = (size_t)w->n * (size_t)w->k * dt_size(w->dtype);
    int64_t ns = 0;
    if (w->scale_kind == WS_TENSOR) ns = 1;
    if (w->scale_kind == WS_CHANNEL) ns = w->n;
    if (w->scale_kind == WS_BLOCK)
        ns = ((w->n + w->bn - 1) / w->bn) * ((w->k + w->bk - 1) / w->bk);
    b += (size_t)ns * dt_size(w->scale_dtype);
    if (w->bias) b += (size_t)w->n * dt_size(w->bias_dtype);
    return b;
}
