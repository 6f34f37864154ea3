/* fp32-accumulating quantized matmul, AVX2 + FMA + F16C.
 *
 * Weights are widened one K segment at a time for a panel of output rows
 * into a per-call fp32 buffer, then reused by every activation row; at
 * M = 1 a fused kernel widens in registers instead. Widening is exact:
 * e5m2 is the top byte of an fp16; e4m3 becomes the fp16 of w * 2^-8 and
 * each segment's dot is multiplied back by 2^8 (exact while no product falls
 * below 2^-118); NaN codes stay NaN. Tested against the 256-entry tables for
 * every code. Each (m, n) pair owns one 8-lane
 * accumulator fed in k order and reduced by a fixed tree at the segment end,
 * so a row's result is the same whatever M, the m-tiling or the thread
 * split. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "core/rowspread.h"
#include "quant/qmatmul.h"

#define AVX2_FN __attribute__((target("avx2,fma,f16c")))
#define NB 64 /* output rows per panel */
#define NR 4  /* output rows per micro-kernel */

#define F16B_FN AVX2_FN
#include "quant/fp8mm_f16bits.h"

AVX2_FN static inline void widen16(dl_dtype dt, const uint8_t *src, float *dst) {
    __m128i c = _mm_loadu_si128((const __m128i *)src);
    if (dt == DT_I8) {
        _mm256_store_ps(dst, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)));
        _mm256_store_ps(dst + 8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(c, 8))));
        return;
    }
    __m256i h = f16_bits(dt, c);
    _mm256_store_ps(dst, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    _mm256_store_ps(dst + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
}

/* Value multiplier of the widened codes: e4m3 is widened as w * 2^-8 and
 * each segment's dot is multiplied back by 2^8 (exact). */
static inline float seg_unscale(dl_dtype dt) { return dt == DT_F8E4M3 ? 256.0f : 1.0f; }

AVX2_FN void fp8mm_widen16_avx2(dl_dtype dt, const uint8_t *src, float *dst) {
    float t[16] __attribute__((aligned(32)));
    widen16(dt, src, t);
    for (int i = 0; i < 16; i++) dst[i] = t[i] * seg_unscale(dt);
}

/* Widen codes [0, len) of one row into dst (32-byte aligned), zero-filled
 * up to a multiple of 16. dt is a compile-time constant in each caller. */
AVX2_FN static inline void widen_row_t(dl_dtype dt, const uint8_t *src, int64_t len, float *dst) {
    int64_t i = 0;
    for (; i + 16 <= len; i += 16) widen16(dt, src + i, dst + i);
    if (i < len) {
        uint8_t t[16] = {0};
        memcpy(t, src + i, (size_t)(len - i));
        widen16(dt, t, dst + i);
    }
}

AVX2_FN static void widen_row(dl_dtype dt, const uint8_t *src, int64_t len, float *dst) {
    switch (dt) {
    case DT_F8E4M3: widen_row_t(DT_F8E4M3, src, len, dst); break;
    case DT_F8E5M2: widen_row_t(DT_F8E5M2, src, len, dst); break;
    default: widen_row_t(DT_I8, src, len, dst); break;
    }
}

/* Scale element i (block layout), without w_scale_at's per-call dispatch. */
static inline float scale_load(const dl_weight *w, int64_t i) {
    if (w->scale_dtype == DT_F32) return ((const float *)w->scale)[i];
    if (w->scale_dtype == DT_BF16) return bf16_to_f32(((const uint16_t *)w->scale)[i]);
    return f16_to_f32(((const uint16_t *)w->scale)[i]);
}

AVX2_FN static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

AVX2_FN static inline __m256i tail_mask(int64_t rem) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* p[i][r] = dot(x_i[0, len), wb row r) for 2 activation rows and NR weight rows. */
AVX2_FN static void mk2x4(const float *x0, const float *x1, const float *wb, int64_t ws,
                          int64_t len, float p[2][NR]) {
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
    __m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    const float *w0 = wb, *w1 = wb + ws, *w2 = wb + 2 * ws, *w3 = wb + 3 * ws;
    int64_t k = 0;
    for (; k + 8 <= len; k += 8) {
        __m256 u = _mm256_loadu_ps(x0 + k), v = _mm256_loadu_ps(x1 + k);
        __m256 b0 = _mm256_load_ps(w0 + k), b1 = _mm256_load_ps(w1 + k);
        __m256 b2 = _mm256_load_ps(w2 + k), b3 = _mm256_load_ps(w3 + k);
        a00 = _mm256_fmadd_ps(u, b0, a00), a01 = _mm256_fmadd_ps(u, b1, a01);
        a02 = _mm256_fmadd_ps(u, b2, a02), a03 = _mm256_fmadd_ps(u, b3, a03);
        a10 = _mm256_fmadd_ps(v, b0, a10), a11 = _mm256_fmadd_ps(v, b1, a11);
        a12 = _mm256_fmadd_ps(v, b2, a12), a13 = _mm256_fmadd_ps(v, b3, a13);
    }
    if (k < len) {
        __m256i msk = tail_mask(len - k);
        __m256 u = _mm256_maskload_ps(x0 + k, msk), v = _mm256_maskload_ps(x1 + k, msk);
        __m256 b0 = _mm256_load_ps(w0 + k), b1 = _mm256_load_ps(w1 + k);
        __m256 b2 = _mm256_load_ps(w2 + k), b3 = _mm256_load_ps(w3 + k);
        a00 = _mm256_fmadd_ps(u, b0, a00), a01 = _mm256_fmadd_ps(u, b1, a01);
        a02 = _mm256_fmadd_ps(u, b2, a02), a03 = _mm256_fmadd_ps(u, b3, a03);
        a10 = _mm256_fmadd_ps(v, b0, a10), a11 = _mm256_fmadd_ps(v, b1, a11);
        a12 = _mm256_fmadd_ps(v, b2, a12), a13 = _mm256_fmadd_ps(v, b3, a13);
    }
    p[0][0] = hsum8(a00), p[0][1] = hsum8(a01), p[0][2] = hsum8(a02), p[0][3] = hsum8(a03);
    p[1][0] = hsum8(a10), p[1][1] = hsum8(a11), p[1][2] = hsum8(a12), p[1][3] = hsum8(a13);
}

/* Single activation row: the same per-accumulator operation sequence as mk2x4. */
AVX2_FN static void mk1x4(const float *x0, const float *wb, int64_t ws, int64_t len,
                          float p[NR]) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float *w0 = wb, *w1 = wb + ws, *w2 = wb + 2 * ws, *w3 = wb + 3 * ws;
    int64_t k = 0;
    for (; k + 8 <= len; k += 8) {
        __m256 u = _mm256_loadu_ps(x0 + k);
        a0 = _mm256_fmadd_ps(u, _mm256_load_ps(w0 + k), a0);
        a1 = _mm256_fmadd_ps(u, _mm256_load_ps(w1 + k), a1);
        a2 = _mm256_fmadd_ps(u, _mm256_load_ps(w2 + k), a2);
        a3 = _mm256_fmadd_ps(u, _mm256_load_ps(w3 + k), a3);
    }
    if (k < len) {
        __m256 u = _mm256_maskload_ps(x0 + k, tail_mask(len - k));
        a0 = _mm256_fmadd_ps(u, _mm256_load_ps(w0 + k), a0);
        a1 = _mm256_fmadd_ps(u, _mm256_load_ps(w1 + k), a1);
        a2 = _mm256_fmadd_ps(u, _mm256_load_ps(w2 + k), a2);
        a3 = _mm256_fmadd_ps(u, _mm256_load_ps(w3 + k), a3);
    }
    p[0] = hsum8(a0), p[1] = hsum8(a1), p[2] = hsum8(a2), p[3] = hsum8(a3);
}

/* 16 codes -> two fp32 vectors (the same values as widen16). */
AVX2_FN static inline void widen_regs(dl_dtype dt, const uint8_t *src, __m256 *f0, __m256 *f1) {
    __m128i c = _mm_loadu_si128((const __m128i *)src);
    if (dt == DT_I8) {
        *f0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c));
        *f1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(c, 8)));
        return;
    }
    __m256i h = f16_bits(dt, c);
    *f0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    *f1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

/* e4m3 without the NaN fixup (3 operations instead of 8): the
 * sign-extended code shifted left by 7 has the sign on bits 15 and 14;
 * clearing bit 14 gives f16_bits' result for every non-NaN code. *mx keeps
 * the byte maximum of code | 0x80, which is 0xff iff a NaN code was read. */
AVX2_FN static inline void widen_regs_e4m3_fast(const uint8_t *src, __m256 *f0, __m256 *f1,
                                                __m128i *mx) {
    __m128i c = _mm_loadu_si128((const __m128i *)src);
    *mx = _mm_max_epu8(*mx, _mm_or_si128(c, _mm_set1_epi8((char)0x80)));
    __m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(c), 7),
                                 _mm256_set1_epi16((short)0xbfff));
    *f0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    *f1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

/* M = 1 fused kernel: widens in registers (no buffer round trip) and issues,
 * per accumulator, exactly the FMA sequence of mk1x4 on a widened buffer
 * (k order, 8 lanes, masked tail, no FMA past len), so results are
 * bitwise those of the buffered path. rows: NR row pointers at k0.
 * fast (e4m3 only): widen without the NaN fixup and return 1 (p undefined)
 * if a NaN code was read, for the caller to redo the segment exactly. */
AVX2_FN static inline int gemv4_t(dl_dtype dt, int fast, const uint8_t *const *rows,
                                  const float *x, int64_t len, float p[NR]) {
    __m128i mx = _mm_setzero_si128();
    /* named accumulators: an indexed array would be kept in memory */
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, f0, f1;
    const uint8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
    int64_t k = 0;
#define GEMV_ROW(c, r)                                  \
    if (fast) widen_regs_e4m3_fast((r) + k, &f0, &f1, &mx); \
    else widen_regs(dt, (r) + k, &f0, &f1);             \
    c = _mm256_fmadd_ps(xa, f0, c);                     \
    c = _mm256_fmadd_ps(xb, f1, c);
    for (; k + 16 <= len; k += 16) {
        __m256 xa = _mm256_loadu_ps(x + k), xb = _mm256_loadu_ps(x + k + 8);
        GEMV_ROW(c0, r0) GEMV_ROW(c1, r1) GEMV_ROW(c2, r2) GEMV_ROW(c3, r3)
    }
#undef GEMV_ROW
    if (k < len) {
        int64_t rem = len - k;
        __m256 xa = _mm256_maskload_ps(x + k, tail_mask(rem));
        __m256 xb = rem > 8 ? _mm256_maskload_ps(x + k + 8, tail_mask(rem - 8)) : xa;
        uint8_t t[NR][16];
        memset(t, 0, sizeof t);
        for (int r = 0; r < NR; r++) memcpy(t[r], rows[r] + k, (size_t)rem);
#define GEMV_TAIL(c, r)                                        \
    if (fast) widen_regs_e4m3_fast(t[r], &f0, &f1, &mx);       \
    else widen_regs(dt, t[r], &f0, &f1);                       \
    c = _mm256_fmadd_ps(xa, f0, c);                            \
    if (rem > 8) c = _mm256_fmadd_ps(xb, f1, c);
        GEMV_TAIL(c0, 0) GEMV_TAIL(c1, 1) GEMV_TAIL(c2, 2) GEMV_TAIL(c3, 3)
#undef GEMV_TAIL
    }
    if (fast && _mm_movemask_epi8(_mm_cmpeq_epi8(mx, _mm_set1_epi8((char)0xff)))) return 1;
    p[0] = hsum8(c0), p[1] = hsum8(c1), p[2] = hsum8(c2), p[3] = hsum8(c3);
    return 0;
}

AVX2_FN static void gemv4(dl_dtype dt, const uint8_t *const *rows, const float *x, int64_t len,
                          float p[NR]) {
    switch (dt) {
    case DT_F8E4M3: /* fast widening; a segment with a NaN code is redone exactly */
        if (gemv4_t(DT_F8E4M3, 1, rows, x, len, p)) gemv4_t(DT_F8E4M3, 0, rows, x, len, p);
        break;
    case DT_F8E5M2: gemv4_t(DT_F8E5M2, 0, rows, x, len, p); break;
    default: gemv4_t(DT_I8, 0, rows, x, len, p); break;
    }
}

AVX2_FN int fp8mm_rows_avx2(const qmm_f32job *j, int64_t n0, int64_t n1) {
    const dl_weight *w = j->w;
    const int64_t K = w->k, seg = j->seg, nseg = (K + seg - 1) / seg;
    const int64_t ws = (seg + 15) / 16 * 16; /* wbuf row stride (floats) */
    const int block = w->scale_kind == WS_BLOCK, M = j->M;
    /* Small M: 4-row panels, so each weight row is read as one sequential
     * stream (prefetch friendly); large M: 64-row panels so a widened
     * segment serves many rows. Same per-element arithmetic either way. */
    const int64_t pan = M <= 8 ? NR : NB;
    const float us = seg_unscale(w->dtype);
    /* the M = 1 kernel needs no widened buffer */
    float *wbuf = M > 1 ? aligned_alloc(32, (size_t)(pan * ws) * sizeof(float)) : NULL;
    float *acc = malloc((size_t)M * (size_t)pan * sizeof(float));
    if ((M > 1 && !wbuf) || !acc) {
        free(wbuf), free(acc);
        return -1;
    }
    /* tile: rows nb0 + r st, r < nb; spread out only with 4-row panels (core/rowspread.h) */
    int64_t nb0, st, nb;
    for (int64_t t = 0; (nb = rs_tile(n0, n1, (int)pan, j->spread && pan == NR, t, &nb0, &st)) > 0; t++) {
        int64_t nbp = (nb + NR - 1) / NR * NR;
        memset(acc, 0, (size_t)M * (size_t)pan * sizeof(float));
        if (wbuf) memset(wbuf + nb * ws, 0, (size_t)((nbp - nb) * ws) * sizeof(float));
        int64_t sidx[NB]; /* block layout: seg == bk, scale index = sidx[r] + g */
        for (int64_t r = 0; block && r < nb; r++) sidx[r] = (nb0 + r * st) / w->bn * nseg;
        for (int64_t g = 0; g < nseg; g++) {
            int64_t k0 = g * seg, len = K - k0 < seg ? K - k0 : seg;
            float sb[NB];
            for (int64_t r = 0; r < nb; r++) {
                if (M > 1)
                    widen_row(w->dtype, (const uint8_t *)w->data + (nb0 + r * st) * w->ld + k0, len,
                              wbuf + r * ws);
                if (block) sb[r] = scale_load(w, sidx[r] + g);
            }
            if (M == 1) { /* pan == NR: one fused tile; missing rows alias row 0 */
                const uint8_t *rows[NR];
                for (int64_t r = 0; r < NR; r++)
                    rows[r] = (const uint8_t *)w->data + (nb0 + (r < nb ? r : 0) * st) * w->ld + k0;
                float p[NR];
                gemv4(w->dtype, rows, j->x + k0, len, p);
                for (int64_t r = 0; r < nb; r++) {
                    float t = p[r] * us;
                    if (j->xs_mode == 2) t = t * j->xs[g];
                    if (block) t = t * sb[r];
                    acc[r] += t;
                }
                continue;
            }
            for (int m = 0; m < M; m += 2) {
                const float *x0 = j->x + (int64_t)m * K + k0;
                int two = m + 1 < M;
                for (int64_t r0 = 0; r0 < nb; r0 += NR) {
                    float p[2][NR];
                    if (two) mk2x4(x0, x0 + K, wbuf + r0 * ws, ws, len, p);
                    else mk1x4(x0, wbuf + r0 * ws, ws, len, p[0]);
                    for (int i = 0; i <= two; i++) {
                        float *ar = acc + (int64_t)(m + i) * pan;
                        for (int64_t r = r0; r < r0 + NR && r < nb; r++) {
                            float t = p[i][r - r0] * us;
                            if (j->xs_mode == 2) t = t * j->xs[(int64_t)(m + i) * nseg + g];
                            if (block) t = t * sb[r];
                            ar[r] += t;
                        }
                    }
                }
            }
        }
        for (int64_t r = 0; r < nb; r++) {
            int64_t n = nb0 + r * st;
            float s_end = block ? 1.0f : w_scale_at(w, n, 0);
            float b = w->bias ? w_bias_at(w, n) : 0.0f;
            for (int m = 0; m < M; m++) {
                float v = acc[(int64_t)m * pan + r];
                if (j->xs_mode == 1) v = v * j->xs[m];
                if (!block) v = v * s_end;
                if (w->bias) v += b;
                j->y[(int64_t)m * w->n + n] = v;
            }
        }
    }
    free(wbuf);
    free(acc);
    return 0;
}
