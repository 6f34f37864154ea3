/* Kernel registry: every fast path has a stable name, a switch back to the
 * reference path and a dispatch counter.
 *
 *   static kreg_kernel K = KREG_KERNEL("cpu.matmul.bf16.avx2", "AVX2 bf16 GEMV/GEMM");
 *   if (kreg_use(&K)) { ...fast path...; }      // counts one dispatch when enabled
 *   else { ...reference...; }
 *
 * A kernel is disabled by DOTLM_DISABLE=name1,name2 (shell patterns: "cpu.*",
 * "*.avx2") or kreg_disable(). Reference kernels register too
 * (named "*.ref"), so counters show what actually ran. Counters are atomic
 * and counted once per dispatch (one call of the op), not per thread. */
#pragma once
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

typedef struct kreg_kernel {
    const char *name;
    const char *desc;
    _Atomic uint64_t count;
    _Atomic int state; /* 0 = not yet registered, 1 = enabled, 2 = disabled */
    struct kreg_kernel *next;
} kreg_kernel;

#define KREG_KERNEL(n, d) {.name = (n), .desc = (d)}

/* Register on first use, then return 1 (and count) if enabled, 0 if disabled. */
int kreg_use(kreg_kernel *k);
/* Count a dispatch of a kernel that has no switch (a reference path). */
void kreg_hit(kreg_kernel *k);
/* 1 if enabled (does not count). */
int kreg_enabled(kreg_kernel *k);
/* Add names (comma-separated shell patterns) to the disabled set.
 * Applies to kernels already registered and to later ones. */
void kreg_disable(const char *list);
/* Re-enable everything, forget DOTLM_DISABLE (tests). */
void kreg_reset_switches(void);
/* Zero every counter. */
void kreg_reset_counts(void);
/* Print "name count" for every kernel with count > 0 (all if all != 0). */
void kreg_print(FILE *f, int all);
/* Walk the registered kernels (for /metrics). */
typedef void (*kreg_visit_fn)(const kreg_kernel *k, void *ctx);
void kreg_foreach(kreg_visit_fn fn, void *ctx);
/* Count of a kernel by name (0 if unknown). */
uint64_t kreg_count(const char *name);
