/* Record-and-replay of whole decode forwards on the GPU (CUDA graphs /
 * HIP graphs).
 *
 * A decode forward is ~15 small launches per layer; issuing them one by one
 * costs more host time than the device needs to run them. The backend keys
 * each forward by everything its launches take by value (batch size, logit
 * rows, buffers, cache, the attention grid's length bucket); the first time a
 * key is seen the ops run eagerly (that sizes every workspace), the second
 * time they are captured into a graph, and from then on the graph is
 * replayed with one launch. Device-side inputs (tokens, positions, block
 * table) are copied before the replay, so a graph serves every step.
 *
 * Dispatch counters: the kreg kernels hit while capturing are remembered
 * and counted again on every replay, so counters show what ran.
 * Switch: DOTLM_DISABLE=<backend>.graph (counter <backend>.graph = replays). */
#pragma once
#include <stdint.h>

#include "core/kreg.h"

typedef struct gpu_graphs gpu_graphs;

enum { GG_EAGER = 0, GG_REPLAYED = 1, GG_CAPTURING = 2 };

gpu_graphs *gpu_graphs_create(void);
void gpu_graphs_destroy(gpu_graphs *gg);
/* Forget every recording (a buffer they use was reallocated). */
void gpu_graphs_clear(gpu_graphs *gg);
/* What to do with a forward keyed `key` on `stream`: GG_REPLAYED (launched),
 * GG_CAPTURING (capture started: issue the ops, then gpu_graphs_end),
 * GG_EAGER (issue the ops), or -1 (dl_err set). */
int gpu_graphs_begin(gpu_graphs *gg, uint64_t key, void *stream);
int gpu_graphs_capturing(const gpu_graphs *gg);
/* While capturing: a dispatch to count again on every replay. */
void gpu_graphs_note(gpu_graphs *gg, kreg_kernel *k);
/* Mark the capture as unusable (e.g. a workspace had to grow). */
void gpu_graphs_spoil(gpu_graphs *gg);
/* End the capture; instantiate and launch it. 0 = launched, 1 = capture
 * abandoned (issue the ops again eagerly; the key is not captured again),
 * -1 = error (dl_err set). */
int gpu_graphs_end(gpu_graphs *gg, void *stream);
