#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"

dl_dtype engine_kv_default(const dl_backend *be) { return strcmp(be->name, "cpu") ? DT_F16 : DT_F32; }

int engine_chunk_default(const dl_backend *be) { return strcmp(be->name, "cpu") ? 2048 : 256; }

int engine_init(engine *e, dl_model *m, int ctx, int max_seqs, int max_tok, dl_dtype kv_dtype) {
    memset(e, 0, sizeof *e);
    e->m = m;
    if (ctx <= 0) ctx = m->cfg.max_pos > 0 && m->cfg.max_pos < 4096 ? m->cfg.max_pos : 4096;
    if (m->cfg.max_pos > 0 && ctx > m->cfg.max_pos)
        return dl_err("--ctx %d exceeds the model's max_position_embeddings %d", ctx,
                      m->cfg.max_pos);
    if (max_seqs <= 0) max_seqs = 1;
    if (max_tok <= 0) max_tok = engine_chunk_default(m->be);
    if (max_tok > ctx) max_tok = ctx;
    e->ctx = ctx;
    e->max_tok = max_tok;
    const int bs = 16;
    int blocks = max_seqs * ((ctx + bs - 1) / bs);
    dl_dtype kvt = kv_dtype == DT_COUNT ? engine_kv_default(m->be) : kv_dtype;
    if (kvt != DT_F32 && kvt != DT_F16) return dl_err("KV cache type must be f32 or f16");
    if (kv_create(&e->kv, m->be, m->n_kv_layers, m->cfg.n_kv_heads, m->cfg.head_dim, bs, blocks,
                  max_seqs, ctx, kvt))
        return -1;
    if (model_ws_init(&e->ws, m, max_tok, max_seqs)) {
        kv_destroy(&e->kv);
        return -1;
    }
    /* page-locked on the GPUs: a decode step's logits row is copied in
     * ~30 us instead of ~120-180 (H200, bench/lab/d2h_lab.cu) */
    e->logits = be_host_alloc(m->be, (size_t)model_vocab(m) * sizeof(float));
    if (!e->logits) {
        engine_free(e);
        return dl_err("out of memory for logits");
    }
    return 0;
}

void engine_free(engine *e) {
    if (!e->m) return;
    model_ws_free(&e->ws);
    kv_destroy(&e->kv);
    be_host_free(e->m->be, e->logits);
    memset(e, 0, sizeof *e);
}

int engine_feed(engine *e, int slot, const int32_t *ids, int n, int pos0, float *out,
                int all_logits) {
    int V = model_vocab(e->m);
    if (all_logits && !out) return dl_err("engine_feed: all_logits needs an output buffer");
    if (pos0 + n > e->ctx)
        return dl_err("sequence of %d tokens is longer than the context (%d); raise --ctx",
                      pos0 + n, e->ctx);
    if (kv_reserve(&e->kv, slot, pos0 + n)) return -1;
    int32_t *seq = malloc((size_t)e->max_tok * sizeof(int32_t));
    int32_t *pos = malloc((size_t)e->max_tok * sizeof(int32_t));
    int32_t *rows = malloc((size_t)e->max_tok * sizeof(int32_t));
    int rc = 0;
    if (!seq || !pos || !rows) rc = dl_err("out of memory");
    for (int s = 0; !rc && s < n; s += e->max_tok) {
        int c = n - s < e->max_tok ? n - s : e->max_tok;
        for (int i = 0; i < c; i++) {
            seq[i] = slot;
            pos[i] = pos0 + s + i;
            rows[i] = i;
        }
        dl_batch b = {.ntok = c, .tokens = ids + s, .seq = seq, .pos = pos};
        int last_chunk = s + c == n;
        if (all_logits) {
            rc = model_forward(&e->ws, &b, &e->kv.kv, rows, c, out + (size_t)s * V);
        } else if (last_chunk) {
            int r = c - 1;
            rc = model_forward(&e->ws, &b, &e->kv.kv, &r, 1, out ? out : e->logits);
        } else {
            rc = model_forward(&e->ws, &b, &e->kv.kv, NULL, 0, NULL);
        }
    }
    free(seq);
    free(pos);
    free(rows);
    return rc;
}
