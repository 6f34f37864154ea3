/* dotlm bench: matmul throughput per weight format against the machine's
 * memory read bandwidth (the floor for decode), and end-to-end prompt /
 * decode speed of a model directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/tpool.h"
#include "quant/qmatmul.h"
#include "quant/qmm_peak.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: dotlm bench [--shape NxK] [-t N] [--backend B] [--reps R] [--gemv-m A,B,C,D]\n"
            "       dotlm bench --model MODEL_DIR [--prompt-len P] [--gen G] [-t N] [--backend B]\n"
            "       dotlm bench --sweep [--quick]\n\n"
            "Kernel mode: random weights in every format (bf16, f16, f32, fp8 e4m3 block 128x128,\n"
            "fp8 per-channel, int8 W8A8); GEMV (M=1,2,4,8, or the four batch sizes of --gemv-m,\n"
            "1..64) as GB/s of weight bytes next to the measured memory read bandwidth (its\n"
            "first column as a share of it), and GEMM (M=256) GFLOP/s; on the CPU also as a\n"
            "share of the measured peak of the instruction the kernel that ran multiplies with.\n"
            "Model mode: prompt tok/s over P random tokens and decode tok/s over G steps, with\n"
            "the decode floor = weight bytes / read bandwidth.\n"
            "Sweep mode: every quantized CPU format x M in {1..256} x model and awkward shapes\n"
            "against a float64 reference from the same quantized operands; prints the worst\n"
            "relative error per case and fails above the thresholds (--quick: reduced set).\n\n"
            "Options of the model mode (and --backend, -t in the kernel mode):\n");
    cli_common_help(f);
}

typedef struct {
    const char *name;
    dl_dtype dt;
    dl_wscale sk;
    dl_actq aq;
} fmt_t;

static int make_weight(dl_weight *w, const fmt_t *f, int64_t n, int64_t k, uint64_t *seed,
                       void **codes, float **scales) {
    float *src = malloc(sizeof(float) * (size_t)(n * k));
    if (!src) return dl_err("out of memory");
    for (int64_t i = 0; i < n * k; i++) {
        *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
        src[i] = (float)((int64_t)(*seed >> 40) - (1 << 23)) / (float)(1 << 23) * 0.05f;
    }
    memset(w, 0, sizeof *w);
    int rc = 0;
    if (f->dt == DT_F32 || f->dt == DT_F16 || f->dt == DT_BF16) {
        size_t es = dt_size(f->dt);
        *codes = malloc(es * (size_t)(n * k));
        *scales = NULL;
        if (!*codes) rc = dl_err("out of memory");
        for (int64_t i = 0; !rc && i < n * k; i++) {
            if (f->dt == DT_F32) ((float *)*codes)[i] = src[i];
            else if (f->dt == DT_F16) ((uint16_t *)*codes)[i] = f32_to_f16(src[i]);
            else ((uint16_t *)*codes)[i] = f32_to_bf16(src[i]);
        }
        w->dtype = f->dt;
        w->n = n, w->k = k, w->ld = k, w->data = *codes;
    } else {
        *codes = malloc((size_t)(n * k));
        int64_t ns = f->sk == WS_BLOCK ? ((n + 127) / 128) * ((k + 127) / 128) : n;
        *scales = malloc(sizeof(float) * (size_t)ns);
        if (!*codes || !*scales) rc = dl_err("out of memory");
        else rc = qmm_quantize_weight(w, src, n, k, k, f->dt, f->sk, 128, 128, *codes, *scales);
        w->actq = f->aq;
    }
    free(src);
    return rc;
}

static double now(void) { return cli_now(); }

/* The dispatch counters of every registered kernel, to see which one a
 * call ran (a snapshot before; the kernels after, matched by name: a
 * kernel registered by the call itself has no entry, so 0 before). */
#define KSNAP_MAX 256
typedef struct {
    const char *name[KSNAP_MAX];
    uint64_t count[KSNAP_MAX];
    int n;
} ksnap;

static void ksnap_visit(const kreg_kernel *k, void *ctx) {
    ksnap *s = ctx;
    if (s->n < KSNAP_MAX) s->name[s->n] = k->name, s->count[s->n++] = atomic_load(&k->count);
}

/* The peak-table instruction of the matmul kernel that counted a dispatch
 * since snapshot s (-1: none known, e.g. a reference path or a GPU). */
static int ran_peak_instr(const ksnap *s) {
    ksnap t = {.n = 0};
    kreg_foreach(ksnap_visit, &t);
    for (int i = 0; i < t.n; i++) {
        uint64_t before = 0;
        for (int j = 0; j < s->n; j++)
            if (!strcmp(s->name[j], t.name[i])) before = s->count[j];
        int ins = qmm_peak_of_kernel(t.name[i]);
        if (t.count[i] > before && ins >= 0) return ins;
    }
    return -1;
}

/* The kernel table for an n x k weight: GEMV at the four batch sizes gm[0..3]
 * (GB/s of weight bytes, reps calls each), GEMM at M = 256. */
static int kernel_bench(dl_backend *be, int64_t n, int64_t k, int reps, const int gm[4]) {
    static const fmt_t fmts[] = {
        {"bf16", DT_BF16, WS_NONE, ACT_NATIVE},
        {"f16", DT_F16, WS_NONE, ACT_NATIVE},
        {"f32", DT_F32, WS_NONE, ACT_NATIVE},
        {"fp8-block", DT_F8E4M3, WS_BLOCK, ACT_NATIVE},
        {"fp8-block-declared", DT_F8E4M3, WS_BLOCK, ACT_FP8_GROUP},
        {"fp8-channel", DT_F8E4M3, WS_CHANNEL, ACT_NATIVE},
        {"int8-w8a8", DT_I8, WS_CHANNEL, ACT_INT8_TOKEN},
    };
    double bw = qmm_mem_read_bw(tp_default());
    printf("memory read bandwidth: %.1f GB/s (%d threads)\n", bw, tp_nthreads(tp_default()));
    qmm_peaks pk = {{0}};
    const int cpu = !strcmp(be->name, "cpu");
    if (cpu) { /* the instructions' arithmetic peaks, for the GEMM column */
        qmm_peak_measure(&pk, tp_default());
        printf("instruction peaks (%d threads):", tp_nthreads(tp_default()));
        for (int i = 0; i < QPK_COUNT; i++)
            if (pk.ops[i] > 0) printf(" %s %.1f G%s/s;", qmm_peak_name(i), pk.ops[i] * 1e-9, i < QPK_DPBUSD_YMM ? "FLOP" : "OP");
        printf("\n");
    }
    printf("shape N x K = %lld x %lld\n", (long long)n, (long long)k);
    char mh[5][24];
    for (int i = 0; i < 4; i++) snprintf(mh[i], sizeof mh[i], "M=%d GB/s", gm[i]);
    snprintf(mh[4], sizeof mh[4], "M%d %%bw", gm[0]);
    printf("%-20s %10s %10s %10s %10s %8s %12s %s\n", "format", mh[0], mh[1], mh[2], mh[3], mh[4],
           "M=256 GF/s", cpu ? "  % of the peak of the instruction that ran" : "");
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int Mmax = 256;
    float *x = be->alloc(be, sizeof(float) * (size_t)(Mmax * k));
    float *y = be->alloc(be, sizeof(float) * (size_t)(Mmax * n));
    if (!x || !y) return dl_err("out of memory");
    float hx[4096];
    for (int64_t i = 0; i < Mmax * k; i += 4096) {
        int64_t c = Mmax * k - i < 4096 ? Mmax * k - i : 4096;
        for (int64_t j = 0; j < c; j++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            hx[j] = (float)((int64_t)(seed >> 40) - (1 << 23)) / (float)(1 << 23);
        }
        be->from_host(be, x + i, hx, sizeof(float) * (size_t)c);
    }
    for (size_t fi = 0; fi < sizeof fmts / sizeof *fmts; fi++) {
        dl_weight w;
        void *codes = NULL;
        float *scales = NULL;
        if (make_weight(&w, &fmts[fi], n, k, &seed, &codes, &scales)) {
            printf("%-20s error: %s\n", fmts[fi].name, dl_errmsg());
            free(codes);
            free(scales);
            continue;
        }
        /* Rotate over copies totalling >= 1 GiB so no cache level (this
         * machine's L3 can be hundreds of MiB) serves the weights. */
        size_t wb = w_bytes(&w), cb = (size_t)(n * k) * dt_size(w.dtype);
        int nc = (int)((((size_t)1 << 30) + wb - 1) / wb);
        if (nc < 2) nc = 2;
        dl_weight *ws = calloc((size_t)nc, sizeof *ws);
        void **cc = calloc((size_t)nc, sizeof *cc);
        int ok = ws && cc;
        for (int c = 0; ok && c < nc; c++) {
            cc[c] = malloc(cb);
            if (!cc[c]) ok = 0;
            else {
                memcpy(cc[c], codes, cb);
                ws[c] = w;
                ws[c].data = cc[c];
                if (be->upload(be, &ws[c])) ok = 0;
            }
        }
        if (!ok) {
            printf("%-20s error: out of memory for %d weight copies\n", fmts[fi].name, nc);
        } else {
            double gbs[4];
            const int *Ms = gm;
            for (int mi = 0; mi < 4; mi++) {
                be->matmul(be, y, x, &ws[0], Ms[mi]); /* warm-up */
                be->sync(be);
                int it = reps > nc ? reps : nc;
                double t0 = now();
                for (int r = 0; r < it; r++) be->matmul(be, y, x, &ws[r % nc], Ms[mi]);
                be->sync(be);
                double dt = (now() - t0) / it;
                gbs[mi] = (double)wb / dt / 1e9;
            }
            int gr = reps / 8 > 1 ? reps / 8 : 1;
            ksnap ks = {.n = 0};
            kreg_foreach(ksnap_visit, &ks);
            be->matmul(be, y, x, &ws[0], Mmax);
            be->sync(be);
            const int ins = cpu ? ran_peak_instr(&ks) : -1;
            double t0 = now();
            for (int r = 0; r < gr; r++) be->matmul(be, y, x, &ws[0], Mmax);
            be->sync(be);
            double gf = 2.0 * n * k * Mmax / ((now() - t0) / gr) / 1e9;
            printf("%-20s %10.1f %10.1f %10.1f %10.1f %7.0f%% %12.1f", fmts[fi].name, gbs[0],
                   gbs[1], gbs[2], gbs[3], 100.0 * gbs[0] / bw, gf);
            if (ins >= 0 && pk.ops[ins] > 0)
                printf("  %5.1f%% (%s)", 100.0 * gf * 1e9 / pk.ops[ins], qmm_peak_name(ins));
            printf("\n");
        }
        for (int c = 0; ws && cc && c < nc; c++) {
            if (ws[c].dev) be->release(be, &ws[c]);
            free(cc[c]);
        }
        free(ws);
        free(cc);
        free(codes);
        free(scales);
    }
    be->free(be, x);
    be->free(be, y);
    return 0;
}

static int model_bench(cli_model_opts *o, int plen, int gen) {
    dl_backend *be = NULL;
    dl_model *m = cli_load_model(o, &be);
    if (!m) return 1;
    engine e;
    if (engine_init(&e, m, plen + gen + 8, 1, o->chunk, o->kv_dtype)) {
        fprintf(stderr, "dotlm bench: %s\n", dl_errmsg());
        model_free(m);
        be_destroy(be);
        return 1;
    }
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(plen + gen));
    uint64_t s = 12345;
    for (int i = 0; i < plen + gen; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        ids[i] = (int32_t)(s % (uint64_t)m->cfg.vocab);
    }
    /* warm-up: fault the mapped weights in and touch every buffer once, with
     * a decode step and a full prompt chunk, so that first-use set-up
     * (workspaces, kernel attributes) stays out of the timed runs */
    int slot = kv_slot_alloc(&e.kv), rc = 0;
    int wn = plen < e.max_tok ? plen : e.max_tok;
    rc |= engine_feed(&e, slot, ids, 1, 0, NULL, 0);
    if (wn > 1) rc |= engine_feed(&e, slot, ids, wn, 0, NULL, 0);
    kv_slot_free(&e.kv, slot);
    slot = kv_slot_alloc(&e.kv);
    double t0 = now();
    rc |= engine_feed(&e, slot, ids, plen, 0, NULL, 0);
    double t1 = now();
    for (int i = 0; i < gen && !rc; i++) rc |= engine_feed(&e, slot, ids + plen + i, 1, plen + i, NULL, 0);
    double t2 = now();
    if (rc) fprintf(stderr, "dotlm bench: %s\n", dl_errmsg());
    /* bytes one decode step must stream: every weight once (lm_head included;
     * the embedding is read one row per token) */
    size_t bytes = m->weight_bytes;
    if (m->lm_head.data != m->embed.data) bytes -= w_bytes(&m->embed);
    double bw = strcmp(be->name, "cpu") ? 0 : qmm_mem_read_bw(tp_default());
    double dec = gen / (t2 - t1);
    printf("model: %s (%s), %.1f MiB streamed per decode step\n", o->model_dir, m->fmt_desc,
           bytes / 1048576.0);
    printf("prompt: %d tokens in %.3f s = %.1f tok/s (forwards of <= %d tokens)\n", plen, t1 - t0,
           plen / (t1 - t0), e.max_tok);
    printf("decode: %d tokens in %.3f s = %.2f tok/s (%.1f ms/token)\n", gen, t2 - t1, dec,
           1000.0 / dec);
    if (bw > 0) {
        double floor_tps = bw * 1e9 / (double)bytes;
        printf("floor: %.1f GB/s read bandwidth / %.1f MiB = %.2f tok/s; decode at %.0f%% of "
               "floor\n",
               bw, bytes / 1048576.0, floor_tps, 100.0 * dec / floor_tps);
    }
    long rss_kb = 0;
    FILE *st = fopen("/proc/self/status", "r");
    char line[256];
    while (st && fgets(line, sizeof line, st))
        if (!strncmp(line, "VmRSS:", 6)) rss_kb = atol(line + 6);
    if (st) fclose(st);
    if (rss_kb)
        printf("rss: %.1f MiB after the run; weights %.1f MiB (%+.1f%%)\n", rss_kb / 1024.0,
               m->weight_bytes / 1048576.0,
               100.0 * ((double)rss_kb * 1024 - (double)m->weight_bytes) / (double)m->weight_bytes);
    if (o->stats) kreg_print(stderr, 0);
    free(ids);
    engine_free(&e);
    model_free(m);
    be_destroy(be);
    return rc ? 1 : 0;
}

int cmd_bench(int argc, char **argv) {
    cli_model_opts o = {.kv_dtype = DT_COUNT};
    long long n = 4096, k = 4096;
    int reps = 20, plen = 128, gen = 32;
    const char *model = NULL;
    int sweep = 0, quick = 0;
    int gm[4] = {1, 2, 4, 8};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_common_opt(&o, argc, argv, &i, "bench");
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        } else if (!strcmp(a, "--shape") && i + 1 < argc) {
            if (sscanf(argv[++i], "%lldx%lld", &n, &k) != 2 || n < 1 || k < 1) {
                fprintf(stderr, "dotlm bench: --shape expects NxK, e.g. 4096x4096\n");
                return 2;
            }
        } else if (!strcmp(a, "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--gemv-m") && i + 1 < argc) {
            char tail;
            const char *v = argv[++i];
            int bad = sscanf(v, "%d,%d,%d,%d%c", &gm[0], &gm[1], &gm[2], &gm[3], &tail) != 4;
            for (int q = 0; q < 4; q++) bad |= gm[q] < 1 || gm[q] > 64;
            if (bad) {
                fprintf(stderr, "dotlm bench: --gemv-m expects four batch sizes 1..64, e.g. 4,5,6,7 (got '%s')\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(a, "--sweep")) sweep = 1;
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--prompt-len") && i + 1 < argc) plen = atoi(argv[++i]);
        else if (!strcmp(a, "--gen") && i + 1 < argc) gen = atoi(argv[++i]);
        else {
            fprintf(stderr, "dotlm bench: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (reps < 1 || plen < 1 || gen < 1) {
        fprintf(stderr, "dotlm bench: --reps, --prompt-len and --gen must be positive\n");
        return 2;
    }
    if (o.threads) tp_set_default_threads(o.threads);
    if (sweep) {
        int rc = qmm_sweep(stdout, !quick);
        if (rc) fprintf(stderr, "dotlm bench --sweep: %s\n", dl_errmsg());
        return rc ? 1 : 0;
    }
    if (model) {
        o.model_dir = model;
        return model_bench(&o, plen, gen);
    }
    dl_backend *be = be_create(o.backend ? o.backend : "cpu", o.threads);
    if (!be) {
        fprintf(stderr, "dotlm bench: %s\n", dl_errmsg());
        return 1;
    }
    int rc = kernel_bench(be, n, k, reps, gm);
    if (rc) fprintf(stderr, "dotlm bench: %s\n", dl_errmsg());
    if (o.stats) kreg_print(stderr, 0);
    be_destroy(be);
    return rc ? 1 : 0;
}
