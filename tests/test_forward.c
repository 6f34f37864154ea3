/* Batch-first forward on a real fixture checkpoint: a prompt prefilled in
 * one call, in uneven chunks, token by token, or interleaved in one batch
 * with another sequence must give the same logits (the CPU kernels are
 * batch-invariant, so we require bitwise equality), and a freed slot's
 * blocks are reusable. */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "engine/kvcache.h"
#include "model/model.h"
#include "testutil.h"

#define NA 23
#define NB 17

static int run(model_ws *ws, kv_pool *kv, const int32_t *tok, const int32_t *seq,
               const int32_t *pos, int n, float *out) {
    int32_t rows[64];
    for (int i = 0; i < n; i++) {
        rows[i] = i;
        if (kv_reserve(kv, seq[i], pos[i] + 1)) return -1;
    }
    dl_batch b = {.ntok = n, .tokens = tok, .seq = seq, .pos = pos};
    return model_forward(ws, &b, &kv->kv, rows, n, out);
}

int main(void) {
    uint64_t s = tu_seed();
    dl_backend *be = be_create("cpu", 0);
    model_opts mo = {.quiet = 1};
    dl_model *m = model_load("fixtures/qwen3_bf16", be, &mo);
    CHECKF(m != NULL, "%s", dl_errmsg());
    if (!m) return TEST_END();
    int V = model_vocab(m);
    model_ws ws;
    kv_pool kv;
    CHECK(model_ws_init(&ws, m, 64, 4) == 0);
    CHECK(kv_create(&kv, be, m->n_kv_layers, m->cfg.n_kv_heads, m->cfg.head_dim, 4, 64, 4, 64,
                    DT_F32) == 0);
    int32_t A[NA], B[NB];
    for (int i = 0; i < NA; i++) A[i] = (int32_t)(tu_rand_u64(&s) % (uint64_t)V);
    for (int i = 0; i < NB; i++) B[i] = (int32_t)(tu_rand_u64(&s) % (uint64_t)V);
    float *ref = malloc(sizeof(float) * (size_t)V * NA), *got = malloc(sizeof(float) * (size_t)V * 64);
    float *refB = malloc(sizeof(float) * (size_t)V * NB);
    int32_t seq[64], pos[64], tok[64];

    /* 1. A in one call (slot 0) */
    int sa = kv_slot_alloc(&kv);
    for (int i = 0; i < NA; i++) seq[i] = sa, pos[i] = i;
    CHECK(run(&ws, &kv, A, seq, pos, NA, ref) == 0);
    kv_slot_free(&kv, sa);
    /* B alone */
    int sb = kv_slot_alloc(&kv);
    for (int i = 0; i < NB; i++) seq[i] = sb, pos[i] = i;
    CHECK(run(&ws, &kv, B, seq, pos, NB, refB) == 0);
    kv_slot_free(&kv, sb);

    /* 2. A token by token, in a different slot */
    kv_slot_alloc(&kv);
    int s2 = kv_slot_alloc(&kv);
    int same = 1;
    for (int i = 0; i < NA; i++) {
        seq[0] = s2, pos[0] = i;
        CHECK(run(&ws, &kv, A + i, seq, pos, 1, got) == 0);
        same &= !memcmp(got, ref + (size_t)i * V, sizeof(float) * (size_t)V);
    }
    CHECKF(same, "token-by-token logits differ from one-call prefill");
    kv_slot_free(&kv, s2);
    kv_slot_free(&kv, 0);

    /* 3. uneven chunks 5 + 11 + 7 */
    int s3 = kv_slot_alloc(&kv), off = 0, chunks[] = {5, 11, 7};
    same = 1;
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < chunks[c]; i++) seq[i] = s3, pos[i] = off + i;
        CHECK(run(&ws, &kv, A + off, seq, pos, chunks[c], got) == 0);
        same &= !memcmp(got, ref + (size_t)off * V, sizeof(float) * (size_t)V * chunks[c]);
        off += chunks[c];
    }
    CHECKF(same, "chunked prefill logits differ");
    kv_slot_free(&kv, s3);

    /* 4. mixed batch: A[0..10) alone, then A[10..23) interleaved with all of B */
    int xa = kv_slot_alloc(&kv), xb = kv_slot_alloc(&kv);
    for (int i = 0; i < 10; i++) seq[i] = xa, pos[i] = i;
    CHECK(run(&ws, &kv, A, seq, pos, 10, got) == 0);
    int n = 0, ia = 10, ib = 0;
    while (ia < NA || ib < NB) {
        if (ib < NB) tok[n] = B[ib], seq[n] = xb, pos[n] = ib++, n++;
        if (ia < NA) tok[n] = A[ia], seq[n] = xa, pos[n] = ia++, n++;
    }
    CHECK(run(&ws, &kv, tok, seq, pos, n, got) == 0);
    int okA = 1, okB = 1;
    for (int r = 0; r < n; r++) {
        const float *want = seq[r] == xa ? ref + (size_t)pos[r] * V : refB + (size_t)pos[r] * V;
        int eq = !memcmp(got + (size_t)r * V, want, sizeof(float) * (size_t)V);
        if (seq[r] == xa) okA &= eq;
        else okB &= eq;
    }
    CHECKF(okA && okB, "mixed batch differs from separate runs (A %d, B %d)", okA, okB);

    /* 5. errors leave the model usable */
    tok[0] = V + 5, seq[0] = xa, pos[0] = NA;
    CHECK(run(&ws, &kv, tok, seq, pos, 1, got) == -1);
    CHECK(strstr(dl_errmsg(), "vocabulary") != NULL);
    model_ws_free(&ws);
    kv_destroy(&kv);
    model_free(m);
    be_destroy(be);
    free(ref);
    free(refB);
    free(got);
    return TEST_END();
}
