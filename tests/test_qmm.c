/* Quantized CPU matmul: fast kernels against their scalar reference twins
 * for every format / scale layout / activation policy, odd shapes and padded
 * rows; exact fp8 widening for all 256 codes; quantizer rounding; switches
 * and counters; batch-row and thread-count invariance; decode row spreading
 * bitwise; refused combinations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/tpool.h"
#include "quant/actq.h"
#include "quant/fp8.h"
#include "quant/qmatmul.h"
#include "quant/qmm_peak.h"
#include "testutil.h"

static uint64_t g_seed;

static int same_f(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return memcmp(&a, &b, 4) == 0;
}

static void test_widen(void) {
    if (!(qmm_cpu_features() & QMM_CPU_AVX2)) return;
    uint8_t codes[256];
    for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
    const dl_dtype dts[3] = {DT_F8E4M3, DT_F8E5M2, DT_I8};
    for (int d = 0; d < 3; d++) {
        int bad = 0;
        float out[16];
        for (int c0 = 0; c0 < 256; c0 += 16) {
            fp8mm_widen16_avx2(dts[d], codes + c0, out);
            for (int i = 0; i < 16; i++) {
                int c = c0 + i;
                float ref = d == 0 ? fp8_e4m3_f32[c] : d == 1 ? fp8_e5m2_f32[c] : (float)(int8_t)c;
                if (!same_f(out[i], ref)) bad++;
            }
        }
        CHECKF(bad == 0, "dtype %s: %d codes widen wrongly", dt_name(dts[d]), bad);
    }
}

static void test_fp8_encode(void) {
    /* saturation, NaN, ties to even (existing fp8.c encoder) */
    CHECK(fp8_e4m3_from_f32(1000.0f) == 0x7e);
    CHECK(fp8_e4m3_from_f32(-1e30f) == 0xfe);
    CHECK(fp8_e4m3_from_f32(INFINITY) == 0x7e);
    CHECK(fp8_e4m3_from_f32(NAN) == 0x7f);
    CHECK(fp8_e5m2_from_f32(1e6f) == 0x7b);
    CHECK(fp8_e4m3_to_f32(fp8_e4m3_from_f32(1.0625f)) == 1.0f);   /* tie -> even mantissa */
    CHECK(fp8_e4m3_to_f32(fp8_e4m3_from_f32(1.1875f)) == 1.25f);  /* tie -> even mantissa */
    CHECK(fp8_e4m3_to_f32(fp8_e4m3_from_f32(0.0029296875f)) == 0.00390625f); /* 1.5*2^-9: tie -> code 2 */
    CHECK(fp8_e4m3_from_f32(-0.0f) == 0x80);
    /* the bit-arithmetic encoder matches the table encoder everywhere */
    int bad = 0;
    uint64_t s = g_seed;
    for (int i = 0; i < 200000; i++) {
        float f;
        if (i < 2000) f = ldexpf((float)(i % 1000) / 16.0f, -12 + i % 24) * (i & 1 ? -1.0f : 1.0f);
        else {
            uint32_t u = (uint32_t)tu_rand_u64(&s);
            u = (u & 0x80ffffffu) | ((uint32_t)(100 + (u >> 24) % 45) << 23); /* 2^-27 .. 2^17 */
            memcpy(&f, &u, 4);
        }
        if (actq_e4m3_encode(f) != fp8_e4m3_from_f32(f)) bad++;
    }
    const float spec[] = {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, 480.0f, INFINITY, -INFINITY, NAN,
                          0.015625f, 0.0146484375f, 1e-30f, 240.0f, 232.0f, 248.0f};
    for (size_t i = 0; i < sizeof spec / sizeof *spec; i++)
        if (actq_e4m3_encode(spec[i]) != fp8_e4m3_from_f32(spec[i])) bad++;
    CHECKF(bad == 0, "%d inputs encode differently", bad);
}

static void test_actq(void) {
    /* int8 ties: amax 127 gives scale exactly 1 */
    enum { K = 77 };
    float x[2 * K];
    uint64_t s = g_seed ^ 1;
    for (int i = 0; i < 2 * K; i++) x[i] = tu_randf(&s) * 3.0f;
    const float ties[8] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.5f, -126.5f};
    const int8_t want[8] = {127, 0, 2, 2, 0, -2, 126, -126};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 8; i++) x[r * K + i + 24 * r] = ties[i]; /* in vector and tail parts */
    int8_t q1[2 * 96], q2[2 * 96];
    float s1[2], s2[2];
    actq_int8_token_ref(q1, 96, s1, x, 2, K);
    CHECK(s1[0] == 1.0f && s1[1] == 1.0f);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 8; i++) CHECKF(q1[r * 96 + i + 24 * r] == want[i], "tie %d row %d", i, r);
    if (qmm_cpu_features() & QMM_CPU_AVX2) {
        memset(q2, 0x55, sizeof q2);
        actq_int8_token_avx2(q2, 96, s2, x, 2, K);
        CHECK(memcmp(q1, q2, sizeof q1) == 0 && memcmp(s1, s2, sizeof s1) == 0);
        /* random rows, many lengths */
        for (int k = 1; k < 200; k += 7) {
            int M = 3;
            float *xr = malloc(sizeof(float) * M * k);
            for (int i = 0; i < M * k; i++) xr[i] = tu_randf(&s) * (i % 5 ? 1.0f : 40.0f);
            int64_t ld = (k + 31) / 32 * 32;
            int8_t *a = malloc(M * ld), *b = malloc(M * ld);
            float sa[3], sb[3];
            actq_int8_token_ref(a, ld, sa, xr, M, k);
            actq_int8_token_avx2(b, ld, sb, xr, M, k);
            CHECKF(memcmp(a, b, M * ld) == 0 && memcmp(sa, sb, sizeof sa) == 0, "int8 actq k=%d", k);
            /* fp8 activations: group / token / static */
            float *wa = malloc(sizeof(float) * M * k), *wb = malloc(sizeof(float) * M * k);
            float xa[64], xb[64];
            const int64_t groups[3] = {0, 16, 128};
            for (int gi = 0; gi < 4; gi++) {
                int64_t g = gi < 3 ? groups[gi] : 0;
                float st = gi == 3 ? 0.013f : 0.0f;
                actq_fp8_ref(wa, xa, xr, M, k, g, st);
                actq_fp8_fast(wb, xb, xr, M, k, g, st);
                int nx = g ? M * (int)((k + g - 1) / g) : M;
                CHECKF(memcmp(wa, wb, sizeof(float) * M * k) == 0 &&
                           memcmp(xa, xb, sizeof(float) * nx) == 0,
                       "fp8 actq k=%d group=%lld static=%g", k, (long long)g, st);
            }
            free(xr), free(a), free(b), free(wa), free(wb);
        }
    }
}

/* A quantized test weight with its buffers. */
typedef struct {
    dl_weight w;
    uint8_t *codes;
    float *scales;
    uint16_t *scales16;
    void *bias;
} tw;

static void tw_make(tw *t, int64_t n, int64_t k, int pad, dl_dtype dt, dl_wscale kind, int bn,
                    int bk, int bf16_scales, int bias, uint64_t *s) {
    float *src = malloc(sizeof(float) * n * k);
    for (int64_t i = 0; i < n * k; i++) src[i] = tu_randf(s) * (1.0f + (float)(i % 7));
    int64_t ld = k + pad;
    t->codes = malloc((size_t)(n * ld));
    size_t ns = kind == WS_BLOCK ? (size_t)(((n + bn - 1) / bn) * ((k + bk - 1) / bk)) : (size_t)n;
    t->scales = malloc(sizeof(float) * ns);
    t->scales16 = malloc(sizeof(uint16_t) * ns);
    qmm_quantize_weight(&t->w, src, n, k, ld, dt, kind, bn, bk, t->codes, t->scales);
    if (bf16_scales && kind != WS_NONE) {
        for (size_t i = 0; i < ns; i++) t->scales16[i] = f32_to_bf16(t->scales[i]);
        t->w.scale = t->scales16;
        t->w.scale_dtype = DT_BF16;
    }
    t->bias = NULL;
    if (bias) {
        float *b = malloc(sizeof(float) * n);
        for (int64_t i = 0; i < n; i++) b[i] = tu_randf(s);
        t->bias = b;
        t->w.bias = b;
        t->w.bias_dtype = DT_F32;
    }
    t->w.name = "test.weight";
    free(src);
}

static void tw_free(tw *t) { free(t->codes), free(t->scales), free(t->scales16), free(t->bias); }

typedef struct {
    dl_dtype dt;
    dl_wscale kind;
    int bn, bk, bf16;
    dl_actq actq;
} fmt;

static const fmt FORMATS[] = {
    {DT_I8, WS_CHANNEL, 0, 0, 0, ACT_INT8_TOKEN},
    {DT_I8, WS_TENSOR, 0, 0, 1, ACT_INT8_TOKEN},
    {DT_I8, WS_BLOCK, 16, 40, 0, ACT_INT8_TOKEN},
    {DT_I8, WS_CHANNEL, 0, 0, 0, ACT_NATIVE},
    {DT_F8E4M3, WS_BLOCK, 128, 128, 0, ACT_NATIVE},
    {DT_F8E4M3, WS_BLOCK, 128, 128, 1, ACT_FP8_GROUP},
    {DT_F8E4M3, WS_BLOCK, 7, 13, 0, ACT_NATIVE},
    {DT_F8E4M3, WS_BLOCK, 7, 13, 0, ACT_FP8_GROUP},
    {DT_F8E5M2, WS_BLOCK, 32, 64, 1, ACT_NATIVE},
    {DT_F8E5M2, WS_BLOCK, 32, 64, 0, ACT_FP8_TOKEN},
    {DT_F8E4M3, WS_CHANNEL, 0, 0, 0, ACT_NATIVE},
    {DT_F8E4M3, WS_CHANNEL, 0, 0, 0, ACT_FP8_TOKEN},
    {DT_F8E4M3, WS_CHANNEL, 0, 0, 0, ACT_FP8_GROUP},
    {DT_F8E4M3, WS_TENSOR, 0, 0, 0, ACT_NATIVE},
    {DT_F8E4M3, WS_TENSOR, 0, 0, 0, ACT_FP8_STATIC},
    {DT_F8E5M2, WS_NONE, 0, 0, 0, ACT_NATIVE},
};
#define NFMT (int)(sizeof FORMATS / sizeof *FORMATS)

/* float64 reference for ACT_NATIVE from the stored codes and scales */
static double native_ref(const dl_weight *w, const float *x, int m, int64_t n) {
    dl_weight c = *w;
    c.scale_kind = WS_NONE;
    double a = 0;
    for (int64_t k = 0; k < w->k; k++)
        a += (double)x[(int64_t)m * w->k + k] * (double)w_get(&c, n, k) *
             (double)(w->scale_kind == WS_NONE ? 1.0f : w_scale_at(w, n, k));
    return a + (double)w_bias_at(w, n);
}

static void test_matmul(tpool *tp) {
    const int vnni512 = (qmm_cpu_features() & QMM_CPU_VNNI512) != 0;
    /* 9 x 4100: K past qmm_i8_tiles_at's M = 2 bound, with a tail */
    const int64_t shapes[][3] = {{1, 1, 0}, {5, 7, 3}, {67, 129, 0}, {130, 300, 17}, {33, 1000, 5}, {64, 256, 0},
                                 {9, 4100, 4}};
    const int Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 64};
    uint64_t s = g_seed ^ 2;
    for (int f = 0; f < NFMT; f++) {
        const fmt *F = &FORMATS[f];
        double worst = 0, worst_nat = 0;
        int bitwise_bad = 0, fails = 0, tiled_bad = 0, tile_miscount = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            int64_t n = shapes[si][0], k = shapes[si][1];
            tw t;
            tw_make(&t, n, k, (int)shapes[si][2], F->dt, F->kind, F->bn, F->bk, F->bf16, si & 1, &s);
            t.w.actq = F->actq;
            t.w.act_scale = 0.02f;
            for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
                int M = Ms[mi];
                float *x = malloc(sizeof(float) * M * k);
                for (int64_t i = 0; i < M * k; i++) x[i] = tu_randf(&s) * (i % 11 ? 1.0f : 4.0f);
                float *y = malloc(sizeof(float) * M * n), *yr = malloc(sizeof(float) * M * n);
                const uint64_t t0 = kreg_count("cpu.qmm.int8.avx512vnni");
                int rc = qmm_matmul(y, x, &t.w, M, tp);
                int rr = qmm_matmul_ref(yr, x, &t.w, M, NULL);
                /* the VNNI-512 tiles ran exactly where qmm_i8_tiles_at sends W8A8 */
                if (F->actq == ACT_INT8_TOKEN &&
                    kreg_count("cpu.qmm.int8.avx512vnni") - t0 != (uint64_t)(vnni512 && qmm_i8_tiles_at(M, k)))
                    tile_miscount++;
                if (rc || rr) {
                    fails++;
                    fprintf(stderr, "%s\n", dl_errmsg());
                } else if (F->actq == ACT_INT8_TOKEN) {
                    if (memcmp(y, yr, sizeof(float) * M * n)) bitwise_bad++;
                    /* every other int8 kernel too (the first available one is
                     * the default) */
                    kreg_disable("cpu.qmm.int8.avx512vnni");
                    if (qmm_matmul(y, x, &t.w, M, tp) || memcmp(y, yr, sizeof(float) * M * n))
                        bitwise_bad++;
                    kreg_disable("cpu.qmm.int8.avxvnni");
                    if (qmm_matmul(y, x, &t.w, M, tp) || memcmp(y, yr, sizeof(float) * M * n))
                        bitwise_bad++;
                    kreg_reset_switches();
                } else {
                    double e = tu_max_rel(y, yr, (size_t)(M * n));
                    if (e > worst) worst = e;
                    /* the AVX-512 tiled kernel (M >= 2) is bitwise the AVX2 one */
                    float *y2 = malloc(sizeof(float) * M * n);
                    kreg_disable("cpu.qmm.fp8.avx512,cpu.qmm.i8wo.avx512");
                    if (qmm_matmul(y2, x, &t.w, M, tp) || memcmp(y, y2, sizeof(float) * M * n))
                        tiled_bad++;
                    kreg_reset_switches();
                    free(y2);
                }
                if (F->actq == ACT_NATIVE && M <= 3) {
                    double mx = 0, d = 0;
                    for (int m = 0; m < M; m++)
                        for (int64_t j = 0; j < n; j++) {
                            double r = native_ref(&t.w, x, m, j);
                            if (fabs(r) > mx) mx = fabs(r);
                            if (fabs(r - y[m * n + j]) > d) d = fabs(r - y[m * n + j]);
                        }
                    double e = d / (mx > 1e-30 ? mx : 1e-30);
                    if (e > worst_nat) worst_nat = e;
                }
                free(x), free(y), free(yr);
            }
            tw_free(&t);
        }
        CHECKF(fails == 0, "format %d: %d calls failed", f, fails);
        CHECKF(tile_miscount == 0, "format %d: cpu.qmm.int8.avx512vnni miscounted in %d cases", f, tile_miscount);
        CHECKF(bitwise_bad == 0, "format %d: int8 fast != ref bitwise in %d cases", f, bitwise_bad);
        CHECKF(tiled_bad == 0, "format %d: AVX-512 tiles != AVX2 bitwise in %d cases", f, tiled_bad);
        CHECKF(worst <= 1e-5, "format %d: fast vs ref rel err %.3g", f, worst);
        CHECKF(worst_nat <= 1e-5, "format %d: vs float64 rel err %.3g", f, worst_nat);
    }
}

/* Row m of a batch equals the same row computed alone, and any thread count
 * gives the same bits. */
static void test_invariance(tpool *tp) {
    uint64_t s = g_seed ^ 3;
    for (int f = 0; f < NFMT; f++) {
        const fmt *F = &FORMATS[f];
        int64_t n = 200, k = 333;
        int M = 19;
        tw t;
        tw_make(&t, n, k, 3, F->dt, F->kind, F->bn, F->bk, F->bf16, 1, &s);
        t.w.actq = F->actq;
        t.w.act_scale = 0.02f;
        float *x = malloc(sizeof(float) * M * k), *y = malloc(sizeof(float) * M * n);
        float *y1 = malloc(sizeof(float) * n), *yt = malloc(sizeof(float) * M * n);
        for (int64_t i = 0; i < M * k; i++) x[i] = tu_randf(&s);
        int bad = 0;
        if (qmm_matmul(y, x, &t.w, M, NULL) || qmm_matmul(yt, x, &t.w, M, tp)) bad = 1000;
        if (memcmp(y, yt, sizeof(float) * M * n)) bad++;
        for (int m = 0; m < M; m++) {
            if (qmm_matmul(y1, x + (int64_t)m * k, &t.w, 1, tp)) bad = 1000;
            if (memcmp(y1, y + (int64_t)m * n, sizeof(float) * n)) bad++;
        }
        /* small batches take the 4-row panel path */
        for (int mb = 2; mb <= 8; mb += 3) {
            if (qmm_matmul(yt, x + k, &t.w, mb, tp)) bad = 1000;
            if (memcmp(yt, y + n, sizeof(float) * n * mb)) bad++;
        }
        CHECKF(bad == 0, "format %d: %d rows differ between batch/threads and alone", f, bad);
        free(x), free(y), free(y1), free(yt);
        tw_free(&t);
    }
}

/* Decode sizes (M = 1..3, and M = 4..8 for the AVX-512 fp8 register
 * GEMV): the kernels that read spread-out rows (cpu.gemv.spread,
 * core/rowspread.h) give bitwise the results of adjacent rows, with the
 * AVX-512 kernels on and off (the AVX2 fp8 / int8 kernels), on 3 threads
 * and on 1, and count exactly where they spread (M = 1..6). */
static void test_spread(tpool *tp) {
    const int64_t shapes[][3] = {{3, 64, 0}, {67, 129, 3}, {1030, 300, 5}, {3001, 130, 0}};
    const unsigned cf = qmm_cpu_features();
    uint64_t s = g_seed ^ 7;
    for (int f = 0; f < NFMT; f++) {
        const fmt *F = &FORMATS[f];
        int bad = 0, uncounted = 0;
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            int64_t n = shapes[si][0], k = shapes[si][1];
            tw t;
            tw_make(&t, n, k, (int)shapes[si][2], F->dt, F->kind, F->bn, F->bk, F->bf16, (int)(si & 1), &s);
            t.w.actq = F->actq;
            t.w.act_scale = 0.02f;
            for (int M = 1; M <= 6; M++) {
                float *x = malloc(sizeof(float) * M * k), *ys = malloc(sizeof(float) * M * n);
                float *ya = malloc(sizeof(float) * M * n), *y1 = malloc(sizeof(float) * M * n);
                for (int64_t i = 0; i < M * k; i++) x[i] = tu_randf(&s);
                for (int no512 = 0; no512 < 2; no512++) {
                    kreg_reset_switches();
                    if (no512)
                        kreg_disable("cpu.qmm.fp8.avx512,cpu.qmm.i8wo.avx512,cpu.qmm.int8.avx512vnni");
                    /* which kernels spread: every fast one at M <= 3 but the
                     * AVX-512 int8 weight-only tiles (M >= 2) and the W8A8
                     * VNNI-512 tiles (qmm_i8_tiles_at); at M >= 4 the AVX-512
                     * fp8 register GEMV only */
                    int avx512 = !no512 && (cf & QMM_CPU_AVX512);
                    int f8gemv = avx512 && F->dt != DT_I8 && M <= QMM_F8_GEMV_MAX_M;
                    int i8tiles = F->dt == DT_I8 && F->actq == ACT_INT8_TOKEN && !no512 &&
                                  (cf & QMM_CPU_VNNI512) && qmm_i8_tiles_at(M, k);
                    int expect = (M <= 3 || f8gemv) && !i8tiles &&
                                 !(F->dt == DT_I8 && F->actq == ACT_NATIVE && M >= 2 && avx512) &&
                                 (cf & QMM_CPU_AVX2);
                    uint64_t c0 = kreg_count("cpu.gemv.spread");
                    if (qmm_matmul(ys, x, &t.w, M, tp) || qmm_matmul(y1, x, &t.w, M, NULL)) bad += 1000;
                    if (kreg_count("cpu.gemv.spread") != c0 + 2 * (uint64_t)expect) uncounted++;
                    kreg_disable("cpu.gemv.spread");
                    if (qmm_matmul(ya, x, &t.w, M, tp)) bad += 1000;
                    if (memcmp(ys, ya, sizeof(float) * M * n) || memcmp(ys, y1, sizeof(float) * M * n))
                        bad++;
                }
                kreg_reset_switches();
                free(x), free(ys), free(ya), free(y1);
            }
            tw_free(&t);
        }
        CHECKF(bad == 0, "format %d: spread rows differ from adjacent rows in %d cases", f, bad);
        CHECKF(uncounted == 0, "format %d: cpu.gemv.spread miscounted in %d cases", f, uncounted);
    }
}

/* The AVX-512 e4m3 register GEMV with the table widening
 * (cpu.qmm.fp8.avx512vbmi, VBMI CPUs, M <= 8) against the fp16 widening
 * (the same GEMV; M = 9: both the widened-panel tiles): every non-NaN code in
 * every position of a tile (rows of codes (r * 37 + k) mod 256), M = 1..9,
 * segment tails, block and channel scales: bitwise; and the switch routes. */
static void test_vbmi(tpool *tp) {
    const unsigned cf = qmm_cpu_features();
    uint64_t s = g_seed ^ 8;
    const int64_t n = 19, k = 300;
    uint8_t *codes = malloc((size_t)(n * k));
    float sc[64];
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < k; i++) {
            uint8_t c = (uint8_t)((r * 37 + i) % 256);
            codes[r * k + i] = (c & 0x7f) == 0x7f ? 0 : c; /* NaN codes take the exact path */
        }
    for (int i = 0; i < 64; i++) sc[i] = 0.5f + tu_randf(&s);
    for (int kind = 0; kind < 2; kind++) {
        dl_weight w = {.name = "vbmi", .dtype = DT_F8E4M3, .n = n, .k = k, .ld = k, .data = codes,
                       .scale_kind = kind ? WS_BLOCK : WS_CHANNEL, .scale_dtype = DT_F32, .scale = sc,
                       .bn = 7, .bk = 128, .actq = ACT_NATIVE};
        for (int M = 1; M <= 9; M++) {
            float x[9 * 300], y0[9 * 19], y1[9 * 19];
            for (int i = 0; i < M * k; i++) x[i] = tu_randf(&s) * (i % 5 ? 1.0f : 30.0f);
            kreg_reset_switches();
            uint64_t c0 = kreg_count("cpu.qmm.fp8.avx512vbmi");
            int rc = qmm_matmul(y0, x, &w, M, tp);
            int ran = kreg_count("cpu.qmm.fp8.avx512vbmi") == c0 + 1;
            CHECKF(ran == (M <= QMM_F8_GEMV_MAX_M && (cf & QMM_CPU_VBMI)), "M=%d: vbmi kernel ran %d, CPU has VBMI %d", M,
                   ran, !!(cf & QMM_CPU_VBMI));
            kreg_disable("cpu.qmm.fp8.avx512vbmi");
            rc |= qmm_matmul(y1, x, &w, M, tp);
            CHECKF(kreg_count("cpu.qmm.fp8.avx512vbmi") == c0 + (uint64_t)ran, "disabled vbmi counted");
            kreg_reset_switches();
            CHECKF(!rc && !memcmp(y0, y1, sizeof(float) * (size_t)(M * n)),
                   "scales %s M=%d: table widening != fp16 widening", kind ? "block" : "channel", M);
        }
    }
    free(codes);
}

/* fp8 weights holding NaN codes (0x7f / 0xff e4m3, 0x7f.. e5m2): the
 * outputs that read one are NaN in every kernel, the others keep the same
 * bits (the AVX-512 GEMV recomputes such tile segments on the exact path). */
static void test_nan_codes(tpool *tp) {
    uint64_t s = g_seed ^ 6;
    const dl_dtype dts[2] = {DT_F8E4M3, DT_F8E5M2};
    static const int Ms[] = {1, 3, 4, 5, 8}; /* the register GEMV's 1-, 2- and 4-row groups */
    for (int d = 0; d < 2; d++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++) {
            const int M = Ms[mi];
            int64_t n = 37, k = 300;
            tw t;
            tw_make(&t, n, k, 0, dts[d], WS_BLOCK, 16, 64, 0, 0, &s);
            const uint8_t nanc[2] = {0x7f, 0xff};
            for (int i = 0; i < 5; i++) /* rows 3, 10, 17, 24, 31 */
                t.codes[(3 + 7 * i) * k + (i * 61) % k] = d == 0 ? nanc[i & 1] : (uint8_t)(0x7d | (i & 1) << 7);
            float *x = malloc(sizeof(float) * M * k), *y = malloc(sizeof(float) * M * n);
            float *y2 = malloc(sizeof(float) * M * n), *yr = malloc(sizeof(float) * M * n);
            for (int64_t i = 0; i < M * k; i++) x[i] = tu_randf(&s);
            int bad = 0;
            CHECK(qmm_matmul(y, x, &t.w, M, tp) == 0 && qmm_matmul_ref(yr, x, &t.w, M, NULL) == 0);
            kreg_disable("cpu.qmm.fp8.avx512");
            CHECK(qmm_matmul(y2, x, &t.w, M, tp) == 0);
            kreg_reset_switches();
            for (int64_t i = 0; i < M * n; i++) {
                int64_t r = i % n;
                int nan_row = r % 7 == 3 && r <= 31;
                if (!same_f(y[i], y2[i]) || (isnan(y[i]) != 0) != nan_row || (isnan(yr[i]) != 0) != nan_row) bad++;
            }
            CHECKF(bad == 0, "%s M=%d: %d outputs wrong around NaN codes", dt_name(dts[d]), M, bad);
            free(x), free(y), free(y2), free(yr);
            tw_free(&t);
        }
}

/* W8A8 worst case for int16 saturation: w = -128 / 127, x = +-amax. */
static void test_int8_extreme(void) {
    enum { N = 8, K = 4096 + 13 };
    int8_t *w = malloc(N * K);
    float *x = malloc(sizeof(float) * K), ws[N], y[N], yr[N];
    for (int n = 0; n < N; n++) ws[n] = 1.0f;
    for (int i = 0; i < N * K; i++) w[i] = (int8_t)(i / K % 2 ? -128 : 127);
    for (int i = 0; i < K; i++) x[i] = (i % 3 == 0) ? -127.0f : 127.0f;
    dl_weight d = {.dtype = DT_I8, .n = N, .k = K, .ld = K, .data = w, .scale_kind = WS_CHANNEL,
                   .scale_dtype = DT_F32, .scale = ws, .actq = ACT_INT8_TOKEN};
    CHECK(qmm_matmul(y, x, &d, 1, NULL) == 0);
    CHECK(qmm_matmul_ref(yr, x, &d, 1, NULL) == 0);
    int64_t pos = 0, neg = 0;
    for (int i = 0; i < K; i++) if (x[i] > 0) pos++; else neg++;
    for (int n = 0; n < N; n++) {
        double want = (double)(n % 2 ? -128 : 127) * 127.0 * (double)(pos - neg);
        CHECKF(y[n] == (float)want && yr[n] == (float)want, "row %d: %g %g want %g", n, y[n], yr[n], want);
    }
    /* the batched kernels (M >= 2), with a negated row */
    float *x3 = malloc(sizeof(float) * 3 * K), y3[3 * N];
    for (int i = 0; i < 3 * K; i++) x3[i] = i / K == 1 ? -x[i % K] : x[i % K];
    CHECK(qmm_matmul(y3, x3, &d, 3, NULL) == 0);
    for (int i = 0; i < 3 * N; i++)
        CHECKF(y3[i] == (i / N == 1 ? -y[i % N] : y[i % N]), "batch row %d col %d", i / N, i % N);
    free(w), free(x), free(x3);
    /* the largest K qmm accepts, at the int32 extreme: x = 127, w = -128
     * (x + 128 times w wraps modulo 2^32 in the VNNI-512 kernel) */
    enum { KB = 131072, MB = 2 };
    int8_t *wb = malloc((size_t)N * KB);
    float *xb = malloc(sizeof(float) * MB * KB), yb[MB * N], ybr[MB * N];
    memset(wb, 0x80, (size_t)N * KB);
    for (int i = 0; i < MB * KB; i++) xb[i] = 127.0f;
    d.k = d.ld = KB, d.data = wb;
    CHECK(qmm_matmul(yb, xb, &d, MB, NULL) == 0 && qmm_matmul_ref(ybr, xb, &d, MB, NULL) == 0);
    for (int i = 0; i < MB * N; i++)
        CHECKF(yb[i] == (float)(-128.0 * 127.0 * KB) && ybr[i] == yb[i], "K=%d out %d: %g", KB, i, yb[i]);
    free(wb), free(xb);
}

static void test_switches(void) {
    uint64_t s = g_seed ^ 4;
    tw t;
    tw_make(&t, 40, 100, 0, DT_F8E4M3, WS_BLOCK, 128, 128, 0, 0, &s);
    float x[400], y[160];
    for (int i = 0; i < 400; i++) x[i] = tu_randf(&s);
    kreg_reset_switches();
    kreg_reset_counts();
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    const unsigned cf = qmm_cpu_features();
    int fast = !!(cf & QMM_CPU_AVX2), f512 = !!(cf & QMM_CPU_AVX512);
    /* fp8: avx512 -> avx2 -> ref, at M = 1 and M >= 2 */
    CHECK(kreg_count("cpu.qmm.fp8.avx512") == (uint64_t)f512);
    CHECK(kreg_count("cpu.qmm.fp8.avx2") == (uint64_t)(fast && !f512));
    CHECK(kreg_count("cpu.qmm.fp8.ref") == (uint64_t)!fast);
    CHECK(qmm_matmul(y, x, &t.w, 1, NULL) == 0);
    CHECK(kreg_count("cpu.qmm.fp8.avx512") == 2 * (uint64_t)f512);
    CHECK(kreg_count("cpu.qmm.fp8.avx2") == 2 * (uint64_t)(fast && !f512));
    kreg_disable("cpu.qmm.fp8.avx512");
    kreg_reset_counts();
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    CHECK(kreg_count("cpu.qmm.fp8.avx2") == (uint64_t)fast && kreg_count("cpu.qmm.fp8.avx512") == 0);
    kreg_disable("cpu.qmm.fp8.avx2");
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    CHECK(kreg_count("cpu.qmm.fp8.ref") == (uint64_t)!fast + 1);
    CHECK(kreg_count("cpu.qmm.fp8.avx2") == (uint64_t)fast);
    t.w.actq = ACT_FP8_GROUP;
    kreg_disable("cpu.actq.*");
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    CHECK(kreg_count("cpu.actq.fp8.ref") == 1 && kreg_count("cpu.actq.fp8.avx2") == 0);
    tw_free(&t);
    /* int8: vnni -> avx2 -> ref as switches go off */
    tw_make(&t, 40, 100, 0, DT_I8, WS_CHANNEL, 0, 0, 0, 0, &s);
    t.w.actq = ACT_INT8_TOKEN;
    kreg_reset_switches();
    kreg_reset_counts();
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    uint64_t tot = kreg_count("cpu.qmm.int8.avx512vnni") + kreg_count("cpu.qmm.int8.avxvnni") +
                   kreg_count("cpu.qmm.int8.avx2") + kreg_count("cpu.qmm.int8.ref");
    CHECK(tot == 1);
    CHECK(kreg_count("cpu.qmm.int8.avx512vnni") == 0); /* M >= 4 only */
    CHECK(qmm_matmul(y, x, &t.w, 4, NULL) == 0);
    CHECK(kreg_count("cpu.qmm.int8.avx512vnni") == (uint64_t)!!(cf & QMM_CPU_VNNI512));
    CHECK(kreg_count("cpu.actq.int8.avx2") + kreg_count("cpu.actq.int8.ref") == 2);
    kreg_disable("cpu.qmm.int8.avx512vnni,cpu.qmm.int8.avxvnni,cpu.qmm.int8.avx2");
    CHECK(qmm_matmul(y, x, &t.w, 2, NULL) == 0);
    CHECK(kreg_count("cpu.qmm.int8.ref") == 1 + 2 * (uint64_t)!fast);
    kreg_reset_switches();
    tw_free(&t);
}

/* qmm_peak: a rate for every instruction the CPU has and none for those it
 * lacks; the kernels the dispatcher picks at M = 8 map to a peak (the
 * bench's GEMM column depends on it), reference paths and unknown names
 * do not. */
static void test_peak(void) {
    qmm_peaks pk;
    CHECK(qmm_peak_measure(&pk, NULL) == 0);
    const unsigned cf = qmm_cpu_features();
    const int have[QPK_COUNT] = {
        [QPK_FMA_YMM] = !!(cf & QMM_CPU_AVX2), [QPK_FMA_ZMM] = !!(cf & QMM_CPU_AVX512),
        [QPK_DPBUSD_YMM] = !!(cf & QMM_CPU_VNNI), [QPK_DPBUSD_ZMM] = !!(cf & QMM_CPU_VNNI512),
        [QPK_MADDUBS_YMM] = !!(cf & QMM_CPU_AVX2)};
    for (int i = 0; i < QPK_COUNT; i++) {
        /* > 1 G operations per second: a single core of any AVX2 machine */
        CHECKF(have[i] ? pk.ops[i] > 1e9 : pk.ops[i] == 0.0, "%s: %.3g ops/s", qmm_peak_name(i), pk.ops[i]);
        CHECK(strcmp(qmm_peak_name(i), "?") != 0);
    }
    CHECK(qmm_peak_of_kernel("cpu.qmm.int8.avx512vnni") == QPK_DPBUSD_ZMM);
    CHECK(qmm_peak_of_kernel("cpu.qmm.int8.ref") == -1 && qmm_peak_of_kernel("no.such") == -1);
    CHECK(qmm_peak_of_kernel(NULL) == -1);
    uint64_t s = g_seed ^ 6;
    for (int f = 0; f < 2; f++) {
        tw t;
        tw_make(&t, 24, 256, 0, f ? DT_I8 : DT_F8E4M3, f ? WS_CHANNEL : WS_BLOCK, 128, 128, 0, 0, &s);
        t.w.actq = f ? ACT_INT8_TOKEN : ACT_NATIVE;
        float x[8 * 256], y[8 * 24];
        for (int i = 0; i < 8 * 256; i++) x[i] = tu_randf(&s);
        kreg_reset_counts();
        CHECK(qmm_matmul(y, x, &t.w, 8, NULL) == 0);
        static const char *const names[] = {"cpu.qmm.int8.avx512vnni", "cpu.qmm.int8.avxvnni", "cpu.qmm.int8.avx2",
                                            "cpu.qmm.fp8.avx512", "cpu.qmm.fp8.avx2"};
        int mapped = 0;
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (kreg_count(names[i]) && qmm_peak_of_kernel(names[i]) >= 0) mapped = 1;
        CHECKF(mapped == !!(cf & QMM_CPU_AVX2), "%s at M = 8: no kernel with a peak ran", f ? "int8" : "fp8");
        tw_free(&t);
    }
}

static void test_refused(void) {
    uint64_t s = g_seed ^ 5;
    tw t;
    tw_make(&t, 4, 8, 0, DT_F8E4M3, WS_CHANNEL, 0, 0, 0, 0, &s);
    float x[8] = {0}, y[4];
    t.w.actq = ACT_INT8_TOKEN;
    CHECK(qmm_matmul(y, x, &t.w, 1, NULL) == -1 && strstr(dl_errmsg(), "test.weight"));
    t.w.actq = ACT_FP8_STATIC;
    t.w.act_scale = 0.0f;
    CHECK(qmm_matmul(y, x, &t.w, 1, NULL) == -1);
    t.w.actq = ACT_NATIVE;
    t.w.dtype = DT_F32;
    CHECK(qmm_matmul(y, x, &t.w, 1, NULL) == -1);
    t.w.dtype = DT_F8E4M3;
    t.w.ld = 4;
    CHECK(qmm_matmul(y, x, &t.w, 1, NULL) == -1);
    tw_free(&t);
}

int main(void) {
    g_seed = tu_seed();
    tpool *tp = tp_create(3);
    CHECK(tp != NULL);
    test_widen();
    test_fp8_encode();
    test_actq();
    test_matmul(tp);
    test_invariance(tp);
    test_spread(tp);
    test_vbmi(tp);
    test_nan_codes(tp);
    test_int8_extreme();
    test_switches();
    test_peak();
    test_refused();
    tp_free(tp);
    return TEST_END();
}
