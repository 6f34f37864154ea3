/* Paged KV cache: a pool of fixed-size blocks per layer plus a block table
 * per sequence slot. Blocks are handed out from a free list as sequences
 * grow and returned when a sequence is freed. The storage itself is in
 * backend memory (dl_kvcache in backend/backend.h). */
#pragma once
#include "backend/backend.h"

typedef struct {
    dl_kvcache kv;       /* what the backend sees */
    dl_backend *be;
    int32_t *free_list;  /* [n_blocks] stack of free block ids */
    int n_free;
    int32_t *seq_len;    /* [max_seqs] positions reserved per slot */
    uint8_t *slot_used;  /* [max_seqs] */
} kv_pool;

/* Allocate n_blocks blocks of block_size positions for n_layers layers.
 * Returns 0 or -1 (message says how many bytes could not be allocated). */
int kv_create(kv_pool *p, dl_backend *be, int n_layers, int n_kv_heads, int head_dim,
              int block_size, int n_blocks, int max_seqs, int max_ctx, dl_dtype dtype);
void kv_destroy(kv_pool *p);
/* Claim a free sequence slot; -1 when all are in use. */
int kv_slot_alloc(kv_pool *p);
/* Make positions [0, n) of slot addressable (allocating blocks).
 * Returns 0, or -1 when the pool is out of blocks or n exceeds max_ctx
 * (nothing is allocated in that case). */
int kv_reserve(kv_pool *p, int slot, int n);
/* Return a slot and all its blocks. */
void kv_slot_free(kv_pool *p, int slot);
/* Blocks needed to hold n positions. */
int kv_blocks_for(const kv_pool *p, int n);
/* Bytes one block occupies across all layers (K and V). */
size_t kv_block_bytes(const kv_pool *p);
