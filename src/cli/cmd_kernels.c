/* dotlm kernels: what this machine and build can run — CPU features, the
 * kernel registry with each kernel's switch state — after exercising every
 * matmul format once so that the kernels register. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/err.h"
#include "core/kreg.h"
#include "quant/qmatmul.h"

static void help(FILE *f) {
    fprintf(f, "usage: dotlm kernels [--backend B] [--disable LIST]\n\n"
               "Lists CPU features and every kernel with its dispatch count and switch state\n"
               "(after one small matmul per weight format). Disable kernels with --disable or\n"
               "DOTLM_DISABLE (comma-separated shell patterns, e.g. 'cpu.qmm.*,*avx2*').\n");
}

int cmd_kernels(int argc, char **argv) {
    cli_model_opts o = {.kv_dtype = DT_COUNT};
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&o, argc, argv, &i, "kernels");
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            help(stdout);
            return 0;
        }
        fprintf(stderr, "dotlm kernels: unknown option '%s'\n", argv[i]);
        return 2;
    }
    unsigned cf = qmm_cpu_features();
    printf("cpu features: avx2+fma+f16c=%d avx-vnni=%d avx512=%d avx512-vnni=%d\n",
           !!(cf & QMM_CPU_AVX2), !!(cf & QMM_CPU_VNNI), !!(cf & QMM_CPU_AVX512),
           !!(cf & QMM_CPU_VNNI512));
    dl_backend *be = be_create(o.backend ? o.backend : "cpu", o.threads);
    if (!be) {
        fprintf(stderr, "dotlm kernels: %s\n", dl_errmsg());
        return 1;
    }
    printf("backend: %s\n", be->name);
    const int64_t n = 64, k = 256;
    float *src = malloc(sizeof(float) * n * k), *hx = malloc(sizeof(float) * 4 * k);
    uint8_t *codes = malloc((size_t)(n * k) * 4);
    float *scales = malloc(sizeof(float) * n * 4);
    float *x = be->alloc(be, sizeof(float) * 4 * k), *y = be->alloc(be, sizeof(float) * 4 * n);
    int rc = 0;
    if (!src || !hx || !codes || !scales || !x || !y) rc = dl_err("out of memory");
    for (int64_t i = 0; !rc && i < n * k; i++) src[i] = (float)((i * 7919) % 201 - 100) / 100.0f;
    for (int64_t i = 0; !rc && i < 4 * k; i++) hx[i] = (float)((i * 104729) % 199 - 99) / 99.0f;
    if (!rc) be->from_host(be, x, hx, sizeof(float) * 4 * k);
    struct {
        dl_dtype dt;
        dl_wscale sk;
        dl_actq aq;
    } f[] = {{DT_F8E4M3, WS_BLOCK, ACT_NATIVE},  {DT_F8E4M3, WS_BLOCK, ACT_FP8_GROUP},
             {DT_F8E5M2, WS_CHANNEL, ACT_NATIVE}, {DT_I8, WS_CHANNEL, ACT_INT8_TOKEN},
             {DT_BF16, WS_NONE, ACT_NATIVE},      {DT_F16, WS_NONE, ACT_NATIVE},
             {DT_F32, WS_NONE, ACT_NATIVE}};
    for (size_t j = 0; !rc && j < sizeof f / sizeof *f; j++) {
        dl_weight w = {0};
        if (f[j].dt == DT_BF16 || f[j].dt == DT_F16 || f[j].dt == DT_F32) {
            for (int64_t i = 0; i < n * k; i++) {
                if (f[j].dt == DT_F32) ((float *)codes)[i] = src[i];
                else if (f[j].dt == DT_F16) ((uint16_t *)codes)[i] = f32_to_f16(src[i]);
                else ((uint16_t *)codes)[i] = f32_to_bf16(src[i]);
            }
            w.dtype = f[j].dt, w.n = n, w.k = k, w.ld = k, w.data = codes;
        } else if (qmm_quantize_weight(&w, src, n, k, k, f[j].dt, f[j].sk, 128, 128, codes,
                                       scales)) {
            rc = -1;
            break;
        }
        w.actq = f[j].aq;
        if (be->upload(be, &w)) {
            rc = -1;
            break;
        }
        be->matmul(be, y, x, &w, 1);
        be->matmul(be, y, x, &w, 4);
        be->sync(be);
        be->release(be, &w);
    }
    if (rc) fprintf(stderr, "dotlm kernels: %s\n", dl_errmsg());
    kreg_print(stdout, 1);
    if (x) be->free(be, x);
    if (y) be->free(be, y);
    free(src);
    free(hx);
    free(codes);
    free(scales);
    be_destroy(be);
    return rc ? 1 : 0;
}
