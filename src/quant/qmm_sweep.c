/* Numeric sweep of qmm_matmul (issue 3): every format x policy x M x shape
 * against a float64 reference computed from the same quantized operands
 * (stored weight codes and scales; for the declared policies the activations
 * quantized by the reference quantizer, which the fast one matches bitwise).
 * Error per case: max|y - ref| / max|ref| over the checked outputs (every
 * output when M*N*K <= 2^23, else all M rows of 67 columns spread over N,
 * including the first and last). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/tpool.h"
#include "quant/actq.h"
#include "quant/fp8.h"
#include "quant/qmatmul.h"

typedef struct {
    const char *name;
    dl_dtype dt;
    dl_wscale kind;
    int bf16;
    dl_actq actq;
    double thr;
} sw_fmt;

static const sw_fmt FMTS[] = {
    {"int8 channel W8A8", DT_I8, WS_CHANNEL, 0, ACT_INT8_TOKEN, 1e-6},
    {"e4m3 block128 f32 w-only", DT_F8E4M3, WS_BLOCK, 0, ACT_NATIVE, 1e-5},
    {"e4m3 block128 f32 declared", DT_F8E4M3, WS_BLOCK, 0, ACT_FP8_GROUP, 1e-5},
    {"e4m3 block128 bf16 w-only", DT_F8E4M3, WS_BLOCK, 1, ACT_NATIVE, 1e-5},
    {"e4m3 block128 bf16 declared", DT_F8E4M3, WS_BLOCK, 1, ACT_FP8_GROUP, 1e-5},
    {"e5m2 block128 w-only", DT_F8E5M2, WS_BLOCK, 0, ACT_NATIVE, 1e-5},
    {"e5m2 block128 declared", DT_F8E5M2, WS_BLOCK, 0, ACT_FP8_GROUP, 1e-5},
    {"e4m3 channel w-only", DT_F8E4M3, WS_CHANNEL, 0, ACT_NATIVE, 1e-5},
    {"e4m3 channel declared", DT_F8E4M3, WS_CHANNEL, 0, ACT_FP8_TOKEN, 1e-5},
    {"e4m3 tensor w-only", DT_F8E4M3, WS_TENSOR, 0, ACT_NATIVE, 1e-5},
    {"e4m3 tensor static", DT_F8E4M3, WS_TENSOR, 0, ACT_FP8_STATIC, 1e-5},
};
#define NFMTS (int)(sizeof FMTS / sizeof *FMTS)

static const int SHAPES_FULL[][2] = {{5120, 17408}, {17408, 5120}, {1024, 5120},
                                     {300, 333},    {129, 257},    {1000, 4100}};
static const int SHAPES_QUICK[][2] = {{300, 333}, {129, 257}, {1000, 4100}, {1024, 640}};
static const int MS_FULL[] = {1, 2, 3, 4, 7, 8, 16, 64, 256};
static const int MS_QUICK[] = {1, 2, 3, 4, 7, 8, 16, 64};

static uint64_t rng(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}
static float rnd(uint64_t *s) { return (float)((rng(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

/* A weight with random codes (quantized uniform values) and random scales. */
typedef struct {
    dl_weight w;
    uint8_t *codes;
    void *scales;
} sw_weight;

static int make_weight(sw_weight *q, const sw_fmt *f, int64_t n, int64_t k, uint64_t *s) {
    memset(q, 0, sizeof *q);
    int64_t ld = k + (k % 3 == 0 ? 0 : 5); /* padded rows for some shapes */
    int64_t ns = f->kind == WS_BLOCK ? ((n + 127) / 128) * ((k + 127) / 128)
                 : f->kind == WS_CHANNEL ? n : 1;
    q->codes = malloc((size_t)(n * ld));
    q->scales = malloc((size_t)ns * 4);
    if (!q->codes || !q->scales) return dl_err("qmm_sweep: out of memory");
    float qmax = f->dt == DT_I8 ? 127.0f : f->dt == DT_F8E4M3 ? 448.0f : 57344.0f;
    for (int64_t r = 0; r < n; r++) {
        uint8_t *row = q->codes + r * ld;
        for (int64_t c = 0; c < k; c++) {
            float v = rnd(s) * qmax;
            if (f->dt == DT_I8) row[c] = (uint8_t)(int8_t)rintf(v);
            else if (f->dt == DT_F8E4M3) row[c] = actq_e4m3_encode(v);
            else row[c] = fp8_e5m2_from_f32(v);
        }
        memset(row + k, 0x7f, (size_t)(ld - k)); /* padding must never be read */
    }
    for (int64_t i = 0; i < ns; i++) {
        float sc = (0.5f + 0.5f * (rnd(s) + 1.0f)) / qmax;
        if (f->bf16) ((uint16_t *)q->scales)[i] = f32_to_bf16(sc);
        else ((float *)q->scales)[i] = sc;
    }
    dl_weight *w = &q->w;
    w->name = f->name, w->dtype = f->dt, w->n = n, w->k = k, w->ld = ld, w->data = q->codes;
    w->scale_kind = f->kind, w->scale_dtype = f->bf16 ? DT_BF16 : DT_F32, w->scale = q->scales;
    w->bn = w->bk = 128, w->actq = f->actq, w->act_scale = 1.0f / 448.0f * 3.0f;
    return 0;
}

/* Effective activations in double, as the kernel sees them: x itself
 * (weight-only) or code value * scale of the reference quantizer. */
static int act_eff(double *xd, const float *x, const dl_weight *w, int M) {
    int64_t K = w->k;
    if (w->actq == ACT_NATIVE) {
        for (int64_t i = 0; i < (int64_t)M * K; i++) xd[i] = x[i];
        return 0;
    }
    if (w->actq == ACT_INT8_TOKEN) {
        int8_t *q = malloc((size_t)M * (size_t)K);
        float *xs = malloc((size_t)M * 4);
        if (!q || !xs) return free(q), free(xs), dl_err("qmm_sweep: out of memory");
        actq_int8_token_ref(q, K, xs, x, M, K);
        for (int m = 0; m < M; m++)
            for (int64_t c = 0; c < K; c++) xd[m * K + c] = (double)q[m * K + c] * xs[m];
        free(q), free(xs);
        return 0;
    }
    int64_t g = w->actq == ACT_FP8_GROUP ? qmm_act_group(w) : 0;
    int64_t ng = g ? (K + g - 1) / g : 1;
    float *xw = malloc((size_t)M * (size_t)K * 4), *xs = malloc((size_t)(M * ng) * 4);
    if (!xw || !xs) return free(xw), free(xs), dl_err("qmm_sweep: out of memory");
    actq_fp8_ref(xw, xs, x, M, K, g, w->actq == ACT_FP8_STATIC ? w->act_scale : 0.0f);
    for (int m = 0; m < M; m++)
        for (int64_t c = 0; c < K; c++)
            xd[m * K + c] = (double)xw[m * K + c] * (double)xs[g ? m * ng + c / g : m];
    free(xw), free(xs);
    return 0;
}

/* Worst relative error of y against the float64 reference. */
static double check_case(const float *y, const float *x, const dl_weight *w, int M, double *xd,
                         double *wrow, int *ncols) {
    int64_t N = w->n, K = w->k;
    if (act_eff(xd, x, w, M)) return INFINITY;
    int all = (double)M * (double)N * (double)K <= 8388608.0;
    int64_t nc = all ? N : (N < 67 ? N : 67);
    dl_weight c = *w;
    c.scale_kind = WS_NONE;
    double mx = 0, d = 0;
    for (int64_t ci = 0; ci < nc; ci++) {
        int64_t n = all || nc == N ? ci : (ci == nc - 1 ? N - 1 : ci * (N / nc) + (ci * 7) % (N / nc));
        for (int64_t kk = 0; kk < K; kk++) wrow[kk] = (double)w_get(&c, n, kk) * (double)w_scale_at(w, n, kk);
        for (int m = 0; m < M; m++) {
            const double *xr = xd + (int64_t)m * K;
            double r = 0;
            for (int64_t kk = 0; kk < K; kk++) r += xr[kk] * wrow[kk];
            double e = fabs(r - (double)y[(int64_t)m * N + n]);
            if (!(e <= d)) d = e; /* NaN propagates */
            if (fabs(r) > mx) mx = fabs(r);
        }
    }
    *ncols = (int)nc;
    return d / (mx > 1e-300 ? mx : 1e-300);
}

int qmm_sweep(FILE *out, int full) {
    const int(*shapes)[2] = full ? SHAPES_FULL : SHAPES_QUICK;
    int nshapes = full ? 6 : 4;
    const int *Ms = full ? MS_FULL : MS_QUICK;
    int nms = full ? 9 : 8;
    int64_t maxk = 0, maxn = 0;
    for (int i = 0; i < nshapes; i++) {
        if (shapes[i][1] > maxk) maxk = shapes[i][1];
        if (shapes[i][0] > maxn) maxn = shapes[i][0];
    }
    int maxm = Ms[nms - 1];
    float *x = malloc((size_t)(maxm * maxk) * 4), *y = malloc((size_t)(maxm * maxn) * 4);
    double *xd = malloc((size_t)(maxm * maxk) * 8), *wrow = malloc((size_t)maxk * 8);
    if (!x || !y || !xd || !wrow) {
        free(x), free(y), free(xd), free(wrow);
        return dl_err("qmm_sweep: out of memory");
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < (int64_t)maxm * maxk; i++) x[i] = rnd(&s) * (i % 97 ? 1.0f : 8.0f);
    tpool *tp = tp_default();
    int nfail = 0, ncase = 0;
    char first_fail[200] = "";
    fprintf(out, "%-28s %6s %6s %4s %11s %8s %5s %4s %9s\n", "format/policy", "N", "K", "M",
            "max_rel_err", "thresh", "cols", "ok", "ms");
    for (int fi = 0; fi < NFMTS; fi++) {
        const sw_fmt *f = &FMTS[fi];
        double fworst = 0;
        for (int si = 0; si < nshapes; si++) {
            sw_weight q;
            if (make_weight(&q, f, shapes[si][0], shapes[si][1], &s)) {
                free(q.codes), free(q.scales);
                nfail++;
                continue;
            }
            for (int mi = 0; mi < nms; mi++) {
                int M = Ms[mi], ncols = 0;
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                int rc = qmm_matmul(y, x, &q.w, M, tp);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
                double e = rc ? INFINITY : check_case(y, x, &q.w, M, xd, wrow, &ncols);
                int ok = e <= f->thr;
                ncase++;
                if (!ok && !nfail++)
                    snprintf(first_fail, sizeof first_fail, "%s N=%d K=%d M=%d: rel err %.3g > %.1g",
                             f->name, shapes[si][0], shapes[si][1], M, e, f->thr);
                if (e > fworst) fworst = e;
                fprintf(out, "%-28s %6d %6d %4d %11.3e %8.0e %5d %4s %9.2f\n", f->name,
                        shapes[si][0], shapes[si][1], M, e, f->thr, ncols, ok ? "ok" : "FAIL", ms);
            }
            free(q.codes), free(q.scales);
        }
        fprintf(out, "# %-26s worst %.3e (threshold %.0e)\n", f->name, fworst, f->thr);
    }
    fprintf(out, "# %d cases, %d failed\n", ncase, nfail);
    free(x), free(y), free(xd), free(wrow);
    if (nfail) return dl_err("qmm_sweep: %d of %d cases above threshold; first: %s", nfail, ncase, first_fail);
    return 0;
}
