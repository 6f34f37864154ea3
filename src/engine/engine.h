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
    float *logits; /* host [vocab]: the last token's logits when engine_feed gets no out */
} engine;

/* ctx: context length per sequence (0 = min(model max, 4096)); max_seqs:
 * concurrent sequences; max_tok: tokens per forward (<= 0: the backend's
 * default, engine_chunk_default; never more than ctx); kv_dtype: DT_F32 or
 * DT_F16 KV cache, DT_COUNT = the backend's default (engine_kv_default).
 * 0 or -1. */
int engine_init(engine *e, dl_model *m, int ctx, int max_seqs, int max_tok, dl_dtype kv_dtype);
/* Default KV-cache type of a backend: F32 on the CPU (exact reference),
 * F16 on GPUs (half the cache traffic). */
dl_dtype engine_kv_default(const dl_backend *be);
/* Default prompt tokens per forward: 256 on the CPU (its GEMMs gain
 * nothing from more rows and the workspace stays small), 2048 on GPUs
 * (their tiled GEMMs fill the device only with long M: see
 * bench/RESULTS.md, prompt tok/s by chunk). */
int engine_chunk_default(const dl_backend *be);
void engine_free(engine *e);
/* Feed ids[0..n) at positions pos0.. into slot (reserving KV), in forwards
 * of at most max_tok tokens. If all_logits, out (required) receives
 * [n, vocab] logits; else out receives the last token's [vocab] logits
 * (out NULL: e->logits does). 0 or -1. */
int engine_feed(engine *e, int slot, const int32_t *ids, int n, int pos0, float *out,
                int all_logits);
