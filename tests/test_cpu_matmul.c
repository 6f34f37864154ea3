/* CPU matmul: F32/F16/BF16 weights, many M, odd shapes, padded ld, bias;
 * fast vs reference vs a float64 computation here; kernel switching through
 * the registry; bitwise batch and thread-count invariance. With
 * DOTLM_BENCH=1 it also times a 4096x4096 bf16 GEMV against a read-bandwidth
 * loop (see docs/cpu_backend.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/tpool.h"
#include "quant/qmatmul.h"
#include "testutil.h"

static uint64_t rs;
static int g_avx2;   /* CPU has the fast kernels */
static int g_avx512; /* and the AVX-512VL tiles (the backend's test: qmm_cpu_features) */

static dl_weight make_w(int n, int k, int ld, dl_dtype t, int bias, dl_dtype bt) {
    size_t sz = (size_t)n * ld;
    float *v = malloc(sz * 4);
    for (size_t i = 0; i < sz; i++) v[i] = tu_randf(&rs);
    dl_weight w = {.name = "w", .dtype = t, .n = n, .k = k, .ld = ld};
    w.data = tu_store(v, sz, t);
    if (bias) {
        for (int i = 0; i < n; i++) v[i] = tu_randf(&rs);
        w.bias = tu_store(v, (size_t)n, bt);
        w.bias_dtype = bt;
    }
    free(v);
    return w;
}
static void free_w(dl_weight *w) {
    free((void *)w->data);
    free((void *)w->bias);
}

static const char *sfx(dl_dtype t) { return t == DT_F32 ? "f32" : t == DT_F16 ? "f16" : "bf16"; }

static void check_case(dl_backend *be, dl_dtype t, int M, int n, int k, int ld, int bias) {
    dl_dtype bt = (dl_dtype)(tu_rand_u64(&rs) % 3); /* F32, F16 or BF16 bias */
    dl_weight w = make_w(n, k, ld, t, bias, bt);
    size_t xn = (size_t)M * k, yn = (size_t)M * n;
    float *x = malloc(xn * 4), *yf = malloc(yn * 4), *yr = malloc(yn * 4), *yd = malloc(yn * 4);
    for (size_t i = 0; i < xn; i++) x[i] = tu_randf(&rs);
    char fast[64], ref[64], wide[64], bat[64];
    snprintf(fast, sizeof fast, "cpu.matmul.%s.avx2", sfx(t));
    snprintf(ref, sizeof ref, "cpu.matmul.%s.ref", sfx(t));
    snprintf(wide, sizeof wide, "cpu.matmul.%s.avx512vl", sfx(t));
    snprintf(bat, sizeof bat, "cpu.matmul.%s.avx512vl.batch", sfx(t));
    kreg_reset_switches();
    uint64_t f0 = kreg_count(fast), w0 = kreg_count(wide), b0 = kreg_count(bat);
    be->matmul(be, yf, x, &w, M);
    /* exactly one fast kernel ran: on AVX-512 CPUs the wide tile on the prefill path (M > 8
     * here), the batch tile at M = 2..8 (rows spread) */
    const int want_wide = g_avx512 && M > 8, want_bat = g_avx512 && M >= 2 && M <= 8;
    int fast_ran = kreg_count(fast) + kreg_count(wide) + kreg_count(bat) == f0 + w0 + b0 + 1;
    CHECKF(fast_ran || !g_avx2, "%s did not run", fast);
    CHECKF(!g_avx2 || kreg_count(wide) == w0 + (uint64_t)want_wide, "%s M=%d: %s", wide, M,
           want_wide ? "did not run" : "ran off the prefill path");
    CHECKF(!g_avx2 || kreg_count(bat) == b0 + (uint64_t)want_bat, "%s M=%d: %s", bat, M,
           want_bat ? "did not run" : "ran off the batched decode");
    kreg_disable(fast);
    kreg_disable(wide);
    kreg_disable(bat);
    uint64_t r0 = kreg_count(ref), f1 = kreg_count(fast), w1 = kreg_count(wide), b1 = kreg_count(bat);
    be->matmul(be, yr, x, &w, M);
    CHECKF(kreg_count(ref) == r0 + 1 && kreg_count(fast) == f1 && kreg_count(wide) == w1 && kreg_count(bat) == b1,
           "switch %s did not route to %s", fast, ref);
    kreg_reset_switches();
    for (int m = 0; m < M; m++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < k; i++) s += (double)x[(size_t)m * k + i] * tu_load(w.data, (size_t)j * ld + i, t);
            if (bias) s += tu_load(w.bias, (size_t)j, bt);
            yd[(size_t)m * n + j] = (float)s;
        }
    double ef = tu_max_rel(yf, yr, yn), er = tu_max_rel(yr, yd, yn), efd = tu_max_rel(yf, yd, yn);
    CHECKF(ef <= 1e-5, "%s M=%d n=%d k=%d ld=%d bias=%d fast vs ref %g (fast ran: %d)", sfx(t), M, n, k, ld,
           bias, ef, fast_ran);
    CHECKF(er <= 1e-6, "%s M=%d n=%d k=%d ref vs f64 %g", sfx(t), M, n, k, er);
    CHECKF(efd <= 1e-5, "%s M=%d n=%d k=%d fast vs f64 %g", sfx(t), M, n, k, efd);
    free(x), free(yf), free(yr), free(yd);
    free_w(&w);
}

/* Row r of an M-row batch equals bitwise the same row computed with M = 1,
 * and a 1-thread backend gives the same bits as a 2-thread one. */
static void check_invariance(dl_backend *be, dl_backend *be1, dl_dtype t, int Mb, int n, int k, int ld) {
    dl_weight w = make_w(n, k, ld, t, 1, DT_F32);
    float *x = malloc((size_t)Mb * k * 4), *yb = malloc((size_t)Mb * n * 4), *y1 = malloc((size_t)n * 4);
    float *yt = malloc((size_t)Mb * n * 4);
    for (size_t i = 0; i < (size_t)Mb * k; i++) x[i] = tu_randf(&rs);
    kreg_reset_switches();
    be->matmul(be, yb, x, &w, Mb);
    int ok = 1;
    for (int r = 0; r < Mb; r++) {
        be->matmul(be, y1, x + (size_t)r * k, &w, 1);
        ok &= !memcmp(y1, yb + (size_t)r * n, (size_t)n * 4);
    }
    CHECKF(ok, "%s batch M=%d rows differ from M=1 (n=%d k=%d)", sfx(t), Mb, n, k);
    for (int m = 1; m <= Mb; m++) { /* every prefix size agrees too */
        be->matmul(be, yt, x, &w, m);
        ok &= !memcmp(yt, yb, (size_t)m * n * 4);
    }
    CHECKF(ok, "%s prefixes of the batch differ (n=%d k=%d)", sfx(t), n, k);
    be1->matmul(be1, yt, x, &w, Mb);
    CHECKF(!memcmp(yt, yb, (size_t)Mb * n * 4), "%s 1 thread vs 2 threads differ", sfx(t));
    free(x), free(yb), free(y1), free(yt);
    free_w(&w);
}

/* Decode GEMVs and small batches (M <= 8) with row spreading
 * (cpu.gemv.spread) give the bits of adjacent-row tiles, on 2 threads and
 * on 1, and the switch routes. */
static void check_spread(dl_backend *be, dl_backend *be1, dl_dtype t, int M, int n, int k, int ld) {
    dl_weight w = make_w(n, k, ld, t, (n & 1), DT_BF16);
    float *x = malloc((size_t)M * k * 4), *ys = malloc((size_t)M * n * 4), *ya = malloc((size_t)M * n * 4);
    float *y1 = malloc((size_t)M * n * 4);
    for (size_t i = 0; i < (size_t)M * k; i++) x[i] = tu_randf(&rs);
    kreg_reset_switches();
    uint64_t s0 = kreg_count("cpu.gemv.spread");
    be->matmul(be, ys, x, &w, M);
    CHECKF(kreg_count("cpu.gemv.spread") == s0 + (g_avx2 ? 1 : 0), "%s M=%d n=%d: spread did not run",
           sfx(t), M, n);
    be1->matmul(be1, y1, x, &w, M);
    kreg_disable("cpu.gemv.spread");
    uint64_t s1 = kreg_count("cpu.gemv.spread");
    be->matmul(be, ya, x, &w, M);
    CHECKF(kreg_count("cpu.gemv.spread") == s1, "%s: disabled spread still counted", sfx(t));
    kreg_reset_switches();
    CHECKF(!memcmp(ys, ya, (size_t)M * n * 4), "%s M=%d n=%d k=%d ld=%d: spread rows differ from adjacent rows",
           sfx(t), M, n, k, ld);
    CHECKF(!memcmp(ys, y1, (size_t)M * n * 4), "%s M=%d n=%d k=%d: spread 1 thread vs 2 threads differ",
           sfx(t), M, n, k);
    free(x), free(ys), free(ya), free(y1);
    free_w(&w);
}

/* An AVX-512VL tile, cpu.matmul.<t>.<tile>, gives the bits of the AVX2
 * tile it replaces, counted where it ran; switched off, the AVX2 kernel
 * runs. tile "avx512vl": the prefill tile (6 x rows x 4 weight rows) at
 * M > 8, and at M = 4..8 with row spreading off (nospread); k tails,
 * column and row remainders, padded ld, bias. tile "avx512vl.batch": the
 * batched-decode tile (M = 2..8 rows of x x up to 8 spread weight rows over
 * the whole k; partial and adjacent last tiles). */
static void check_tile(dl_backend *be, dl_dtype t, const char *tile, int M, int n, int k, int ld, int nospread) {
    if (!g_avx512) return;
    dl_weight w = make_w(n, k, ld, t, (n + k + M) & 1, (n & 2) ? DT_BF16 : DT_F32);
    float *x = malloc((size_t)M * k * 4), *yw = malloc((size_t)M * n * 4), *ya = malloc((size_t)M * n * 4);
    for (size_t i = 0; i < (size_t)M * k; i++) x[i] = tu_randf(&rs);
    char fast[64], wide[64];
    snprintf(fast, sizeof fast, "cpu.matmul.%s.avx2", sfx(t));
    snprintf(wide, sizeof wide, "cpu.matmul.%s.%s", sfx(t), tile);
    kreg_reset_switches();
    if (nospread) kreg_disable("cpu.gemv.spread");
    uint64_t w0 = kreg_count(wide), f0 = kreg_count(fast);
    be->matmul(be, yw, x, &w, M);
    CHECKF(kreg_count(wide) == w0 + 1 && kreg_count(fast) == f0, "%s M=%d n=%d k=%d: %s did not run", sfx(t), M,
           n, k, wide);
    kreg_disable(wide);
    w0 = kreg_count(wide), f0 = kreg_count(fast);
    be->matmul(be, ya, x, &w, M);
    CHECKF(kreg_count(wide) == w0 && kreg_count(fast) == f0 + 1, "%s: switching %s off did not route to %s",
           sfx(t), wide, fast);
    kreg_reset_switches();
    CHECKF(!memcmp(yw, ya, (size_t)M * n * 4), "%s M=%d n=%d k=%d ld=%d: %s differs from the AVX2 tile", sfx(t),
           M, n, k, ld, wide);
    free(x), free(yw), free(ya);
    free_w(&w);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    const uint64_t *p;
    uint64_t sum[64];
} rd_ctx;
/* Sum 32 KiB pages [b, e) with 256-bit loads: the machine's read bandwidth. */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2"))) static void rd_fn(void *ctx, size_t b, size_t e) {
    rd_ctx *c = ctx;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = b * 4096; i < e * 4096; i += 16) {
        const __m256i *q = (const __m256i *)(c->p + i);
        s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(q));
        s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(q + 1));
        s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(q + 2));
        s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(q + 3));
    }
    uint64_t t[4];
    _mm256_storeu_si256((__m256i *)t, _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
    c->sum[b % 64] += t[0] + t[1] + t[2] + t[3];
}
#else
static void rd_fn(void *ctx, size_t b, size_t e) {
    rd_ctx *c = ctx;
    uint64_t s = 0;
    for (size_t i = b * 4096; i < e * 4096; i++) s += c->p[i];
    c->sum[b % 64] += s;
}
#endif

/* GEMV throughput over weights larger than the L3 cache vs a plain read loop. */
static void bench(dl_backend *be, int nthreads) {
    enum { NW = 16, N = 4096, K = 4096 };
    size_t wb = (size_t)N * K * 2;
    uint16_t *buf = malloc(wb * NW);
    for (size_t i = 0; i < wb * NW / 2; i++) buf[i] = f32_to_bf16(tu_randf(&rs));
    dl_weight w[NW];
    for (int i = 0; i < NW; i++)
        w[i] = (dl_weight){.name = "b", .dtype = DT_BF16, .n = N, .k = K, .ld = K, .data = buf + (size_t)i * N * K};
    float x[K], y[N];
    for (int i = 0; i < K; i++) x[i] = tu_randf(&rs);
    for (int i = 0; i < NW; i++) be->matmul(be, y, x, &w[i], 1);
    double t0 = now();
    int reps = 4;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < NW; i++) be->matmul(be, y, x, &w[i], 1);
    double gemv = wb * NW * reps / (now() - t0) / 1e9;
    double rd[2];
    rd_ctx c = {.p = (const uint64_t *)buf};
    size_t pages = wb * NW / 32768;
    for (int ti = 0; ti < 2; ti++) {
        tpool *tp = tp_create(ti ? nthreads : 1);
        tp_run(tp, pages, 64, rd_fn, &c);
        t0 = now();
        for (int r = 0; r < reps; r++) tp_run(tp, pages, 64, rd_fn, &c);
        rd[ti] = wb * NW * reps / (now() - t0) / 1e9;
        tp_free(tp);
    }
    /* prefill: M = 64 rows against one weight (compute-bound) */
    float *xm = malloc((size_t)64 * K * 4), *ym = malloc((size_t)64 * N * 4);
    for (size_t i = 0; i < (size_t)64 * K; i++) xm[i] = tu_randf(&rs);
    be->matmul(be, ym, xm, &w[0], 64);
    t0 = now();
    for (int r = 0; r < reps; r++) be->matmul(be, ym, xm, &w[0], 64);
    double gf = 2.0 * 64 * N * K * reps / (now() - t0) / 1e9;
    free(xm), free(ym);
    printf("bench: bf16 GEMV 4096x4096 (M=1, %d threads, %d MiB of weights): %.1f GB/s\n", nthreads,
           (int)(wb * NW >> 20), gemv);
    printf("bench: AVX2 read loop: %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n", rd[0], rd[1], nthreads);
    printf("bench: bf16 GEMM M=64 4096x4096 (%d threads): %.1f GFLOP/s\n", nthreads, gf);
    uint64_t s = 0;
    for (int i = 0; i < 64; i++) s += c.sum[i];
    printf("bench: (checksum %llu, y0 %g)\n", (unsigned long long)(s & 0xff), y[0]);
    free(buf);
}

int main(void) {
    rs = tu_seed();
#if defined(__x86_64__)
    g_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    /* the backend's own reading (cpuid + xgetbv: the OS saves the ZMM state) */
    g_avx512 = g_avx2 && (qmm_cpu_features() & QMM_CPU_AVX512) != 0;
#endif
    printf("AVX-512VL prefill and batch tiles: %s\n", g_avx512 ? "tested" : "not on this CPU (skipped)");
    dl_backend *be = be_create("cpu", 2), *be1 = be_create("cpu", 1);
    CHECK(be && be1);
    if (!be || !be1) return TEST_END();
    static const int Ms[] = {1, 2, 3, 4, 7, 8, 16, 64};
    static const int shapes[][3] = {{1, 1, 1}, {37, 61, 61}, {64, 128, 133}, {33, 300, 300},
                                    {5, 7, 8}, {130, 17, 20}, {16, 512, 512}};
    static const dl_dtype ts[] = {DT_F32, DT_F16, DT_BF16};
    for (int ti = 0; ti < 3; ti++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
                check_case(be, ts[ti], Ms[mi], shapes[si][0], shapes[si][1], shapes[si][2],
                           (int)((mi + si) & 1));
    for (int ti = 0; ti < 3; ti++) {
        check_invariance(be, be1, ts[ti], 8, 67, 131, 131);
        check_invariance(be, be1, ts[ti], 13, 300, 1029, 1031);
        check_invariance(be, be1, ts[ti], 64, 70, 1024, 1024);
    }
    static const int sp[][3] = {{3, 64, 64}, {67, 131, 131}, {1030, 300, 301}, {4099, 72, 72},
                                {3001, 1029, 1029}};
    for (int ti = 0; ti < 3; ti++)
        for (int M = 1; M <= 8; M++)
            for (size_t si = 0; si < sizeof sp / sizeof *sp; si++)
                check_spread(be, be1, ts[ti], M, sp[si][0], sp[si][1], sp[si][2]);
    static const int wm[] = {9, 11, 12, 13, 16, 37, 64};
    static const int wsh[][3] = {{1, 1, 1}, {5, 7, 8}, {37, 61, 61}, {130, 1029, 1031}, {67, 520, 520},
                                 {33, 1500, 1503}};
    for (int ti = 0; ti < 3; ti++) {
        for (size_t mi = 0; mi < sizeof wm / sizeof *wm; mi++)
            for (size_t si = 0; si < sizeof wsh / sizeof *wsh; si++)
                check_tile(be, ts[ti], "avx512vl", wm[mi], wsh[si][0], wsh[si][1], wsh[si][2], 0);
        for (int M = 4; M <= 8; M++) check_tile(be, ts[ti], "avx512vl", M, 67, 1029, 1031, 1);
    }
    static const int bsh[][3] = {{1, 1, 1}, {3, 7, 8}, {7, 64, 64}, {67, 131, 133}, {1030, 300, 301},
                                 {4099, 72, 72}, {641, 1029, 1031}};
    for (int ti = 0; ti < 3; ti++)
        for (int M = 2; M <= 8; M++)
            for (size_t si = 0; si < sizeof bsh / sizeof *bsh; si++)
                check_tile(be, ts[ti], "avx512vl.batch", M, bsh[si][0], bsh[si][1], bsh[si][2], 0);
    /* big shape: threads actually split N */
    check_case(be, DT_BF16, 1, 1024, 4096, 4096, 1);
    check_case(be, DT_BF16, 9, 512, 1536, 1536, 1);

    /* INT8 weights (per-channel scales, fp32 activations) go through qmm_matmul */
    {
        int n = 19, k = 45, M = 3;
        int8_t *q8 = malloc((size_t)n * k);
        float sc[19], xq[3 * 45], yq[3 * 19], yqd[3 * 19];
        for (int i = 0; i < n * k; i++) q8[i] = (int8_t)(tu_rand_u64(&rs) % 255 - 127);
        for (int i = 0; i < n; i++) sc[i] = 0.01f * (1 + tu_randf(&rs));
        for (int i = 0; i < M * k; i++) xq[i] = tu_randf(&rs);
        dl_weight wq = {.name = "q8", .dtype = DT_I8, .n = n, .k = k, .ld = k, .data = q8,
                        .scale_kind = WS_CHANNEL, .scale_dtype = DT_F32, .scale = sc, .actq = ACT_NATIVE};
        for (int m = 0; m < M; m++)
            for (int j = 0; j < n; j++) {
                double a = 0;
                for (int i = 0; i < k; i++) a += (double)xq[m * k + i] * w_get(&wq, j, i);
                yqd[m * n + j] = (float)a;
            }
        dl_err_clear();
        be->matmul(be, yq, xq, &wq, M);
        double e = tu_max_rel(yq, yqd, (size_t)M * n);
        CHECKF(e <= 1e-4, "int8 weight matmul via qmm_matmul: %g (%s)", e, dl_errmsg());
        free(q8);
    }
    /* an unsupported weight format fills NaN and leaves a message */
    dl_weight bad = {.name = "bad", .dtype = DT_I32, .n = 2, .k = 2, .ld = 2};
    int32_t bd[4] = {0};
    bad.data = bd;
    float x[2] = {1, 2}, y[2] = {0, 0};
    dl_err_clear();
    be->matmul(be, y, x, &bad, 1);
    CHECK(isnan(y[0]) && isnan(y[1]) && strstr(dl_errmsg(), "not supported"));
    CHECK(be->upload(be, &bad) == -1);
    if (getenv("DOTLM_BENCH")) bench(be, 2);
    be_destroy(be);
    be_destroy(be1);
    return TEST_END();
}
