/* PLACEHOLDER during bring-up: replaced by the real subcommand before landing. */
#include <stdio.h>
#include "cli/cli.h"
int cmd_logits(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "dotlm logits: not available in this build\n");
    return 2;
}
