/* dotlm_gpu_bench: GPU numeric sweep + bandwidth/throughput benchmarks.
 *
 *   dotlm_gpu_bench [--quick] [--no-bench] [--no-sweep] [--help]
 *
 * 1. numeric sweep: every GPU matmul kernel (GEMV, GEMM, reference, dot2)
 *    on every weight format against a float64 reference computed here from
 *    w_get() (activations quantized on the host exactly as the policy says);
 *    fp32-accumulating paths must be within 1e-5 of max|ref|, the fp16 dot2
 *    variant within 2e-3.
 * 2. device-to-device copy bandwidth (bytes read + written) and peak
 *    microbenchmarks (fp32 FMA, fp16 packed FMA/dot2, dp4a).
 * 3. decode GEMV at M = 1, 2, 4, 8 for bf16, fp8 block 128x128 and int8 on
 *    5120x17408, 17408x5120, 6144x5120 (n x k), rotating weight copies so the
 *    L2 cache cannot serve them; weight GB/s and % of copy bandwidth, through
 *    the backend (int8: quantization + GEMV) and of the GEMV kernel alone.
 *    DOTLM_GEMV_VARIANTS=all adds one line per GEMV variant (gpu_tune.h:
 *    the original kernels "v1", the default, and each knob alone);
 *    DOTLM_GEMV_VARIANTS="spec;spec;..." times the given specs instead;
 *    DOTLM_GEMV_MS=5,6,7 times those batch sizes (1..8) instead of 1, 2, 4, 8;
 *    DOTLM_BENCH_TWIN=1: fp8 at M = 1 alone reads x's permuted twin.
 * 4. multi-weight GEMV on Qwen3-8B decode shapes (q/k/v 4096+1024+1024 x
 *    4096, gate/up 2 x 12288 x 4096): one launch per weight vs one
 *    gk_gemv_multi / gk_int8_gemv_multi launch, and (float gate/up) one
 *    gk_gemv_silu launch (SiLU(gate) * up from the epilogue).
 * 5. prefill GEMM at M = 512..4096: TFLOP/s (TOP/s) vs the measured peak.
 * Exit status: 0 when the sweep passed, 1 otherwise (benchmarks never fail). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_tune.h"
#include "core/err.h"
#include "core/kreg.h"
#include "quant/fp8.h"

#ifdef DOTLM_HIP
#define BE_NAME "hip"
#else
#define BE_NAME "cuda"
#endif

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float rndf(void) { return (float)((rnd() >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0); }

/* Fill a host weight of the given format with random non-zero data. */
typedef struct {
    dl_weight w;
    void *data, *scale, *bias;
} hweight;

static int rand_fp8(int e5) {
    for (;;) {
        int c = (int)(rnd() & 255);
        if (!e5 && (c & 0x7f) == 0x7f) continue;
        if (e5 && ((c >> 2) & 31) == 31) continue;
        if ((c & 0x7f) == 0) continue;
        return c;
    }
}

static int hw_make(hweight *h, dl_dtype dt, int64_t n, int64_t k, int64_t ld, dl_wscale sk, int bn, int bk,
                   dl_actq aq, int bias) {
    memset(h, 0, sizeof *h);
    size_t es = dt_size(dt), cnt = (size_t)n * (size_t)ld;
    h->data = malloc(cnt * es);
    if (!h->data) return -1;
    for (size_t i = 0; i < cnt; i++) {
        float f = rndf();
        if (f == 0.0f) f = 0.5f;
        switch (dt) {
        case DT_F32: ((float *)h->data)[i] = f; break;
        case DT_F16: ((uint16_t *)h->data)[i] = f32_to_f16(f); break;
        case DT_BF16: ((uint16_t *)h->data)[i] = f32_to_bf16(f); break;
        case DT_F8E4M3: ((uint8_t *)h->data)[i] = (uint8_t)rand_fp8(0); break;
        case DT_F8E5M2: ((uint8_t *)h->data)[i] = (uint8_t)rand_fp8(1); break;
        case DT_I8: {
            int v = (int)(rnd() % 255) - 127;
            ((int8_t *)h->data)[i] = (int8_t)(v ? v : 1);
            break;
        }
        default: break;
        }
    }
    int64_t ns = sk == WS_TENSOR ? 1 : sk == WS_CHANNEL ? n : sk == WS_BLOCK ? ((n + bn - 1) / bn) * ((k + bk - 1) / bk) : 0;
    if (ns) {
        h->scale = malloc((size_t)ns * 4);
        for (int64_t i = 0; i < ns; i++) ((float *)h->scale)[i] = (0.5f + 0.5f * fabsf(rndf())) * (dt == DT_I8 ? 0.01f : 0.1f);
    }
    if (bias) {
        h->bias = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) ((float *)h->bias)[i] = rndf();
    }
    h->w = (dl_weight){.name = "bench", .dtype = dt, .n = n, .k = k, .ld = ld, .data = h->data, .scale_kind = sk,
                       .scale_dtype = DT_F32, .scale = h->scale, .bn = bn, .bk = bk, .actq = aq,
                       .act_scale = 0.02f, .bias = h->bias, .bias_dtype = DT_F32};
    return 0;
}

static void hw_free(hweight *h) {
    free(h->data);
    free(h->scale);
    free(h->bias);
}

/* Host activations as the weight's policy sees them (float64 reference). */
static void ref_matmul(double *y, const float *x, const dl_weight *w, int M) {
    int64_t k = w->k;
    double *xa = malloc(sizeof(double) * (size_t)k);
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * k;
        double xsc = 1.0;
        if (w->dtype == DT_I8 && w->actq == ACT_INT8_TOKEN) {
            float amax = 0.0f;
            for (int64_t i = 0; i < k; i++) amax = fmaxf(amax, fabsf(xr[i]));
            float s = amax > 0.0f ? amax / 127.0f : 1.0f;
            for (int64_t i = 0; i < k; i++) {
                float r = rintf(xr[i] / s);
                xa[i] = fminf(fmaxf(r, -127.0f), 127.0f);
            }
            xsc = s;
        } else if ((w->dtype == DT_F8E4M3 || w->dtype == DT_F8E5M2) && w->actq != ACT_NATIVE) {
            int64_t grp = w->actq == ACT_FP8_GROUP ? w->bk : k;
            for (int64_t g0 = 0; g0 < k; g0 += grp) {
                int64_t g1 = g0 + grp < k ? g0 + grp : k;
                float s = w->act_scale;
                if (w->actq != ACT_FP8_STATIC) {
                    float amax = 0.0f;
                    for (int64_t i = g0; i < g1; i++) amax = fmaxf(amax, fabsf(xr[i]));
                    s = amax > 0.0f ? amax / 448.0f : 1.0f;
                }
                for (int64_t i = g0; i < g1; i++)
                    xa[i] = (double)fp8_e4m3_to_f32(fp8_e4m3_from_f32(xr[i] / s)) * s;
            }
        } else {
            for (int64_t i = 0; i < k; i++) xa[i] = xr[i];
        }
        for (int64_t n = 0; n < w->n; n++) {
            double acc = 0.0;
            if (w->dtype == DT_I8 && w->actq == ACT_INT8_TOKEN) {
                for (int64_t i = 0; i < k; i++) acc += xa[i] * (double)((const int8_t *)w->data)[n * w->ld + i];
                acc = acc * xsc * w_scale_at(w, n, 0);
            } else {
                for (int64_t i = 0; i < k; i++) acc += xa[i] * (double)w_get(w, n, i);
            }
            y[(size_t)m * w->n + n] = acc + w_bias_at(w, n);
        }
    }
    free(xa);
}

static dl_backend *be;
static int n_pass, n_fail;

/* One sweep case: run the op with `only` enabled among the matmul kernels. */
static void sweep_case(const char *label, hweight *h, int M, const char *disable, double tol, const char *expect) {
    dl_weight *w = &h->w;
    float *x = malloc(sizeof(float) * (size_t)M * w->k), *y = malloc(sizeof(float) * (size_t)M * w->n);
    double *ref = malloc(sizeof(double) * (size_t)M * w->n);
    for (size_t i = 0; i < (size_t)M * w->k; i++) x[i] = rndf();
    ref_matmul(ref, x, w, M);
    float *dx = be->alloc(be, sizeof(float) * (size_t)M * w->k), *dy = be->alloc(be, sizeof(float) * (size_t)M * w->n);
    kreg_reset_switches();
    if (disable) kreg_disable(disable);
    kreg_reset_counts();
    int ok = dx && dy && be->from_host(be, dx, x, sizeof(float) * (size_t)M * w->k) == 0;
    if (ok) {
        be->matmul(be, dy, dx, w, M);
        ok = be->sync(be) == 0 && be->to_host(be, y, dy, sizeof(float) * (size_t)M * w->n) == 0;
    }
    double mx = 0.0, err = 0.0;
    for (size_t i = 0; ok && i < (size_t)M * w->n; i++) {
        mx = fmax(mx, fabs(ref[i]));
        err = fmax(err, fabs((double)y[i] - ref[i]));
    }
    double rel = err / (mx > 0 ? mx : 1e-30);
    int ran = expect ? kreg_count(expect) > 0 : 1;
    int pass = ok && rel <= tol && ran && !isnan(rel);
    if (pass) n_pass++;
    else n_fail++;
    printf("  %-4s %-34s n=%-5lld k=%-5lld M=%-4d rel=%.2e tol=%.0e %s%s\n", pass ? "ok" : "FAIL", label,
           (long long)w->n, (long long)w->k, M, rel, tol, expect ? expect : "", ran ? "" : " (did not run!)");
    if (!ok) printf("       error: %s\n", dl_errmsg());
    kreg_reset_switches();
    be->free(be, dx);
    be->free(be, dy);
    free(x);
    free(y);
    free(ref);
}

static void sweep(int quick) {
    printf("== numeric sweep vs float64 reference ==\n");
    static const int shapes[][3] = {{96, 256, 256}, {200, 640, 640}, {130, 384, 400}};
    static const int Ms[] = {1, 3, 8, 9, 70, 129};
    const int nshape = quick ? 1 : 3, nM = quick ? 4 : 6;
    struct {
        const char *label;
        dl_dtype dt;
        dl_wscale sk;
        dl_actq aq;
        const char *k_gemv, *k_gemm;
    } fm[] = {
        {"f32", DT_F32, WS_NONE, ACT_NATIVE, BE_NAME ".matmul.f32.gemv", BE_NAME ".matmul.f32.gemm"},
        {"f16", DT_F16, WS_NONE, ACT_NATIVE, BE_NAME ".matmul.f16.gemv", BE_NAME ".matmul.f16.gemm"},
        {"bf16", DT_BF16, WS_NONE, ACT_NATIVE, BE_NAME ".matmul.bf16.gemv", BE_NAME ".matmul.bf16.gemm"},
        {"fp8e4m3 tensor", DT_F8E4M3, WS_TENSOR, ACT_NATIVE, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e4m3 channel", DT_F8E4M3, WS_CHANNEL, ACT_NATIVE, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e4m3 block128", DT_F8E4M3, WS_BLOCK, ACT_NATIVE, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e5m2 block128", DT_F8E5M2, WS_BLOCK, ACT_NATIVE, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e4m3 block act=group", DT_F8E4M3, WS_BLOCK, ACT_FP8_GROUP, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e4m3 channel act=token", DT_F8E4M3, WS_CHANNEL, ACT_FP8_TOKEN, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"fp8e4m3 tensor act=static", DT_F8E4M3, WS_TENSOR, ACT_FP8_STATIC, BE_NAME ".matmul.fp8.gemv", BE_NAME ".matmul.fp8.gemm"},
        {"int8 W8A8 channel", DT_I8, WS_CHANNEL, ACT_INT8_TOKEN, BE_NAME ".matmul.int8.gemv", BE_NAME ".matmul.int8.gemm"},
        {"int8 weight-only channel", DT_I8, WS_CHANNEL, ACT_NATIVE, BE_NAME ".matmul.i8w.gemv", BE_NAME ".matmul.i8w.gemm"},
    };
    for (size_t f = 0; f < sizeof fm / sizeof fm[0]; f++) {
        for (int s = 0; s < nshape; s++) {
            hweight h;
            int n = shapes[s][0], k = shapes[s][1], ld = shapes[s][2];
            if (hw_make(&h, fm[f].dt, n, k, ld, fm[f].sk, 128, 128, fm[f].aq, s != 1)) continue;
            if (be->upload(be, &h.w)) {
                printf("  FAIL upload %s: %s\n", fm[f].label, dl_errmsg());
                n_fail++;
                hw_free(&h);
                continue;
            }
            for (int mi = 0; mi < nM; mi++) {
                int M = Ms[mi];
                /* the backend's GEMV takes batches up to 32 rows (8 per launch) */
                const char *fast = M <= 32 ? fm[f].k_gemv : fm[f].k_gemm;
                sweep_case(fm[f].label, &h, M, NULL, 1e-5, fast);
                if (M == 3 || M == 70) /* the GEMM on small M too, and the reference */
                    sweep_case(fm[f].label, &h, M, BE_NAME ".matmul.*.gemv", 1e-5, fm[f].k_gemm);
                if (M == 3)
                    sweep_case(fm[f].label, &h, M, BE_NAME ".matmul.*.gem*",  1e-5,
                               fm[f].aq == ACT_INT8_TOKEN ? BE_NAME ".matmul.int8.ref" : BE_NAME ".matmul.ref");
            }
            be->release(be, &h.w);
            hw_free(&h);
        }
    }
    /* odd shapes (k not a multiple of the vector width): reference path */
    {
        hweight h;
        hw_make(&h, DT_BF16, 33, 77, 77, WS_NONE, 0, 0, ACT_NATIVE, 1);
        if (be->upload(be, &h.w) == 0) {
            sweep_case("bf16 odd k=77", &h, 2, NULL, 1e-5, BE_NAME ".matmul.ref");
            be->release(be, &h.w);
        }
        hw_free(&h);
        hw_make(&h, DT_I8, 33, 72, 72, WS_CHANNEL, 0, 0, ACT_INT8_TOKEN, 1);
        if (be->upload(be, &h.w) == 0) {
            sweep_case("int8 odd k=72", &h, 5, NULL, 1e-5, BE_NAME ".matmul.int8.ref");
            be->release(be, &h.w);
        }
        hw_free(&h);
    }
    /* the fp16 dot2 variant, accuracy reported separately */
    for (int e5 = 0; e5 < 1; e5++) { /* e4m3 only: e5m2 products overflow fp16 */
        hweight h;
        hw_make(&h, e5 ? DT_F8E5M2 : DT_F8E4M3, 256, 1024, 1024, WS_BLOCK, 128, 128, ACT_NATIVE, 0);
        if (be->upload(be, &h.w) == 0) {
            for (int M = 1; M <= 8; M *= 2) {
                dl_weight *w = &h.w;
                float *x = malloc(sizeof(float) * (size_t)M * w->k), *y = malloc(sizeof(float) * (size_t)M * w->n);
                double *ref = malloc(sizeof(double) * (size_t)M * w->n);
                for (size_t i = 0; i < (size_t)M * w->k; i++) x[i] = rndf();
                ref_matmul(ref, x, w, M);
                float *dx = be->alloc(be, sizeof(float) * (size_t)M * w->k), *dy = be->alloc(be, sizeof(float) * (size_t)M * w->n);
                be->from_host(be, dx, x, sizeof(float) * (size_t)M * w->k);
                gk_gemv_fp8_dot2(gpu_backend_stream(be), dy, dx, gpu_weight_view(w), M);
                int ok = be->sync(be) == 0 && be->to_host(be, y, dy, sizeof(float) * (size_t)M * w->n) == 0;
                double mx = 0, err = 0;
                for (size_t i = 0; ok && i < (size_t)M * w->n; i++) {
                    mx = fmax(mx, fabs(ref[i]));
                    err = fmax(err, fabs(y[i] - ref[i]));
                }
                double rel = err / (mx > 0 ? mx : 1e-30);
                int pass = ok && rel <= 2e-3;
                pass ? n_pass++ : n_fail++;
                printf("  %-4s %-34s n=%-5d k=%-5d M=%-4d rel=%.2e tol=2e-03 (fp16 products)\n", pass ? "ok" : "FAIL",
                       e5 ? "fp8e5m2 block gemv_dot2" : "fp8e4m3 block gemv_dot2", 256, 1024, M, rel);
                be->free(be, dx);
                be->free(be, dy);
                free(x);
                free(y);
                free(ref);
            }
            be->release(be, &h.w);
        }
        hw_free(&h);
    }
    printf("sweep: %d passed, %d failed\n", n_pass, n_fail);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Time `iters` calls of fn on the stream with events; returns seconds per call. */
typedef void (*op_fn)(void *ctx, int i);
static double time_op(op_fn fn, void *ctx, int warm, int iters) {
    void *s = gpu_backend_stream(be), *e0 = NULL, *e1 = NULL;
    gpurt_event_create(&e0);
    gpurt_event_create(&e1);
    for (int i = 0; i < warm; i++) fn(ctx, i);
    gpurt_event_record(e0, s);
    for (int i = 0; i < iters; i++) fn(ctx, i);
    gpurt_event_record(e1, s);
    gpurt_event_sync(e1);
    double ms = gpurt_event_ms(e0, e1);
    gpurt_event_destroy(e0);
    gpurt_event_destroy(e1);
    return ms * 1e-3 / iters;
}

/* The same `iters` calls captured into one graph and replayed (as a decode
 * step replays its launches): the GPU-side time of the chain without the
 * host's launch gaps. Warmed eagerly, then one untimed replay; returns
 * seconds per call, or 0 when the capture failed (e.g. PDL edges the driver
 * cannot capture), which the table prints as such. */
static double time_op_graph(op_fn fn, void *ctx, int warm, int iters) {
    void *s = gpu_backend_stream(be), *e0 = NULL, *e1 = NULL, *ex = NULL;
    for (int i = 0; i < warm; i++) fn(ctx, i);
    if (gpurt_capture_begin(s)) return 0.0;
    for (int i = 0; i < iters; i++) fn(ctx, i);
    if (gpurt_capture_end(s, &ex) || !ex) return 0.0;
    gpurt_event_create(&e0);
    gpurt_event_create(&e1);
    double sec = 0.0;
    if (!gpurt_graph_launch(ex, s)) {
        gpurt_event_record(e0, s);
        int ok = !gpurt_graph_launch(ex, s);
        gpurt_event_record(e1, s);
        gpurt_event_sync(e1);
        if (ok) sec = gpurt_event_ms(e0, e1) * 1e-3 / iters;
    }
    gpurt_event_destroy(e0);
    gpurt_event_destroy(e1);
    gpurt_graph_destroy(ex);
    return sec;
}

typedef struct {
    void *dst, *src;
    size_t bytes;
} copy_ctx;
static void copy_fn(void *c, int i) {
    (void)i;
    copy_ctx *cc = c;
    gpurt_d2d_async(cc->dst, cc->src, cc->bytes, gpu_backend_stream(be));
}

typedef struct {
    hweight *h;
    int ncopy;
    dl_weight *w; /* [ncopy] */
    float *x, *y;
    int M;
} mm_ctx;
static void mm_fn(void *c, int i) {
    mm_ctx *m = c;
    be->matmul(be, m->y, m->x, &m->w[i % m->ncopy], m->M);
}

/* The GEMV kernel alone on copy i % ncopy (int8: x quantized beforehand). */
typedef struct {
    int ncopy, M, kp, w8a8;
    const gk_weight *g[16];
    const float *x;
    const int8_t *xq;
    const float *xs;
    float *y;
} kern_ctx;
/* The GEMV kernels' permuted-activation workspace (gk_gemv_xperm_ws: M >= 3
 * with the xp knob), as the backend gives them; set before each launch,
 * since the backend's own matmuls clear it after theirs. */
static void *g_xpws;
#define XPWS_BYTES ((size_t)8 * 32768 * sizeof(float))
static void kern_fn(void *c, int i) {
    kern_ctx *k = c;
    void *st = gpu_backend_stream(be);
    gk_gemv_xperm_ws(g_xpws, g_xpws ? XPWS_BYTES : 0);
    const gk_weight *g = k->g[i % k->ncopy];
    if (k->w8a8) gk_int8_gemv(st, k->y, k->xq, k->xs, g, k->M, k->kp);
    else gk_gemv(st, k->y, k->x, g, k->M);
}

typedef struct {
    const char *fmt, *shape;
    int M;
    char var[96];
    double gbs, pct, kgbs, kpct;
    double klpct, kppct; /* kernel alone: PDL chain with late triggers; plain launches (no PDL) */
    double kgpct;        /* kernel alone, the default PDL chain replayed from a graph (0: capture failed) */
    const char *kernel;
} gemv_row;

/* GEMV variants timed when DOTLM_GEMV_VARIANTS=all: the original kernels,
 * the default, and each knob changed alone from one of them. */
static const char *const VARIANTS_ALL[] = {
    "v1",
    "default",
    "default,loop=0,fp8=h2",
    "default,loop=0",
    "default,fp8=h2",
    "default,xpf=1",
    "default,xpf=2",
    "default,i8xp=1",
    "default,loop=2",
    "v1,fp8=h2",
    "v1,u=4,i8u=4",
    "v1,na=1,i8na=1",
    "v1,wpb=8,i8wpb=8",
    "default,u=2,i8u=2",
    "default,na=0,i8na=0",
    "default,fp8=f32",
    "default,fp8=fold",
    "default,fp8=f32s",
    "default,u=4,i8u=4",
    "default,wpb=8,i8wpb=8",
    "default,r1=1,i8r1=2",
    "default,r1=2,rm=2",
    "default,r1=4,rm=4,i8r1=4,i8rm=4",
    "default,i8ks=0",
    "default,i8ks=2",
    "default,i8ks=4",
};

/* Multi-weight job on one set of weight copies: the per-weight launches
 * (multi 0), one multi launch (1; int8: x quantized beforehand), or one
 * gate/up launch with SiLU(gate) * up from its epilogue into silu (2). */
typedef struct {
    int ncopy, count, M, kp, w8a8, multi;
    const gk_weight *g[16][3];
    float *y[3], *silu;
    const float *x;
    const int8_t *xq;
    const float *xs;
} multi_ctx;
static void multi_fn(void *c, int i) {
    multi_ctx *m = c;
    void *st = gpu_backend_stream(be);
    gk_gemv_xperm_ws(g_xpws, g_xpws ? XPWS_BYTES : 0);
    const gk_weight *const *g = m->g[i % m->ncopy];
    if (m->multi) {
        gk_multi mw;
        memset(&mw, 0, sizeof mw);
        mw.count = m->count;
        for (int j = 0; j < m->count; j++) mw.w[j] = *g[j], mw.y[j] = m->y[j];
        if (m->multi == 2) {
            mw.silu = m->silu;
            gk_gemv_silu(st, &mw, m->x, m->M);
        } else if (m->w8a8) gk_int8_gemv_multi(st, &mw, m->xq, m->xs, m->M, m->kp);
        else gk_gemv_multi(st, &mw, m->x, m->M);
        return;
    }
    for (int j = 0; j < m->count; j++) {
        if (m->w8a8) gk_int8_gemv(st, m->y[j], m->xq, m->xs, g[j], m->M, m->kp);
        else gk_gemv(st, m->y[j], m->x, g[j], m->M);
    }
}

int main(int argc, char **argv) {
    int quick = 0, do_bench = 1, do_sweep = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-bench")) do_bench = 0;
        else if (!strcmp(argv[i], "--no-sweep")) do_sweep = 0;
        else {
            const int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            if (!help) fprintf(stderr, "dotlm_gpu_bench: unknown argument '%s'\n", argv[i]);
            fprintf(help ? stdout : stderr,
                    "usage: dotlm_gpu_bench [--quick] [--no-bench] [--no-sweep] [--help]\n"
                    "  --quick     the numeric sweep on fewer shapes and batch sizes\n"
                    "  --no-bench  only the numeric sweep (exit 1 when it fails)\n"
                    "  --no-sweep  only the benchmarks\n"
                    "environment: DOTLM_GEMV_VARIANTS, DOTLM_GEMV_MS, DOTLM_BENCH_TWIN (see the\n"
                    "comment at the top of src/backend/gpu/gpu_bench.c); DOTLM_GPU_SMS=N runs\n"
                    "every kernel on N SMs (CUDA green contexts, docs/gpu_backend.md)\n");
            return help ? 0 : 2;
        }
    }
    double t0 = now_s();
    be = gpu_backend_create(BE_NAME);
    if (!be) {
        printf("SKIP: %s\n", dl_errmsg());
        return 0;
    }
    if (do_sweep) sweep(quick);
    if (!do_bench) return n_fail ? 1 : 0;
    g_xpws = be->alloc(be, XPWS_BYTES);

    /* copy bandwidth */
    const size_t cb = (size_t)1 << 30;
    copy_ctx cc = {be->alloc(be, cb), be->alloc(be, cb), cb};
    double copy_bw = 0.0;
    if (cc.dst && cc.src) {
        gpurt_memset_async(cc.src, 1, cb, gpu_backend_stream(be));
        double t = time_op(copy_fn, &cc, 2, 10);
        copy_bw = 2.0 * cb / t;
    }
    be->free(be, cc.dst);
    be->free(be, cc.src);
    void *st = gpu_backend_stream(be);
    double pk_f32 = gk_peak_fp32(st), pk_h2 = gk_peak_hfma2(st), pk_dp4a = gk_peak_dp4a(st);

    /* decode GEMV */
    static const int64_t shp[3][2] = {{5120, 17408}, {17408, 5120}, {6144, 5120}};
    static const char *shn[3] = {"5120x17408", "17408x5120", "6144x5120"};
    struct {
        const char *name;
        dl_dtype dt;
        dl_wscale sk;
        dl_actq aq;
        const char *kern;
    } bf[3] = {{"bf16", DT_BF16, WS_NONE, ACT_NATIVE, BE_NAME ".matmul.bf16.gemv"},
               {"fp8 block", DT_F8E4M3, WS_BLOCK, ACT_NATIVE, BE_NAME ".matmul.fp8.gemv"},
               {"int8 W8A8", DT_I8, WS_CHANNEL, ACT_INT8_TOKEN, BE_NAME ".matmul.int8.gemv"}};
    /* GEMV variants to time: DOTLM_GEMV_VARIANTS=all, a ';'-separated list of
     * specs, or (unset) the settings in force */
    char cur_cfg[256];
    gk_gemv_tune_str(cur_cfg, sizeof cur_cfg);
    const char *vlist[64];
    int nvar = 0;
    char *venv = getenv("DOTLM_GEMV_VARIANTS") ? strdup(getenv("DOTLM_GEMV_VARIANTS")) : NULL;
    if (venv && !strcmp(venv, "all")) {
        for (size_t i = 0; i < sizeof VARIANTS_ALL / sizeof VARIANTS_ALL[0]; i++) vlist[nvar++] = VARIANTS_ALL[i];
    } else if (venv) {
        for (char *tok = strtok(venv, ";"); tok && nvar < 64; tok = strtok(NULL, ";"))
            if (*tok) vlist[nvar++] = tok;
    }
    if (!nvar) vlist[nvar++] = NULL; /* the settings in force */
    /* batch sizes to time: DOTLM_GEMV_MS=a,b,... (1..8 each), else 1, 2, 4, 8 */
    int gvm[8] = {1, 2, 4, 8}, ngvm = 4;
    if (getenv("DOTLM_GEMV_MS")) {
        char *e = strdup(getenv("DOTLM_GEMV_MS"));
        ngvm = 0;
        for (char *sv = NULL, *t = e ? strtok_r(e, ",", &sv) : NULL; t; t = strtok_r(NULL, ",", &sv)) {
            char *end;
            const long v = strtol(t, &end, 10);
            if (*end || v < 1 || v > 8 || ngvm == 8) {
                printf("DOTLM_GEMV_MS: '%s': want up to 8 batch sizes of 1..8, comma-separated\n", t);
                free(e);
                return 1;
            }
            gvm[ngvm++] = (int)v;
        }
        free(e);
        if (!ngvm) {
            printf("DOTLM_GEMV_MS: no batch size given\n");
            return 1;
        }
    }
    gemv_row *rows = calloc((size_t)nvar * 3 * 3 * ngvm, sizeof *rows);
    int nrows = 0;
    double gemm_tf[3][4] = {{0}};
    static const int gM[4] = {512, 1024, 2048, 4096};
    float *dx = be->alloc(be, sizeof(float) * 4096 * 17408), *dy = be->alloc(be, sizeof(float) * 4096 * 17408);
    int8_t *dxq = be->alloc(be, 8 * 17408 + 256);
    float *dxs = be->alloc(be, 8 * sizeof(float));
    const int twin_env = getenv("DOTLM_BENCH_TWIN") && atoi(getenv("DOTLM_BENCH_TWIN"));
    float *dxt = twin_env ? be->alloc(be, gk_gemv_twin_bytes(17408)) : NULL;
    if (!dx || !dy || !dxq || !dxs || !rows) {
        printf("bench: %s\n", dl_errmsg());
        return 1;
    }
    gpurt_memset_async(dx, 0, sizeof(float) * 4096 * 17408, st);
    {
        float *hx = malloc(sizeof(float) * 8 * 17408);
        for (int i = 0; i < 8 * 17408; i++) hx[i] = rndf();
        be->from_host(be, dx, hx, sizeof(float) * 8 * 17408);
        free(hx);
    }
    for (int f = 0; f < 3; f++) {
        for (int s = 0; s < 3; s++) {
            hweight h;
            if (hw_make(&h, bf[f].dt, shp[s][0], shp[s][1], shp[s][1], bf[f].sk, 128, 128, bf[f].aq, 0)) continue;
            size_t wb = w_bytes(&h.w);
            int ncopy = (int)((256u << 20) / wb) + 2;
            dl_weight ws[16];
            if (ncopy > 16) ncopy = 16;
            int ok = 1;
            for (int c = 0; c < ncopy; c++) {
                ws[c] = h.w;
                ws[c].dev = NULL;
                if (be->upload(be, &ws[c])) {
                    printf("upload: %s\n", dl_errmsg());
                    ok = 0;
                    ncopy = c;
                    break;
                }
            }
            const int w8a8 = bf[f].aq == ACT_INT8_TOKEN, kp = (int)((shp[s][1] + 15) / 16 * 16);
            kern_ctx kc = {.ncopy = ncopy, .kp = kp, .w8a8 = w8a8, .x = dx, .xq = dxq, .xs = dxs, .y = dy};
            for (int c = 0; c < ncopy; c++) kc.g[c] = gpu_weight_view(&ws[c]);
            if (w8a8) gk_actq_int8(st, dxq, dxs, dx, 8, (int)shp[s][1], kp); /* rows m < M are M's rows too */
            if (dxt) gk_gemv_twin_fill(st, dxt, dx, shp[s][1]); /* row 0's twin */
            mm_ctx mc = {&h, ncopy, ws, dx, dy, 1};
            for (int v = 0; ok && v < nvar; v++) {
                if (vlist[v] && gk_gemv_tune(vlist[v])) {
                    if (f == 0 && s == 0) printf("DOTLM_GEMV_VARIANTS: bad spec '%s' (skipped)\n", vlist[v]);
                    continue;
                }
                for (int mi = 0; mi < ngvm; mi++) {
                    mc.M = kc.M = gvm[mi];
                    kreg_reset_counts();
                    double t = time_op(mm_fn, &mc, ncopy, quick ? 10 : 40);
                    gemv_row *r = &rows[nrows++];
                    r->fmt = bf[f].name;
                    r->shape = shn[s];
                    r->M = mc.M;
                    r->gbs = wb / t / 1e9;
                    r->pct = 100.0 * wb / t / copy_bw;
                    r->kernel = kreg_count(bf[f].kern) ? bf[f].kern : "(fallback!)";
                    /* DOTLM_BENCH_TWIN=1: fp8 at M = 1 alone reads x's permuted twin (gk_gemv_twin),
                     * as in a decode step where the norm or the gate/up epilogue wrote it */
                    const int twin = twin_env && mc.M == 1 && bf[f].dt == DT_F8E4M3 && dxt;
                    if (twin) gk_gemv_twin(dxt, NULL);
                    const unsigned long long tw0 = gk_gemv_twin_launches();
                    t = time_op(kern_fn, &kc, ncopy, quick ? 10 : 40);
                    r->kgbs = wb / t / 1e9;
                    r->kpct = 100.0 * wb / t / copy_bw;
                    /* the same chain with every GEMV triggering its successor late (as the
                     * engine launches a GEMV that another GEMV follows), and without PDL */
                    gk_gemv_trig_late(1);
                    t = time_op(kern_fn, &kc, ncopy, quick ? 10 : 40);
                    gk_gemv_trig_late(-1);
                    r->klpct = 100.0 * wb / t / copy_bw;
                    const int pdl_was = gk_pdl_get();
                    gk_pdl_set(0);
                    t = time_op(kern_fn, &kc, ncopy, quick ? 10 : 40);
                    gk_pdl_set(pdl_was);
                    r->kppct = 100.0 * wb / t / copy_bw;
                    t = time_op_graph(kern_fn, &kc, ncopy, quick ? 10 : 40);
                    r->kgpct = t > 0.0 ? 100.0 * wb / t / copy_bw : 0.0;
                    if (twin) {
                        gk_gemv_twin(NULL, NULL);
                        if (gk_gemv_twin_launches() == tw0) r->kernel = "(twin not read!)";
                    }
                    snprintf(r->var, sizeof r->var, "%s", vlist[v] ? vlist[v] : "current");
                }
                gk_gemv_tune(cur_cfg);
            }
            if (ok && s == 1) { /* prefill GEMM on 17408x5120 */
                for (int mi = 0; mi < 4; mi++) {
                    mc.M = gM[mi];
                    double t = time_op(mm_fn, &mc, 1, quick ? 1 : 3);
                    gemm_tf[f][mi] = 2.0 * mc.M * (double)shp[s][0] * (double)shp[s][1] / t;
                }
            }
            for (int c = 0; c < ncopy; c++) be->release(be, &ws[c]);
            hw_free(&h);
        }
    }

    /* multi-weight GEMV: Qwen3-8B decode shapes, per-weight launches vs one launch */
    static const struct {
        const char *name;
        int count;
        int64_t n[3], k;
    } mset[2] = {{"q/k/v 4096+1024+1024x4096", 3, {4096, 1024, 1024}, 4096}, {"gate/up 2x12288x4096", 2, {12288, 12288, 0}, 4096}};
    struct {
        const char *fmt, *set;
        int M;
        double sep, mul, silu; /* % of copy bandwidth (silu < 0: not timed) */
        double mulg;           /* one launch, the chain replayed from a graph (0: capture failed) */
    } mrows[2 * 3 * 4];
    int nm = 0;
    for (int f = 0; f < 3; f++) {
        for (int ms = 0; ms < 2; ms++) {
            hweight h[3];
            dl_weight ws[16][3];
            size_t wb = 0;
            int nh = 0, ok = 1;
            for (int j = 0; j < mset[ms].count; j++, nh++) {
                if (hw_make(&h[j], bf[f].dt, mset[ms].n[j], mset[ms].k, mset[ms].k, bf[f].sk, 128, 128, bf[f].aq, 0)) {
                    ok = 0;
                    break;
                }
                wb += w_bytes(&h[j].w);
            }
            int ncopy = ok ? (int)((256u << 20) / wb) + 2 : 0;
            if (ncopy > 16) ncopy = 16;
            for (int c = 0; ok && c < ncopy; c++) {
                for (int j = 0; j < mset[ms].count; j++) {
                    ws[c][j] = h[j].w;
                    ws[c][j].dev = NULL;
                    if (be->upload(be, &ws[c][j])) { /* keep the c complete copies */
                        printf("upload: %s\n", dl_errmsg());
                        for (int i = 0; i < j; i++) be->release(be, &ws[c][i]);
                        ok = 0;
                        ncopy = c;
                        break;
                    }
                }
            }
            const int w8a8 = bf[f].aq == ACT_INT8_TOKEN, kp = (int)((mset[ms].k + 15) / 16 * 16);
            multi_ctx mc = {.ncopy = ncopy, .count = mset[ms].count, .kp = kp, .w8a8 = w8a8, .x = dx, .xq = dxq, .xs = dxs};
            size_t yoff = 0;
            for (int j = 0; j < mset[ms].count; j++) {
                mc.y[j] = dy + yoff;
                yoff += (size_t)8 * mset[ms].n[j];
            }
            mc.silu = dy + yoff;
            for (int c = 0; c < ncopy; c++)
                for (int j = 0; j < mset[ms].count; j++) mc.g[c][j] = gpu_weight_view(&ws[c][j]);
            if (w8a8) gk_actq_int8(st, dxq, dxs, dx, 8, (int)mset[ms].k, kp);
            for (int mi = 0; ok && mi < 4; mi++) {
                mc.M = 1 << mi;
                mc.multi = 0;
                double t0s = time_op(multi_fn, &mc, ncopy, quick ? 10 : 40);
                mc.multi = 1;
                double t1s = time_op(multi_fn, &mc, ncopy, quick ? 10 : 40);
                mrows[nm].fmt = bf[f].name;
                mrows[nm].set = mset[ms].name;
                mrows[nm].M = mc.M;
                mrows[nm].sep = 100.0 * wb / t0s / copy_bw;
                mrows[nm].mul = 100.0 * wb / t1s / copy_bw;
                const double tg = time_op_graph(multi_fn, &mc, ncopy, quick ? 10 : 40);
                mrows[nm].mulg = tg > 0.0 ? 100.0 * wb / tg / copy_bw : 0.0;
                mrows[nm].silu = -1.0;
                gk_multi probe = {.count = mset[ms].count, .silu = mc.silu};
                for (int j = 0; j < mset[ms].count; j++) probe.w[j] = *mc.g[0][j], probe.y[j] = mc.y[j];
                if (!w8a8 && gk_gemv_silu_ok(&probe, mc.M)) {
                    mc.multi = 2;
                    mrows[nm].silu = 100.0 * wb / time_op(multi_fn, &mc, ncopy, quick ? 10 : 40) / copy_bw;
                }
                nm++;
            }
            for (int c = 0; c < ncopy; c++)
                for (int j = 0; j < mset[ms].count; j++) be->release(be, &ws[c][j]);
            for (int j = 0; j < nh; j++) hw_free(&h[j]);
        }
    }
    if (be->sync(be)) printf("bench error: %s\n", dl_errmsg());
    be->free(be, dx);
    be->free(be, dy);
    be->free(be, dxq);
    be->free(be, dxs);
    if (dxt) be->free(be, dxt);

    printf("\n== peaks (measured) ==\n");
    printf("copy D2D (read+write)  %8.1f GB/s\n", copy_bw / 1e9);
    printf("SMs in use             %8d%s\n", gpurt_sm_count(),
           getenv("DOTLM_GPU_SMS") && *getenv("DOTLM_GPU_SMS") ? " (DOTLM_GPU_SMS)" : "");
    printf("fp32 FMA               %8.1f TFLOP/s\n", pk_f32 / 1e12);
    printf("fp16 packed (hfma2/dot2) %6.1f TFLOP/s\n", pk_h2 / 1e12);
    printf("int8 dp4a              %8.1f TOP/s\n", pk_dp4a / 1e12);
    printf("\n== prefill GEMM, 17408x5120 (n x k) ==\n");
    printf("%-10s %6s %10s %8s\n", "format", "M", "TFLOP/s", "%peak");
    for (int f = 0; f < 3; f++)
        for (int mi = 0; mi < 4; mi++) {
            double pk = f == 2 ? pk_dp4a : pk_f32;
            printf("%-10s %6d %10.2f %7.1f%%\n", bf[f].name, gM[mi], gemm_tf[f][mi] / 1e12, 100.0 * gemm_tf[f][mi] / pk);
        }
    printf("\n== decode GEMV (weight bytes / time vs copy bandwidth %.0f GB/s; through the backend, and the GEMV kernel alone) ==\n",
           copy_bw / 1e9);
    printf("GEMV settings: %s\n", cur_cfg);
    printf("kernel alone, back to back on rotating weight copies: PDL chain with the trigger after the wait (the\n"
           "decode default), with it late (late: after the K loop / at the end, as a GEMV followed by a GEMV; the\n"
           "rings and the W8A8 GEMV only, the float register loops always trigger early), plain launches (no PDL),\n"
           "and the default chain captured into a graph and replayed (graph: no host launch gaps, as a decode step)\n");
    printf("%-10s %-11s %2s %9s %7s %9s %7s %7s %7s %7s  %-26s %s\n", "format", "n x k", "M", "GB/s", "%copy",
           "kern GB/s", "%copy", "late", "plain", "graph", "kernel", "variant");
    for (int i = 0; i < nrows; i++)
        printf("%-10s %-11s %2d %9.1f %6.1f%% %9.1f %6.1f%% %6.1f%% %6.1f%% %6.1f%%  %-26s %s\n", rows[i].fmt,
               rows[i].shape, rows[i].M, rows[i].gbs, rows[i].pct, rows[i].kgbs, rows[i].kpct, rows[i].klpct,
               rows[i].kppct, rows[i].kgpct, rows[i].kernel, rows[i].var);
    printf("\n== multi-weight GEMV, kernels alone (%% of copy bandwidth; weights of the set / time) ==\n");
    printf("%-10s %-26s %2s %10s %10s %10s %10s\n", "format", "weights", "M", "per-weight", "one launch", "(graph)",
           "+SiLU");
    for (int i = 0; i < nm; i++) {
        printf("%-10s %-26s %2d %9.1f%% %9.1f%% %9.1f%%", mrows[i].fmt, mrows[i].set, mrows[i].M, mrows[i].sep,
               mrows[i].mul, mrows[i].mulg);
        if (mrows[i].silu >= 0.0) printf(" %9.1f%%", mrows[i].silu);
        printf("\n");
    }
    free(rows);
    free(venv);
    printf("\nsweep: %d passed, %d failed; total %.1f s\n", n_pass, n_fail, now_s() - t0);
    be->free(be, g_xpws);
    be->destroy(be);
    return n_fail ? 1 : 0;
}
