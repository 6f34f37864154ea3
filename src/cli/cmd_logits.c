/* dotlm logits: next-token logits for every position of a prompt, as .npy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/npy.h"
#include "tok/tok.h"

static void help(FILE *f) {
    fprintf(f, "usage: dotlm logits MODEL_DIR (--tokens 1,2,3 | -p TEXT) --out FILE.npy [options]\n\n"
               "Runs the prompt through the model once and writes float32 [T, vocab] logits:\n"
               "row t is the next-token distribution after tokens 0..t.\n\n"
               "  --tokens LIST         comma-separated token ids\n"
               "  -p, --prompt TEXT     text, tokenized with MODEL_DIR/tokenizer.json (no BOS added)\n"
               "  --out FILE            output .npy path (required)\n");
    cli_common_help(f);
}

int cmd_logits(int argc, char **argv) {
    cli_model_opts o = {.kv_dtype = DT_COUNT};
    const char *tokens = NULL, *prompt = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_common_opt(&o, argc, argv, &i, "logits");
        if (r < 0) return 2;
        if (r) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        } else if (!strcmp(a, "--tokens") && i + 1 < argc) tokens = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && i + 1 < argc) prompt = argv[++i];
        else if (!strcmp(a, "--out") && i + 1 < argc) out = argv[++i];
        else if (a[0] != '-' && !o.model_dir) o.model_dir = a;
        else {
            fprintf(stderr, "dotlm logits: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!o.model_dir || !out || (!tokens == !prompt)) {
        fprintf(stderr, "dotlm logits: need MODEL_DIR, --out and one of --tokens / -p\n");
        help(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    int n = 0;
    if (tokens) {
        if (cli_parse_ids(tokens, &ids, &n)) {
            fprintf(stderr, "dotlm logits: %s\n", dl_errmsg());
            return 2;
        }
    } else {
        tok_tokenizer *t = tok_load(o.model_dir);
        if (!t) {
            fprintf(stderr, "dotlm logits: %s\n", dl_errmsg());
            return 1;
        }
        n = tok_encode(t, prompt, strlen(prompt), &ids);
        tok_free(t);
        if (n <= 0) {
            fprintf(stderr, "dotlm logits: prompt encodes to no tokens\n");
            free(ids);
            return 2;
        }
    }
    dl_backend *be = NULL;
    dl_model *m = cli_load_model(&o, &be);
    if (!m) {
        free(ids);
        return 1;
    }
    int rc = 1;
    engine e;
    if (o.ctx == 0 && n > 4096) o.ctx = n;
    if (engine_init(&e, m, o.ctx ? o.ctx : 0, 1, o.chunk, o.kv_dtype)) {
        fprintf(stderr, "dotlm logits: %s\n", dl_errmsg());
        goto done_model;
    }
    int V = model_vocab(m);
    float *lg = malloc((size_t)n * V * sizeof(float));
    int slot = kv_slot_alloc(&e.kv);
    if (!lg) fprintf(stderr, "dotlm logits: out of memory for %d x %d logits\n", n, V);
    else if (engine_feed(&e, slot, ids, n, 0, lg, 1))
        fprintf(stderr, "dotlm logits: %s\n", dl_errmsg());
    else {
        int64_t shape[2] = {n, V};
        if (npy_write_f32(out, lg, 2, shape)) fprintf(stderr, "dotlm logits: %s\n", dl_errmsg());
        else rc = 0;
    }
    free(lg);
    engine_free(&e);
done_model:
    if (o.stats) kreg_print(stderr, 0);
    model_free(m);
    be_destroy(be);
    free(ids);
    return rc;
}
