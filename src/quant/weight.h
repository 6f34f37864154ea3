/* One weight type for every storage format. A dl_weight describes a matrix
 * W[n, k] (n = output features, k = input features, as nn.Linear stores it)
 * or a vector (n = length, k = 1), in its stored dtype, with its scales.
 * Data is never widened: kernels read the stored bytes directly. */
#pragma once
#include <stdint.h>

#include "core/dtype.h"

typedef enum {
    WS_NONE = 0, /* plain f32/f16/bf16 */
    WS_TENSOR,   /* one scale for the whole tensor: scale[1] */
    WS_CHANNEL,  /* one scale per output row: scale[n] */
    WS_BLOCK,    /* scale[ceil(n/bn), ceil(k/bk)], row-major */
} dl_wscale;

/* How activations are treated when multiplied with this weight. */
typedef enum {
    ACT_NATIVE = 0,   /* activations stay fp32 (weight-only for fp8) */
    ACT_INT8_TOKEN,   /* dynamic per-token symmetric int8 (W8A8) */
    ACT_FP8_GROUP,    /* dynamic per-token, per-K-group (group = bk) fp8, scale amax/fp8max */
    ACT_FP8_TOKEN,    /* dynamic per-token fp8 */
    ACT_FP8_STATIC,   /* static per-tensor fp8 with act_scale */
} dl_actq;

typedef struct dl_weight {
    const char *name;    /* checkpoint tensor name (not owned) */
    dl_dtype dtype;      /* storage dtype of data */
    int64_t n, k;        /* rows (out), cols (in); vectors: k = 1 */
    int64_t ld;          /* elements between row starts (>= k) */
    const void *data;    /* [n, ld] in dtype; host (mmap) memory, not owned */
    dl_wscale scale_kind;
    dl_dtype scale_dtype;  /* DT_F32 or DT_BF16 */
    const void *scale;     /* layout per scale_kind (see dl_wscale) */
    int bn, bk;            /* block sizes for WS_BLOCK */
    dl_actq actq;
    float act_scale;       /* ACT_FP8_STATIC input scale */
    const void *bias;      /* [n] in bias_dtype or NULL */
    dl_dtype bias_dtype;
    void *dev;             /* backend-private state (device copy), owned by backend */
} dl_weight;

/* Scale value helpers (host memory). */
float w_scale_at(const dl_weight *w, int64_t row, int64_t col);
float w_bias_at(const dl_weight *w, int64_t row);
/* Dequantize element (row, col) to float (reference path; slow). */
float w_get(const dl_weight *w, int64_t row, int64_t col);
/* Bytes of data + scales + bias (what streaming the weight costs). */
size_t w_bytes(const dl_weight *w);
