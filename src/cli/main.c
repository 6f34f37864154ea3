/* dotlm: entry point; dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} k_cmds[] = {
    {"run", cmd_run, "generate text from a prompt (streams to stdout)"},
    {"logits", cmd_logits, "write next-token logits for every position to a .npy file"},
    {"tokenize", cmd_tokenize, "tokenize JSON-string lines from stdin with DIR/tokenizer.json"},
    {"template", cmd_template, "render a chat request's prompt with DIR's chat template"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server"},
    {"bench", cmd_bench, "microbenchmarks: matmul throughput vs memory bandwidth"},
    {"kernels", cmd_kernels, "list kernels, their switches and CPU features"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: dotlm COMMAND [ARGS]   (dotlm COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_cmds / sizeof *k_cmds; i++)
        fprintf(f, "  %-10s %s\n", k_cmds[i].name, k_cmds[i].help);
    fprintf(f, "\nenvironment:\n"
               "  DOTLM_DISABLE=a,b   switch named fast kernels back to their reference path\n"
               "  DOTLM_THREADS=N     default thread count (same as -t N)\n"
               "  DOTLM_LOG=debug|info|warn|quiet\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof k_cmds / sizeof *k_cmds; i++)
        if (!strcmp(argv[1], k_cmds[i].name)) return k_cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "dotlm: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
