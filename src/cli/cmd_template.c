/* `dotlm template DIR < request.json`: render DIR/tokenizer_config.json's
 * chat template for an OpenAI-style chat request read from stdin and print
 * the prompt exactly (no trailing newline added). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli/cli.h"
#include "core/err.h"
#include "tmpl/tmpl.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: dotlm template DIR < request.json\n"
            "Render the chat template of DIR/tokenizer_config.json for a chat request\n"
            "(JSON body with messages, optional tools, add_generation_prompt (default true)\n"
            "and chat_template_kwargs) read from stdin; prints the prompt to stdout.\n");
}

int cmd_template(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, "dotlm template: unknown option '%s'\n", argv[i]); return 2; }
        if (dir) { fprintf(stderr, "dotlm template: expected one DIR argument\n"); return 2; }
        dir = argv[i];
    }
    if (!dir) { usage(stderr); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t je;
    /* integers as reals: configs hold values beyond int64 (model_max_length) */
    json_t *cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
    if (!cfg) { fprintf(stderr, "dotlm template: %s: %s (line %d)\n", path, je.text, je.line); return 1; }
    json_t *req = json_loadf(stdin, 0, &je);
    if (!req) {
        fprintf(stderr, "dotlm template: bad request JSON on stdin: %s (line %d)\n", je.text, je.line);
        json_decref(cfg);
        return 1;
    }
    char *out = tmpl_render_chat(cfg, req);
    json_decref(cfg);
    json_decref(req);
    if (!out) { fprintf(stderr, "dotlm template: %s\n", dl_errmsg()); return 1; }
    fputs(out, stdout);
    free(out);
    return fflush(stdout) ? 1 : 0;
}
