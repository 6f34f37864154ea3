/* Per-op device-time profile of the GPU backend: see gpu_prof.h. */
#include "backend/gpu/gpu_prof.h"

#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu_kernels.h"

#define PROF_PAIRS 4096 /* brackets between two flushes (a forward has < 1500) */
#define PROF_ROWS 96

typedef struct {
    const char *label;
    double ms;
    double max_ms; /* the slowest call (a first call may include loading its module) */
    long calls;
} prof_row;

struct gpu_prof {
    void *stream;
    void *ev[2 * PROF_PAIRS];
    const char *label[PROF_PAIRS];
    int n;          /* open or closed brackets since the last flush */
    int nev;        /* events created so far */
    prof_row rows[PROF_ROWS];
    int nrows;
    long dropped;   /* brackets lost to a full table */
};

gpu_prof *gpu_prof_create(void *stream) {
    const char *e = getenv("DOTLM_GPU_PROFILE");
    if (!e || !atoi(e)) return NULL;
    gpu_prof *p = calloc(1, sizeof *p);
    if (p) p->stream = stream;
    return p;
}

int gpu_prof_start(gpu_prof *p) {
    if (!p) return -1;
    if (p->n == PROF_PAIRS) { /* flush mid-forward: profiling already serialises */
        if (gpurt_sync(p->stream)) return -1;
        gpu_prof_flush(p);
    }
    const int i = p->n;
    while (p->nev < 2 * (i + 1)) {
        if (gpurt_event_create(&p->ev[p->nev])) return -1;
        p->nev++;
    }
    if (gpurt_event_record(p->ev[2 * i], p->stream)) return -1;
    p->label[i] = NULL;
    p->n++;
    return i;
}

void gpu_prof_stop(gpu_prof *p, int i, const char *label) {
    if (!p || i < 0 || i >= p->n) return;
    if (gpurt_event_record(p->ev[2 * i + 1], p->stream) == 0) p->label[i] = label;
}

static prof_row *row_of(gpu_prof *p, const char *label) {
    for (int r = 0; r < p->nrows; r++)
        if (p->rows[r].label == label || strcmp(p->rows[r].label, label) == 0) return &p->rows[r];
    if (p->nrows == PROF_ROWS) return NULL;
    prof_row *r = &p->rows[p->nrows++];
    r->label = label;
    return r;
}

void gpu_prof_flush(gpu_prof *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        if (!p->label[i]) continue;
        const float ms = gpurt_event_ms(p->ev[2 * i], p->ev[2 * i + 1]);
        prof_row *r = row_of(p, p->label[i]);
        if (!r || ms < 0.0f) {
            p->dropped++;
            continue;
        }
        r->ms += ms;
        if (ms > r->max_ms) r->max_ms = ms;
        r->calls++;
    }
    p->n = 0;
}

static int by_ms(const void *a, const void *b) {
    const double x = ((const prof_row *)a)->ms, y = ((const prof_row *)b)->ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

void gpu_prof_report(gpu_prof *p, FILE *f) {
    if (!p) return;
    qsort(p->rows, (size_t)p->nrows, sizeof *p->rows, by_ms);
    double tot = 0.0;
    for (int r = 0; r < p->nrows; r++) tot += p->rows[r].ms;
    fprintf(f, "GPU profile (DOTLM_GPU_PROFILE=1): device time per kernel, %.3f ms in all\n", tot);
    fprintf(f, "%-36s %9s %11s %9s %10s %6s\n", "kernel", "calls", "total ms", "mean us", "max us", "share");
    for (int r = 0; r < p->nrows; r++) {
        const prof_row *w = &p->rows[r];
        fprintf(f, "%-36s %9ld %11.3f %9.2f %10.2f %5.1f%%\n", w->label, w->calls, w->ms,
                w->calls ? 1e3 * w->ms / (double)w->calls : 0.0, 1e3 * w->max_ms, tot > 0 ? 100.0 * w->ms / tot : 0.0);
    }
    fprintf(f, "(max: the slowest call; the first launch of a kernel module's first kernel also loads the module)\n");
    if (p->dropped) fprintf(f, "(%ld brackets not attributed)\n", p->dropped);
}

void gpu_prof_destroy(gpu_prof *p) {
    if (!p) return;
    for (int i = 0; i < p->nev; i++) gpurt_event_destroy(p->ev[i]);
    free(p);
}
