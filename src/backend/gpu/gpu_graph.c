/* Record-and-replay of decode forwards: see gpu_graph.h. */
#include "backend/gpu/gpu_graph.h"

#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu_kernels.h"
#include "core/err.h"

#define GG_SLOTS 24 /* recordings kept (least recently used evicted) */

typedef struct {
    uint64_t key;
    int seen;        /* forwards with this key so far */
    int never;       /* capture failed once: stay eager */
    void *exec;      /* instantiated graph or NULL */
    kreg_kernel **hits;
    int nhits, caphits;
    uint64_t tick;
} gg_slot;

struct gpu_graphs {
    gg_slot s[GG_SLOTS];
    uint64_t tick;
    gg_slot *cap;    /* slot being captured */
    int spoiled;
};

static kreg_kernel K_REPLAY = KREG_KERNEL(
#ifdef DOTLM_HIP
    "hip.graph",
#else
    "cuda.graph",
#endif
    "decode forward replayed as one graph launch (count = replays)");

gpu_graphs *gpu_graphs_create(void) { return calloc(1, sizeof(gpu_graphs)); }

static void slot_reset(gg_slot *s) {
    if (s->exec) gpurt_graph_destroy(s->exec);
    free(s->hits);
    memset(s, 0, sizeof *s);
}

void gpu_graphs_clear(gpu_graphs *gg) {
    if (!gg) return;
    for (int i = 0; i < GG_SLOTS; i++) slot_reset(&gg->s[i]);
}

void gpu_graphs_destroy(gpu_graphs *gg) {
    if (!gg) return;
    gpu_graphs_clear(gg);
    free(gg);
}

/* The slot of `key`, or a fresh one (an empty slot, else the least recently used). */
static gg_slot *find(gpu_graphs *gg, uint64_t key) {
    gg_slot *victim = NULL;
    for (int i = 0; i < GG_SLOTS; i++) {
        gg_slot *s = &gg->s[i];
        if (s->seen && s->key == key) return s;
        if (!victim || (victim->seen && (!s->seen || s->tick < victim->tick))) victim = s;
    }
    slot_reset(victim);
    victim->key = key;
    return victim;
}

int gpu_graphs_begin(gpu_graphs *gg, uint64_t key, void *stream) {
    if (!gg || !kreg_enabled(&K_REPLAY)) return GG_EAGER;
    gg_slot *s = find(gg, key);
    s->seen++;
    s->tick = ++gg->tick;
    if (s->exec) {
        if (gpurt_graph_launch(s->exec, stream)) return dl_err("graph launch: %s", gpurt_errstr());
        kreg_hit(&K_REPLAY);
        for (int i = 0; i < s->nhits; i++) kreg_hit(s->hits[i]);
        return GG_REPLAYED;
    }
    if (s->never || s->seen < 2) return GG_EAGER;
    if (gpurt_capture_begin(stream)) {
        s->never = 1; /* the runtime cannot capture here: stay eager */
        return GG_EAGER;
    }
    gg->cap = s;
    gg->spoiled = 0;
    s->nhits = 0;
    return GG_CAPTURING;
}

int gpu_graphs_capturing(const gpu_graphs *gg) { return gg && gg->cap; }

void gpu_graphs_note(gpu_graphs *gg, kreg_kernel *k) {
    gg_slot *s = gg ? gg->cap : NULL;
    if (!s || gg->spoiled) return;
    if (s->nhits == s->caphits) {
        int n = s->caphits ? 2 * s->caphits : 256;
        kreg_kernel **h = realloc(s->hits, (size_t)n * sizeof *h);
        if (!h) {
            gg->spoiled = 1;
            return;
        }
        s->hits = h;
        s->caphits = n;
    }
    s->hits[s->nhits++] = k;
}

void gpu_graphs_spoil(gpu_graphs *gg) {
    if (gg && gg->cap) gg->spoiled = 1;
}

int gpu_graphs_end(gpu_graphs *gg, void *stream) {
    gg_slot *s = gg ? gg->cap : NULL;
    if (!s) return 1;
    gg->cap = NULL;
    void *exec = NULL;
    int rc = gpurt_capture_end(stream, &exec);
    if (rc || gg->spoiled) {
        if (exec) gpurt_graph_destroy(exec);
        s->never = 1;
        s->nhits = 0;
        return 1; /* nothing of the capture ran: the caller issues the ops again */
    }
    s->exec = exec;
    if (gpurt_graph_launch(exec, stream)) return dl_err("graph launch: %s", gpurt_errstr());
    return 0;
}
