/* Scalar reference kernels of the CPU backend. They define what every fast
 * kernel (and every other backend) must compute; reductions accumulate in
 * double where that makes the reference more accurate than the fast path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/dtype.h"

float cpu_loadf(dl_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case DT_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    default: return 0.0f;
    }
}

size_t cpu_kv_offset(const dl_kvcache *kv, int32_t seq, int32_t pos) {
    int32_t blk = kv->block_table[(size_t)seq * kv->max_blocks_per_seq + pos / kv->block_size];
    size_t row = (size_t)blk * kv->block_size + (size_t)(pos % kv->block_size);
    return row * (size_t)kv->n_kv_heads * (size_t)kv->head_dim;
}

void cpu_embed_ref(const cpu_args *a, size_t i0, size_t i1) {
    const dl_weight *e = a->w;
    for (size_t i = i0; i < i1; i++) {
        int64_t t = a->b->tokens[i];
        float *y = a->y + i * (size_t)a->d;
        for (int j = 0; j < a->d; j++) y[j] = w_get(e, t, j); /* any format, with scales */
    }
}

/* y = x * rsqrt(mean(x^2) + eps), then times w (or 1 + w when zc), all fp32
 * except the sum of squares (double). */
void cpu_rmsnorm_ref(const cpu_args *a, size_t i0, size_t i1) {
    int d = a->d;
    for (size_t r = i0; r < i1; r++) {
        const float *x = a->x + r * (size_t)d;
        float *y = a->y + r * (size_t)d;
        double ss = 0;
        for (int j = 0; j < d; j++) ss += (double)x[j] * x[j];
        float inv = 1.0f / sqrtf((float)(ss / d) + a->eps);
        for (int j = 0; j < d; j++) {
            float w = cpu_loadf(a->w->dtype, a->w->data, j);
            if (a->zc) w = 1.0f + w;
            float h = x[j] * inv;
            y[j] = h * w;
        }
    }
}

/* x[i] -> x[i]*cos - x[i+h]*sin, x[i+h] -> x[i+h]*cos + x[i]*sin for i < rot/2,
 * with angle = (float)pos * inv_freq[i] in fp32 (as HF builds cos/sin). */
void cpu_rope_ref(const cpu_args *a, size_t i0, size_t i1) {
    int half = a->rope->rot / 2, hd = a->hd;
    for (size_t t = i0; t < i1; t++) {
        float p = (float)a->b->pos[t];
        for (int h = 0; h < a->nh; h++) {
            float *x = a->y + (t * (size_t)a->nh + (size_t)h) * (size_t)hd;
            for (int i = 0; i < half; i++) {
                float f = p * a->rope->inv_freq[i];
                float c = cosf(f), s = sinf(f);
                float x0 = x[i], x1 = x[i + half];
                float c0 = x0 * c, s0 = x1 * s, c1 = x1 * c, s1 = x0 * s;
                x[i] = c0 - s0;
                x[i + half] = c1 + s1;
            }
        }
    }
}

void cpu_kv_write_ref(const cpu_args *a, size_t i0, size_t i1) {
    const dl_kvcache *kv = a->kv;
    size_t w = (size_t)kv->n_kv_heads * (size_t)kv->head_dim;
    for (size_t t = i0; t < i1; t++) {
        size_t off = cpu_kv_offset(kv, a->b->seq[t], a->b->pos[t]);
        const float *k = a->x + t * w, *v = a->x2 + t * w;
        if (kv->dtype == DT_F16) {
            uint16_t *K = (uint16_t *)kv->k[a->layer] + off, *V = (uint16_t *)kv->v[a->layer] + off;
            for (size_t j = 0; j < w; j++) {
                K[j] = f32_to_f16(k[j]);
                V[j] = f32_to_f16(v[j]);
            }
        } else {
            memcpy((float *)kv->k[a->layer] + off, k, w * sizeof(float));
            memcpy((float *)kv->v[a->layer] + off, v, w * sizeof(float));
        }
    }
}

/* One (token, head) item: softmax(scale * q.k_t) over t in [0, pos], then the
 * weighted sum of v_t. Dots and sums in double, probabilities in fp32. */
void cpu_attention_ref(const cpu_args *a, size_t i0, size_t i1) {
    const dl_kvcache *kv = a->kv;
    int hd = a->hd, nh = a->nh, grp = nh / kv->n_kv_heads;
    const void *Kc = kv->k[a->layer], *Vc = kv->v[a->layer];
    double *acc = malloc((size_t)hd * sizeof *acc);
    float *sc = NULL;
    size_t sc_cap = 0;
    for (size_t it = i0; it < i1; it++) {
        size_t t = it / (size_t)nh;
        int h = (int)(it % (size_t)nh), kh = h / grp;
        int32_t seq = a->b->seq[t], pos = a->b->pos[t];
        const float *q = a->x + it * (size_t)hd;
        float *o = a->y + it * (size_t)hd;
        if ((size_t)pos + 1 > sc_cap) {
            sc_cap = (size_t)pos + 1;
            free(sc);
            sc = malloc(sc_cap * sizeof *sc);
        }
        if (!sc || !acc) break; /* out of memory: leave output untouched */
        float mx = -INFINITY;
        for (int32_t p = 0; p <= pos; p++) {
            size_t off = cpu_kv_offset(kv, seq, p) + (size_t)kh * hd;
            double s = 0;
            for (int j = 0; j < hd; j++) s += (double)q[j] * cpu_loadf(kv->dtype, Kc, (int64_t)(off + j));
            sc[p] = (float)s * a->scale;
            if (sc[p] > mx) mx = sc[p];
        }
        double sum = 0;
        for (int j = 0; j < hd; j++) acc[j] = 0;
        for (int32_t p = 0; p <= pos; p++) {
            float e = expf(sc[p] - mx);
            sum += e;
            size_t off = cpu_kv_offset(kv, seq, p) + (size_t)kh * hd;
            for (int j = 0; j < hd; j++) acc[j] += (double)e * cpu_loadf(kv->dtype, Vc, (int64_t)(off + j));
        }
        for (int j = 0; j < hd; j++) o[j] = (float)(acc[j] / sum);
    }
    free(sc);
    free(acc);
}

void cpu_silu_mul_ref(const cpu_args *a, size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; i++) {
        float g = a->x[i];
        a->y[i] = g / (1.0f + expf(-g)) * a->x2[i];
    }
}

void cpu_add_ref(const cpu_args *a, size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; i++) a->y[i] += a->x[i];
}
