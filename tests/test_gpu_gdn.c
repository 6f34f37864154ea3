/* The GPU Gated DeltaNet ops (copy2d, sigmoid_mul, conv1d_silu, l2norm,
 * gdn_gates, gdn, gated_rmsnorm) against the CPU backend (the reference) on
 * random inputs: mixed batches of several sequences at different positions
 * (some starting at 0, one restarting inside the batch), runs of 1, 63, 64,
 * 65 and 300 tokens, Hv/Hk = 2 and 3, head sizes 128 and odd ones; outputs
 * and final states compared after two forwards. Skips (exit 0) when the
 * build has no GPU backend or no device is present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/err.h"
#include "core/kreg.h"
#include "testutil.h"
#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_gdn.h"
/* weak: the test still links while gpu_gdn.c is not yet in the build */
extern void gpu_gdn_install(dl_backend *be) __attribute__((weak));
#endif

#ifdef DOTLM_HIP
#define GN "hip"
#else
#define GN "cuda"
#endif

#define MAX_SEQS 6

static uint64_t rs;
static dl_backend *cpu, *gpu;

static void fill(float *p, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * 0.5f * (tu_randf(&rs) + 1.0f);
}

/* The same host data in a buffer of backend `be`. */
static float *put(dl_backend *be, const float *h, size_t n) {
    float *d = be->alloc(be, n * 4 + 4);
    if (d && n) CHECKF(be->from_host(be, d, h, n * 4) == 0, "from_host: %s", dl_errmsg());
    return d;
}

static void get(dl_backend *be, float *h, const float *d, size_t n) {
    CHECKF(be->sync(be) == 0, "%s sync: %s", be->name, dl_errmsg());
    CHECKF(be->to_host(be, h, d, n * 4) == 0, "%s to_host: %s", be->name, dl_errmsg());
}

static double rel_err(const float *a, const float *b, size_t n) {
    double mx = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)b[i]));
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) return INFINITY;
        e = fmax(e, d);
    }
    return e / (mx > 0 ? mx : 1e-30);
}

/* Compare buffer dc (cpu) with dg (gpu), n floats. */
static double cmp(const float *dc, const float *dg, size_t n) {
    float *hc = malloc(n * 4 + 4), *hg = malloc(n * 4 + 4);
    get(cpu, hc, dc, n);
    get(gpu, hg, dg, n);
    double e = rel_err(hg, hc, n);
    free(hc);
    free(hg);
    return e;
}

/* An f32 vector / matrix weight over host data; both backends upload it. */
static dl_weight mkw(float *data, int64_t n, int64_t k) {
    return (dl_weight){.name = "t", .dtype = DT_F32, .n = n, .k = k, .ld = k, .data = data};
}
static int upload2(dl_weight *wc, dl_weight *wg) {
    int rc = cpu->upload(cpu, wc) || gpu->upload(gpu, wg);
    CHECKF(!rc, "upload: %s", dl_errmsg());
    return rc;
}

/* A batch built from sequences: seq i contributes n[i] tokens of slot s[i]
 * starting at position p[i]; rows interleaved at random (each sequence's
 * rows in order). Arrays owned by the caller's struct. */
typedef struct {
    dl_batch b;
    int32_t tok[1024], seq[1024], pos[1024];
} batch;

static void mkbatch(batch *B, int ns, const int *s, const int *p, const int *n) {
    int left[8], next[8], T = 0;
    for (int i = 0; i < ns; i++) {
        left[i] = n[i];
        next[i] = p[i];
    }
    for (;;) {
        int tot = 0;
        for (int i = 0; i < ns; i++) tot += left[i];
        if (!tot) break;
        int r = (int)(tu_rand_u64(&rs) % (uint64_t)tot), i = 0;
        while (r >= left[i]) r -= left[i++];
        /* take a short run of this sequence */
        int run = 1 + (int)(tu_rand_u64(&rs) % 24);
        for (int j = 0; j < run && left[i]; j++, left[i]--) {
            B->tok[T] = 0;
            B->seq[T] = s[i];
            B->pos[T] = next[i]++;
            T++;
        }
    }
    B->b = (dl_batch){.ntok = T, .tokens = B->tok, .seq = B->seq, .pos = B->pos};
}

static int begin2(const batch *B) {
    int rc = cpu->begin(cpu, &B->b, NULL) || gpu->begin(gpu, &B->b, NULL);
    CHECKF(!rc, "begin: %s", dl_errmsg());
    return rc;
}

/* ---------------- elementwise ops ---------------- */

static void test_elementwise(void) {
    const int rows = 37, d = 96, ld = 130;
    size_t n = (size_t)rows * ld;
    float *h = malloc(n * 4), *h2 = malloc(n * 4);
    fill(h, n, -3, 3);
    fill(h2, n, -4, 4);
    /* copy2d into a strided destination (unwritten columns must stay) */
    {
        float *sc = put(cpu, h, n), *sg = put(gpu, h, n), *dc = put(cpu, h2, n), *dg = put(gpu, h2, n);
        cpu->copy2d(cpu, dc + 3, ld, sc + 7, ld - 1, rows, d);
        gpu->copy2d(gpu, dg + 3, ld, sg + 7, ld - 1, rows, d);
        CHECKF(cmp(dc, dg, n) == 0.0, "copy2d differs");
        cpu->sigmoid_mul(cpu, dc, sc, n);
        gpu->sigmoid_mul(gpu, dg, sg, n);
        double e = cmp(dc, dg, n);
        CHECKF(e <= 1e-5, "sigmoid_mul rel err %.3g", e);
        cpu->free(cpu, sc); gpu->free(gpu, sg); cpu->free(cpu, dc); gpu->free(gpu, dg);
    }
    /* l2norm, several widths */
    int ds[] = {64, 96, 128, 129};
    for (int i = 0; i < 4; i++) {
        size_t m = (size_t)rows * ds[i];
        float *xc = put(cpu, h, m), *xg = put(gpu, h, m);
        cpu->l2norm(cpu, xc, rows, ds[i], 1e-6f, 0.125f);
        gpu->l2norm(gpu, xg, rows, ds[i], 1e-6f, 0.125f);
        double e = cmp(xc, xg, m);
        CHECKF(e <= 1e-5, "l2norm d=%d rel err %.3g", ds[i], e);
        cpu->free(cpu, xc); gpu->free(gpu, xg);
    }
    /* gated_rmsnorm, in place (y aliases x) and out of place */
    for (int i = 0; i < 4; i++) {
        int dd = ds[i];
        size_t m = (size_t)rows * dd;
        float *wd = malloc((size_t)dd * 4);
        fill(wd, (size_t)dd, -1.5f, 1.5f);
        dl_weight wc = mkw(wd, dd, 1), wg = wc;
        if (upload2(&wc, &wg)) return;
        float *xc = put(cpu, h, m), *xg = put(gpu, h, m), *zc = put(cpu, h2, m), *zg = put(gpu, h2, m);
        float *yc = put(cpu, h2, m), *yg = put(gpu, h2, m);
        cpu->gated_rmsnorm(cpu, yc, xc, zc, &wc, rows, dd, 1e-6f);
        gpu->gated_rmsnorm(gpu, yg, xg, zg, &wg, rows, dd, 1e-6f);
        double e = cmp(yc, yg, m);
        CHECKF(e <= 1e-5, "gated_rmsnorm d=%d rel err %.3g", dd, e);
        cpu->gated_rmsnorm(cpu, xc, xc, zc, &wc, rows, dd, 1e-6f);
        gpu->gated_rmsnorm(gpu, xg, xg, zg, &wg, rows, dd, 1e-6f);
        e = cmp(xc, xg, m);
        CHECKF(e <= 1e-5, "gated_rmsnorm in place d=%d rel err %.3g", dd, e);
        cpu->release(cpu, &wc); gpu->release(gpu, &wg);
        cpu->free(cpu, xc); gpu->free(gpu, xg); cpu->free(cpu, zc); gpu->free(gpu, zg);
        cpu->free(cpu, yc); gpu->free(gpu, yg);
        free(wd);
    }
    /* gates over a batch of 23 tokens, Hv = 12; a spans the softplus threshold */
    {
        batch B;
        int s[] = {0, 1}, p[] = {0, 40}, nn[] = {20, 3};
        mkbatch(&B, 2, s, p, nn);
        if (begin2(&B)) return;
        const int Hv = 12, T = B.b.ntok;
        float Al[12], dtb[12];
        fill(Al, 12, -2, 1.5f);
        fill(dtb, 12, -1, 1);
        dl_weight ac = mkw(Al, Hv, 1), ag = ac, bc = mkw(dtb, Hv, 1), bg = bc;
        if (upload2(&ac, &ag) || upload2(&bc, &bg)) return;
        size_t m = (size_t)T * Hv;
        float *ha = malloc(m * 4);
        fill(ha, m, -25, 25);
        float *a_c = put(cpu, ha, m), *a_g = put(gpu, ha, m), *b_c = put(cpu, h, m), *b_g = put(gpu, h, m);
        float *gc = put(cpu, h2, m), *gg = put(gpu, h2, m), *btc = put(cpu, h2, m), *btg = put(gpu, h2, m);
        cpu->gdn_gates(cpu, gc, btc, a_c, b_c, &ac, &bc, Hv);
        gpu->gdn_gates(gpu, gg, btg, a_g, b_g, &ag, &bg, Hv);
        double e1 = cmp(gc, gg, m), e2 = cmp(btc, btg, m);
        CHECKF(e1 <= 1e-5 && e2 <= 1e-5, "gdn_gates rel err g %.3g beta %.3g", e1, e2);
        cpu->release(cpu, &ac); gpu->release(gpu, &ag); cpu->release(cpu, &bc); gpu->release(gpu, &bg);
        float *bufs_c[] = {a_c, b_c, gc, btc}, *bufs_g[] = {a_g, b_g, gg, btg};
        for (int i = 0; i < 4; i++) {
            cpu->free(cpu, bufs_c[i]);
            gpu->free(gpu, bufs_g[i]);
        }
        free(ha);
    }
    free(h);
    free(h2);
}

/* ---------------- conv1d_silu ---------------- */

static void test_conv(int C, int K) {
    const int K1 = K - 1;
    float *wd = malloc((size_t)C * K * 4);
    fill(wd, (size_t)C * K, -0.8f, 0.8f);
    dl_weight wc = mkw(wd, C, K), wg = wc;
    if (upload2(&wc, &wg)) return;
    size_t sn = (size_t)MAX_SEQS * (K1 > 0 ? K1 : 1) * C;
    float *hs = malloc(sn * 4);
    fill(hs, sn, -1, 1);
    float *stc = put(cpu, hs, sn), *stg = put(gpu, hs, sn);
    /* forward 1: prefills and continuations; slot 5 restarts inside the batch */
    batch B1, B2;
    int s1[] = {0, 1, 2, 5, 5}, p1[] = {0, 9, 3, 7, 0}, n1[] = {70, 1, 65, 2, 3};
    /* two groups of slot 5: build as one list in order (restart after pos 8) */
    mkbatch(&B1, 4, s1, p1, n1);
    {
        int T = B1.b.ntok;
        for (int j = 0; j < n1[4]; j++, T++) {
            B1.tok[T] = 0;
            B1.seq[T] = 5;
            B1.pos[T] = j;
        }
        B1.b.ntok = T;
    }
    int s2[] = {0, 1, 2, 3, 5}, p2[] = {70, 10, 68, 0, 3}, n2[] = {1, 64, 1, 5, 1};
    mkbatch(&B2, 5, s2, p2, n2);
    const batch *Bs[] = {&B1, &B2};
    for (int f = 0; f < 2; f++) {
        if (begin2(Bs[f])) return;
        int T = Bs[f]->b.ntok;
        size_t m = (size_t)T * C;
        float *hx = malloc(m * 4);
        fill(hx, m, -2, 2);
        float *xc = put(cpu, hx, m), *xg = put(gpu, hx, m), *yc = put(cpu, hx, m), *yg = put(gpu, hx, m);
        cpu->conv1d_silu(cpu, yc, xc, &wc, stc, C);
        gpu->conv1d_silu(gpu, yg, xg, &wg, stg, C);
        double ey = cmp(yc, yg, m), es = cmp(stc, stg, sn);
        CHECKF(ey <= 1e-5, "conv1d C=%d K=%d forward %d: y rel err %.3g", C, K, f, ey);
        CHECKF(es <= 1e-5, "conv1d C=%d K=%d forward %d: state rel err %.3g", C, K, f, es);
        cpu->free(cpu, xc); gpu->free(gpu, xg); cpu->free(cpu, yc); gpu->free(gpu, yg);
        free(hx);
    }
    cpu->release(cpu, &wc); gpu->release(gpu, &wg);
    cpu->free(cpu, stc); gpu->free(gpu, stg);
    free(hs);
    free(wd);
}

/* ---------------- gated delta rule ---------------- */

/* Random inputs of one forward, in host memory. */
static void gdn_inputs(int T, int Hk, int Hv, int Dk, int Dv, float *q, float *k, float *v, float *g, float *beta) {
    fill(q, (size_t)T * Hk * Dk, -1, 1);
    fill(k, (size_t)T * Hk * Dk, -1, 1);
    for (size_t r = 0; r < (size_t)T * Hk; r++) { /* l2-normalised rows, q scaled by 1/sqrt(Dk) */
        double sq = 0, sk = 0;
        for (int j = 0; j < Dk; j++) {
            sq += (double)q[r * Dk + j] * q[r * Dk + j];
            sk += (double)k[r * Dk + j] * k[r * Dk + j];
        }
        for (int j = 0; j < Dk; j++) {
            q[r * Dk + j] = (float)(q[r * Dk + j] / sqrt(sq) / sqrt((double)Dk));
            k[r * Dk + j] = (float)(k[r * Dk + j] / sqrt(sk));
        }
    }
    fill(v, (size_t)T * Hv * Dv, -1, 1);
    fill(g, (size_t)T * Hv, -0.6f, -0.001f);
    fill(beta, (size_t)T * Hv, 0.05f, 0.95f);
}

static void test_gdn(int Hk, int Hv, int Dk, int Dv) {
    size_t sn = (size_t)MAX_SEQS * Hv * Dk * Dv;
    float *hs = malloc(sn * 4);
    fill(hs, sn, -0.5f, 0.5f);
    float *stc = put(cpu, hs, sn), *stg = put(gpu, hs, sn);
    batch B1, B2;
    /* forward 1: a 300-token prefill, a 65-token prefill, a decode step of a
     * slot with random state, a 63-token continuation, slot 5 restarting */
    int s1[] = {0, 2, 1, 3, 5}, p1[] = {0, 0, 10, 20, 7}, n1[] = {300, 65, 1, 63, 2};
    mkbatch(&B1, 5, s1, p1, n1);
    {
        int T = B1.b.ntok;
        for (int j = 0; j < 4; j++, T++) {
            B1.tok[T] = 0;
            B1.seq[T] = 5;
            B1.pos[T] = j;
        }
        B1.b.ntok = T;
    }
    /* forward 2: decode steps of every slot, and a 64-token prefill of slot 4 */
    int s2[] = {0, 1, 2, 3, 4, 5}, p2[] = {300, 11, 65, 83, 0, 4}, n2[] = {1, 1, 1, 1, 64, 1};
    mkbatch(&B2, 6, s2, p2, n2);
    const batch *Bs[] = {&B1, &B2};
    uint64_t c0 = kreg_count(GN ".gdn.recurrent");
    for (int f = 0; f < 2; f++) {
        if (begin2(Bs[f])) return;
        const int T = Bs[f]->b.ntok;
        size_t nq = (size_t)T * Hk * Dk, nv = (size_t)T * Hv * Dv, ng = (size_t)T * Hv;
        float *q = malloc(nq * 4), *k = malloc(nq * 4), *v = malloc(nv * 4), *g = malloc(ng * 4),
              *be = malloc(ng * 4);
        gdn_inputs(T, Hk, Hv, Dk, Dv, q, k, v, g, be);
        float *qc = put(cpu, q, nq), *qg = put(gpu, q, nq), *kc = put(cpu, k, nq), *kg = put(gpu, k, nq);
        float *vc = put(cpu, v, nv), *vg = put(gpu, v, nv), *gc = put(cpu, g, ng), *gg = put(gpu, g, ng);
        float *bc = put(cpu, be, ng), *bg = put(gpu, be, ng), *oc = put(cpu, v, nv), *og = put(gpu, v, nv);
        cpu->gdn(cpu, oc, qc, kc, vc, gc, bc, stc, Hk, Hv, Dk, Dv);
        gpu->gdn(gpu, og, qg, kg, vg, gg, bg, stg, Hk, Hv, Dk, Dv);
        double eo = cmp(oc, og, nv), es = cmp(stc, stg, sn);
        printf("gdn Hk=%d Hv=%d Dk=%d Dv=%d forward %d (%d tokens): out rel err %.3g, state rel err %.3g\n", Hk,
               Hv, Dk, Dv, f, T, eo, es);
        CHECKF(eo <= 1e-4, "gdn Hk=%d Hv=%d Dk=%d Dv=%d forward %d: out rel err %.3g", Hk, Hv, Dk, Dv, f, eo);
        CHECKF(es <= 1e-4, "gdn Hk=%d Hv=%d Dk=%d Dv=%d forward %d: state rel err %.3g", Hk, Hv, Dk, Dv, f, es);
        float *fc[] = {qc, kc, vc, gc, bc, oc}, *fg[] = {qg, kg, vg, gg, bg, og};
        for (int i = 0; i < 6; i++) {
            cpu->free(cpu, fc[i]);
            gpu->free(gpu, fg[i]);
        }
        free(q); free(k); free(v); free(g); free(be);
    }
    CHECKF(kreg_count(GN ".gdn.recurrent") >= c0 + 2, "kernel counter " GN ".gdn.recurrent not counted per launch");
    cpu->free(cpu, stc);
    gpu->free(gpu, stg);
    free(hs);
}

/* Same inputs and state twice on the GPU: bitwise equal outputs and states. */
static void test_gdn_determinism(void) {
    const int Hk = 2, Hv = 4, Dk = 128, Dv = 128;
    size_t sn = (size_t)MAX_SEQS * Hv * Dk * Dv;
    float *hs = malloc(sn * 4);
    fill(hs, sn, -0.5f, 0.5f);
    batch B;
    int s[] = {1, 3}, p[] = {5, 0}, n[] = {100, 7};
    mkbatch(&B, 2, s, p, n);
    if (begin2(&B)) return;
    const int T = B.b.ntok;
    size_t nq = (size_t)T * Hk * Dk, nv = (size_t)T * Hv * Dv, ng = (size_t)T * Hv;
    float *q = malloc(nq * 4), *k = malloc(nq * 4), *v = malloc(nv * 4), *g = malloc(ng * 4), *be = malloc(ng * 4);
    gdn_inputs(T, Hk, Hv, Dk, Dv, q, k, v, g, be);
    float *qg = put(gpu, q, nq), *kg = put(gpu, k, nq), *vg = put(gpu, v, nv), *gg = put(gpu, g, ng);
    float *bg = put(gpu, be, ng), *og = put(gpu, v, nv), *stg = put(gpu, hs, sn);
    float *o1 = malloc(nv * 4), *o2 = malloc(nv * 4), *s1 = malloc(sn * 4), *s2 = malloc(sn * 4);
    for (int r = 0; r < 2; r++) {
        CHECK(gpu->from_host(gpu, stg, hs, sn * 4) == 0);
        gpu->gdn(gpu, og, qg, kg, vg, gg, bg, stg, Hk, Hv, Dk, Dv);
        get(gpu, r ? o2 : o1, og, nv);
        get(gpu, r ? s2 : s1, stg, sn);
    }
    CHECKF(memcmp(o1, o2, nv * 4) == 0 && memcmp(s1, s2, sn * 4) == 0, "gdn is not deterministic run to run");
    float *fg[] = {qg, kg, vg, gg, bg, og, stg};
    for (int i = 0; i < 7; i++) gpu->free(gpu, fg[i]);
    free(q); free(k); free(v); free(g); free(be); free(o1); free(o2); free(s1); free(s2); free(hs);
}

int main(void) {
    rs = tu_seed();
    gpu = be_create(GN, 1);
#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
    if (!gpu) gpu = gpu_backend_create(GN); /* until be_create is wired */
    if (gpu && !gpu->gdn && gpu_gdn_install) gpu_gdn_install(gpu); /* until gpu_backend_create calls it */
#endif
    if (!gpu) {
        printf("SKIP: no CUDA device (%s)\n", dl_errmsg());
        printf("0 passed, 0 failed\n");
        return 0;
    }
    cpu = be_create("cpu", 2);
    CHECKF(cpu != NULL, "cpu backend: %s", dl_errmsg());
    if (!cpu) return TEST_END();
    CHECKF(gpu->conv1d_silu && gpu->l2norm && gpu->gdn_gates && gpu->gdn && gpu->gated_rmsnorm && gpu->copy2d &&
               gpu->sigmoid_mul,
           "GPU backend lacks Gated DeltaNet ops (gpu_gdn_install not called?)");
    if (!gpu->gdn) {
        be_destroy(cpu);
        be_destroy(gpu);
        return TEST_END();
    }
    test_elementwise();
    test_conv(2 * 64 + 96 + 7, 4);
    test_conv(33, 1);
    test_conv(300, 3);
    test_gdn(1, 2, 128, 128);
    test_gdn(2, 6, 64, 96);
    test_gdn(1, 3, 96, 64);
    test_gdn(2, 4, 128, 128);
    test_gdn_determinism();
    /* errors of the void ops surface at sync() */
    batch B;
    int s[] = {0}, p[] = {0}, n[] = {2};
    mkbatch(&B, 1, s, p, n);
    if (!begin2(&B)) {
        float *x = gpu->alloc(gpu, 4096 * 4);
        gpu->gdn(gpu, x, x, x, x, x, x, x, 1, 2, 300, 64); /* Dk > 256 */
        CHECK(gpu->sync(gpu) == -1 && strstr(dl_errmsg(), "gdn") != NULL);
        CHECK(gpu->sync(gpu) == 0);
        gpu->free(gpu, x);
    }
    be_destroy(cpu);
    be_destroy(gpu);
    return TEST_END();
}
