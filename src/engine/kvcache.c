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
    size_t nb = (size_t)n_blocks;
    p->n_buckets = 1;
    while (p->n_buckets < 2 * n_blocks) p->n_buckets *= 2;
    kv->k = calloc((size_t)(n_layers ? n_layers : 1), sizeof(void *));
    kv->v = calloc((size_t)(n_layers ? n_layers : 1), sizeof(void *));
    kv->block_table = malloc((size_t)max_seqs * kv->max_blocks_per_seq * sizeof(int32_t));
    p->free_list = malloc(nb * sizeof(int32_t));
    p->seq_len = calloc((size_t)max_seqs, sizeof(int32_t));
    p->slot_used = calloc((size_t)max_seqs, 1);
    p->refcnt = calloc(nb, sizeof(int32_t));
    p->published = calloc(nb, 1);
    p->hash = calloc(nb, sizeof(uint64_t));
    p->htoks = malloc(nb * block_size * sizeof(int32_t));
    p->hnext = malloc(nb * sizeof(int32_t));
    p->bucket = malloc((size_t)p->n_buckets * sizeof(int32_t));
    p->lru_prev = malloc(nb * sizeof(int32_t));
    p->lru_next = malloc(nb * sizeof(int32_t));
    if (!kv->k || !kv->v || !kv->block_table || !p->free_list || !p->seq_len || !p->slot_used ||
        !p->refcnt || !p->published || !p->hash || !p->htoks || !p->hnext || !p->bucket ||
        !p->lru_prev || !p->lru_next) {
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
    for (int i = 0; i < p->n_buckets; i++) p->bucket[i] = -1;
    p->n_free = n_blocks;
    p->lru_head = p->lru_tail = -1;
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
    free(p->refcnt);
    free(p->published);
    free(p->hash);
    free(p->htoks);
    free(p->hnext);
    free(p->bucket);
    free(p->lru_prev);
    free(p->lru_next);
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
int kv_available(const kv_pool *p) { return p->n_free + p->n_lru; }
int kv_blocks_in_use(const kv_pool *p) { return p->kv.n_blocks - p->n_free - p->n_lru; }

/* --- LRU list of published blocks with refcnt 0 --- */
static void lru_remove(kv_pool *p, int b) {
    int pr = p->lru_prev[b], nx = p->lru_next[b];
    if (pr >= 0) p->lru_next[pr] = nx;
    else p->lru_head = nx;
    if (nx >= 0) p->lru_prev[nx] = pr;
    else p->lru_tail = pr;
    p->n_lru--;
}

static void lru_push(kv_pool *p, int b) {
    p->lru_prev[b] = p->lru_tail;
    p->lru_next[b] = -1;
    if (p->lru_tail >= 0) p->lru_next[p->lru_tail] = b;
    else p->lru_head = b;
    p->lru_tail = b;
    p->n_lru++;
}

/* Remove block b from the hash table. */
static void unpublish(kv_pool *p, int b) {
    int32_t *link = &p->bucket[p->hash[b] & (uint64_t)(p->n_buckets - 1)];
    while (*link >= 0 && *link != b) link = &p->hnext[*link];
    if (*link == b) *link = p->hnext[b];
    p->published[b] = 0;
}

/* Take one block: free list first, else evict the least recently used cached block. */
static int take_block(kv_pool *p) {
    if (p->n_free) return p->free_list[--p->n_free];
    int b = p->lru_head;
    if (b < 0) return -1;
    lru_remove(p, b);
    unpublish(p, b);
    return b;
}

int kv_blocks_needed(const kv_pool *p, int slot, int n) {
    int have = kv_blocks_for(p, p->seq_len[slot]), need = kv_blocks_for(p, n);
    return need > have ? need - have : 0;
}

int kv_reserve(kv_pool *p, int slot, int n) {
    dl_kvcache *kv = &p->kv;
    if (n > kv->max_blocks_per_seq * kv->block_size)
        return dl_err("sequence of %d tokens exceeds the context size %d", n,
                      kv->max_blocks_per_seq * kv->block_size);
    int have = kv_blocks_for(p, p->seq_len[slot]);
    int need = kv_blocks_for(p, n);
    if (need - have > kv_available(p))
        return dl_err("KV cache full: need %d more blocks, %d free", need - have, kv_available(p));
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    for (int j = have; j < need; j++) {
        bt[j] = take_block(p);
        p->refcnt[bt[j]] = 1;
    }
    if (n > p->seq_len[slot]) p->seq_len[slot] = n;
    return 0;
}

void kv_slot_free(kv_pool *p, int slot) {
    dl_kvcache *kv = &p->kv;
    if (slot < 0 || slot >= kv->max_seqs || !p->slot_used[slot]) return;
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    for (int j = 0; j < kv->max_blocks_per_seq; j++)
        if (bt[j] >= 0) {
            int b = bt[j];
            if (--p->refcnt[b] <= 0) {
                p->refcnt[b] = 0;
                if (p->published[b]) lru_push(p, b);
                else p->free_list[p->n_free++] = b;
            }
            bt[j] = -1;
        }
    p->seq_len[slot] = 0;
    p->slot_used[slot] = 0;
}

/* Chain hash: h_j = mix(h_{j-1}, tokens of block j). */
static uint64_t chain_hash(uint64_t h, const int32_t *t, int n) {
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)t[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return h;
}

/* Published block with chain hash h and these tokens whose predecessor
 * matches (checked through the caller's chain), or -1. */
static int lookup(const kv_pool *p, uint64_t h, const int32_t *t) {
    int bs = p->kv.block_size;
    for (int b = p->bucket[h & (uint64_t)(p->n_buckets - 1)]; b >= 0; b = p->hnext[b])
        if (p->hash[b] == h && !memcmp(p->htoks + (size_t)b * bs, t, (size_t)bs * sizeof *t))
            return b;
    return -1;
}

int kv_prefix_attach(kv_pool *p, int slot, const int32_t *ids, int n) {
    dl_kvcache *kv = &p->kv;
    int bs = kv->block_size;
    if (n <= 1 || p->seq_len[slot] != 0) return 0;
    int maxb = (n - 1) / bs;
    if (maxb > kv->max_blocks_per_seq) maxb = kv->max_blocks_per_seq;
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    uint64_t h = 0x51ed270b27a1f3c5ull;
    int j = 0;
    for (; j < maxb; j++) {
        p->prefix_queries++;
        h = chain_hash(h, ids + (size_t)j * bs, bs);
        int b = lookup(p, h, ids + (size_t)j * bs);
        if (b < 0) break;
        if (p->refcnt[b] == 0) lru_remove(p, b);
        p->refcnt[b]++;
        bt[j] = b;
        p->prefix_hits++;
    }
    p->seq_len[slot] = j * bs;
    return j * bs;
}

void kv_prefix_publish(kv_pool *p, int slot, const int32_t *ids, int n) {
    dl_kvcache *kv = &p->kv;
    int bs = kv->block_size;
    int nb = n / bs;
    if (nb > kv_blocks_for(p, p->seq_len[slot])) nb = kv_blocks_for(p, p->seq_len[slot]);
    int32_t *bt = kv->block_table + (size_t)slot * kv->max_blocks_per_seq;
    uint64_t h = 0x51ed270b27a1f3c5ull;
    for (int j = 0; j < nb; j++) {
        const int32_t *t = ids + (size_t)j * bs;
        h = chain_hash(h, t, bs);
        int b = bt[j];
        if (b < 0 || p->published[b]) continue;
        if (lookup(p, h, t) >= 0) continue; /* same chain cached in another block */
        p->published[b] = 1;
        p->hash[b] = h;
        memcpy(p->htoks + (size_t)b * bs, t, (size_t)bs * sizeof *t);
        size_t bk = h & (uint64_t)(p->n_buckets - 1);
        p->hnext[b] = p->bucket[bk];
        p->bucket[bk] = b;
    }
}
