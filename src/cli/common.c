#include "cli/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/kreg.h"
#include "core/tpool.h"

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_common_help(FILE *f) {
    fprintf(f,
            "  --backend NAME        cpu (default), cuda or hip when compiled in\n"
            "  -t, --threads N       CPU threads (default: all cores)\n"
            "  --ctx N               context length per sequence (default: min(model, 4096))\n"
            "  --fp8-activations P   weight-only (default) or declared: how FP8 checkpoints\n"
            "                        treat activations (see README)\n"
            "  --kv-dtype T          KV-cache precision: f32 (CPU default) or f16 (GPU default)\n"
            "  --prefill-chunk N     prompt tokens per forward pass (default 256 on cpu, 2048\n"
            "                        on GPUs; lower it if the GPU runs out of memory)\n"
            "  --disable LIST        switch named kernels back to their reference path\n"
            "                        (comma-separated, 'prefix*' allowed; also DOTLM_DISABLE)\n"
            "  --stats               print the kernel dispatch counters at the end\n");
}

static int need_arg(int argc, char **argv, int i, const char *cmd) {
    if (i + 1 >= argc) {
        fprintf(stderr, "dotlm %s: option %s needs a value\n", cmd, argv[i]);
        return -1;
    }
    return 0;
}

static int parse_int(const char *s, int *out) {
    char *e;
    long v = strtol(s, &e, 10);
    if (!*s || *e || v < -2147483647L || v > 2147483647L) return -1;
    *out = (int)v;
    return 0;
}

int cli_common_opt(cli_model_opts *o, int argc, char **argv, int *i, const char *cmd) {
    const char *a = argv[*i];
    if (!strcmp(a, "--backend")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        o->backend = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        if (parse_int(argv[++*i], &o->threads) || o->threads < 0) {
            fprintf(stderr, "dotlm %s: %s expects a non-negative integer\n", cmd, a);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--ctx")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        if (parse_int(argv[++*i], &o->ctx) || o->ctx < 1) {
            fprintf(stderr, "dotlm %s: --ctx expects a positive integer\n", cmd);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--prefill-chunk")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        if (parse_int(argv[++*i], &o->chunk) || o->chunk < 1 || o->chunk > 65536) {
            fprintf(stderr, "dotlm %s: --prefill-chunk expects an integer in 1..65536\n", cmd);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--fp8-activations")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        const char *v = argv[++*i];
        if (!strcmp(v, "weight-only")) o->fp8_policy = FP8_POLICY_WEIGHT_ONLY;
        else if (!strcmp(v, "declared")) o->fp8_policy = FP8_POLICY_DECLARED;
        else {
            fprintf(stderr, "dotlm %s: --fp8-activations expects weight-only or declared, got '%s'\n",
                    cmd, v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--kv-dtype")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        const char *v = argv[++*i];
        if (!strcmp(v, "f32")) o->kv_dtype = DT_F32;
        else if (!strcmp(v, "f16")) o->kv_dtype = DT_F16;
        else {
            fprintf(stderr, "dotlm %s: --kv-dtype expects f32 or f16, got '%s'\n", cmd, v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--disable")) {
        if (need_arg(argc, argv, *i, cmd)) return -1;
        kreg_disable(argv[++*i]);
        return 1;
    }
    if (!strcmp(a, "--stats")) {
        o->stats = 1;
        return 1;
    }
    return 0;
}

dl_model *cli_load_model(const cli_model_opts *o, dl_backend **be_out) {
    if (o->threads) tp_set_default_threads(o->threads);
    dl_backend *be = be_create(o->backend ? o->backend : "cpu", o->threads);
    if (!be) {
        fprintf(stderr, "dotlm: %s\n", dl_errmsg());
        return NULL;
    }
    model_opts mo = {.fp8_policy = o->fp8_policy};
    dl_model *m = model_load(o->model_dir, be, &mo);
    if (!m) {
        fprintf(stderr, "dotlm: error: %s\n", dl_errmsg());
        be_destroy(be);
        return NULL;
    }
    *be_out = be;
    return m;
}

int cli_parse_ids(const char *s, int32_t **ids, int *n) {
    size_t cap = 16;
    *n = 0;
    *ids = malloc(cap * sizeof **ids);
    if (!*ids) return -1;
    const char *p = s;
    while (*p) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 0 || v > 2147483647L) {
            free(*ids);
            *ids = NULL;
            return dl_err("bad token list '%s': expected comma-separated non-negative integers", s);
        }
        if ((size_t)*n == cap) {
            cap *= 2;
            int32_t *q = realloc(*ids, cap * sizeof **ids);
            if (!q) return free(*ids), *ids = NULL, -1;
            *ids = q;
        }
        (*ids)[(*n)++] = (int32_t)v;
        p = e;
        while (*p == ',' || *p == ' ') p++;
    }
    if (!*n) {
        free(*ids);
        *ids = NULL;
        return dl_err("empty token list");
    }
    return 0;
}
