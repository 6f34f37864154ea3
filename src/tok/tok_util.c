/* Small containers for the tokenizer: growable buffers, a string -> id hash
 * map and a pair -> merge map (both open addressing, power-of-two capacity). */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "tok/tok_impl.h"

int tok_buf_put(tok_buf *b, const void *data, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return dl_err("tokenizer: out of memory");
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

void tok_buf_free(tok_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

int tok_ids_push(tok_ids *v, int32_t id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = realloc(v->p, cap * sizeof *p);
        if (!p) return dl_err("tokenizer: out of memory");
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = id;
    return 0;
}

static uint64_t hash_bytes(const char *k, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static size_t pow2_cap(size_t expect) {
    size_t cap = 16;
    while (cap < expect * 2) cap *= 2;
    return cap;
}

int tok_smap_init(tok_smap *m, size_t expect) {
    m->cap = pow2_cap(expect);
    m->n = 0;
    m->e = calloc(m->cap, sizeof *m->e);
    return m->e ? 0 : dl_err("tokenizer: out of memory");
}

void tok_smap_free(tok_smap *m) {
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}

static int smap_grow(tok_smap *m) {
    tok_smap nm;
    if (tok_smap_init(&nm, m->cap) < 0) return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->e[i].k) tok_smap_put(&nm, m->e[i].k, m->e[i].klen, m->e[i].v);
    free(m->e);
    *m = nm;
    return 0;
}

int tok_smap_put(tok_smap *m, const char *k, uint32_t klen, int32_t v) {
    if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0) return -1;
    size_t mask = m->cap - 1, i = hash_bytes(k, klen) & mask;
    while (m->e[i].k) {
        if (m->e[i].klen == klen && !memcmp(m->e[i].k, k, klen)) {
            m->e[i].v = v;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->e[i] = (tok_smap_ent){k, klen, v};
    m->n++;
    return 0;
}

int32_t tok_smap_get(const tok_smap *m, const char *k, size_t klen) {
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = hash_bytes(k, klen) & mask;
    while (m->e[i].k) {
        if (m->e[i].klen == klen && !memcmp(m->e[i].k, k, klen)) return m->e[i].v;
        i = (i + 1) & mask;
    }
    return -1;
}

int tok_pmap_init(tok_pmap *m, size_t expect) {
    m->cap = pow2_cap(expect);
    m->n = 0;
    m->e = malloc(m->cap * sizeof *m->e);
    if (!m->e) return dl_err("tokenizer: out of memory");
    for (size_t i = 0; i < m->cap; i++) m->e[i].key = UINT64_MAX;
    return 0;
}

void tok_pmap_free(tok_pmap *m) {
    free(m->e);
    m->e = NULL;
    m->cap = m->n = 0;
}

int tok_pmap_put(tok_pmap *m, int32_t a, int32_t b, int32_t rank, int32_t new_id) {
    if ((m->n + 1) * 2 > m->cap) {
        tok_pmap nm;
        if (tok_pmap_init(&nm, m->cap) < 0) return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].key != UINT64_MAX)
                tok_pmap_put(&nm, (int32_t)(m->e[i].key >> 32), (int32_t)(uint32_t)m->e[i].key,
                             m->e[i].rank, m->e[i].new_id);
        free(m->e);
        *m = nm;
    }
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t mask = m->cap - 1, i = hash_u64(key) & mask;
    while (m->e[i].key != UINT64_MAX) {
        if (m->e[i].key == key) {
            m->e[i].rank = rank;
            m->e[i].new_id = new_id;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->e[i] = (tok_pmap_ent){key, rank, new_id};
    m->n++;
    return 0;
}

const tok_pmap_ent *tok_pmap_get(const tok_pmap *m, int32_t a, int32_t b) {
    if (!m->cap) return NULL;
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t mask = m->cap - 1, i = hash_u64(key) & mask;
    while (m->e[i].key != UINT64_MAX) {
        if (m->e[i].key == key) return &m->e[i];
        i = (i + 1) & mask;
    }
    return NULL;
}
