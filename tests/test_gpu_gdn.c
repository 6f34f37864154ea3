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
#include <time.h>

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

/* Compare buffer dc (cpu) with dg (gpu), n floats. */
static double cmp(const float *dc, const float *dg, size_t n) {
    float *hc = malloc(n * 4 + 4), *hg = malloc(n * 4 + 4);
    get(cpu, hc, dc, n);
    get(gpu, hg, dg, n);
    double e = tu_max_rel(hg, hc, n);
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


#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
/* ---------------- chunked form: vs the GPU recurrence and the CPU ---------------- */

/* A forward is up to 4 segments: n tokens of stream st at positions p0.. in
 * slot `slot`. Segments of one slot stay in order (a later one may restart
 * at position 0); different slots are interleaved at random. A token's
 * inputs depend only on (stream, position), so plans that feed the same
 * streams in different pieces can be compared token by token. */
typedef struct {
    int slot, st, p0, n;
} gseg;
typedef struct {
    int nseg;
    gseg s[4];
} gfwd;
#define GT_MAXST 8
#define GT_MAXPOS 512

typedef struct {
    int nf;
    batch *B;       /* [nf] */
    int32_t (*st)[1024]; /* [nf][row] stream of each row */
} gplan;

typedef struct {
    float **out; /* [nf] host [T, Hv * Dv] */
    float *state; /* host, every slot */
} gres;

static uint64_t gt_seed;

static void gt_build(gplan *P, const gfwd *F, int nf) {
    P->nf = nf;
    P->B = calloc((size_t)nf, sizeof *P->B);
    P->st = calloc((size_t)nf, sizeof *P->st);
    for (int f = 0; f < nf; f++) {
        int cur[4] = {0}, left[4], T = 0;
        for (int i = 0; i < F[f].nseg; i++) left[i] = F[f].s[i].n;
        for (;;) {
            /* segments that may go next: the first unfinished one of each slot */
            int cand[4], nc = 0;
            for (int i = 0; i < F[f].nseg; i++) {
                if (!left[i]) continue;
                int first = 1;
                for (int j = 0; j < i; j++)
                    if (left[j] && F[f].s[j].slot == F[f].s[i].slot) first = 0;
                if (first) cand[nc++] = i;
            }
            if (!nc) break;
            const int i = cand[tu_rand_u64(&rs) % (uint64_t)nc];
            const int run = 1 + (int)(tu_rand_u64(&rs) % 40);
            for (int j = 0; j < run && left[i]; j++, left[i]--, cur[i]++, T++) {
                P->B[f].tok[T] = 0;
                P->B[f].seq[T] = F[f].s[i].slot;
                P->B[f].pos[T] = F[f].s[i].p0 + cur[i];
                P->st[f][T] = F[f].s[i].st;
            }
        }
        P->B[f].b = (dl_batch){.ntok = T, .tokens = P->B[f].tok, .seq = P->B[f].seq, .pos = P->B[f].pos};
    }
}

static void gt_free_plan(gplan *P) {
    free(P->B);
    free(P->st);
}

/* Inputs of token pos of stream st: l2-normalised q (scaled by 1/sqrt(Dk))
 * and k, v in [-1, 1], beta in [0.05, 0.95]; g in [-0.6, -0.001], except
 * stream 1 (short memory: down to -4) and stream 2 (long memory: > -0.05). */
static void gt_tok(int st, int pos, int Hk, int Hv, int Dk, int Dv, float *q, float *k, float *v, float *g,
                   float *beta) {
    uint64_t r = gt_seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(st * GT_MAXPOS + pos + 1));
    if (!r) r = 1;
    for (int h = 0; h < Hk; h++) {
        double sq = 0, sk = 0;
        for (int j = 0; j < Dk; j++) {
            q[h * Dk + j] = tu_randf(&r);
            k[h * Dk + j] = tu_randf(&r);
            sq += (double)q[h * Dk + j] * q[h * Dk + j];
            sk += (double)k[h * Dk + j] * k[h * Dk + j];
        }
        for (int j = 0; j < Dk; j++) {
            q[h * Dk + j] = (float)(q[h * Dk + j] / sqrt(sq) / sqrt((double)Dk));
            k[h * Dk + j] = (float)(k[h * Dk + j] / sqrt(sk));
        }
    }
    for (int j = 0; j < Hv * Dv; j++) v[j] = tu_randf(&r);
    const float lo = st == 1 ? -4.0f : st == 2 ? -0.05f : -0.6f;
    for (int h = 0; h < Hv; h++) {
        g[h] = lo + (-0.001f - lo) * 0.5f * (tu_randf(&r) + 1.0f);
        beta[h] = 0.05f + 0.9f * 0.5f * (tu_randf(&r) + 1.0f);
    }
}

/* Run plan P on backend be from state hs; results into R (allocated here). */
static int gt_exec(dl_backend *be, const gplan *P, const float *hs, int Hk, int Hv, int Dk, int Dv, gres *R) {
    const size_t sn = (size_t)MAX_SEQS * Hv * Dk * Dv;
    float *stb = put(be, hs, sn);
    R->out = calloc((size_t)P->nf, sizeof *R->out);
    R->state = malloc(sn * 4);
    int rc = 0;
    for (int f = 0; f < P->nf && !rc; f++) {
        const int T = P->B[f].b.ntok;
        rc = be->begin(be, &P->B[f].b, NULL);
        CHECKF(!rc, "%s begin: %s", be->name, dl_errmsg());
        if (rc) break;
        const size_t nq = (size_t)T * Hk * Dk, nv = (size_t)T * Hv * Dv, ng = (size_t)T * Hv;
        float *q = malloc(nq * 4), *k = malloc(nq * 4), *v = malloc(nv * 4), *g = malloc(ng * 4), *bt = malloc(ng * 4);
        for (int t = 0; t < T; t++)
            gt_tok(P->st[f][t], P->B[f].pos[t], Hk, Hv, Dk, Dv, q + (size_t)t * Hk * Dk, k + (size_t)t * Hk * Dk,
                   v + (size_t)t * Hv * Dv, g + (size_t)t * Hv, bt + (size_t)t * Hv);
        float *dq = put(be, q, nq), *dk = put(be, k, nq), *dv = put(be, v, nv), *dg = put(be, g, ng);
        float *db = put(be, bt, ng), *dout = put(be, v, nv);
        be->gdn(be, dout, dq, dk, dv, dg, db, stb, Hk, Hv, Dk, Dv);
        R->out[f] = malloc(nv * 4);
        get(be, R->out[f], dout, nv);
        float *fb[] = {dq, dk, dv, dg, db, dout};
        for (int i = 0; i < 6; i++) be->free(be, fb[i]);
        free(q); free(k); free(v); free(g); free(bt);
    }
    get(be, R->state, stb, sn);
    be->free(be, stb);
    return rc;
}

static void gt_free_res(const gplan *P, gres *R) {
    for (int f = 0; f < P->nf; f++) free(R->out[f]);
    free(R->out);
    free(R->state);
}

/* max |a - b| / max |b| over the outputs of every token of streams 0 and 1
 * present in both plans, and over slots 1 and 2 of the final states */
static double gt_cross(const gplan *PA, const gres *RA, const gplan *PB, const gres *RB, int HvDv, size_t hds) {
    static int32_t mf[2][GT_MAXPOS], mr[2][GT_MAXPOS];
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < GT_MAXPOS; p++) mf[i][p] = -1;
    for (int f = 0; f < PB->nf; f++)
        for (int t = 0; t < PB->B[f].b.ntok; t++)
            if (PB->st[f][t] < 2) {
                mf[PB->st[f][t]][PB->B[f].pos[t]] = f;
                mr[PB->st[f][t]][PB->B[f].pos[t]] = t;
            }
    double mx = 0, e = 0;
    int n = 0;
    for (int f = 0; f < PA->nf; f++)
        for (int t = 0; t < PA->B[f].b.ntok; t++) {
            const int st = PA->st[f][t], p = PA->B[f].pos[t];
            if (st >= 2 || mf[st][p] < 0) continue;
            const float *a = RA->out[f] + (size_t)t * HvDv, *b = RB->out[mf[st][p]] + (size_t)mr[st][p] * HvDv;
            for (int j = 0; j < HvDv; j++) {
                mx = fmax(mx, fabs((double)b[j]));
                double d = fabs((double)a[j] - (double)b[j]);
                e = d == d ? fmax(e, d) : INFINITY;
            }
            n++;
        }
    double r = n ? e / (mx > 0 ? mx : 1e-30) : INFINITY;
    double es = tu_max_rel(RA->state + hds, RB->state + hds, 2 * hds); /* slots 1, 2 */
    return fmax(r, es);
}

/* Every plan on the CPU, the GPU with the chunked kernel and the GPU with
 * it switched off (recurrence only): outputs and final states within 1e-4;
 * the chunked counter moves only where a run reaches chunk_min. Plans
 * feeding the same two prompts (stream 0: 128 tokens from position 0 in
 * slot 1; stream 1: 130 tokens from position 17 in slot 2, which has state)
 * in one call, in pieces and token by token agree token by token. */
static void test_gdn_chunked(int Hk, int Hv, int Dk, int Dv, int chunk_min, int bv) {
    const size_t hds = (size_t)Hv * Dk * Dv, sn = (size_t)MAX_SEQS * hds;
    if (gpu_gdn_tune(gpu, chunk_min, bv)) {
        CHECKF(0, "gpu_gdn_tune failed");
        return;
    }
    float *hs = malloc(sn * 4);
    fill(hs, sn, -0.5f, 0.5f);
    gt_seed = tu_rand_u64(&rs);
    /* one call: both prompts in one mixed batch */
    static const gfwd one[] = {{2, {{1, 0, 0, 128}, {2, 1, 17, 130}}}};
    /* 64 + 37 + 27 and 64 + 66 */
    static const gfwd p64[] = {{2, {{1, 0, 0, 64}, {2, 1, 17, 64}}},
                               {2, {{1, 0, 64, 37}, {2, 1, 81, 66}}},
                               {1, {{1, 0, 101, 27}}}};
    /* 100 + 1 + 27 and 1 + 129 */
    static const gfwd p100[] = {{2, {{1, 0, 0, 100}, {2, 1, 17, 1}}},
                                {2, {{1, 0, 100, 1}, {2, 1, 18, 129}}},
                                {1, {{1, 0, 101, 27}}}};
    /* long and short groups in one batch: a decode step of slot 3 (stream 2),
     * stream 1 as 63 + 67 */
    static const gfwd mix[] = {{3, {{1, 0, 0, 128}, {3, 2, 40, 1}, {2, 1, 17, 63}}},
                               {2, {{2, 1, 80, 67}, {3, 2, 41, 1}}}};
    /* restarts inside a batch: slot 4 continues 6 tokens then restarts for
     * 100; slot 5 runs 80 from position 0 then restarts for 3 */
    static const gfwd rst[] = {{4, {{4, 3, 5, 6}, {4, 4, 0, 100}, {5, 5, 0, 80}, {5, 6, 0, 3}}},
                               {2, {{4, 4, 100, 1}, {5, 6, 3, 65}}}};
    gfwd tok[130];
    for (int i = 0; i < 130; i++) {
        tok[i].nseg = 0;
        if (i < 128) tok[i].s[tok[i].nseg++] = (gseg){1, 0, i, 1};
        tok[i].s[tok[i].nseg++] = (gseg){2, 1, 17 + i, 1};
    }
    struct {
        const char *name;
        const gfwd *f;
        int nf;
    } plans[] = {{"one call", one, 1}, {"64+37+27", p64, 3}, {"100+1+27", p100, 3},
                 {"mixed long/short", mix, 2}, {"restarts", rst, 2}, {"token by token", tok, 130}};
    const int np = (int)(sizeof plans / sizeof plans[0]);
    gplan P[6];
    gres Rc[6], Rg[6], Rr[6];
    for (int i = 0; i < np; i++) {
        gt_build(&P[i], plans[i].f, plans[i].nf);
        int longest = 0; /* longest run of one slot in one forward: does the chunked kernel run? */
        for (int f = 0; f < plans[i].nf; f++)
            for (int j = 0; j < plans[i].f[f].nseg; j++)
                if (plans[i].f[f].s[j].n > longest) longest = plans[i].f[f].s[j].n;
        const int want = longest >= chunk_min && Dk <= GK_GDN_CHUNK_MAXDK;
        gt_exec(cpu, &P[i], hs, Hk, Hv, Dk, Dv, &Rc[i]);
        const uint64_t c0 = kreg_count(GN ".gdn.chunked");
        gt_exec(gpu, &P[i], hs, Hk, Hv, Dk, Dv, &Rg[i]);
        const uint64_t c1 = kreg_count(GN ".gdn.chunked");
        kreg_disable(GN ".gdn.chunked");
        gt_exec(gpu, &P[i], hs, Hk, Hv, Dk, Dv, &Rr[i]);
        kreg_reset_switches();
        const uint64_t c2 = kreg_count(GN ".gdn.chunked");
        CHECKF(want ? c1 > c0 : c1 == c0, "%s: " GN ".gdn.chunked ran %llu times, expected %s", plans[i].name,
               (unsigned long long)(c1 - c0), want ? "> 0" : "0");
        CHECKF(c2 == c1, "%s: " GN ".gdn.chunked ran while switched off", plans[i].name);
        double eoc = 0, eor = 0;
        for (int f = 0; f < P[i].nf; f++) {
            const size_t nv = (size_t)P[i].B[f].b.ntok * Hv * Dv;
            eoc = fmax(eoc, tu_max_rel(Rg[i].out[f], Rc[i].out[f], nv));
            eor = fmax(eor, tu_max_rel(Rg[i].out[f], Rr[i].out[f], nv));
        }
        const double esc = tu_max_rel(Rg[i].state, Rc[i].state, sn), esr = tu_max_rel(Rg[i].state, Rr[i].state, sn);
        const double erc = tu_max_rel(Rr[i].state, Rc[i].state, sn);
        printf("gdn chunked Hk=%d Hv=%d Dk=%d Dv=%d min=%d bv=%d %-16s: vs cpu out %.3g state %.3g, vs gpu "
               "recurrence out %.3g state %.3g (chunked launches %llu)\n",
               Hk, Hv, Dk, Dv, chunk_min, bv, plans[i].name, eoc, esc, eor, esr, (unsigned long long)(c1 - c0));
        CHECKF(eoc <= 1e-4 && esc <= 1e-4, "%s Dk=%d Dv=%d: chunked vs cpu out %.3g state %.3g", plans[i].name, Dk,
               Dv, eoc, esc);
        CHECKF(eor <= 1e-4 && esr <= 1e-4, "%s Dk=%d Dv=%d: chunked vs gpu recurrence out %.3g state %.3g",
               plans[i].name, Dk, Dv, eor, esr);
        CHECKF(erc <= 1e-4, "%s Dk=%d Dv=%d: gpu recurrence vs cpu state %.3g", plans[i].name, Dk, Dv, erc);
    }
    /* the same prompts fed differently: chunked one call / pieces vs token by token (recurrence) */
    for (int i = 1; i < np; i++) {
        if (i == 4) continue; /* the restart plan has other streams */
        const double e = gt_cross(&P[0], &Rg[0], &P[i], &Rg[i], Hv * Dv, hds);
        CHECKF(e <= 1e-4, "one call vs %s Dk=%d Dv=%d: rel err %.3g", plans[i].name, Dk, Dv, e);
    }
    for (int i = 0; i < np; i++) {
        gt_free_res(&P[i], &Rc[i]);
        gt_free_res(&P[i], &Rg[i]);
        gt_free_res(&P[i], &Rr[i]);
        gt_free_plan(&P[i]);
    }
    gpu_gdn_tune(gpu, GK_GDN_CHUNK_MIN, 0);
    free(hs);
}

/* Chunked results do not depend on the column tile: bitwise equal for bv 16 and 32. */
static void test_gdn_chunked_bv(void) {
    const int Hk = 2, Hv = 4, Dk = 128, Dv = 96;
    const size_t sn = (size_t)MAX_SEQS * Hv * Dk * Dv;
    float *hs = malloc(sn * 4);
    fill(hs, sn, -0.5f, 0.5f);
    gt_seed = tu_rand_u64(&rs);
    static const gfwd f[] = {{3, {{1, 0, 3, 150}, {2, 1, 0, 70}, {3, 2, 9, 2}}}};
    gplan P;
    gt_build(&P, f, 1);
    gres R[2];
    const size_t nv = (size_t)P.B[0].b.ntok * Hv * Dv;
    for (int i = 0; i < 2; i++) {
        gpu_gdn_tune(gpu, GK_GDN_CHUNK_MIN, i ? 32 : 16);
        gt_exec(gpu, &P, hs, Hk, Hv, Dk, Dv, &R[i]);
    }
    CHECKF(memcmp(R[0].out[0], R[1].out[0], nv * 4) == 0 && memcmp(R[0].state, R[1].state, sn * 4) == 0,
           "chunked gdn differs between column tiles 16 and 32");
    gt_free_res(&P, &R[0]);
    gt_free_res(&P, &R[1]);
    gt_free_plan(&P);
    gpu_gdn_tune(gpu, GK_GDN_CHUNK_MIN, 0);
    free(hs);
}

static double gt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* DOTLM_GDN_BENCH=1: prefill of the 27B linear-attention shapes (Hk 16,
 * Hv 48, Dk = Dv = 128), one 4096-token sequence and 4 x 1024, chunked
 * (bv 16, 32) vs recurrence; also the chunked result vs the recurrence. */
static void bench_gdn(void) {
    const int Hk = 16, Hv = 48, Dk = 128, Dv = 128, T = 4096;
    const size_t nq = (size_t)T * Hk * Dk, nv = (size_t)T * Hv * Dv, ng = (size_t)T * Hv;
    const size_t sn = (size_t)MAX_SEQS * Hv * Dk * Dv;
    float *q = malloc(nq * 4), *k = malloc(nq * 4), *v = malloc(nv * 4), *g = malloc(ng * 4), *be = malloc(ng * 4);
    gdn_inputs(T, Hk, Hv, Dk, Dv, q, k, v, g, be);
    float *dq = put(gpu, q, nq), *dk = put(gpu, k, nq), *dv = put(gpu, v, nv), *dg = put(gpu, g, ng);
    float *db = put(gpu, be, ng), *dout = put(gpu, v, nv), *stb = gpu->alloc(gpu, sn * 4);
    float *ref = malloc(nv * 4), *o = malloc(nv * 4);
    static int32_t tok[4096], seq[4096], pos[4096];
    for (int layout = 0; layout < 2; layout++) {
        const int ns = layout ? 4 : 1;
        for (int t = 0; t < T; t++) {
            tok[t] = 0;
            seq[t] = t / (T / ns);
            pos[t] = t % (T / ns);
        }
        dl_batch b = {.ntok = T, .tokens = tok, .seq = seq, .pos = pos};
        const char *names[] = {"recurrence", "chunked bv 16", "chunked bv 32"};
        for (int m = 0; m < 3; m++) {
            if (m == 0) kreg_disable(GN ".gdn.chunked");
            gpu_gdn_tune(gpu, GK_GDN_CHUNK_MIN, m == 2 ? 32 : 16);
            if (gpu->begin(gpu, &b, NULL)) break;
            gpu->gdn(gpu, dout, dq, dk, dv, dg, db, stb, Hk, Hv, Dk, Dv); /* warm-up */
            CHECK(gpu->sync(gpu) == 0);
            const int it = 5;
            const double t0 = gt_now();
            for (int i = 0; i < it; i++) gpu->gdn(gpu, dout, dq, dk, dv, dg, db, stb, Hk, Hv, Dk, Dv);
            CHECK(gpu->sync(gpu) == 0);
            const double ms = (gt_now() - t0) * 1e3 / it;
            get(gpu, m ? o : ref, dout, nv);
            printf("bench gdn %d x %d tokens, Hk=%d Hv=%d Dk=%d Dv=%d, %-14s: %8.3f ms  (%.0f tok/s)", ns, T / ns, Hk,
                   Hv, Dk, Dv, names[m], ms, T / (ms * 1e-3));
            if (m) printf("  rel err vs recurrence %.3g", tu_max_rel(o, ref, nv));
            printf("\n");
            kreg_reset_switches();
        }
    }
    gpu_gdn_tune(gpu, GK_GDN_CHUNK_MIN, 0);
    float *fg[] = {dq, dk, dv, dg, db, dout, stb};
    for (int i = 0; i < 7; i++) gpu->free(gpu, fg[i]);
    free(q); free(k); free(v); free(g); free(be); free(ref); free(o);
}
#endif

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
#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
    test_gdn_chunked(2, 4, 128, 128, GK_GDN_CHUNK_MIN, 0);
    test_gdn_chunked(2, 4, 32, 32, GK_GDN_CHUNK_MIN, 0);   /* the fixtures' heads */
    test_gdn_chunked(2, 4, 64, 64, GK_GDN_CHUNK_MIN, 32);
    test_gdn_chunked(1, 3, 33, 200, GK_GDN_CHUNK_MIN, 0);  /* odd Dk, Dv over several tiles */
    test_gdn_chunked(3, 3, 97, 17, 16, 32);                /* the CPU's threshold: short runs chunked too */
    test_gdn_chunked(1, 2, 160, 64, GK_GDN_CHUNK_MIN, 0);  /* Dk above the chunked limit: recurrence */
    test_gdn_chunked_bv();
    if (getenv("DOTLM_GDN_BENCH")) bench_gdn();
#endif
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
