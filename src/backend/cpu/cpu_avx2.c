/* AVX2/FMA/F16C twins of the reference kernels in cpu_ref.c (same contracts,
 * same range items). Only compiled for x86; selected at run time. */
#include "backend/cpu/cpu_internal.h"

#if CPU_X86
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_simd.h"
#include "core/dtype.h"

/* Convert n elements of a F32/F16/BF16 vector to fp32. */
CPU_AVX2 static void row_to_f32(float *y, dl_dtype t, const void *src, int n) {
    int j = 0;
    if (t == DT_F32) {
        memcpy(y, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *s = src;
    if (t == DT_BF16)
        for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, cpu_ld_bf16(s + j));
    else
        for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, cpu_ld_f16(s + j));
    for (; j < n; j++) y[j] = cpu_loadf(t, src, j);
}

CPU_AVX2 void cpu_embed_avx2(const cpu_args *a, size_t i0, size_t i1) {
    const dl_weight *e = a->w;
    size_t es = dt_size(e->dtype);
    for (size_t i = i0; i < i1; i++) {
        const char *row = (const char *)e->data + (size_t)a->b->tokens[i] * (size_t)e->ld * es;
        row_to_f32(a->y + i * (size_t)a->d, e->dtype, row, a->d);
    }
}

CPU_AVX2 static inline __m256 ld_w(dl_dtype t, const void *p, int j) {
    if (t == DT_BF16) return cpu_ld_bf16((const uint16_t *)p + j);
    if (t == DT_F16) return cpu_ld_f16((const uint16_t *)p + j);
    return _mm256_loadu_ps((const float *)p + j);
}

CPU_AVX2 void cpu_rmsnorm_avx2(const cpu_args *a, size_t i0, size_t i1) {
    int d = a->d;
    dl_dtype wt = a->w->dtype;
    const void *wd = a->w->data;
    __m256 one = _mm256_set1_ps(1.0f);
    for (size_t r = i0; r < i1; r++) {
        const float *x = a->x + r * (size_t)d;
        float *y = a->y + r * (size_t)d;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        int j = 0;
        for (; j + 16 <= d; j += 16) {
            __m256 v0 = _mm256_loadu_ps(x + j), v1 = _mm256_loadu_ps(x + j + 8);
            s0 = _mm256_fmadd_ps(v0, v0, s0);
            s1 = _mm256_fmadd_ps(v1, v1, s1);
        }
        if (j + 8 <= d) {
            __m256 v0 = _mm256_loadu_ps(x + j);
            s0 = _mm256_fmadd_ps(v0, v0, s0);
            j += 8;
        }
        if (j < d) {
            __m256 v1 = _mm256_maskload_ps(x + j, cpu_mask(d - j));
            s1 = _mm256_fmadd_ps(v1, v1, s1);
        }
        float ss = cpu_hsum(_mm256_add_ps(s0, s1));
        float inv = 1.0f / sqrtf(ss / (float)d + a->eps);
        __m256 vi = _mm256_set1_ps(inv);
        for (j = 0; j + 8 <= d; j += 8) {
            __m256 w = ld_w(wt, wd, j);
            if (a->zc) w = _mm256_add_ps(one, w);
            _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vi), w));
        }
        for (; j < d; j++) {
            float w = cpu_loadf(wt, wd, j);
            if (a->zc) w = 1.0f + w;
            float h = x[j] * inv;
            y[j] = h * w;
        }
    }
}

/* Same arithmetic as cpu_rope_ref (no FMA contraction, so bitwise equal);
 * cos/sin computed once per token and shared by all heads. */
CPU_AVX2 void cpu_rope_avx2(const cpu_args *a, size_t i0, size_t i1) {
    enum { CH = 128 };
    float cs[CH], sn[CH];
    int half = a->rope->rot / 2, hd = a->hd;
    for (size_t t = i0; t < i1; t++) {
        float p = (float)a->b->pos[t];
        for (int c0 = 0; c0 < half; c0 += CH) {
            int cn = half - c0 < CH ? half - c0 : CH;
            for (int i = 0; i < cn; i++) {
                float f = p * a->rope->inv_freq[c0 + i];
                cs[i] = cosf(f);
                sn[i] = sinf(f);
            }
            for (int h = 0; h < a->nh; h++) {
                float *x0 = a->y + (t * (size_t)a->nh + (size_t)h) * (size_t)hd + c0;
                float *x1 = x0 + half;
                int i = 0;
                for (; i + 8 <= cn; i += 8) {
                    __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
                    __m256 a0 = _mm256_loadu_ps(x0 + i), a1 = _mm256_loadu_ps(x1 + i);
                    _mm256_storeu_ps(x0 + i, _mm256_sub_ps(_mm256_mul_ps(a0, c), _mm256_mul_ps(a1, s)));
                    _mm256_storeu_ps(x1 + i, _mm256_add_ps(_mm256_mul_ps(a1, c), _mm256_mul_ps(a0, s)));
                }
                for (; i < cn; i++) {
                    float v0 = x0[i], v1 = x1[i];
                    float c0v = v0 * cs[i], s0v = v1 * sn[i], c1v = v1 * cs[i], s1v = v0 * sn[i];
                    x0[i] = c0v - s0v;
                    x1[i] = c1v + s1v;
                }
            }
        }
    }
}

CPU_AVX2 void cpu_kv_write_avx2(const cpu_args *a, size_t i0, size_t i1) {
    const dl_kvcache *kv = a->kv;
    size_t w = (size_t)kv->n_kv_heads * (size_t)kv->head_dim;
    for (size_t t = i0; t < i1; t++) {
        size_t off = cpu_kv_offset(kv, a->b->seq[t], a->b->pos[t]);
        const float *k = a->x + t * w, *v = a->x2 + t * w;
        if (kv->dtype == DT_F16) {
            uint16_t *K = (uint16_t *)kv->k[a->layer] + off, *V = (uint16_t *)kv->v[a->layer] + off;
            size_t j = 0;
            for (; j + 8 <= w; j += 8) {
                _mm_storeu_si128((__m128i *)(K + j),
                                 _mm256_cvtps_ph(_mm256_loadu_ps(k + j), _MM_FROUND_TO_NEAREST_INT));
                _mm_storeu_si128((__m128i *)(V + j),
                                 _mm256_cvtps_ph(_mm256_loadu_ps(v + j), _MM_FROUND_TO_NEAREST_INT));
            }
            for (; j < w; j++) {
                K[j] = f32_to_f16(k[j]);
                V[j] = f32_to_f16(v[j]);
            }
        } else {
            memcpy((float *)kv->k[a->layer] + off, k, w * sizeof(float));
            memcpy((float *)kv->v[a->layer] + off, v, w * sizeof(float));
        }
    }
}

/* q . k over hd elements, k stored in f32 or f16. */
CPU_AVX2 static inline float dot_kv(const float *q, const void *k, int f16, int hd) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int j = 0;
    if (f16) {
        const uint16_t *kh = k;
        for (; j + 16 <= hd; j += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), cpu_ld_f16(kh + j), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j + 8), cpu_ld_f16(kh + j + 8), s1);
        }
        for (; j + 8 <= hd; j += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), cpu_ld_f16(kh + j), s0);
    } else {
        const float *kf = k;
        for (; j + 16 <= hd; j += 16) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), _mm256_loadu_ps(kf + j), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j + 8), _mm256_loadu_ps(kf + j + 8), s1);
        }
        for (; j + 8 <= hd; j += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), _mm256_loadu_ps(kf + j), s0);
    }
    float s = cpu_hsum(_mm256_add_ps(s0, s1));
    for (; j < hd; j++) s += q[j] * (f16 ? f16_to_f32(((const uint16_t *)k)[j]) : ((const float *)k)[j]);
    return s;
}

/* o[0..hd) += e * v */
CPU_AVX2 static inline void axpy_kv(float *o, float e, const void *v, int f16, int hd) {
    __m256 ve = _mm256_set1_ps(e);
    int j = 0;
    if (f16) {
        const uint16_t *vh = v;
        for (; j + 8 <= hd; j += 8)
            _mm256_storeu_ps(o + j, _mm256_fmadd_ps(ve, cpu_ld_f16(vh + j), _mm256_loadu_ps(o + j)));
        for (; j < hd; j++) o[j] += e * f16_to_f32(vh[j]);
    } else {
        const float *vf = v;
        for (; j + 8 <= hd; j += 8)
            _mm256_storeu_ps(o + j, _mm256_fmadd_ps(ve, _mm256_loadu_ps(vf + j), _mm256_loadu_ps(o + j)));
        for (; j < hd; j++) o[j] += e * vf[j];
    }
}

/* Two-pass softmax per (token, head): fp32 scores, max subtraction, vector
 * exp, fp32 sum; the output row accumulates e_t * v_t then is divided by the
 * sum. The order over t is fixed (0..pos), so results are batch-invariant. */
CPU_AVX2 void cpu_attention_avx2(const cpu_args *a, size_t i0, size_t i1) {
    const dl_kvcache *kv = a->kv;
    int hd = a->hd, nh = a->nh, grp = nh / kv->n_kv_heads, f16 = kv->dtype == DT_F16;
    size_t es = f16 ? 2 : 4;
    const char *Kc = kv->k[a->layer], *Vc = kv->v[a->layer];
    int32_t maxpos = 0;
    for (size_t it = i0; it < i1; it++)
        if (a->b->pos[it / (size_t)nh] > maxpos) maxpos = a->b->pos[it / (size_t)nh];
    float *sc = malloc(((size_t)maxpos + 8) * sizeof *sc);
    if (!sc) return; /* out of memory: output untouched */
    for (size_t it = i0; it < i1; it++) {
        size_t t = it / (size_t)nh;
        int h = (int)(it % (size_t)nh), kh = h / grp;
        int32_t seq = a->b->seq[t], pos = a->b->pos[t], n = pos + 1;
        const float *q = a->x + it * (size_t)hd;
        float *o = a->y + it * (size_t)hd;
        for (int32_t p = 0; p < n; p++) {
            size_t off = cpu_kv_offset(kv, seq, p) + (size_t)kh * hd;
            sc[p] = dot_kv(q, Kc + off * es, f16, hd) * a->scale;
        }
        __m256 vmx = _mm256_set1_ps(-INFINITY);
        int32_t p = 0;
        for (; p + 8 <= n; p += 8) vmx = _mm256_max_ps(vmx, _mm256_loadu_ps(sc + p));
        float mx = cpu_hmax(vmx);
        for (; p < n; p++) mx = sc[p] > mx ? sc[p] : mx;
        __m256 vs = _mm256_setzero_ps(), m8 = _mm256_set1_ps(mx);
        for (p = 0; p + 8 <= n; p += 8) {
            __m256 e = cpu_exp(_mm256_sub_ps(_mm256_loadu_ps(sc + p), m8));
            _mm256_storeu_ps(sc + p, e);
            vs = _mm256_add_ps(vs, e);
        }
        if (p < n) {
            __m256i m = cpu_mask(n - p);
            __m256 e = cpu_exp(_mm256_sub_ps(_mm256_maskload_ps(sc + p, m), m8));
            e = _mm256_and_ps(e, _mm256_castsi256_ps(m));
            _mm256_maskstore_ps(sc + p, m, e);
            vs = _mm256_add_ps(vs, e);
        }
        float sum = cpu_hsum(vs);
        memset(o, 0, (size_t)hd * sizeof *o);
        for (p = 0; p < n; p++) {
            size_t off = cpu_kv_offset(kv, seq, p) + (size_t)kh * hd;
            axpy_kv(o, sc[p], Vc + off * es, f16, hd);
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < hd; j++) o[j] *= inv;
    }
    free(sc);
}

/* y[i] = silu(x[i]) * x2[i] over [i0, i1). The tail runs the same vector
 * arithmetic under a mask (not scalar expf), so an element's bits depend on
 * its value alone, never on where a thread's range or the array ends: the
 * same token gives the same bits in any batch (intermediate sizes that are
 * not a multiple of 8 put row tails at varying lanes). */
CPU_AVX2 void cpu_silu_mul_avx2(const cpu_args *a, size_t i0, size_t i1) {
    size_t i = i0;
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i < i1; i += 8) {
        __m256i m = cpu_mask(i1 - i < 8 ? (int)(i1 - i) : 8);
        __m256 g = _mm256_maskload_ps(a->x + i, m);
        __m256 den = _mm256_add_ps(one, cpu_exp(_mm256_sub_ps(zero, g)));
        _mm256_maskstore_ps(a->y + i, m, _mm256_mul_ps(_mm256_div_ps(g, den), _mm256_maskload_ps(a->x2 + i, m)));
    }
}

CPU_AVX2 void cpu_add_avx2(const cpu_args *a, size_t i0, size_t i1) {
    size_t i = i0;
    for (; i + 8 <= i1; i += 8)
        _mm256_storeu_ps(a->y + i, _mm256_add_ps(_mm256_loadu_ps(a->y + i), _mm256_loadu_ps(a->x + i)));
    for (; i < i1; i++) a->y[i] += a->x[i];
}
#endif
