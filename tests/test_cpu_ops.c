/* CPU backend ops: every AVX2 kernel against its scalar reference (run by
 * disabling "cpu.*" in the kernel registry), and the references against
 * double-precision computations written here. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/err.h"
#include "core/kreg.h"
#include "testutil.h"

static uint64_t rs;

static void fill(float *p, size_t n, float amp) {
    for (size_t i = 0; i < n; i++) p[i] = amp * tu_randf(&rs);
}

static void fast_on(void) { kreg_reset_switches(); }
static void fast_off(void) { kreg_disable("cpu.*"); }

static const dl_dtype WT[3] = {DT_F32, DT_F16, DT_BF16};

static void test_embed(dl_backend *be) {
    for (int ti = 0; ti < 3; ti++) {
        int V = 50, d = 77, ld = 83, ntok = 9;
        float *src = malloc(sizeof(float) * V * ld);
        fill(src, (size_t)V * ld, 2);
        dl_weight e = {.name = "emb", .dtype = WT[ti], .n = V, .k = d, .ld = ld};
        e.data = tu_store(src, (size_t)V * ld, WT[ti]);
        int32_t tok[9], seq[9] = {0}, pos[9];
        for (int i = 0; i < ntok; i++) tok[i] = (int32_t)(tu_rand_u64(&rs) % V), pos[i] = i;
        dl_batch b = {ntok, tok, seq, pos};
        be->begin(be, &b, NULL);
        float *y1 = calloc((size_t)ntok * d, 4), *y2 = calloc((size_t)ntok * d, 4);
        fast_on();
        be->embed(be, y1, &e);
        fast_off();
        be->embed(be, y2, &e);
        CHECKF(!memcmp(y1, y2, (size_t)ntok * d * 4), "embed fast != ref (%s)", dt_name(WT[ti]));
        int ok = 1;
        for (int i = 0; i < ntok; i++)
            for (int j = 0; j < d; j++)
                if ((double)y2[i * d + j] != tu_load(e.data, (size_t)tok[i] * ld + j, WT[ti])) ok = 0;
        CHECKF(ok, "embed ref wrong (%s)", dt_name(WT[ti]));
        free(y1), free(y2), free(src), free((void *)e.data);
    }
}

/* An int8 table with per-row scales (quantized checkpoints) takes the reference path. */
static void test_embed_i8(dl_backend *be) {
    int V = 11, d = 21, ntok = 4;
    int8_t q[11 * 21];
    float sc[11];
    for (int i = 0; i < V * d; i++) q[i] = (int8_t)(tu_rand_u64(&rs) % 255 - 127);
    for (int i = 0; i < V; i++) sc[i] = 0.02f * (1.5f + tu_randf(&rs));
    dl_weight e = {.name = "emb8", .dtype = DT_I8, .n = V, .k = d, .ld = d, .data = q,
                   .scale_kind = WS_CHANNEL, .scale_dtype = DT_F32, .scale = sc};
    int32_t tok[4] = {10, 0, 3, 3}, seq[4] = {0}, pos[4] = {0, 1, 2, 3};
    dl_batch b = {ntok, tok, seq, pos};
    be->begin(be, &b, NULL);
    float y[4 * 21];
    fast_on();
    be->embed(be, y, &e);
    int ok = 1;
    for (int i = 0; i < ntok; i++)
        for (int j = 0; j < d; j++) ok &= y[i * d + j] == (float)q[tok[i] * d + j] * sc[tok[i]];
    CHECK(ok);
}

static void test_rmsnorm(dl_backend *be) {
    static const int ds[] = {1, 7, 8, 64, 100, 1027, 4096};
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int ti = 0; ti < 3; ti++)
            for (int zc = 0; zc < 2; zc++) {
                int d = ds[di], rows = 5;
                float eps = 1e-6f;
                size_t n = (size_t)rows * d;
                float *x = malloc(n * 4), *y1 = malloc(n * 4), *y2 = malloc(n * 4), *wv = malloc((size_t)d * 4);
                fill(x, n, 3);
                fill(wv, (size_t)d, 1.5f);
                dl_weight w = {.name = "norm", .dtype = WT[ti], .n = d, .k = 1, .ld = 1};
                w.data = tu_store(wv, (size_t)d, WT[ti]);
                fast_on();
                be->rmsnorm(be, y1, x, &w, rows, d, eps, zc);
                fast_off();
                be->rmsnorm(be, y2, x, &w, rows, d, eps, zc);
                double e = tu_max_rel(y1, y2, n);
                CHECKF(e <= 1e-6, "rmsnorm fast vs ref d=%d %s zc=%d: %g", d, dt_name(WT[ti]), zc, e);
                float *yd = malloc(n * 4);
                for (int r = 0; r < rows; r++) {
                    double ss = 0;
                    for (int j = 0; j < d; j++) ss += (double)x[r * d + j] * x[r * d + j];
                    double inv = 1.0 / sqrt(ss / d + eps);
                    for (int j = 0; j < d; j++) {
                        double wj = tu_load(w.data, (size_t)j, WT[ti]);
                        yd[r * d + j] = (float)(x[r * d + j] * inv * (zc ? 1.0 + wj : wj));
                    }
                }
                e = tu_max_rel(y2, yd, n);
                CHECKF(e <= 1e-6, "rmsnorm ref vs double d=%d: %g", d, e);
                /* in place (y == x) gives the same result */
                fast_on();
                be->rmsnorm(be, x, x, &w, rows, d, eps, zc);
                CHECKF(!memcmp(x, y1, n * 4), "rmsnorm in place differs d=%d", d);
                free(x), free(y1), free(y2), free(wv), free(yd), free((void *)w.data);
            }
}

static void test_rope(dl_backend *be) {
    static const int hds[] = {64, 128, 80};
    for (int hi = 0; hi < 3; hi++)
        for (int part = 0; part < 2; part++) {
            int hd = hds[hi], nh = 3, rot = part ? hd / 2 : hd, ntok = 6;
            float inv[64];
            for (int i = 0; i < rot / 2; i++) inv[i] = (float)(1.0 / pow(10000.0, 2.0 * i / rot));
            dl_rope rp = {rot, inv, NULL};
            int32_t tok[6] = {0}, seq[6] = {0, 0, 1, 1, 2, 2}, pos[6] = {0, 1, 17, 18, 4095, 70000};
            dl_batch b = {ntok, tok, seq, pos};
            be->begin(be, &b, NULL);
            size_t n = (size_t)ntok * nh * hd;
            float *x0 = malloc(n * 4), *x1 = malloc(n * 4), *x2 = malloc(n * 4), *xd = malloc(n * 4);
            fill(x0, n, 2);
            memcpy(x1, x0, n * 4), memcpy(x2, x0, n * 4);
            fast_on();
            be->rope(be, x1, nh, hd, &rp);
            fast_off();
            be->rope(be, x2, nh, hd, &rp);
            CHECKF(!memcmp(x1, x2, n * 4), "rope fast != ref hd=%d rot=%d", hd, rot);
            for (int t = 0; t < ntok; t++)
                for (int h = 0; h < nh; h++) {
                    const float *a = x0 + ((size_t)t * nh + h) * hd;
                    float *o = xd + ((size_t)t * nh + h) * hd;
                    memcpy(o, a, (size_t)hd * 4);
                    for (int i = 0; i < rot / 2; i++) {
                        double ang = (float)pos[t] * inv[i]; /* fp32 angle, as HF */
                        o[i] = (float)(a[i] * cos(ang) - a[i + rot / 2] * sin(ang));
                        o[i + rot / 2] = (float)(a[i + rot / 2] * cos(ang) + a[i] * sin(ang));
                    }
                }
            double e = tu_max_rel(x2, xd, n);
            CHECKF(e <= 2e-6, "rope ref vs double hd=%d rot=%d: %g", hd, rot, e);
            free(x0), free(x1), free(x2), free(xd);
        }
}

/* A paged cache with a shuffled (non-contiguous) block table. */
typedef struct {
    dl_kvcache kv;
    void *k, *v;
    int32_t bt[3 * 8];
} cache;

static void cache_init(cache *c, int nkv, int hd, dl_dtype dt) {
    memset(c, 0, sizeof *c);
    int nb = 24, bs = 16;
    dl_kvcache *kv = &c->kv;
    kv->n_layers = 1, kv->n_kv_heads = nkv, kv->head_dim = hd, kv->block_size = bs;
    kv->n_blocks = nb, kv->dtype = dt, kv->max_seqs = 3, kv->max_blocks_per_seq = 8;
    size_t bytes = (size_t)nb * bs * nkv * hd * dt_size(dt);
    c->k = calloc(1, bytes), c->v = calloc(1, bytes);
    kv->k = &c->k, kv->v = &c->v;
    int perm[24];
    for (int i = 0; i < nb; i++) perm[i] = i;
    for (int i = nb - 1; i > 0; i--) {
        int j = (int)(tu_rand_u64(&rs) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int i = 0; i < 24; i++) c->bt[i] = perm[i];
    kv->block_table = c->bt;
}

/* Current batch: seq 0 prefill positions 0..4, seq 1 decode at 37, seq 2
 * chunk at 100..102; the history (positions before them) is written first. */
static void test_attention(dl_backend *be, int nh, int nkv, int hd, dl_dtype dt) {
    enum { NT = 9, HIST = 37 + 100 };
    int32_t seq[NT] = {0, 0, 0, 0, 0, 1, 2, 2, 2}, pos[NT] = {0, 1, 2, 3, 4, 37, 100, 101, 102};
    int32_t tok[HIST] = {0}, hseq[HIST], hpos[HIST];
    for (int i = 0; i < HIST; i++) hseq[i] = i < 37 ? 1 : 2, hpos[i] = i < 37 ? i : i - 37;
    size_t kw = (size_t)nkv * hd;
    /* full per-sequence k/v history as the test's own truth: [3][128][kw] */
    float *K = calloc(3 * 128 * kw, 4), *Vv = calloc(3 * 128 * kw, 4);
    fill(K, 3 * 128 * kw, 1), fill(Vv, 3 * 128 * kw, 1);
    float *hk = malloc(HIST * kw * 4), *hv = malloc(HIST * kw * 4);
    for (int i = 0; i < HIST; i++) {
        memcpy(hk + i * kw, K + ((size_t)hseq[i] * 128 + hpos[i]) * kw, kw * 4);
        memcpy(hv + i * kw, Vv + ((size_t)hseq[i] * 128 + hpos[i]) * kw, kw * 4);
    }
    float *ck = malloc(NT * kw * 4), *cv = malloc(NT * kw * 4);
    for (int i = 0; i < NT; i++) {
        memcpy(ck + i * kw, K + ((size_t)seq[i] * 128 + pos[i]) * kw, kw * 4);
        memcpy(cv + i * kw, Vv + ((size_t)seq[i] * 128 + pos[i]) * kw, kw * 4);
    }
    cache c1, c2;
    uint64_t save = rs;
    cache_init(&c1, nkv, hd, dt);
    rs = save;
    cache_init(&c2, nkv, hd, dt);
    size_t cbytes = (size_t)c1.kv.n_blocks * c1.kv.block_size * kw * dt_size(dt);
    dl_batch hb = {HIST, tok, hseq, hpos}, b = {NT, tok, seq, pos};
    size_t qn = (size_t)NT * nh * hd;
    float *q = malloc(qn * 4), *o1 = malloc(qn * 4), *o2 = malloc(qn * 4);
    fill(q, qn, 1);
    float scale = (float)(1.0 / sqrt(hd));
    fast_on();
    be->begin(be, &hb, &c1.kv);
    be->kv_write(be, &c1.kv, 0, hk, hv);
    be->begin(be, &b, &c1.kv);
    be->kv_write(be, &c1.kv, 0, ck, cv);
    be->attention(be, o1, q, &c1.kv, 0, nh, scale);
    fast_off();
    be->begin(be, &hb, &c2.kv);
    be->kv_write(be, &c2.kv, 0, hk, hv);
    be->begin(be, &b, &c2.kv);
    be->kv_write(be, &c2.kv, 0, ck, cv);
    be->attention(be, o2, q, &c2.kv, 0, nh, scale);
    CHECKF(!memcmp(c1.k, c2.k, cbytes) && !memcmp(c1.v, c2.v, cbytes),
           "kv_write fast != ref (%s hd=%d)", dt_name(dt), hd);
    double e = tu_max_rel(o1, o2, qn);
    CHECKF(e <= 2e-6, "attention fast vs ref nh=%d nkv=%d hd=%d %s: %g", nh, nkv, hd, dt_name(dt), e);
    /* double reference from the test's own k/v (rounded to the cache dtype) */
    float *od = malloc(qn * 4);
    double *sc = malloc(128 * sizeof *sc);
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < nh; h++) {
            int kh = h / (nh / nkv);
            const float *qq = q + ((size_t)t * nh + h) * hd;
            double mx = -INFINITY, sum = 0;
            for (int p = 0; p <= pos[t]; p++) {
                const float *kk = K + ((size_t)seq[t] * 128 + p) * kw + (size_t)kh * hd;
                double s = 0;
                for (int j = 0; j < hd; j++)
                    s += qq[j] * (dt == DT_F16 ? (double)f16_to_f32(f32_to_f16(kk[j])) : kk[j]);
                sc[p] = s * scale;
                if (sc[p] > mx) mx = sc[p];
            }
            for (int p = 0; p <= pos[t]; p++) sum += (sc[p] = exp(sc[p] - mx));
            for (int j = 0; j < hd; j++) {
                double a = 0;
                for (int p = 0; p <= pos[t]; p++) {
                    float vv = Vv[((size_t)seq[t] * 128 + p) * kw + (size_t)kh * hd + j];
                    a += sc[p] * (dt == DT_F16 ? (double)f16_to_f32(f32_to_f16(vv)) : vv);
                }
                od[((size_t)t * nh + h) * hd + j] = (float)(a / sum);
            }
        }
    e = tu_max_rel(o2, od, qn);
    CHECKF(e <= 2e-6, "attention ref vs double nh=%d nkv=%d hd=%d %s: %g", nh, nkv, hd, dt_name(dt), e);
    /* batch invariance: the decode token of seq 1 alone gives the same bits */
    fast_on();
    dl_batch one = {1, tok, seq + 5, pos + 5};
    be->begin(be, &one, &c1.kv);
    float *o3 = malloc((size_t)nh * hd * 4);
    be->attention(be, o3, q + (size_t)5 * nh * hd, &c1.kv, 0, nh, scale);
    CHECKF(!memcmp(o3, o1 + (size_t)5 * nh * hd, (size_t)nh * hd * 4), "attention not batch-invariant");
    free(o3), free(od), free(sc), free(q), free(o1), free(o2), free(ck), free(cv), free(hk), free(hv);
    free(K), free(Vv), free(c1.k), free(c1.v), free(c2.k), free(c2.v);
}

static void test_elementwise(dl_backend *be) {
    size_t n = 100003;
    float *g = malloc(n * 4), *u = malloc(n * 4), *o1 = malloc(n * 4), *o2 = malloc(n * 4), *od = malloc(n * 4);
    fill(g, n, 20), fill(u, n, 2);
    fast_on();
    be->silu_mul(be, o1, g, u, n);
    fast_off();
    be->silu_mul(be, o2, g, u, n);
    double e = tu_max_rel(o1, o2, n), e2 = 0;
    CHECKF(e <= 1e-6, "silu_mul fast vs ref: %g", e);
    for (size_t i = 0; i < n; i++) od[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])) * u[i]);
    e = tu_max_rel(o2, od, n);
    CHECKF(e <= 1e-6, "silu_mul ref vs double: %g", e);
    /* elementwise relative error too (small values matter) */
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)o1[i] - od[i]) / (fabs(od[i]) + 1e-30);
        if (fabs(od[i]) > 1e-30 && d > e2) e2 = d;
    }
    CHECKF(e2 <= 1e-5, "silu_mul fast per-element rel err: %g", e2);
    /* batch invariance: any sub-range (odd start, odd length: the tail at
     * other lanes) gives the same bits as the whole array */
    fast_on();
    int same = 1;
    for (size_t off = 1; off < 40; off += 7) {
        size_t len = 700 + off; /* a row of 700 (not a multiple of 8) plus change */
        be->silu_mul(be, o2, g + off, u + off, len);
        same &= !memcmp(o2, o1 + off, len * 4);
    }
    CHECKF(same, "silu_mul fast: a sub-range's bits differ from the whole array's");

    memcpy(o1, u, n * 4), memcpy(o2, u, n * 4);
    fast_on();
    be->add(be, o1, g, n);
    fast_off();
    be->add(be, o2, g, n);
    int ok = !memcmp(o1, o2, n * 4);
    for (size_t i = 0; i < n; i++) ok &= o2[i] == (float)((double)u[i] + g[i]);
    CHECK(ok);

    int32_t idx[5] = {3, 0, 7, 7, 2};
    int d = 13;
    be->gather_rows(be, o1, g, idx, 5, d);
    ok = 1;
    for (int i = 0; i < 5; i++) ok &= !memcmp(o1 + i * d, g + idx[i] * d, (size_t)d * 4);
    CHECK(ok);
    free(g), free(u), free(o1), free(o2), free(od);
}

static void test_misc(dl_backend *be) {
    void *p = be->alloc(be, 1000);
    CHECK(p && ((uintptr_t)p & 63) == 0);
    be->free(be, p);
#ifndef __SANITIZE_ADDRESS__ /* ASan aborts on impossible sizes instead of returning NULL */
    dl_err_clear();
    p = be->alloc(be, (size_t)1 << 62);
    CHECK(!p && strstr(dl_errmsg(), "4611686018427387904"));
#endif
#if !defined(DOTLM_CUDA) && !defined(DOTLM_HIP)
    dl_backend *g = be_create("cuda", 0);
    CHECK(!g && strstr(dl_errmsg(), "-DDOTLM_CUDA=ON"));
#endif
    CHECK(!be_create("nope", 0));
    CHECK(!strcmp(be->name, "cpu"));
    /* host buffers: the CPU has no special memory (malloc behind the header), nor does no backend */
    CHECK(be->host_alloc == NULL && be->host_free == NULL);
    for (int k = 0; k < 2; k++) {
        float *h = be_host_alloc(k ? NULL : be, 1001 * sizeof(float));
        CHECK(h && ((uintptr_t)h & 63) == 0);
        for (int i = 0; h && i < 1001; i++) h[i] = (float)i;
        CHECK(h && h[1000] == 1000.0f);
        be_host_free(k ? NULL : be, h);
    }
    be_host_free(be, NULL);
    dl_err_clear();
    CHECK(be_host_alloc(be, SIZE_MAX - 8) == NULL && strstr(dl_errmsg(), "too large"));
    CHECK(be->copy2d && be->sigmoid_mul && be->gdn && be->conv1d_silu && be->gated_rmsnorm);
    fast_on();
    kreg_reset_counts();
    float a[8] = {0}, b2[8] = {0};
    be->add(be, a, b2, 8);
    CHECK(kreg_count("cpu.add.avx2") + kreg_count("cpu.add.ref") == 1);
}

int main(void) {
    rs = tu_seed();
    dl_backend *be = be_create("cpu", 2);
    CHECK(be != NULL);
    if (!be) return TEST_END();
    test_misc(be);
    test_embed(be);
    test_embed_i8(be);
    test_rmsnorm(be);
    test_rope(be);
    static const int cfg[][3] = {{4, 4, 64}, {8, 2, 128}, {8, 2, 64}, {6, 3, 72}, {4, 1, 20}, {16, 4, 128}};
    for (size_t i = 0; i < sizeof cfg / sizeof *cfg; i++) {
        test_attention(be, cfg[i][0], cfg[i][1], cfg[i][2], DT_F32);
        test_attention(be, cfg[i][0], cfg[i][1], cfg[i][2], DT_F16);
    }
    test_elementwise(be);
    /* both twins of every op really ran (fast ones only where the CPU has them) */
    static const char *ops[] = {"embed", "rmsnorm", "rope", "kv_write", "attention", "silu_mul", "add"};
    int fast = 0;
#if defined(__x86_64__)
    fast = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        char f[64], r[64];
        snprintf(f, sizeof f, "cpu.%s.avx2", ops[i]);
        snprintf(r, sizeof r, "cpu.%s.ref", ops[i]);
        CHECKF(kreg_count(r) > 0 && (!fast || kreg_count(f) > 0), "%s: fast %llu ref %llu", ops[i],
               (unsigned long long)kreg_count(f), (unsigned long long)kreg_count(r));
    }
    be_destroy(be);
    return TEST_END();
}
