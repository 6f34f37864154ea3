/* Options and set-up shared by the model-running subcommands. */
#include <stdio.h>
#pragma once
#include "backend/backend.h"
#include "engine/engine.h"
#include "model/model.h"

typedef struct {
    const char *model_dir;
    const char *backend;   /* "cpu" default */
    int threads;           /* 0 = all cores */
    int ctx;               /* 0 = default */
    int stats;             /* print kernel dispatch counters at exit */
    model_fp8_policy fp8_policy;
    dl_dtype kv_dtype;     /* KV-cache element type; DT_COUNT = backend default */
    int chunk;             /* prompt tokens per forward; 0 = engine_chunk_default() */
} cli_model_opts;

/* Try to consume a shared option at argv[*i]; returns 1 if consumed, 0 if
 * not a shared option, -1 on a bad value (message printed). */
int cli_common_opt(cli_model_opts *o, int argc, char **argv, int *i, const char *cmd);
/* Help text for the shared options. */
void cli_common_help(FILE *f);
/* Create the backend and load the model. NULL with the error printed. */
dl_model *cli_load_model(const cli_model_opts *o, dl_backend **be_out);
/* Parse "1,2,3" into a malloc'd array; count in *n. -1 on bad syntax. */
int cli_parse_ids(const char *s, int32_t **ids, int *n);
double cli_now(void);
