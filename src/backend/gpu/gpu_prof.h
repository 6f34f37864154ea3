/* Per-op device-time profile of the GPU backend (DOTLM_GPU_PROFILE=1).
 *
 * Every kernel launch of the backend is bracketed by two events on the
 * backend's stream; at each sync() the pairs are read back and added to a
 * per-label table (label = the kernel's registry name). The events measure
 * device execution time only, so the sum can be compared with the wall time
 * of a forward: the difference is time the device sat idle waiting for the
 * host (launch overhead). Profiling disables graph replay (the events would
 * be recorded into the graph). The table is printed to stderr when the
 * backend is destroyed. Off by default: no events, no cost. */
#pragma once
#include <stdio.h>

typedef struct gpu_prof gpu_prof;

/* NULL unless DOTLM_GPU_PROFILE is set to a non-zero value. */
gpu_prof *gpu_prof_create(void *stream);
/* Start a bracket; returns its index or -1 (profiling off / out of events). */
int gpu_prof_start(gpu_prof *p);
/* Close bracket i (from gpu_prof_start) under `label` (a static string). */
void gpu_prof_stop(gpu_prof *p, int i, const char *label);
/* Read back every closed bracket; the stream must have been synchronised. */
void gpu_prof_flush(gpu_prof *p);
/* Print the table (label, calls, total ms, mean us, share), largest first. */
void gpu_prof_report(gpu_prof *p, FILE *f);
void gpu_prof_destroy(gpu_prof *p);

/* Bracket one launch statement: GPU_PROF(p, "cuda.add", gk_add(...)); */
#define GPU_PROF(p, label, stmt)                    \
    do {                                            \
        int gpu_prof_i_ = gpu_prof_start(p);        \
        stmt;                                       \
        if (gpu_prof_i_ >= 0) gpu_prof_stop(p, gpu_prof_i_, label); \
    } while (0)
