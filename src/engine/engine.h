/* The engine ties a loaded model to a KV pool and forward workspace, and
 * runs whole sequences through it (prompt in chunks, then one token at a
 * time). The server's scheduler drives the same pieces with mixed batches. */
#pragma once
#include "engine/kvcache.h"
#include "model/model.h"

typedef struct {
    dl_model *m;
    kv_pool kv;
    model_ws ws;
    int ctx;       /* max positions per sequence */
    int max_tok;   /* max tokens per forward call (prefill chunk) */
    float *logits; /* host [max_tok, vocab] */
} engine;

/* ctx: context length per sequence (0 = min(model max, 4096)); max_seqs:
 * concurrent sequences; max_tok: tokens per forward; kv_dtype: DT_F32 or
 * DT_F16 KV cache, DT_COUNT = the backend's default (engine_kv_default).
 * 0 or -1. */
int engine_init(engine *e, dl_model *m, int ctx, int max_seqs, int max_tok, dl_dtype kv_dtype);
/* Default KV-cache type of a backend: F32 on the CPU (exact reference),
 * F16 on GPUs (half the cache traffic). */
dl_dtype engine_kv_default(const dl_backend *be);
void engine_free(engine *e);
/* Feed ids[0..n) at positions pos0.. into slot (reserving KV). If all_logits,
 * out receives [n, vocab] logits; else out receives the last token's [vocab]
 * logits (out may be NULL). 0 or -1. */
int engine_feed(engine *e, int slot, const int32_t *ids, int n, int pos0, float *out,
                int all_logits);
