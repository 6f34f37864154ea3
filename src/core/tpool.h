/* A fixed thread pool for data-parallel loops. The caller's thread takes part.
 * Work is split into [begin, end) ranges of `grain` items handed out through
 * an atomic cursor; results must not depend on which thread ran a range
 * (every kernel here computes each output element from its own inputs only). */
#pragma once
#include <stddef.h>

typedef struct tpool tpool;
typedef void (*tp_fn)(void *ctx, size_t begin, size_t end);

/* nthreads <= 0: all online cores. Returns NULL on failure (message in dl_errmsg). */
tpool *tp_create(int nthreads);
void tp_free(tpool *tp);
int tp_nthreads(const tpool *tp);
/* Run fn over [0, n) in chunks of `grain` (>= 1) and wait for completion.
 * Not reentrant: fn must not call tp_run on the same pool. */
void tp_run(tpool *tp, size_t n, size_t grain, tp_fn fn, void *ctx);

/* Process-wide default pool (created on first use with DOTLM_THREADS or all cores). */
tpool *tp_default(void);
/* Replace the default pool size (before first use or between runs). */
int tp_set_default_threads(int nthreads);
