/* Multi-weight GEMV launches and GEMV variants, bit for bit:
 *  - gk_gemv_multi / gk_int8_gemv_multi (2 and 3 weights sharing x, different
 *    and odd row counts) give each weight exactly the bits of gk_gemv /
 *    gk_int8_gemv on that weight alone, for bf16, f16, f32, fp8 e4m3
 *    (block/channel/tensor scales), fp8 e5m2, int8 weight-only and W8A8, at
 *    M = 1, 2, 4, 8; nothing is written past a weight's rows;
 *  - every GEMV variant (gpu_tune.h: fp8 widening f32/f32s/h2/fold/h2x, vectors
 *    in flight, L1 policy, warps per block, rows per warp, K loop, the fp8
 *    and W8A8 shared-memory weight rings, counted where they ran) is bitwise
 *    equal to the original kernels ("v1"), on random codes and on every fp8
 *    code (subnormals, +-0, e4m3 NaN codes), single and multi launches,
 *    including long rows whose K is split over 2 or 4 warps;
 *  - the GPU GEMV stays within the test_gpu_ops tolerance (1e-5 of max|ref|)
 *    of the CPU backend;
 *  - gk_gemv_silu (gate/up with SiLU(gate) * up from the epilogue) equals
 *    gk_gemv_multi then gk_silu_mul bitwise in every variant, writing
 *    neither gate nor up;
 *  - the fp8 ring runs only where a row group shares one row of block
 *    scales: again with scales over 2 rows (bn = 2), where groups of 4 rows
 *    take the register loop, same bits;
 *  - the e4m3 fold widening (the default at M <= 2) is bitwise h2 over
 *    activations spread across the range it is documented for, counted,
 *    and its gate turns it into h2;
 *  - the opt-in fp16 chunk products (fp8=hf, e4m3 at M = 1) stay within
 *    4e-3 of max|ref| of the CPU in every M = 1 launch form, single and
 *    multi alike, counted, run to run bitwise, and its gate gives fold;
 *  - gk_gemv_multi_ok / gk_int8_gemv_multi_ok refuse mixed jobs, and
 *    gk_gemv_tune refuses unknown knobs without changing anything.
 * Prints "SKIP: no CUDA device" and exits 0 without a GPU backend or device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/err.h"
#include "testutil.h"
#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_tune.h"
#endif

#ifdef DOTLM_HIP
#define GN "hip"
#else
#define GN "cuda"
#endif

#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)

static uint64_t rs;
static dl_backend *cpu, *gpu;

#define GUARD 64          /* floats after each output that must stay untouched */
#define SENTINEL 0x7fa5a5a5u /* a NaN pattern no kernel writes */

static float rnd_nz(void) {
    float f = tu_randf(&rs);
    return f == 0.0f ? 0.5f : f;
}

enum { CODES_RANDOM = 0, CODES_ALL = 1 };

/* Rows per block-scale block of the weights make_w builds (128; the ring
 * pass below also takes 2: groups of 4 rows then span two scale rows). */
static int g_bn = 128;

/* Random weight (never zero values; fp8 never NaN/inf codes) or, for fp8
 * with CODES_ALL, every code in turn (incl. +-0, subnormals, and e4m3 NaN
 * codes; e5m2 inf/NaN codes excluded: the original widening reads them as
 * finite values). Owned by the caller (free_w). */
static dl_weight make_w(dl_dtype dt, int64_t n, int64_t k, int64_t ld, dl_wscale sk, dl_actq aq, int bias, int codes) {
    size_t cnt = (size_t)n * (size_t)ld, es = dt_size(dt);
    uint8_t *d = malloc(cnt * es);
    for (size_t i = 0; i < cnt; i++) {
        float f = rnd_nz();
        switch (dt) {
        case DT_F32: ((float *)d)[i] = f; break;
        case DT_F16: ((uint16_t *)d)[i] = f32_to_f16(f); break;
        case DT_BF16: ((uint16_t *)d)[i] = f32_to_bf16(f); break;
        case DT_F8E4M3: case DT_F8E5M2: {
            uint8_t c;
            if (codes == CODES_ALL) {
                c = (uint8_t)(i % 256);
                if (dt == DT_F8E5M2 && ((c >> 2) & 31) == 31) c ^= 0x04; /* exponent 30 instead */
            } else {
                do c = (uint8_t)tu_rand_u64(&rs);
                while ((c & 0x7f) == 0 || (dt == DT_F8E4M3 && (c & 0x7f) == 0x7f) ||
                       (dt == DT_F8E5M2 && ((c >> 2) & 31) == 31));
            }
            d[i] = c;
            break;
        }
        case DT_I8: {
            int v = (int)(tu_rand_u64(&rs) % 255) - 127;
            d[i] = (uint8_t)(int8_t)(v ? v : 1);
            break;
        }
        default: break;
        }
    }
    int64_t ns = sk == WS_TENSOR    ? 1
                 : sk == WS_CHANNEL ? n
                 : sk == WS_BLOCK   ? ((n + g_bn - 1) / g_bn) * ((k + 127) / 128)
                                    : 0;
    float *sc = ns ? malloc((size_t)ns * 4) : NULL;
    for (int64_t i = 0; i < ns; i++) sc[i] = 0.01f * (1.5f + tu_randf(&rs));
    float *b = bias ? malloc((size_t)n * 4) : NULL;
    for (int64_t i = 0; b && i < n; i++) b[i] = rnd_nz();
    return (dl_weight){.name = "t", .dtype = dt, .n = n, .k = k, .ld = ld, .data = d, .scale_kind = sk,
                       .scale_dtype = DT_F32, .scale = sc, .bn = g_bn, .bk = 128, .actq = aq, .act_scale = 0.01f,
                       .bias = b, .bias_dtype = DT_F32};
}

static void free_w(dl_weight *w) {
    free((void *)w->data);
    free((void *)w->scale);
    free((void *)w->bias);
}

typedef struct {
    dl_dtype dt;
    dl_wscale sk;
    dl_actq aq;
    const char *name;
} fmt;

static const fmt FMTS[] = {
    {DT_BF16, WS_NONE, ACT_NATIVE, "bf16"},
    {DT_F16, WS_NONE, ACT_NATIVE, "f16"},
    {DT_F32, WS_NONE, ACT_NATIVE, "f32"},
    {DT_F8E4M3, WS_BLOCK, ACT_NATIVE, "fp8e4m3 block"},
    {DT_F8E4M3, WS_CHANNEL, ACT_NATIVE, "fp8e4m3 channel"},
    {DT_F8E4M3, WS_TENSOR, ACT_NATIVE, "fp8e4m3 tensor"},
    {DT_F8E5M2, WS_BLOCK, ACT_NATIVE, "fp8e5m2 block"},
    {DT_F8E5M2, WS_CHANNEL, ACT_NATIVE, "fp8e5m2 channel"},
    {DT_I8, WS_CHANNEL, ACT_NATIVE, "int8 weight-only"},
    {DT_I8, WS_CHANNEL, ACT_INT8_TOKEN, "int8 W8A8"},
};

static int is_w8a8(const fmt *f) { return f->dt == DT_I8 && f->aq == ACT_INT8_TOKEN; }
static int is_fp8(dl_dtype dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }
/* The 16/32-bit float formats (their GEMV at M <= 2 skips the chunk scale
 * load: cuda.gemv_unscaled). */
static int is_f16_32(dl_dtype dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

/* One job: up to 3 uploaded weights of one format sharing k, and device
 * buffers for x, the quantized x (W8A8) and two sets of outputs. */
typedef struct {
    const fmt *f;
    int count, M;
    int64_t k, kp;
    dl_weight w[3];  /* host weights (the CPU backend reads these) */
    dl_weight wg[3]; /* the same, uploaded to the GPU */
    float *dx;
    int8_t *dxq;
    float *dxs;
    float *dy[2][3]; /* [single/multi][weight], each M * n + GUARD floats */
    float *x;        /* host copy of x */
} job;

static void *dalloc(size_t bytes) {
    void *p = gpu->alloc(gpu, bytes);
    CHECKF(p != NULL, "device alloc %zu: %s", bytes, dl_errmsg());
    return p;
}

static void fill_sentinel(float *d, size_t n) {
    uint32_t *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = SENTINEL;
    gpu->from_host(gpu, d, h, n * 4);
    free(h);
}

static int job_init(job *j, const fmt *f, int count, const int *ns, int64_t k, const int64_t *lds, int M, int codes) {
    memset(j, 0, sizeof *j);
    j->f = f;
    j->M = M;
    j->k = k;
    j->kp = (k + 15) / 16 * 16;
    for (int i = 0; i < count; i++) {
        j->w[i] = make_w(f->dt, ns[i], k, lds[i], f->sk, f->aq, i != 1, codes);
        if (cpu->upload) cpu->upload(cpu, &j->w[i]);
        j->wg[i] = j->w[i];
        j->wg[i].dev = NULL;
        j->count = i + 1;
        if (gpu->upload(gpu, &j->wg[i])) {
            CHECKF(0, "upload %s: %s", f->name, dl_errmsg());
            return -1;
        }
    }
    size_t nx = (size_t)M * k;
    j->x = malloc(nx * 4);
    for (size_t i = 0; i < nx; i++) j->x[i] = rnd_nz();
    j->dx = dalloc(nx * 4 + 16);
    gpu->from_host(gpu, j->dx, j->x, nx * 4);
    if (is_w8a8(f)) {
        j->dxq = dalloc((size_t)M * j->kp + 16);
        j->dxs = dalloc((size_t)M * 4 + 16);
        gk_actq_int8(gpu_backend_stream(gpu), j->dxq, j->dxs, j->dx, M, (int)k, (int)j->kp);
    }
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < count; i++)
            if (!(j->dy[s][i] = dalloc(((size_t)M * ns[i] + GUARD) * 4))) return -1;
    return 0;
}

static void job_free(job *j) {
    for (int i = 0; i < j->count; i++) {
        if (j->wg[i].dev) gpu->release(gpu, &j->wg[i]);
        if (cpu->release) cpu->release(cpu, &j->w[i]);
        free_w(&j->w[i]);
        for (int s = 0; s < 2; s++)
            if (j->dy[s][i]) gpu->free(gpu, j->dy[s][i]);
    }
    if (j->dx) gpu->free(gpu, j->dx);
    if (j->dxq) gpu->free(gpu, j->dxq), gpu->free(gpu, j->dxs);
    free(j->x);
}

static const gk_weight *view(const dl_weight *w) { return gpu_weight_view(w); }

/* Run the job's weights: s = 0 one launch per weight, s = 1 one multi launch. */
static void job_run(job *j, int s) {
    void *st = gpu_backend_stream(gpu);
    for (int i = 0; i < j->count; i++) fill_sentinel(j->dy[s][i], (size_t)j->M * j->w[i].n + GUARD);
    if (s == 0) {
        for (int i = 0; i < j->count; i++) {
            if (is_w8a8(j->f)) gk_int8_gemv(st, j->dy[0][i], j->dxq, j->dxs, view(&j->wg[i]), j->M, (int)j->kp);
            else gk_gemv(st, j->dy[0][i], j->dx, view(&j->wg[i]), j->M);
        }
        return;
    }
    gk_multi mw;
    memset(&mw, 0, sizeof mw);
    mw.count = j->count;
    for (int i = 0; i < j->count; i++) {
        mw.w[i] = *view(&j->wg[i]);
        mw.y[i] = j->dy[1][i];
    }
    if (is_w8a8(j->f)) {
        CHECKF(gk_int8_gemv_multi_ok(&mw), "int8 multi_ok (%s)", j->f->name);
        gk_int8_gemv_multi(st, &mw, j->dxq, j->dxs, j->M, (int)j->kp);
    } else {
        CHECKF(gk_gemv_multi_ok(&mw), "multi_ok (%s)", j->f->name);
        gk_gemv_multi(st, &mw, j->dx, j->M);
    }
}

/* Outputs of set s to host: h[i] holds M * n + GUARD floats. */
static void job_get(job *j, int s, float **h) {
    CHECKF(gpu->sync(gpu) == 0, "sync: %s", dl_errmsg());
    for (int i = 0; i < j->count; i++) {
        size_t n = (size_t)j->M * j->w[i].n + GUARD;
        h[i] = malloc(n * 4);
        gpu->to_host(gpu, h[i], j->dy[s][i], n * 4);
    }
}

/* All n floats still hold the sentinel. */
static int untouched(const float *h, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &h[i], 4);
        if (u != SENTINEL) return 0;
    }
    return 1;
}

/* The GUARD floats after ny outputs still hold the sentinel. */
static int guard_ok(const float *h, size_t ny) { return untouched(h + ny, GUARD); }

static size_t ndiff(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

static void free_h(float **h, int count) {
    for (int i = 0; i < count; i++) free(h[i]);
}

/* Single vs multi launch bitwise, guards intact, and single vs the CPU
 * backend within 1e-5 (random codes only: the CPU reads e4m3 NaN codes as
 * NaN). Returns the single-launch outputs (caller frees) in ref. */
static void check_job(job *j, const char *what, int vs_cpu, float **ref) {
    float *hs[3], *hm[3];
    job_run(j, 0);
    job_get(j, 0, hs);
    job_run(j, 1);
    job_get(j, 1, hm);
    for (int i = 0; i < j->count; i++) {
        size_t ny = (size_t)j->M * j->w[i].n;
        size_t d = ndiff(hs[i], hm[i], ny);
        CHECKF(d == 0, "%s %s M=%d count=%d weight %d (n=%lld): multi differs from single in %zu of %zu", what,
               j->f->name, j->M, j->count, i, (long long)j->w[i].n, d, ny);
        CHECKF(guard_ok(hs[i], ny) && guard_ok(hm[i], ny), "%s %s M=%d weight %d: wrote past its rows", what,
               j->f->name, j->M, i);
        if (vs_cpu) {
            float *yc = malloc(ny * 4);
            cpu->matmul(cpu, yc, j->x, &j->w[i], j->M);
            double r = tu_max_rel(hs[i], yc, ny);
            CHECKF(r <= 1e-5, "%s %s M=%d weight %d vs CPU: rel %.3g", what, j->f->name, j->M, i, r);
            free(yc);
        }
    }
    free_h(hm, j->count);
    if (ref) memcpy(ref, hs, sizeof(float *) * (size_t)j->count);
    else free_h(hs, j->count);
}

/* The variants: every combination of the knobs, float and int8 alike
 * (fp8 widening only varied for fp8 weights). */
static int variant_spec(int v, int fp8, char *buf, size_t n) {
    static const char *f8[5] = {"f32", "h2", "fold", "f32s", "h2x"};
    static const int us[3] = {0, 2, 4};
    static const char *rows[4] = {"r1=0,rm=0,i8r1=0,i8rm=0", "r1=1,rm=2,i8r1=1,i8rm=2", "r1=4,rm=4,i8r1=4,i8rm=4",
                                  "r1=2,rm=4,i8r1=2,i8rm=4"};
    const int nf = fp8 ? 5 : 1, total = nf * 3 * 2 * 2 * 4;
    if (v >= total) return 0;
    int fi = v % nf, u = us[(v / nf) % 3], na = (v / nf / 3) % 2, wpb = (v / nf / 6) % 2, r = v / nf / 12;
    /* the K loop rotates through the variants (5 widenings: every loop meets every widening) */
    /* ... and so do the fp8 weight ring (0, 2 or 3 stages: period 6) and the W8A8 ring (period 4), meeting
     * every widening, loop, u, na, wpb and rows */
    /* ... and the W8A8 register GEMV's K split (by shape, none, 2 or 4 warps: period 12) */
    static const int i8ks[4] = {0, 1, 2, 4};
    /* ... and the M = 1 ring's early input loads (xpf 0, 1 next chunk, 2 before the wait; period 33:
     * it meets every ring setting, widening and rows) */
    /* ... and the permuted activations of M >= 3 (period 10), and the batched-M rule (mlb: 0 the
     * unbounded kernels, 1 the register-capped ring at every M >= 3, 2 the capped ring at M <= 4
     * and rows by shape, 3 as 2 with the M >= 5 register loop capped too; period 28: it meets
     * every xp, ring, rows and widening) */
    /* ... and the W8A8 M = 1 register GEMV's code loads (i8xp 0, 1, 2: period 39; it meets every
     * i8ks, u, na and rows) */
    /* ... and the M = 1 occupancy caps (occ and i8occ 0, 2 or 6 blocks per SM: period 51 and 57;
     * at 2 a launch pads unless registers already allow no more, as for some W8A8 forms) */
    static const int occs[3] = {0, 2, 6};
    snprintf(buf, n,
             "v1,fp8=%s,u=%d,na=%d,wpb=%d,i8u=%d,i8na=%d,i8wpb=%d,%s,loop=%d,ring=%d,i8ring=%d,i8ks=%d,xp=%d,mlb=%d,"
             "xpf=%d,i8xp=%d,occ=%d,i8occ=%d",
             f8[fi], u, na, wpb ? gk_gemv_wpb_max() : 4, u, na, wpb ? gk_gemv_wpb_max() : 4, rows[r], v % 3,
             (v / 2) % 3, (v / 2) % 2,
             i8ks[(v / 3) % 4], (v / 5) % 2, (v / 7) % 4, (v / 11) % 3, (v / 13) % 3, occs[(v / 17) % 3],
             occs[(v / 19) % 3]);
    return 1;
}

/* Rows per warp a variant spec gives fp8 weights at M (r1 / rm; 0: 4, but
 * 2 under mlb=2 or 3 at M >= 3 where x is permuted (xp): every job here has
 * fewer rows than 64 per SM and its M x k activations fit in 192 KiB). */
static int spec_rows_fp8(const char *spec, int M, int xp) {
    const char *p = strstr(spec, M == 1 ? ",r1=" : ",rm=");
    const int r = p ? atoi(p + 4) : 0;
    if (!r && M >= 3 && xp && (strstr(spec, ",mlb=2") || strstr(spec, ",mlb=3"))) return 2;
    return r ? r : 4;
}

/* A format whose block scales g_bn varies (the fp8 ring's scale-row pass). */
static int block_fp8(const fmt *f) { return is_fp8(f->dt) && f->sk == WS_BLOCK; }

/* Checks at 2 blocks per SM whose launch was padded: fp8 ring [0], W8A8 [1]. */
static int g_occ_padded[2];

/* block_only: fp8 block formats only (run again with other g_bn). */
static void test_multi_and_variants(int block_only) {
    static const int Ms[] = {1, 2, 4, 8};
    /* (count, n[], k, ld[]): odd and different row counts, padded rows, a
     * partial last K block (k = 400 with bk = 128) */
    static const struct {
        int count, n[3];
        int64_t k, ld[3];
    } S[] = {{2, {37, 136, 0}, 384, {384, 400, 0}},
             {3, {101, 9, 64}, 400, {400, 416, 400}},
             {3, {5, 77, 33}, 256, {256, 256, 272}},
             /* long rows: 16/32-bit weights split K over 4 warps (4624) and 2 (2320; f32: 4), with a
              * partial last block */
             {2, {21, 6, 0}, 4624, {4624, 4640, 0}},
             {2, {13, 3, 0}, 2320, {2320, 2336, 0}}};
    char saved[256], spec[256];
    gk_gemv_tune_str(saved, sizeof saved);
    for (size_t f = 0; f < sizeof FMTS / sizeof FMTS[0]; f++) {
        if (block_only && !block_fp8(&FMTS[f])) continue;
        for (size_t s = 0; s < sizeof S / sizeof S[0]; s++) {
            int64_t lds[3];
            for (int i = 0; i < 3; i++) lds[i] = S[s].ld[i];
            /* ld * element size must stay a multiple of 16 bytes for the GEMV */
            if (FMTS[f].dt == DT_F32 || dt_size(FMTS[f].dt) == 2)
                for (int i = 0; i < 3; i++) lds[i] = S[s].k + (lds[i] - S[s].k) / (int64_t)dt_size(FMTS[f].dt);
            for (int mi = 0; mi < 4; mi++) {
                const int M = Ms[mi];
                const int nc = is_fp8(FMTS[f].dt) ? 2 : 1;
                for (int codes = 0; codes < nc; codes++) {
                    job j;
                    if (job_init(&j, &FMTS[f], S[s].count, S[s].n, S[s].k, lds, M, codes)) {
                        job_free(&j);
                        continue;
                    }
                    /* the original kernels: reference bits (and vs the CPU), with the
                     * per-chunk scale load of 16/32-bit weights (cuda.gemv_unscaled off) */
                    gk_gemv_tune("v1");
                    float *ref[3];
                    gk_gemv_unscaled_allow(0);
                    const unsigned long long un_ref = gk_gemv_unscaled_launches();
                    check_job(&j, "v1", codes == CODES_RANDOM, ref);
                    CHECKF(gk_gemv_unscaled_launches() == un_ref, "unscaled gate off %s M=%d: launched",
                           FMTS[f].name, M);
                    gk_gemv_unscaled_allow(1);
                    /* every variant, single and multi, against those bits */
                    for (int v = 0; variant_spec(v, is_fp8(FMTS[f].dt), spec, sizeof spec); v++) {
                        CHECKF(gk_gemv_tune(spec) == 0, "tune %s", spec);
                        float *hs[3];
                        const unsigned long long ring0 = gk_gemv_ring_launches();
                        const unsigned long long fold0 = gk_gemv_fold_launches();
                        const unsigned long long un0 = gk_gemv_unscaled_launches();
                        const unsigned long long ks0 = gk_int8_ksplit_launches();
                        const unsigned long long xp0 = gk_gemv_xperm_launches();
                        const unsigned long long cap0 = gk_gemv_capped_launches();
                        const unsigned long long l2ef0 = gk_gemv_l2ef_launches();
                        const unsigned long long rpf0 = gk_gemv_ring_xpf_launches();
                        const unsigned long long i8xp0 = gk_int8_gemv_xp_launches();
                        const unsigned long long occ0 = gk_gemv_occ_launches();
                        const unsigned long long left0 = gk_gemv_occ_left_launches();
                        check_job(&j, spec, 0, hs);
                        /* the W8A8 register GEMV at M = 1 loaded its codes early where asked (i8xp=1; 2: k > 4096) */
                        if (is_w8a8(&FMTS[f])) {
                            const int wx = M == 1 && !strstr(spec, ",i8xp=0") &&
                                           (!strstr(spec, ",i8xp=2") || S[s].k > 4096) &&
                                           (!strstr(spec, "i8ring=1") || !gk_gemv_ring_supported());
                            CHECKF((gk_int8_gemv_xp_launches() > i8xp0) == (wx != 0), "variant %s %s M=%d: i8xp %s",
                                   spec, FMTS[f].name, M, wx ? "not launched" : "unexpected");
                        } else {
                            CHECKF(gk_int8_gemv_xp_launches() == i8xp0, "variant %s %s: i8xp on a float GEMV", spec,
                                   FMTS[f].name);
                        }
                        /* float GEMVs of 8-bit weights read x permuted exactly where asked for (xp=1,
                         * M >= 3, L1 no-allocate weight loads; every k here is a multiple of the chunk) */
                        const int wxp = !is_w8a8(&FMTS[f]) && dt_size(FMTS[f].dt) == 1 && M >= 3 &&
                                        strstr(spec, ",xp=1") && strstr(spec, ",na=1,");
                        CHECKF((gk_gemv_xperm_launches() > xp0) == (wxp != 0), "variant %s %s M=%d: xperm %s", spec,
                               FMTS[f].name, M, wxp ? "not launched" : "unexpected");
                        /* the register loop capped at 128 registers ran exactly where asked for (mlb=3:
                         * fp8, M >= 5, x permuted, 2 rows per warp) */
                        const int wcap = is_fp8(FMTS[f].dt) && M >= 5 && wxp && strstr(spec, ",mlb=3") &&
                                         spec_rows_fp8(spec, M, wxp) == 2;
                        CHECKF((gk_gemv_capped_launches() > cap0) == (wcap != 0), "variant %s %s M=%d: capped loop %s",
                               spec, FMTS[f].name, M, wcap ? "not launched" : "unexpected");
                        /* the W8A8 register GEMV split K where asked for (2, 4) or where the shape
                         * calls for it (by shape: >= 8 chunks of 16 bytes per lane unsplit) */
                        if (is_w8a8(&FMTS[f]) && (!strstr(spec, "i8ring=1") || !gk_gemv_ring_supported())) {
                            const int kn = atoi(strstr(spec, "i8ks=") + 5);
                            const int split = kn == 2 || kn == 4 || (kn == 0 && (S[s].k + 511) / 512 >= 8);
                            CHECKF((gk_int8_ksplit_launches() > ks0) == split, "variant %s %s k=%lld: K split %s",
                                   spec, FMTS[f].name, (long long)S[s].k, split ? "not launched" : "unexpected");
                        }
                        /* the weight rings ran exactly where asked for (fp8: ring, W8A8: i8ring)
                         * and the device can run them; the fp8 ring only where each group of rows
                         * reads one row of block scales (g_bn a multiple of the rows per warp) */
                        /* (M > 4: the register-capped ring, mlb=1, where x was permuted) */
                        const int f8ring = is_fp8(FMTS[f].dt) && (M <= 4 || (wxp && strstr(spec, ",mlb=1"))) &&
                                           (strstr(spec, ",ring=1") || strstr(spec, ",ring=2")) &&
                                           (FMTS[f].sk != WS_BLOCK || g_bn % spec_rows_fp8(spec, M, wxp) == 0);
                        const int want = f8ring || (is_w8a8(&FMTS[f]) && strstr(spec, "i8ring=1"));
                        /* the two-stage fp8 rings' weight copies carry the L2 evict_first hint (the
                         * bits are still v1's, compared below, which ran without it); ring=2 runs the
                         * three-stage ring unhinted, and the two-stage one where x is permuted */
                        if (!f8ring || strstr(spec, ",ring=1"))
                            CHECKF((gk_gemv_l2ef_launches() > l2ef0) == (f8ring && gk_gemv_ring_supported()),
                                   "variant %s %s M=%d: L2 evict_first hint %s", spec, FMTS[f].name, M,
                                   f8ring ? "not counted" : "unexpected");
                        /* the two-stage ring at M = 1 loaded its inputs early exactly where asked for */
                        const int wpf = f8ring && gk_gemv_ring_supported() && M == 1 && strstr(spec, ",ring=1") &&
                                        !strstr(spec, ",xpf=0");
                        CHECKF((gk_gemv_ring_xpf_launches() > rpf0) == (wpf != 0), "variant %s %s M=%d: xpf ring %s",
                               spec, FMTS[f].name, M, wpf ? "not launched" : "unexpected");
                        /* the M = 1 occupancy caps: at 2 blocks per SM every launch was padded or counted as
                         * left (registers already allow no more than 2; padding at 2 is checked to have
                         * happened at the end), at 0 neither (at 6 it depends on what fits: only the bits
                         * are checked); CUDA only */
                        {
                            const int w8 = is_w8a8(&FMTS[f]) && (!strstr(spec, "i8ring=1") || !gk_gemv_ring_supported());
                            const int fr = f8ring && gk_gemv_ring_supported() && strstr(spec, ",ring=1");
                            const int oc = atoi(strstr(spec, ",occ=") + 5), io = atoi(strstr(spec, ",i8occ=") + 7);
                            const int knob = fr ? oc : w8 ? io : 0;
                            const int cuda = gk_gemv_occ_supported();
                            const int padded = gk_gemv_occ_launches() > occ0, left = gk_gemv_occ_left_launches() > left0;
                            if (M == 1 && (fr || w8) && knob != 6) {
                                CHECKF((padded || left) == (knob == 2 && cuda), "variant %s %s M=%d: occupancy cap %s",
                                       spec, FMTS[f].name, M, knob == 2 ? "not applied" : "unexpected");
                                if (knob == 2 && padded) g_occ_padded[w8 ? 1 : 0]++;
                            } else if (M != 1 || !(fr || w8))
                                CHECKF(!padded && !left, "variant %s %s M=%d: occupancy cap applied", spec,
                                       FMTS[f].name, M);
                        }
                        if (want && gk_gemv_ring_supported())
                            CHECKF(gk_gemv_ring_launches() > ring0, "variant %s %s: no ring launch", spec,
                                   FMTS[f].name);
                        else
                            CHECKF(gk_gemv_ring_launches() == ring0, "variant %s %s: unexpected ring launch", spec,
                                   FMTS[f].name);
                        /* 16/32-bit weights (no block scales) at M <= 2 took the register loop
                         * without the scale load, except through the pipelined loop (loop=2) */
                        const int wun = is_f16_32(FMTS[f].dt) && M <= 2 && !strstr(spec, ",loop=2");
                        CHECKF((gk_gemv_unscaled_launches() > un0) == (wun != 0), "variant %s %s M=%d: unscaled %s",
                               spec, FMTS[f].name, M, wun ? "not launched" : "unexpected");
                        /* the fold widening ran exactly where asked for (e4m3; M <= 2, or above with
                         * L1 no-allocate weight loads) */
                        const int wfold = FMTS[f].dt == DT_F8E4M3 && (M <= 2 || strstr(spec, ",na=1,")) &&
                                          strstr(spec, "fp8=fold");
                        CHECKF((gk_gemv_fold_launches() > fold0) == (wfold != 0), "variant %s %s M=%d: fold %s",
                               spec, FMTS[f].name, M, wfold ? "not launched" : "unexpected");
                        for (int i = 0; i < j.count; i++) {
                            size_t ny = (size_t)M * j.w[i].n, d = ndiff(hs[i], ref[i], ny);
                            CHECKF(d == 0, "variant %s %s%s M=%d weight %d (n=%lld): %zu of %zu differ from v1",
                                   spec, FMTS[f].name, codes ? " (all codes)" : "", M, i, (long long)j.w[i].n, d, ny);
                        }
                        free_h(hs, j.count);
                        /* fp8 at M = 1 reading x's permuted twin (gk_gemv_twin): every launch (each
                         * weight alone and the multi launch) read it, and the bits are v1's */
                        if (M == 1 && is_fp8(FMTS[f].dt) && S[s].k % 16 == 0) {
                            float *dxt = dalloc(gk_gemv_twin_bytes(S[s].k));
                            gk_gemv_twin_fill(gpu_backend_stream(gpu), dxt, j.dx, S[s].k);
                            const unsigned long long t0 = gk_gemv_twin_launches();
                            gk_gemv_twin(dxt, NULL);
                            float *ht[3];
                            check_job(&j, spec, 0, ht);
                            gk_gemv_twin(NULL, NULL);
                            CHECKF(gk_gemv_twin_launches() - t0 == (unsigned long long)j.count + 1,
                                   "variant %s %s: %llu twin launches, want %d", spec, FMTS[f].name,
                                   gk_gemv_twin_launches() - t0, j.count + 1);
                            for (int i = 0; i < j.count; i++) {
                                size_t d = ndiff(ht[i], ref[i], (size_t)j.w[i].n);
                                CHECKF(d == 0, "variant %s %s twin weight %d: %zu of %lld differ from v1", spec,
                                       FMTS[f].name, i, d, (long long)j.w[i].n);
                            }
                            free_h(ht, j.count);
                            gpu->free(gpu, dxt);
                        }
                    }
                    /* count = 1 multi == gk_gemv too */
                    gk_gemv_tune(saved);
                    job one = j;
                    one.count = 1;
                    check_job(&one, "count=1", 0, NULL);
                    free_h(ref, j.count);
                    job_free(&j);
                }
            }
        }
    }
    gk_gemv_tune(saved);
    /* the cap at 2 padded some launch of each kind (the kernels that fit more than 2 per SM) */
    if (!block_only && gk_gemv_occ_supported())
        CHECKF(g_occ_padded[0] > 0 && g_occ_padded[1] > 0, "occupancy cap at 2 never padded: fp8 %d, W8A8 %d",
               g_occ_padded[0], g_occ_padded[1]);
}

/* Gate/up with SiLU in the GEMV epilogue (gk_gemv_silu): for every float
 * format, odd and even row counts, rows whose K is split over warps, M = 1..8
 * and every variant, out is bitwise gk_gemv_multi then gk_silu_mul; the
 * gate/up buffers are left untouched and nothing is written past out. */
/* block_only: fp8 block formats only (run again with other g_bn). */
static void test_gate_up_silu(int block_only) {
    static const struct {
        int n;
        int64_t k, ld;
    } S[] = {{37, 384, 400}, {13, 2320, 2336}, {64, 4624, 4624}};
    static const int Ms[] = {1, 2, 3, 8};
    char saved[256], spec[256];
    gk_gemv_tune_str(saved, sizeof saved);
    void *st = gpu_backend_stream(gpu);
    for (size_t f = 0; f < sizeof FMTS / sizeof FMTS[0]; f++) {
        if (is_w8a8(&FMTS[f])) continue; /* W8A8 keeps silu_actq (the down projection needs the codes) */
        if (block_only && !block_fp8(&FMTS[f])) continue;
        for (size_t s = 0; s < sizeof S / sizeof S[0]; s++) {
            int64_t ld = S[s].ld;
            if (FMTS[f].dt == DT_F32 || dt_size(FMTS[f].dt) == 2) ld = S[s].k + (ld - S[s].k) / (int64_t)dt_size(FMTS[f].dt);
            const int ns[2] = {S[s].n, S[s].n};
            const int64_t lds[2] = {ld, ld};
            for (int mi = 0; mi < 4; mi++) {
                const int M = Ms[mi];
                job j;
                if (job_init(&j, &FMTS[f], 2, ns, S[s].k, lds, M, CODES_RANDOM)) {
                    job_free(&j);
                    continue;
                }
                const size_t ny = (size_t)M * S[s].n;
                float *dref = dalloc((ny + GUARD) * 4), *dout = dalloc((ny + GUARD) * 4);
                float *href = malloc((ny + GUARD) * 4), *hout = malloc((ny + GUARD) * 4);
                float *hg[2];
                gk_multi mw;
                memset(&mw, 0, sizeof mw);
                mw.count = 2;
                for (int i = 0; i < 2; i++) mw.w[i] = *view(&j.wg[i]);
                for (int v = 0; variant_spec(v, is_fp8(FMTS[f].dt), spec, sizeof spec); v++) {
                    CHECKF(gk_gemv_tune(spec) == 0, "tune %s", spec);
                    /* reference: the two steps */
                    mw.y[0] = j.dy[0][0];
                    mw.y[1] = j.dy[0][1];
                    mw.silu = NULL;
                    gk_gemv_multi(st, &mw, j.dx, M);
                    fill_sentinel(dref, ny + GUARD);
                    gk_silu_mul(st, dref, j.dy[0][0], j.dy[0][1], ny);
                    /* fused, into sentinel-filled buffers */
                    for (int i = 0; i < 2; i++) fill_sentinel(j.dy[1][i], ny + GUARD);
                    fill_sentinel(dout, ny + GUARD);
                    mw.y[0] = j.dy[1][0];
                    mw.y[1] = j.dy[1][1];
                    mw.silu = dout;
                    CHECKF(gk_gemv_silu_ok(&mw, M), "silu_ok %s M=%d", FMTS[f].name, M);
                    gk_gemv_silu(st, &mw, j.dx, M);
                    CHECKF(gpu->sync(gpu) == 0, "sync: %s", dl_errmsg());
                    gpu->to_host(gpu, href, dref, (ny + GUARD) * 4);
                    gpu->to_host(gpu, hout, dout, (ny + GUARD) * 4);
                    const size_t d = ndiff(href, hout, ny);
                    CHECKF(d == 0, "gate_up_silu %s %s n=%d k=%lld M=%d: %zu of %zu differ from gemv_multi + silu_mul",
                           spec, FMTS[f].name, S[s].n, (long long)S[s].k, M, d, ny);
                    CHECKF(guard_ok(hout, ny), "gate_up_silu %s %s M=%d: wrote past out", spec, FMTS[f].name, M);
                    job_get(&j, 1, hg);
                    for (int i = 0; i < 2; i++)
                        CHECKF(untouched(hg[i], ny + GUARD), "gate_up_silu %s %s M=%d: wrote to the %s buffer", spec, FMTS[f].name, M,
                               i ? "up" : "gate");
                    free_h(hg, 2);
                    /* M = 1: the same launch reading x's twin (fp8 weights) and writing out's twin
                     * beside out: out has the same bits, and its twin is the one made from out */
                    if (M == 1 && S[s].k % 16 == 0 && S[s].n % 16 == 0) { /* (the backend makes twins of
                                                                            * rows of whole groups of 16) */
                        const size_t xb = gk_gemv_twin_bytes(S[s].k), ob = gk_gemv_twin_bytes(S[s].n);
                        float *dxt = dalloc(xb), *dot = dalloc(ob), *dor = dalloc(ob);
                        float *z = calloc(1, ob), *ho = malloc(ob), *hr = malloc(ob);
                        gpu->from_host(gpu, dot, z, ob); /* the twin's padding: zeros, as gk_gemv_twin_fill's */
                        gk_gemv_twin_fill(st, dxt, j.dx, S[s].k);
                        fill_sentinel(dout, ny + GUARD);
                        const unsigned long long t0 = gk_gemv_twin_launches();
                        gk_gemv_twin(dxt, dot);
                        gk_gemv_silu(st, &mw, j.dx, M);
                        gk_gemv_twin(NULL, NULL);
                        CHECKF(gk_gemv_twin_launches() - t0 == (is_fp8(FMTS[f].dt) ? 1u : 0u),
                               "gate_up_silu twin %s %s: %llu twin reads", spec, FMTS[f].name,
                               gk_gemv_twin_launches() - t0);
                        gk_gemv_twin_fill(st, dor, dref, S[s].n);
                        CHECKF(gpu->sync(gpu) == 0, "sync: %s", dl_errmsg());
                        gpu->to_host(gpu, hout, dout, (ny + GUARD) * 4);
                        gpu->to_host(gpu, ho, dot, ob);
                        gpu->to_host(gpu, hr, dor, ob);
                        CHECKF(ndiff(href, hout, ny) == 0 && guard_ok(hout, ny), "gate_up_silu twin %s %s n=%d: out differs",
                               spec, FMTS[f].name, S[s].n);
                        CHECKF(ndiff(ho, hr, ob / 4) == 0, "gate_up_silu twin %s %s n=%d: out's twin differs", spec,
                               FMTS[f].name, S[s].n);
                        gpu->free(gpu, dxt), gpu->free(gpu, dot), gpu->free(gpu, dor);
                        free(z), free(ho), free(hr);
                    }
                }
                /* refusals: unequal rows, no output, count 3 */
                mw.silu = dout;
                mw.w[1].n = mw.w[0].n - 1;
                CHECK(!gk_gemv_silu_ok(&mw, M));
                mw.w[1] = mw.w[0];
                mw.silu = NULL;
                CHECK(!gk_gemv_silu_ok(&mw, M));
                mw.silu = dout;
                CHECK(!gk_gemv_silu_ok(&mw, 9));
                gpu->free(gpu, dref), gpu->free(gpu, dout);
                free(href), free(hout);
                job_free(&j);
            }
        }
    }
    gk_gemv_tune(saved);
}

/* The fold widening (the default for e4m3 at M <= 2) is bitwise h2 over
 * the activation range docs/gpu_backend.md states (every nonzero |x| >=
 * 2^-109, no overflow in h2): activations with exponents spread over
 * [-109, 100], block/channel scales, ring and register loop, M = 1, 2, 4, 8,
 * counted where it ran; and the gate (cuda.gemv_fold) turns it into h2. */
static void test_fold_range(void) {
    static const fmt F[] = {{DT_F8E4M3, WS_BLOCK, ACT_NATIVE, "fp8e4m3 block"},
                            {DT_F8E4M3, WS_CHANNEL, ACT_NATIVE, "fp8e4m3 channel"}};
    char saved[256];
    gk_gemv_tune_str(saved, sizeof saved);
    static const int Ms[4] = {1, 2, 4, 8};
    for (size_t f = 0; f < 2; f++)
        for (int mi = 0; mi < 4; mi++)
            for (int codes = 0; codes < 2; codes++) {
                const int M = Ms[mi];
                const int ns[1] = {45};
                const int64_t lds[1] = {400};
                job j;
                if (job_init(&j, &F[f], 1, ns, 400, lds, M, codes)) {
                    job_free(&j);
                    continue;
                }
                for (size_t i = 0; i < (size_t)M * 400; i++) {
                    const int e = -109 + (int)(tu_rand_u64(&rs) % 210);
                    j.x[i] = ldexpf(1.0f + 0.5f * fabsf(tu_randf(&rs)), e) * (tu_rand_u64(&rs) & 1 ? -1.0f : 1.0f);
                }
                gpu->from_host(gpu, j.dx, j.x, (size_t)M * 400 * 4);
                static const char *rings[2] = {"ring=1", "ring=0"};
                for (int r = 0; r < 2; r++) {
                    char sf[64], sh[64];
                    snprintf(sf, sizeof sf, "default,fp8=fold,%s", rings[r]);
                    snprintf(sh, sizeof sh, "default,fp8=h2,%s", rings[r]);
                    float *hf[1], *hh[1], *hg[1];
                    CHECK(gk_gemv_tune(sf) == 0);
                    unsigned long long f0 = gk_gemv_fold_launches();
                    job_run(&j, 0);
                    job_get(&j, 0, hf);
                    CHECKF(gk_gemv_fold_launches() > f0, "fold %s %s M=%d: not launched", sf, F[f].name, M);
                    /* the gate off: the same spec runs h2 */
                    gk_gemv_fold_allow(0);
                    f0 = gk_gemv_fold_launches();
                    job_run(&j, 0);
                    job_get(&j, 0, hg);
                    gk_gemv_fold_allow(1);
                    CHECKF(gk_gemv_fold_launches() == f0, "fold gate off %s: launched", sf);
                    CHECK(gk_gemv_tune(sh) == 0);
                    job_run(&j, 0);
                    job_get(&j, 0, hh);
                    const size_t ny = (size_t)M * 45;
                    const size_t d = ndiff(hf[0], hh[0], ny), dg = ndiff(hg[0], hh[0], ny);
                    CHECKF(d == 0, "fold vs h2 %s %s M=%d codes=%d: %zu of %zu differ", rings[r], F[f].name, M, codes,
                           d, ny);
                    CHECKF(dg == 0, "fold gate off vs h2 %s %s M=%d: %zu differ", rings[r], F[f].name, M, dg);
                    free(hf[0]), free(hh[0]), free(hg[0]);
                }
                job_free(&j);
            }
    gk_gemv_tune(saved);
}

/* The opt-in fp16 chunk products (fp8=hf, e4m3 at M = 1): every M = 1
 * launch form (the ring with each x-load knob, the register loop; single
 * and multi) within HF_TOL of max|ref| of the CPU backend, counted where
 * it ran, not bitwise the fold result (so the fp16 path is what ran), run
 * to run bitwise, and with its gate off the same spec gives fold's bits. */
#define HF_TOL 4e-3
static void test_hf(void) {
    if (!gk_gemv_hf_built()) { /* HIP: fp8=hf runs fold, counted as such */
        printf("fp8=hf: not built on this backend (HIP), its checks skipped\n");
        return;
    }
    static const fmt F[] = {{DT_F8E4M3, WS_BLOCK, ACT_NATIVE, "fp8e4m3 block"},
                            {DT_F8E4M3, WS_CHANNEL, ACT_NATIVE, "fp8e4m3 channel"}};
    char saved[256];
    gk_gemv_tune_str(saved, sizeof saved);
    static const char *forms[4] = {"ring=1,xpf=2", "ring=1,xpf=1", "ring=1,xpf=0", "ring=0"};
    static const int64_t ks[2] = {512, 5120};
    for (size_t f = 0; f < 2; f++)
        for (int ki = 0; ki < 2; ki++) {
            const int ns[3] = {96, 40, 33};
            const int64_t lds[3] = {ks[ki], ks[ki], ks[ki]};
            job j;
            if (job_init(&j, &F[f], 3, ns, ks[ki], lds, 1, CODES_RANDOM)) {
                job_free(&j);
                continue;
            }
            float *yc[3];
            for (int i = 0; i < 3; i++) {
                yc[i] = malloc((size_t)ns[i] * 4);
                cpu->matmul(cpu, yc[i], j.x, &j.w[i], 1);
            }
            for (int fi = 0; fi < 4; fi++) {
                char sh[64], sf[64];
                snprintf(sh, sizeof sh, "default,fp8=hf,%s", forms[fi]);
                snprintf(sf, sizeof sf, "default,fp8=fold,%s", forms[fi]);
                float *h1[3], *h2[3], *hm[3], *hg[3], *hfold[3];
                CHECK(gk_gemv_tune(sh) == 0);
                unsigned long long c0 = gk_gemv_hf_launches();
                job_run(&j, 0);
                job_get(&j, 0, h1);
                job_run(&j, 0);
                job_get(&j, 0, h2);
                job_run(&j, 1);
                job_get(&j, 1, hm);
                CHECKF(gk_gemv_hf_launches() >= c0 + 7, "hf %s %s k=%lld: %llu launches counted, 7 due", forms[fi],
                       F[f].name, (long long)ks[ki], gk_gemv_hf_launches() - c0);
                gk_gemv_hf_allow(0);
                c0 = gk_gemv_hf_launches();
                job_run(&j, 0);
                job_get(&j, 0, hg);
                gk_gemv_hf_allow(1);
                CHECKF(gk_gemv_hf_launches() == c0, "hf gate off %s: counted", forms[fi]);
                CHECK(gk_gemv_tune(sf) == 0);
                job_run(&j, 0);
                job_get(&j, 0, hfold);
                size_t nd_fold = 0;
                for (int i = 0; i < 3; i++) {
                    const size_t ny = (size_t)ns[i];
                    const double r = tu_max_rel(h1[i], yc[i], ny);
                    CHECKF(r <= HF_TOL && r > 0.0, "hf %s %s k=%lld weight %d vs CPU: rel %.3g (want (0, %g])",
                           forms[fi], F[f].name, (long long)ks[ki], i, r, HF_TOL);
                    CHECKF(ndiff(h1[i], h2[i], ny) == 0, "hf %s %s: run to run differs", forms[fi], F[f].name);
                    CHECKF(ndiff(h1[i], hm[i], ny) == 0, "hf %s %s weight %d: multi differs from single", forms[fi],
                           F[f].name, i);
                    CHECKF(ndiff(hg[i], hfold[i], ny) == 0, "hf gate off %s %s weight %d: not fold's bits",
                           forms[fi], F[f].name, i);
                    CHECKF(guard_ok(h1[i], ny) && guard_ok(hm[i], ny), "hf %s weight %d: wrote past its rows",
                           forms[fi], i);
                    nd_fold += ndiff(h1[i], hfold[i], ny);
                }
                CHECKF(nd_fold > 0, "hf %s %s k=%lld: bitwise fold (the fp16 path did not run)", forms[fi],
                       F[f].name, (long long)ks[ki]);
                free_h(h1, 3), free_h(h2, 3), free_h(hm, 3), free_h(hg, 3), free_h(hfold, 3);
            }
            free_h(yc, 3);
            job_free(&j);
        }
    gk_gemv_tune(saved);
}

/* multi_ok refuses mixed jobs; tune refuses unknown knobs, atomically. */
static void test_refusals(void) {
    dl_weight a = make_w(DT_BF16, 16, 128, 128, WS_NONE, ACT_NATIVE, 0, 0);
    dl_weight b = make_w(DT_BF16, 16, 256, 256, WS_NONE, ACT_NATIVE, 0, 0);
    dl_weight c = make_w(DT_F16, 16, 128, 128, WS_NONE, ACT_NATIVE, 0, 0);
    dl_weight q = make_w(DT_I8, 16, 128, 128, WS_CHANNEL, ACT_INT8_TOKEN, 0, 0);
    CHECK(gpu->upload(gpu, &a) == 0 && gpu->upload(gpu, &b) == 0 && gpu->upload(gpu, &c) == 0 &&
          gpu->upload(gpu, &q) == 0);
    float *y = dalloc(4096);
    gk_multi mw;
    memset(&mw, 0, sizeof mw);
    mw.count = 2;
    mw.w[0] = *view(&a), mw.w[1] = *view(&a), mw.y[0] = y, mw.y[1] = y;
    CHECK(gk_gemv_multi_ok(&mw));
    mw.w[1] = *view(&b);
    CHECK(!gk_gemv_multi_ok(&mw)); /* different k */
    mw.w[1] = *view(&c);
    CHECK(!gk_gemv_multi_ok(&mw)); /* different dtype */
    mw.w[1] = *view(&a);
    mw.count = 0;
    CHECK(!gk_gemv_multi_ok(&mw));
    mw.count = GK_MULTI_MAX + 1;
    CHECK(!gk_gemv_multi_ok(&mw));
    mw.count = 2;
    mw.y[1] = NULL;
    CHECK(!gk_gemv_multi_ok(&mw));
    mw.y[1] = y;
    mw.w[0] = *view(&q), mw.w[1] = *view(&q);
    CHECK(gk_int8_gemv_multi_ok(&mw));
    mw.w[1] = *view(&a);
    CHECK(!gk_int8_gemv_multi_ok(&mw));
    char s0[256], s1[256];
    gk_gemv_tune_str(s0, sizeof s0);
    CHECK(gk_gemv_tune("u=3") == -1);
    CHECK(gk_gemv_tune("fp8=h2,bogus=1") == -1);
    CHECK(gk_gemv_tune("wpb=6") == -1);
    CHECK(gk_gemv_wpb_max() == 4 || gk_gemv_wpb_max() == 8);
    if (gk_gemv_wpb_max() == 4) CHECK(gk_gemv_tune("i8wpb=8") == -1); /* gfx906: beyond the launch bound */
    CHECK(gk_gemv_tune("r1=3") == -1);
    gk_gemv_tune_str(s1, sizeof s1);
    CHECKF(!strcmp(s0, s1), "a refused spec changed the settings: %s -> %s", s0, s1);
    CHECK(gk_gemv_tune("v1") == 0);
    gk_gemv_tune_str(s1, sizeof s1);
    CHECKF(strstr(s1, "fp8=f32,u=2,na=0,wpb=4") != NULL, "v1 = %s", s1);
    gk_gemv_tune(s0);
    gpu->free(gpu, y);
    gpu->release(gpu, &a), gpu->release(gpu, &b), gpu->release(gpu, &c), gpu->release(gpu, &q);
    free_w(&a), free_w(&b), free_w(&c), free_w(&q);
}

int main(void) {
    rs = tu_seed();
    gpu = be_create(GN, 0);
    if (!gpu) gpu = gpu_backend_create(GN);
    if (!gpu) {
        printf("SKIP: no CUDA device (%s)\n", dl_errmsg());
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    cpu = be_create("cpu", 2);
    CHECK(cpu != NULL);
    if (!cpu) return TEST_END();
    char s[256];
    gk_gemv_tune_str(s, sizeof s);
    printf("GEMV settings at start: %s\n", s);
    /* the permuted activations' workspace (M <= 8 rows of the longest k here) */
    const size_t xpb = (size_t)8 * 8192 * sizeof(float);
    void *xpws = dalloc(xpb);
    gk_gemv_xperm_ws(xpws, xpb);
    test_refusals();
    test_fold_range();
    test_hf();
    test_multi_and_variants(0);
    test_gate_up_silu(0);
    /* fp8 block scales over 2 rows: a group of 4 rows spans two scale rows,
     * so the ring (one scale row per group) must leave it to the register
     * loop, while groups of 1 or 2 rows and gate/up pairs (2 rows of each)
     * still take the ring; the bits stay v1's either way */
    g_bn = 2;
    test_multi_and_variants(1);
    test_gate_up_silu(1);
    g_bn = 128;
    gk_gemv_xperm_ws(NULL, 0);
    gpu->free(gpu, xpws);
    be_destroy(gpu);
    be_destroy(cpu);
    return TEST_END();
}

#else /* no GPU backend in this build */

int main(void) {
    printf("SKIP: no CUDA device (built without a GPU backend)\n");
    printf("0 passed, 0 failed, 1 skipped\n");
    return 0;
}

#endif
