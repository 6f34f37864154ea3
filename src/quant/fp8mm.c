/* fp32-accumulating quantized matmul, scalar reference twin: widens each
 * weight through the 256-entry fp8 tables (or the int8 value) and follows
 * the segment structure documented on fp8mm_rows_ref in qmatmul.h. */
#include "quant/fp8.h"
#include "quant/qmatmul.h"

static float code_val(dl_dtype dt, const uint8_t *p, int64_t i) {
    if (dt == DT_F8E4M3) return fp8_e4m3_f32[p[i]];
    if (dt == DT_F8E5M2) return fp8_e5m2_f32[p[i]];
    return (float)((const int8_t *)p)[i];
}

int fp8mm_rows_ref(const qmm_f32job *j, int64_t n0, int64_t n1) {
    const dl_weight *w = j->w;
    const int64_t K = w->k, seg = j->seg, nseg = (K + seg - 1) / seg;
    const int block = w->scale_kind == WS_BLOCK;
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *row = (const uint8_t *)w->data + n * w->ld;
        float s_end = block ? 1.0f : w_scale_at(w, n, 0);
        for (int m = 0; m < j->M; m++) {
            const float *xr = j->x + (int64_t)m * K;
            float acc = 0.0f;
            for (int64_t g = 0; g < nseg; g++) {
                int64_t k0 = g * seg, k1 = k0 + seg < K ? k0 + seg : K;
                float p = 0.0f;
                for (int64_t k = k0; k < k1; k++) p += xr[k] * code_val(w->dtype, row, k);
                if (j->xs_mode == 2) p = p * j->xs[(int64_t)m * nseg + g];
                if (block) p = p * w_scale_at(w, n, k0);
                acc += p;
            }
            if (j->xs_mode == 1) acc = acc * j->xs[m];
            if (!block) acc = acc * s_end;
            if (w->bias) acc += w_bias_at(w, n);
            j->y[(int64_t)m * w->n + n] = acc;
        }
    }
    return 0;
}
