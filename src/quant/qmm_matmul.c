/* qmm_matmul: validation, activation quantization and dispatch of the
 * quantized matmul kernels (see qmatmul.h for names and docs/quant_cpu.md
 * for the design). Work is split over panels of output rows; every output
 * element is computed by one thread from its own inputs, so results do not
 * depend on the thread count. */
#include <stdatomic.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/err.h"
#include "core/kreg.h"
#include "core/rowspread.h"
#include "core/tpool.h"
#include "quant/actq.h"
#include "quant/qmatmul.h"

static kreg_kernel K_I8_V512 = KREG_KERNEL("cpu.qmm.int8.avx512vnni", "W8A8 int8 dot, AVX-512 VNNI 4x6 tiles (M >= 3, and M = 2 at K >= 4096)");
static kreg_kernel K_F8_512 = KREG_KERNEL("cpu.qmm.fp8.avx512", "fp8 weights, AVX-512: 8-row zmm GEMV (M <= 8), 6x8 register tiles");
static kreg_kernel K_F8_VBMI = KREG_KERNEL("cpu.qmm.fp8.avx512vbmi", "e4m3 weights, AVX-512 register GEMV (M <= 8) widening through vpermi2b tables (same bits)");
static kreg_kernel K_WO_512 = KREG_KERNEL("cpu.qmm.i8wo.avx512", "int8 weights x fp32 activations, AVX-512 tiles (M >= 2)");
static kreg_kernel K_I8_VNNI = KREG_KERNEL("cpu.qmm.int8.avxvnni", "W8A8 int8 dot, AVX-VNNI vpdpbusd");
static kreg_kernel K_I8_AVX2 = KREG_KERNEL("cpu.qmm.int8.avx2", "W8A8 int8 dot, AVX2 maddubs/madd");
static kreg_kernel K_I8_REF = KREG_KERNEL("cpu.qmm.int8.ref", "W8A8 int8 dot, scalar");
static kreg_kernel K_F8_AVX2 = KREG_KERNEL("cpu.qmm.fp8.avx2", "fp8 weights, fp32 FMA, AVX2/F16C widening");
static kreg_kernel K_F8_REF = KREG_KERNEL("cpu.qmm.fp8.ref", "fp8 weights, table widening, scalar");
static kreg_kernel K_WO_AVX2 = KREG_KERNEL("cpu.qmm.i8wo.avx2", "int8 weights x fp32 activations, AVX2");
static kreg_kernel K_WO_REF = KREG_KERNEL("cpu.qmm.i8wo.ref", "int8 weights x fp32 activations, scalar");
static kreg_kernel K_AQ8_AVX2 = KREG_KERNEL("cpu.actq.int8.avx2", "per-token int8 activation quantizer, AVX2");
static kreg_kernel K_AQ8_REF = KREG_KERNEL("cpu.actq.int8.ref", "per-token int8 activation quantizer, scalar");
static kreg_kernel K_AQF_AVX2 = KREG_KERNEL("cpu.actq.fp8.avx2", "fp8 e4m3 activation quantizer, AVX2");
static kreg_kernel K_AQF_REF = KREG_KERNEL("cpu.actq.fp8.ref", "fp8 e4m3 activation quantizer, scalar");

#define PANEL 64 /* output rows per task */
#define NSEG_PLAIN 512 /* K segment for channel/tensor scales */

/* CPU features, read once with cpuid + xgetbv (clang's
 * __builtin_cpu_supports knows neither "f16c" nor "avxvnni"). */
typedef struct {
    int avx2;   /* avx2 + fma + f16c, YMM state enabled */
    int vnni;   /* AVX-VNNI (256-bit vpdpbusd, VEX) */
    int avx512; /* avx512 f/vl/dq/bw, ZMM state enabled */
    int vnni512; /* avx512 + AVX512-VNNI */
    int vbmi;    /* avx512 + AVX512-VBMI */
} cpu_feats;

static cpu_feats detect(void) {
    cpu_feats f = {0};
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(fma && osxsave && avx && f16c) || __get_cpuid_max(0, NULL) < 7) return f;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return f; /* XMM and YMM state */
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = (b >> 5) & 1;
    if (!f.avx2) return f;
    unsigned c7 = c, b7 = b;
    __cpuid_count(7, 1, a, b, c, d);
    f.vnni = (a >> 4) & 1;
    int zmm_os = (lo & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM state */
    f.avx512 = zmm_os && ((b7 >> 16) & 1) && ((b7 >> 17) & 1) && ((b7 >> 30) & 1) &&
               ((b7 >> 31) & 1);
    f.vnni512 = f.avx512 && ((c7 >> 11) & 1);
    f.vbmi = f.avx512 && ((c7 >> 1) & 1);
#endif
    return f;
}

/* Detected once; the packed bits are published atomically. */
unsigned qmm_cpu_features(void) {
    static _Atomic int bits = -1;
    int v = atomic_load(&bits);
    if (v < 0) {
        cpu_feats t = detect();
        v = (t.avx2 ? QMM_CPU_AVX2 : 0) | (t.vnni ? QMM_CPU_VNNI : 0) |
            (t.avx512 ? QMM_CPU_AVX512 : 0) | (t.vnni512 ? QMM_CPU_VNNI512 : 0) |
            (t.vbmi ? QMM_CPU_VBMI : 0);
        atomic_store(&bits, v);
    }
    return (unsigned)v;
}

static cpu_feats feats(void) {
    unsigned v = qmm_cpu_features();
    return (cpu_feats){.avx2 = !!(v & QMM_CPU_AVX2), .vnni = !!(v & QMM_CPU_VNNI),
                       .avx512 = !!(v & QMM_CPU_AVX512), .vnni512 = !!(v & QMM_CPU_VNNI512),
                       .vbmi = !!(v & QMM_CPU_VBMI)};
}

/* Pick fast (counting it) or reference (counting that); force_ref: the
 * reference, counting nothing. Returns 1 for the fast path. */
static int pick(kreg_kernel *fast, kreg_kernel *ref, int avail, int force_ref) {
    if (force_ref) return 0;
    if (avail && kreg_use(fast)) return 1;
    kreg_hit(ref);
    return 0;
}

/* Measured on the EPYC dev VM (2026-12-05, bench/cpu-2026-12-05d/ab_m23.sh,
 * GB/s of weight bytes, one core, per-row VNNI dot -> tiles): M = 3 at
 * K = 896..4096 10.1-14.4 -> 15.4-19.9; M = 2 at K = 4096, 4864 13.8-15.0 ->
 * 18.1-19.9, but at K <= 2048 the per-row dot, whose rows are spread out,
 * is as fast (4864x896: 17.4-18.5 either way). */
int qmm_i8_tiles_at(int M, int64_t K) { return M >= 3 || (M == 2 && K >= 4096); }

int qmm_act_group(const dl_weight *w) { return w->scale_kind == WS_BLOCK ? w->bk : 128; }

static int validate(const dl_weight *w) {
    const char *nm = w->name ? w->name : "(weight)";
    if (w->dtype != DT_F8E4M3 && w->dtype != DT_F8E5M2 && w->dtype != DT_I8)
        return dl_err("qmm: %s: dtype %s is not a quantized dtype", nm, dt_name(w->dtype));
    if (w->n <= 0 || w->k <= 0 || w->ld < w->k || !w->data)
        return dl_err("qmm: %s: bad shape n=%lld k=%lld ld=%lld", nm, (long long)w->n,
                      (long long)w->k, (long long)w->ld);
    if (w->scale_kind != WS_NONE) {
        if (!w->scale) return dl_err("qmm: %s: missing scales", nm);
        if (w->scale_dtype != DT_F32 && w->scale_dtype != DT_BF16 && w->scale_dtype != DT_F16)
            return dl_err("qmm: %s: unsupported scale dtype %s", nm, dt_name(w->scale_dtype));
    }
    if (w->scale_kind == WS_BLOCK && (w->bn <= 0 || w->bk <= 0))
        return dl_err("qmm: %s: bad block size %dx%d", nm, w->bn, w->bk);
    if (w->bias && w->bias_dtype != DT_F32 && w->bias_dtype != DT_BF16 && w->bias_dtype != DT_F16)
        return dl_err("qmm: %s: unsupported bias dtype %s", nm, dt_name(w->bias_dtype));
    int fp8 = w->dtype != DT_I8;
    switch (w->actq) {
    case ACT_NATIVE: break;
    case ACT_INT8_TOKEN:
        if (fp8) return dl_err("qmm: %s: int8 activations with %s weights are not supported", nm,
                               dt_name(w->dtype));
        if ((w->scale_kind == WS_BLOCK ? w->bk : w->k) > 131072)
            return dl_err("qmm: %s: K segment too long for an exact int32 dot", nm);
        break;
    case ACT_FP8_GROUP:
    case ACT_FP8_TOKEN:
    case ACT_FP8_STATIC:
        if (!fp8) return dl_err("qmm: %s: fp8 activations with int8 weights are not supported", nm);
        if (w->actq == ACT_FP8_STATIC && !(w->act_scale > 0.0f))
            return dl_err("qmm: %s: static fp8 activations need a positive input scale", nm);
        break;
    default: return dl_err("qmm: %s: unknown activation policy %d", nm, (int)w->actq);
    }
    return 0;
}

typedef struct {
    const qmm_f32job *fj;
    const qmm_i8job *ij;
    int kind; /* 0 ref, 1 avx2, 2 vnni, 3 avx512 (vnni512 for int8) */
    int64_t panel; /* output rows per task: PANEL, or a spread chunk (rs_chunk_rows) */
    _Atomic int oom;
} task_ctx;

/* Output rows [*n0, *n1) of tasks [b, e) over a weight of n rows. */
static void task_rows(const task_ctx *c, int64_t n, size_t b, size_t e, int64_t *n0, int64_t *n1) {
    *n0 = (int64_t)b * c->panel;
    *n1 = (int64_t)e * c->panel < n ? (int64_t)e * c->panel : n;
}

static void run_f32(void *p, size_t b, size_t e) {
    task_ctx *c = p;
    int64_t n0, n1;
    task_rows(c, c->fj->w->n, b, e, &n0, &n1);
    int rc = c->kind == 3 ? fp8mm_rows_avx512(c->fj, n0, n1)
             : c->kind    ? fp8mm_rows_avx2(c->fj, n0, n1)
                          : fp8mm_rows_ref(c->fj, n0, n1);
    if (rc) atomic_store(&c->oom, 1);
}

static void run_i8(void *p, size_t b, size_t e) {
    task_ctx *c = p;
    int64_t n0, n1;
    task_rows(c, c->ij->w->n, b, e, &n0, &n1);
    if (c->kind == 3) int8mm_rows_avx512vnni(c->ij, n0, n1);
    else if (c->kind == 2) int8mm_rows_avxvnni(c->ij, n0, n1);
    else if (c->kind == 1) int8mm_rows_avx2(c->ij, n0, n1);
    else int8mm_rows_ref(c->ij, n0, n1);
}

/* Run fn over the weight's n output rows in tasks of c->panel rows; G > 0
 * (rows per tile of the decode kernel that will run, which reads spread-out
 * rows, core/rowspread.h) when spreading is on: larger tasks so the tile's
 * parts lie far apart. Sets *spread. */
static void run_tasks(tpool *tp, const dl_weight *w, int G, int *spread, tp_fn fn, task_ctx *c) {
    const int64_t n = w->n;
    c->panel = PANEL;
    *spread = G > 0 && rs_use();
    if (*spread)
        c->panel = (int64_t)rs_chunk_rows((size_t)n, (size_t)w->ld * (size_t)dt_size(w->dtype), G,
                                          tp_nthreads(tp));
    size_t ntask = (size_t)((n + c->panel - 1) / c->panel);
    if (tp && ntask > 1) tp_run(tp, ntask, 1, fn, c);
    else fn(c, 0, ntask);
}

static int qmm_run(float *y, const float *x, const dl_weight *w, int M, tpool *tp, int force_ref) {
    if (validate(w)) return -1;
    if (M <= 0) return 0;
    const int64_t K = w->k;
    const cpu_feats cf = feats();
    const int avx2 = cf.avx2, big = M >= 2 && !force_ref;
    task_ctx c = {0};
    if (w->actq == ACT_INT8_TOKEN) {
        int64_t qld = (K + 31) / 32 * 32;
        int8_t *xq = malloc((size_t)M * (size_t)qld);
        float *xs = malloc((size_t)M * sizeof(float));
        if (!xq || !xs) {
            free(xq), free(xs);
            return dl_err("qmm: out of memory quantizing activations");
        }
        if (pick(&K_AQ8_AVX2, &K_AQ8_REF, avx2, force_ref)) actq_int8_token_avx2(xq, qld, xs, x, M, K);
        else actq_int8_token_ref(xq, qld, xs, x, M, K);
        qmm_i8job j = {.w = w, .xq = xq, .qld = qld, .xs = xs, .M = M, .y = y};
        c.ij = &j;
        uint8_t *xu = NULL;
        if (!force_ref && qmm_i8_tiles_at(M, K) && cf.vnni512 && kreg_use(&K_I8_V512)) {
            c.kind = 3;
            xu = malloc((size_t)M * (size_t)qld);
            if (!xu) {
                free(xq), free(xs);
                return dl_err("qmm: out of memory quantizing activations");
            }
            for (int64_t i = 0; i < (int64_t)M * qld; i++) xu[i] = (uint8_t)xq[i] ^ 0x80;
            j.xu = xu;
        } else if (!force_ref && cf.vnni && kreg_use(&K_I8_VNNI)) c.kind = 2;
        else c.kind = pick(&K_I8_AVX2, &K_I8_REF, avx2, force_ref);
        /* the 4-row tile kernels (avx2, vnni) at decode sizes take spread-out rows (the
         * AVX-512 VNNI panels at M = 4..8 measured slower spread: not done there) */
        run_tasks(tp, w, M < 4 && (c.kind == 1 || c.kind == 2) ? 4 : 0, &j.spread, run_i8, &c);
        free(xq), free(xs), free(xu);
        return 0;
    }
    qmm_f32job j = {.w = w, .x = x, .M = M, .y = y};
    j.seg = w->scale_kind == WS_BLOCK ? w->bk : NSEG_PLAIN;
    float *xw = NULL, *xs = NULL;
    if (w->actq != ACT_NATIVE) {
        int64_t group = 0, nxs = M;
        if (w->actq == ACT_FP8_GROUP) {
            group = qmm_act_group(w);
            j.seg = group;
            nxs = (int64_t)M * ((K + group - 1) / group);
        }
        float st = w->actq == ACT_FP8_STATIC ? w->act_scale : 0.0f;
        xw = malloc((size_t)M * (size_t)K * sizeof(float));
        xs = malloc((size_t)nxs * sizeof(float));
        if (!xw || !xs) {
            free(xw), free(xs);
            return dl_err("qmm: out of memory quantizing activations");
        }
        if (pick(&K_AQF_AVX2, &K_AQF_REF, avx2, force_ref)) actq_fp8_fast(xw, xs, x, M, K, group, st);
        else actq_fp8_ref(xw, xs, x, M, K, group, st);
        j.x = xw, j.xs = xs, j.xs_mode = group ? 2 : 1;
    }
    c.fj = &j;
    int i8 = w->dtype == DT_I8;
    /* fp8: the AVX-512 kernel for every M (its own M = 1 GEMV); i8wo: M >= 2 */
    if (!force_ref && (big || !i8) && cf.avx512 && kreg_use(i8 ? &K_WO_512 : &K_F8_512)) c.kind = 3;
    else if (i8) c.kind = pick(&K_WO_AVX2, &K_WO_REF, avx2, force_ref);
    else c.kind = pick(&K_F8_AVX2, &K_F8_REF, avx2, force_ref);
    /* the AVX-512 fp8 register GEMV (M <= QMM_F8_GEMV_MAX_M) widens e4m3 through byte
     * tables where VBMI exists */
    if (c.kind == 3 && w->dtype == DT_F8E4M3 && M <= QMM_F8_GEMV_MAX_M && cf.vbmi && kreg_use(&K_F8_VBMI)) j.vbmi = 1;
    /* decode kernels with spread-out tiles: the AVX-512 fp8 register GEMV (8 rows) and the
     * AVX2 kernel's 4-row panels (int8 weight-only at M = 1 runs there too) */
    int G = 0;
    if (M <= QMM_F8_GEMV_MAX_M && c.kind == 3 && !i8) G = 8;
    else if (M < 4 && c.kind == 1) G = 4;
    run_tasks(tp, w, G, &j.spread, run_f32, &c);
    free(xw), free(xs);
    if (atomic_load(&c.oom)) return dl_err("qmm: out of memory in the matmul kernel");
    return 0;
}

int qmm_matmul(float *y, const float *x, const dl_weight *w, int M, tpool *tp) {
    return qmm_run(y, x, w, M, tp, 0);
}

int qmm_matmul_ref(float *y, const float *x, const dl_weight *w, int M, tpool *tp) {
    return qmm_run(y, x, w, M, tp, 1);
}
