/* dotlm run: generate text from a prompt, streaming it to stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/common.h"
#include "core/err.h"
#include "core/kreg.h"
#include "engine/sampler.h"
#include "tok/chat.h"
#include "tok/tok.h"

static void help(FILE *f) {
    fprintf(f,
            "usage: dotlm run MODEL_DIR (-p TEXT | --tokens 1,2,3) [options]\n\n"
            "Generates a continuation and streams it to stdout; load progress and a speed\n"
            "summary go to stderr.\n\n"
            "  -p, --prompt TEXT        prompt text (tokenized with MODEL_DIR/tokenizer.json)\n"
            "  --tokens LIST            prompt as comma-separated token ids\n"
            "  --chat                   wrap the prompt as a user turn with the model's chat template\n"
            "  --system TEXT            system message (with --chat)\n"
            "  -n, --max-tokens N       tokens to generate (default 256)\n"
            "  --temp T                 temperature; 0 = greedy (default: generation_config.json,\n"
            "                           else 0)\n"
            "  --top-k K                keep the K most likely tokens (0 = off)\n"
            "  --top-p P                nucleus sampling (1 = off)\n"
            "  --min-p P                drop tokens below P x the top probability (0 = off)\n"
            "  --repeat-penalty R       HF repetition penalty (1 = off)\n"
            "  --presence-penalty X     OpenAI presence penalty (0 = off)\n"
            "  --frequency-penalty X    OpenAI frequency penalty (0 = off)\n"
            "  --seed S                 RNG seed (default: from the clock, printed)\n"
            "  --ignore-eos             keep generating past end-of-sequence tokens\n"
            "  --print-ids              print the generated ids, space-separated, as the last line\n");
    cli_common_help(f);
}

static int parse_f(const char *s, float *v) {
    char *e;
    *v = strtof(s, &e);
    return *s && !*e ? 0 : -1;
}

int cmd_run(int argc, char **argv) {
    cli_model_opts o = {.kv_dtype = DT_COUNT};
    const char *prompt = NULL, *tokens = NULL, *system = NULL;
    int chat = 0, max_new = 256, print_ids = 0, ignore_eos = 0, have_temp = 0, have_seed = 0;
    samp_params sp;
    samp_defaults(&sp);
    float topk = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_common_opt(&o, argc, argv, &i, "run");
        if (r < 0) return 2;
        if (r) continue;
        int has = i + 1 < argc, bad = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        } else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has) prompt = argv[++i];
        else if (!strcmp(a, "--tokens") && has) tokens = argv[++i];
        else if (!strcmp(a, "--system") && has) system = argv[++i];
        else if (!strcmp(a, "--chat")) chat = 1;
        else if (!strcmp(a, "--print-ids")) print_ids = 1;
        else if (!strcmp(a, "--ignore-eos")) ignore_eos = 1;
        else if ((!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) && has) {
            char *e;
            max_new = (int)strtol(argv[++i], &e, 10);
            bad = *e || max_new < 0;
        } else if (!strcmp(a, "--temp") && has) {
            bad = parse_f(argv[++i], &sp.temperature) || sp.temperature < 0;
            have_temp = 1;
        } else if (!strcmp(a, "--top-k") && has) {
            bad = parse_f(argv[++i], &topk) || topk < 0;
            sp.top_k = (int)topk;
        } else if (!strcmp(a, "--top-p") && has)
            bad = parse_f(argv[++i], &sp.top_p) || sp.top_p <= 0 || sp.top_p > 1;
        else if (!strcmp(a, "--min-p") && has)
            bad = parse_f(argv[++i], &sp.min_p) || sp.min_p < 0 || sp.min_p > 1;
        else if (!strcmp(a, "--repeat-penalty") && has)
            bad = parse_f(argv[++i], &sp.repetition_penalty) || sp.repetition_penalty <= 0;
        else if (!strcmp(a, "--presence-penalty") && has) bad = parse_f(argv[++i], &sp.presence_penalty);
        else if (!strcmp(a, "--frequency-penalty") && has) bad = parse_f(argv[++i], &sp.frequency_penalty);
        else if (!strcmp(a, "--seed") && has) {
            char *e;
            sp.seed = strtoull(argv[++i], &e, 10);
            bad = *e != 0;
            have_seed = 1;
        } else if (a[0] != '-' && !o.model_dir) o.model_dir = a;
        else {
            fprintf(stderr, "dotlm run: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "dotlm run: bad value '%s' for %s\n", argv[i], a);
            return 2;
        }
    }
    if (!o.model_dir || (!prompt == !tokens)) {
        fprintf(stderr, "dotlm run: need MODEL_DIR and one of -p TEXT / --tokens LIST\n");
        help(stderr);
        return 2;
    }
    if (chat && !prompt) {
        fprintf(stderr, "dotlm run: --chat needs -p TEXT\n");
        return 2;
    }
    if (!have_seed) sp.seed = (uint64_t)time(NULL);

    /* tokenizer: required for text prompts, optional (for display) with --tokens */
    tok_tokenizer *tk = tok_load(o.model_dir);
    if (!tk && prompt) {
        fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
        return 1;
    }
    int32_t *ids = NULL;
    int n = 0;
    if (tokens) {
        if (cli_parse_ids(tokens, &ids, &n)) {
            fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
            tok_free(tk);
            return 2;
        }
    } else {
        char *text = NULL;
        if (chat) {
            chat_msg msgs[2];
            int nm = 0;
            if (system) msgs[nm++] = (chat_msg){"system", system};
            msgs[nm++] = (chat_msg){"user", prompt};
            text = chat_render(o.model_dir, msgs, nm);
            if (!text) {
                fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
                tok_free(tk);
                return 1;
            }
        }
        const char *src = text ? text : prompt;
        n = tok_encode(tk, src, strlen(src), &ids);
        free(text);
        if (n <= 0) {
            fprintf(stderr, "dotlm run: the prompt encodes to no tokens\n");
            free(ids);
            tok_free(tk);
            return 2;
        }
    }

    dl_backend *be = NULL;
    dl_model *m = cli_load_model(&o, &be);
    if (!m) {
        free(ids);
        tok_free(tk);
        return 1;
    }
    if (m->gen.present && !have_temp && m->gen.do_sample) {
        sp.temperature = m->gen.temperature;
        if (m->gen.top_p > 0) sp.top_p = m->gen.top_p;
        if (m->gen.top_k > 0 && sp.top_k == 0) sp.top_k = m->gen.top_k;
        if (m->gen.min_p > 0 && sp.min_p == 0) sp.min_p = m->gen.min_p;
    }
    int rc = 1;
    engine e;
    int ctx = o.ctx;
    if (!ctx) {
        ctx = n + max_new;
        if (ctx < 256) ctx = 256;
        if (m->cfg.max_pos > 0 && ctx > m->cfg.max_pos) ctx = m->cfg.max_pos;
    }
    int32_t *out_ids = malloc(((size_t)max_new + 1) * sizeof(int32_t));
    sampler smp;
    int V = model_vocab(m), nvalid = m->cfg.vocab;
    if (tk && tok_vocab_size(tk) < nvalid) nvalid = tok_vocab_size(tk);
    if (!out_ids || engine_init(&e, m, ctx, 1, o.chunk, o.kv_dtype)) {
        fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
        free(out_ids);
        goto done_model;
    }
    if (samp_init(&smp, &sp, V)) {
        fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
        goto done_engine;
    }
    samp_add_prompt(&smp, ids, n);
    int32_t stops[CFG_MAX_EOS * 2 + 8];
    int nstop = 0;
    for (int i = 0; i < m->cfg.n_eos; i++) stops[nstop++] = m->cfg.eos_ids[i];
    for (int i = 0; i < m->gen.n_eos; i++) stops[nstop++] = m->gen.eos_ids[i];
    if (tk && chat) nstop += chat_stop_ids(tk, stops + nstop, 8);

    int slot = kv_slot_alloc(&e.kv);
    double t0 = cli_now();
    float *lg = e.logits;
    if (engine_feed(&e, slot, ids, n, 0, lg, 0)) {
        fprintf(stderr, "dotlm run: %s\n", dl_errmsg());
        goto done_sampler;
    }
    double t1 = cli_now();
    tok_stream ts;
    if (tk) tok_stream_init(&ts, tk, 1);
    int gen = 0;
    char buf[1024];
    for (; gen < max_new; gen++) {
        int32_t id = samp_sample(&smp, lg, nvalid, NULL);
        int is_stop = 0;
        for (int s = 0; s < nstop; s++) is_stop |= id == stops[s];
        if (is_stop && !ignore_eos) break;
        out_ids[gen] = id;
        samp_accept(&smp, id);
        if (tk && !print_ids) {
            int w = tok_stream_push(&ts, id, buf, sizeof buf);
            if (w > 0) {
                fwrite(buf, 1, (size_t)w, stdout);
                fflush(stdout);
            }
        }
        if (gen + 1 == max_new) {
            gen++;
            break;
        }
        if (n + gen + 1 > e.ctx) {
            fprintf(stderr, "\ndotlm run: context of %d tokens is full; stopping\n", e.ctx);
            gen++;
            break;
        }
        if (engine_feed(&e, slot, &id, 1, n + gen, lg, 0)) {
            fprintf(stderr, "\ndotlm run: %s\n", dl_errmsg());
            goto done_sampler;
        }
    }
    double t2 = cli_now();
    if (tk && !print_ids) {
        int w = tok_stream_flush(&ts, buf, sizeof buf);
        if (w > 0) fwrite(buf, 1, (size_t)w, stdout);
        fputc('\n', stdout);
    }
    if (print_ids) {
        for (int i = 0; i < gen; i++) printf(i ? " %d" : "%d", out_ids[i]);
        printf("\n");
    }
    fflush(stdout);
    fprintf(stderr,
            "dotlm: prompt %d tokens in %.3f s (%.1f tok/s); generated %d tokens in %.3f s "
            "(%.2f tok/s); seed %llu\n",
            n, t1 - t0, n / (t1 - t0 > 0 ? t1 - t0 : 1e-9), gen, t2 - t1,
            gen > 1 ? (gen - 1) / (t2 - t1 > 0 ? t2 - t1 : 1e-9) : 0.0,
            (unsigned long long)sp.seed);
    rc = 0;
done_sampler:
    samp_free(&smp);
done_engine:
    engine_free(&e);
    free(out_ids);
done_model:
    if (o.stats) kreg_print(stderr, 0);
    model_free(m);
    be_destroy(be);
    free(ids);
    tok_free(tk);
    return rc;
}
