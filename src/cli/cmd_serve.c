/* dotlm serve: OpenAI-compatible HTTP server with continuous batching. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/err.h"
#include "core/kreg.h"
#include "server/srv_server.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: dotlm serve MODEL_DIR [options]\n\n"
            "Serves the model over an OpenAI-compatible HTTP API:\n"
            "  POST /v1/chat/completions, POST /v1/completions, GET /v1/models,\n"
            "  GET /health, GET /metrics (Prometheus text).\n"
            "Requests are batched continuously: every forward step runs the next token of\n"
            "all running sequences plus prompt chunks of new ones.\n\n"
            "  --host ADDR              bind address (default 127.0.0.1)\n"
            "  --port N                 TCP port (default 8000; 0 = any free port)\n"
            "  --api-key KEY            require 'Authorization: Bearer KEY' on /v1/*\n"
            "                           (also DOTLM_API_KEY)\n"
            "  --served-model-name NAME model id for clients (default: MODEL_DIR's base name)\n"
            "  --max-seqs N             sequences decoded together (default 32)\n"
            "  --max-queue N            waiting requests before answering 429 (default 256)\n"
            "  --step-tokens N          tokens per forward step, decodes + prompt chunks\n"
            "                           (default 256; larger: more throughput and faster first\n"
            "                           tokens, longer pauses for the running streams)\n"
            "  --kv-blocks N            KV pool size in 16-token blocks (default: max-seqs x ctx)\n"
            "  --no-prefix-cache        do not reuse KV blocks of identical prompt prefixes\n"
            "  --max-tokens-cap N       upper bound for max_tokens (default: the context)\n"
            "  --max-body BYTES         request body limit (default 8388608)\n"
            "  --request-timeout S      generation time limit per request (default 600; 0 = none)\n"
            "  --shutdown-grace S       on SIGINT/SIGTERM, let requests finish for S seconds\n"
            "                           before failing them (default 10)\n");
    cli_common_help(f);
}

static int pint(const char *s, long lo, long hi, long *v) {
    char *e;
    *v = strtol(s, &e, 10);
    return *s && !*e && *v >= lo && *v <= hi ? 0 : -1;
}

int cmd_serve(int argc, char **argv) {
    cli_model_opts o = {.kv_dtype = DT_COUNT};
    srv_opts so = {.host = "127.0.0.1", .port = 8000, .max_body = 8u << 20, .request_timeout = 600,
                   .conn_timeout = 600, .max_conns = 1024};
    srv_sched_opts sc = {.max_seqs = 32, .max_queue = 256, .step_tokens = 256, .prefix_cache = 1};
    double grace = 10;
    const char *name = NULL;
    so.api_key = getenv("DOTLM_API_KEY");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_common_opt(&o, argc, argv, &i, "serve");
        if (r < 0) return 2;
        if (r) continue;
        int has = i + 1 < argc, bad = 0;
        long v = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        } else if (!strcmp(a, "--host") && has) so.host = argv[++i];
        else if (!strcmp(a, "--port") && has) bad = pint(argv[++i], 0, 65535, &v), so.port = (int)v;
        else if (!strcmp(a, "--api-key") && has) so.api_key = argv[++i];
        else if (!strcmp(a, "--served-model-name") && has) name = argv[++i];
        else if (!strcmp(a, "--max-seqs") && has) bad = pint(argv[++i], 1, 4096, &v), sc.max_seqs = (int)v;
        else if (!strcmp(a, "--max-queue") && has) bad = pint(argv[++i], 1, 1 << 20, &v), sc.max_queue = (int)v;
        else if (!strcmp(a, "--step-tokens") && has) bad = pint(argv[++i], 1, 1 << 16, &v), sc.step_tokens = (int)v;
        else if (!strcmp(a, "--kv-blocks") && has) bad = pint(argv[++i], 1, 1 << 26, &v), sc.kv_blocks = (int)v;
        else if (!strcmp(a, "--no-prefix-cache")) sc.prefix_cache = 0;
        else if (!strcmp(a, "--max-tokens-cap") && has) bad = pint(argv[++i], 1, 1 << 30, &v), so.max_tokens_cap = (int)v;
        else if (!strcmp(a, "--max-body") && has) bad = pint(argv[++i], 1, 1L << 40, &v), so.max_body = (size_t)v;
        else if (!strcmp(a, "--request-timeout") && has) bad = pint(argv[++i], 0, 1 << 30, &v), so.request_timeout = (double)v;
        else if (!strcmp(a, "--shutdown-grace") && has) bad = pint(argv[++i], 0, 1 << 20, &v), grace = (double)v;
        else if (a[0] != '-' && !o.model_dir) o.model_dir = a;
        else {
            fprintf(stderr, "dotlm serve: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "dotlm serve: bad value '%s' for %s\n", argv[i], a);
            return 2;
        }
    }
    if (o.chunk) {
        fprintf(stderr, "dotlm serve: --prefill-chunk does not apply to the server; --step-tokens N "
                        "sets the tokens of each forward step (decodes and prompt chunks)\n");
        return 2;
    }
    if (!o.model_dir) {
        fprintf(stderr, "dotlm serve: need MODEL_DIR\n");
        help(stderr);
        return 2;
    }
    if (!name) {
        const char *d = o.model_dir;
        size_t L = strlen(d);
        while (L > 1 && d[L - 1] == '/') L--;
        const char *b = d + L;
        while (b > d && b[-1] != '/') b--;
        static char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)(d + L - b), b);
        name = buf;
    }
    so.served_name = name;
    tok_tokenizer *tk = tok_load(o.model_dir);
    if (!tk) {
        fprintf(stderr, "dotlm serve: %s\n", dl_errmsg());
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", o.model_dir);
    json_error_t je;
    json_t *tokcfg = json_load_file(path, 0, &je);
    if (!tokcfg) fprintf(stderr, "dotlm serve: no usable %s (%s): chat requests will be refused\n", path, je.text);

    /* signals: block in every thread; the main thread waits for them */
    signal(SIGINT, SIG_DFL); /* a background job may inherit SIGINT ignored: sigwait needs it live */
    signal(SIGTERM, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    dl_backend *be = NULL;
    dl_model *m = cli_load_model(&o, &be);
    int rc = 1;
    srv_sched *sched = NULL;
    srv_server *srv = NULL;
    if (!m) goto out;
    sc.ctx = o.ctx;
    sc.kv_dtype = o.kv_dtype == DT_COUNT ? engine_kv_default(be) : o.kv_dtype;
    if (!sc.ctx) sc.ctx = m->cfg.max_pos > 0 && m->cfg.max_pos < 4096 ? m->cfg.max_pos : 4096;
    if (m->cfg.max_pos > 0 && sc.ctx > m->cfg.max_pos) {
        fprintf(stderr, "dotlm serve: --ctx %d exceeds the model's max_position_embeddings %d\n", sc.ctx,
                m->cfg.max_pos);
        goto out;
    }
    sched = sched_create(m, tk, &sc);
    if (!sched) {
        fprintf(stderr, "dotlm serve: %s\n", dl_errmsg());
        goto out;
    }
    srv = srv_start(m, tk, tokcfg, sched, &so);
    if (!srv) {
        fprintf(stderr, "dotlm serve: %s\n", dl_errmsg());
        goto out;
    }
    sched_stats st;
    sched_get_stats(sched, &st);
    fprintf(stderr,
            "dotlm serve: model '%s' (%s), ctx %d, %d sequences, KV pool %d blocks of 16; "
            "listening on http://%s%s%s:%d\n",
            name, m->fmt_desc, sched_capacity(sched), sc.max_seqs, st.kv_total,
            strchr(so.host, ':') ? "[" : "", so.host, strchr(so.host, ':') ? "]" : "", srv_port(srv));
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "dotlm serve: %s: finishing in-flight requests (up to %.0f s)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", grace);
    srv_close(srv);
    sched_drain(sched, grace);
    rc = 0;
out:
    srv_shutdown(srv);
    sched_destroy(sched);
    if (o.stats) kreg_print(stderr, 0);
    if (m) model_free(m);
    if (be) be_destroy(be);
    json_decref(tokcfg);
    tok_free(tk);
    if (!rc) fprintf(stderr, "dotlm serve: stopped\n");
    return rc;
}
