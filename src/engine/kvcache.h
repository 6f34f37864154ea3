/* Paged KV cache: a pool of fixed-size blocks per layer plus a block table
 * per sequence slot. Blocks are handed out from a free list as sequences
 * grow and returned when a sequence is freed. The storage itself is in
 * backend memory (dl_kvcache in backend/backend.h).
 *
 * Prefix cache (optional, used by the server): a full block whose positions
 * hold prompt tokens can be published under a hash of the token chain that
 * leads to it (all tokens from position 0 to the block's end). A later
 * sequence with the same leading tokens attaches the published blocks
 * instead of recomputing them. Blocks are reference counted (one count per
 * slot using them); a published block that no slot uses stays cached on an
 * LRU list and is evicted (unpublished, reused) only when the free list is
 * empty. Attached blocks are never written: only full blocks are shared and
 * a sequence writes positions after its shared prefix. */
#pragma once
#include <stdint.h>

#include "backend/backend.h"

typedef struct {
    dl_kvcache kv;       /* what the backend sees */
    dl_backend *be;
    int32_t *free_list;  /* [n_blocks] stack of free block ids */
    int n_free;
    int32_t *seq_len;    /* [max_seqs] positions reserved per slot */
    uint8_t *slot_used;  /* [max_seqs] */
    /* prefix cache / refcounts (all [n_blocks]) */
    int32_t *refcnt;     /* slots holding the block */
    uint8_t *published;  /* 1 if in the hash table */
    uint64_t *hash;      /* chain hash of a published block */
    int32_t *htoks;      /* [n_blocks, block_size] tokens of a published block (collision check) */
    int32_t *hnext;      /* hash-bucket chain */
    int32_t *bucket;     /* [n_buckets] first block of each bucket, -1 empty */
    int n_buckets;
    int32_t *lru_prev, *lru_next; /* LRU list of published, unreferenced blocks */
    int lru_head, lru_tail;       /* head = least recently used */
    int n_lru;
    uint64_t prefix_hits, prefix_queries; /* blocks reused / blocks looked up */
} kv_pool;

/* Allocate n_blocks blocks of block_size positions for n_layers layers.
 * Returns 0 or -1 (message says how many bytes could not be allocated). */
int kv_create(kv_pool *p, dl_backend *be, int n_layers, int n_kv_heads, int head_dim,
              int block_size, int n_blocks, int max_seqs, int max_ctx, dl_dtype dtype);
void kv_destroy(kv_pool *p);
/* Claim a free sequence slot; -1 when all are in use. */
int kv_slot_alloc(kv_pool *p);
/* Make positions [0, n) of slot addressable (allocating blocks, evicting
 * unreferenced cached blocks when the free list is empty).
 * Returns 0, or -1 when the pool is out of blocks or n exceeds max_ctx
 * (nothing is allocated in that case). */
int kv_reserve(kv_pool *p, int slot, int n);
/* Return a slot and drop its block references (blocks nobody else uses go
 * back to the free list, or to the LRU cache when published). */
void kv_slot_free(kv_pool *p, int slot);
/* Blocks needed to hold n positions. */
int kv_blocks_for(const kv_pool *p, int n);
/* Bytes one block occupies across all layers (K and V). */
size_t kv_block_bytes(const kv_pool *p);
/* Blocks that can be handed out now (free + evictable cached). */
int kv_available(const kv_pool *p);
/* Blocks referenced by at least one slot. */
int kv_blocks_in_use(const kv_pool *p);

/* Attach the longest run of published blocks matching ids[0..n) to an empty
 * slot (at most (n-1)/block_size blocks, so at least one token is left to
 * compute). Returns the number of positions now held (a multiple of
 * block_size, possibly 0); the slot's seq_len becomes that. */
int kv_prefix_attach(kv_pool *p, int slot, const int32_t *ids, int n);
/* Publish the slot's full blocks covering ids[0..n) (their KV must be
 * computed). Blocks already published, or whose chain is already cached
 * under another block, are left alone. */
void kv_prefix_publish(kv_pool *p, int slot, const int32_t *ids, int n);
/* Blocks needed to extend the slot from its current reservation to n
 * positions (0 if already covered). */
int kv_blocks_needed(const kv_pool *p, int slot, int n);
