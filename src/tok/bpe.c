/* The BPE model: merge a word's symbols by merge rank, exactly as HF's
 * Word::merge_all does (min-heap on (rank, position) over a linked list of
 * symbols: O(n log n) for an n-character word), plus a small word cache. */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "tok/tok_impl.h"

typedef struct {
    int32_t rank, pos, new_id;
} merge_ent;

/* Binary min-heap ordered by (rank, pos). */
typedef struct {
    merge_ent *e;
    size_t n, cap;
} heap;

static int less(const merge_ent *a, const merge_ent *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int heap_push(heap *h, merge_ent m) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 32;
        merge_ent *ne = realloc(h->e, cap * sizeof *ne);
        if (!ne) return dl_err("tokenizer: out of memory");
        h->e = ne;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!less(&m, &h->e[p])) break;
        h->e[i] = h->e[p];
        i = p;
    }
    h->e[i] = m;
    return 0;
}

static merge_ent heap_pop(heap *h) {
    merge_ent top = h->e[0], last = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && less(&h->e[c + 1], &h->e[c])) c++;
        if (!less(&h->e[c], &last)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n) h->e[i] = last;
    return top;
}

static uint64_t word_hash(const char *w, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    return h ^ (h >> 31);
}

/* Merge the symbol ids sym[0..n) in place; returns the number left. */
static int merge_all(const tok_tokenizer *t, int32_t *sym, int32_t *prev, int32_t *next, int n, heap *h) {
    h->n = 0;
    for (int i = 0; i + 1 < n; i++) {
        const tok_pmap_ent *m = tok_pmap_get(&t->merges, sym[i], sym[i + 1]);
        if (m && heap_push(h, (merge_ent){m->rank, i, m->new_id}) < 0) return -1;
    }
    while (h->n) {
        merge_ent top = heap_pop(h);
        int p = top.pos;
        if (sym[p] < 0 || next[p] < 0) continue; /* removed, or last */
        int q = next[p];
        const tok_pmap_ent *m = tok_pmap_get(&t->merges, sym[p], sym[q]);
        if (!m || m->new_id != top.new_id) continue; /* stale */
        sym[p] = top.new_id;
        sym[q] = -1;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        if (prev[p] >= 0) {
            const tok_pmap_ent *l = tok_pmap_get(&t->merges, sym[prev[p]], sym[p]);
            if (l && heap_push(h, (merge_ent){l->rank, prev[p], l->new_id}) < 0) return -1;
        }
        if (next[p] >= 0) {
            const tok_pmap_ent *r = tok_pmap_get(&t->merges, sym[p], sym[next[p]]);
            if (r && heap_push(h, (merge_ent){r->rank, p, r->new_id}) < 0) return -1;
        }
    }
    int k = 0;
    for (int i = 0; i >= 0 && i < n; i = next[i]) sym[k++] = sym[i];
    return k;
}

int tok_bpe_word(const tok_tokenizer *t, const char *w, size_t n, tok_ids *ids) {
    if (!n) return 0;
    if (t->ignore_merges) {
        int32_t id = tok_smap_get(&t->vocab, w, n);
        if (id >= 0) return tok_ids_push(ids, id);
    }
    tok_cache_ent *slot = NULL;
    if (n <= TOK_CACHE_KEY) {
        slot = &t->cache[word_hash(w, n) & (TOK_CACHE_SLOTS - 1)];
        pthread_mutex_lock((pthread_mutex_t *)&t->cache_mu);
        if (slot->klen == n && !memcmp(slot->key, w, n)) {
            int32_t got[TOK_CACHE_IDS];
            int ng = slot->nids;
            memcpy(got, slot->ids, (size_t)ng * sizeof *got);
            pthread_mutex_unlock((pthread_mutex_t *)&t->cache_mu);
            for (int i = 0; i < ng; i++)
                if (tok_ids_push(ids, got[i]) < 0) return -1;
            return 0;
        }
        pthread_mutex_unlock((pthread_mutex_t *)&t->cache_mu);
    }

    /* initial symbols: one per character (unknown characters -> unk or dropped) */
    int32_t *sym = malloc(n * 3 * sizeof *sym);
    if (!sym) return dl_err("tokenizer: out of memory");
    int32_t *prev = sym + n, *next = sym + 2 * n;
    int ns = 0, pend_unk = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int l = tok_utf8_next((const unsigned char *)w + i, n - i, &cp);
        int b = tok_cp_byte(cp);
        int32_t id = b >= 0 ? t->byte_id[b] : -1; /* fast path for the byte alphabet */
        if (id < 0) id = tok_smap_get(&t->vocab, w + i, (size_t)l);
        i += (size_t)l;
        if (id >= 0) {
            if (pend_unk) { sym[ns++] = t->unk_id; pend_unk = 0; }
            sym[ns++] = id;
        } else if (t->unk_id >= 0) {
            if (pend_unk && !t->fuse_unk) sym[ns++] = t->unk_id;
            pend_unk = 1;
        }
    }
    if (pend_unk) sym[ns++] = t->unk_id;
    for (int i = 0; i < ns; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < ns ? i + 1 : -1;
    }
    heap h = {0};
    int k = merge_all(t, sym, prev, next, ns, &h);
    free(h.e);
    int rc = k < 0 ? -1 : 0;
    for (int i = 0; i < k && rc == 0; i++) rc = tok_ids_push(ids, sym[i]);
    if (rc == 0 && slot && k <= TOK_CACHE_IDS) {
        pthread_mutex_lock((pthread_mutex_t *)&t->cache_mu);
        memcpy(slot->key, w, n);
        slot->klen = (uint8_t)n;
        slot->nids = (uint8_t)k;
        memcpy(slot->ids, sym, (size_t)k * sizeof *sym);
        pthread_mutex_unlock((pthread_mutex_t *)&t->cache_mu);
    }
    free(sym);
    return rc;
}
