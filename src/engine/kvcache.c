#include "engine/kvcache.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"

size_t kv_block_bytes(const kv_pool *p) {
    return (size_t)2 * p->kv.n_layers * p->kv.block_size * p->kv.n_kv_heads * p->kv.head_dim *
           dt_size(p->kv.dtype);
}

int kv_create(kv_pool *p, dl_backend *be, int n_layers, int n_kv_heads, int head_dim,
              int block_size, int n_blocks, int max_seqs, int max_ctx, dl_dtype dtype) {
    memset(p, 0, sizeof *p);
    p->be = be;
    dl_kvcache *kv = &p->kv;
    kv->n_layers = n_layers;
    kv->n_kv_heads = n_kv_heads;
    kv->head_dim = head_dim;
    kv->block_size = block_size;
    kv->n_blocks = n_blocks;
    kv->dtype = dtype;
    kv->max_seqs = max_seqs;
    kv->max_blocks_per_seq = (max_ctx + block_size - 1) / block_size;
    size_t per_layer = (size_t)n_blocks * block_size * n_kv_heads * head_dim * dt_size(dtype);
    kv->k = calloc((size_t)(n_layers ? n_layers : 1), sizeof(void *));
    kv->v = calloc((size_t)(n_layers ? n_layers : 1), sizeof(void *));
    kv->block_table = malloc((size_t)max_seqs * kv->max_blocks_per_seq * sizeof(int32_t));
    p->free_list = malloc((size_t)n_blocks * sizeof(int32_t));
    p->seq_len = calloc((size_t)max_seqs, sizeof(int32_t));
    p->slot_used = calloc((size_t)max_seqs, 1);
    if (!kv->k || !kv->v || !kv->block_table || !p->free_list || !p->seq_len || !p->slot_used) {
        kv_destroy(p);
        return dl_err("out of memory for the KV cache tables");
    }
    for (int l = 0; l < n_layers; l++) {
        kv->k[l] = be->alloc(be, per_layer);
        kv->v[l] = be->alloc(be, per_layer);
        if (!kv->k[l] || !kv->v[l]) {
            size_t total = per_layer * 2 * (size_t)n_layers;
            kv_destroy(p);
            return dl_err("cannot allocate the KV cache (%zu MiB for %d blocks of %d tokens); "
                          "lower --ctx or --max-seqs",
                          total >> 20, n_blocks, block_size);
        }
    }
    for (size_t i = 0; i < (size_t)max_seqs * kv->max_blocks_per_seq; i++) kv->block_table[i] = -1;
    for (int i = 0; i < n_blocks; i++) p->free_list[i] = n_blocks - 1 - i;
    p->n_free = n_blocks;
    return 0;
}

void kv_destroy(kv_pool *p) {
    dl_kvcache *kv = &p->kv;
    for (int l = 0; l < kv->n_layers && kv->k && kv->v; l++) {
        if (kv->k[l]) p->be->free(p->be, kv->k[l]);
        if (kv->v[l]) p->be->free(p->be, kv->v[l]);
    }
    free(kv->k);
    free(kv->v);
    free(kv->block_table);
    free(p->free_list);
    free(p->seq_len);
    free(p->slot_used);
    memset(p, 0, sizeof *p);
}

int kv_slot_alloc(kv_pool *p) {
    for (int s = 0; s < p->kv.max_seqs; s++)
        if (!p->slot_used[s]) {
            p->slot_used[s] = 1;
            p->seq_len[s] = 0;
            return s;
        }
    return -1;
}

int kv_blocks_for(const kv_pool *p, int n) { return (n + p->kv.block_size - 1) / p->kv.block_size; }

int kv_reserve(kv_pool *p, int slot, int n) {
    dl_kvcache *kv = &p->kv;
    if (n > kv->max_blocks_per_seq * kv->block_size)
        return dl_err("sequence of %d tokens exceeds the context size %d", n,
                      kv->max_blocks_per_seq * kv->block_size);
    int have = kv_blocks_for(p, p->seq_len[slot]);
    int need = kv_blocks_for(p, n);
    if (need - have > p->n_free)
        return dl_err("KV cache full: need %d more blocks, %d free", need - have, p->n_free);
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    for (int j = have; j < need; j++) bt[j] = p->free_list[--p->n_free];
    if (n > p->seq_len[slot]) p->seq_len[slot] = n;
    return 0;
}

void kv_slot_free(kv_pool *p, int slot) {
    dl_kvcache *kv = &p->kv;
    if (slot < 0 || slot >= kv->max_seqs || !p->slot_used[slot]) return;
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    for (int j = 0; j < kv->max_blocks_per_seq; j++)
        if (bt[j] >= 0) {
            p->free_list[p->n_free++] = bt[j];
            bt[j] = -1;
        }
    p->seq_len[slot] = 0;
    p->slot_used[slot] = 0;
}
