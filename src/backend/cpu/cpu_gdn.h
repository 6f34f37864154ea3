/* Gated DeltaNet ops of the CPU backend (hybrid models: qwen3_5, qwen3_next)
 * and the two algorithms of the gated delta rule on one (sequence, value
 * head) run of tokens.
 *
 * Kernel registry names: cpu.gdn.chunked (switch; off = recurrence only),
 * cpu.gdn.recurrent.ref, cpu.conv1d.ref, cpu.l2norm.ref, cpu.gdn_gates.ref,
 * cpu.gated_rmsnorm.ref, cpu.copy2d.ref, cpu.sigmoid_mul.ref. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Chunk length of the chunked (WY/UT) form, as FLA / transformers use. */
#define CPU_GDN_CHUNK 64
/* Runs of at least this many consecutive tokens of one sequence take the
 * chunked form (when cpu.gdn.chunked is on); shorter runs (decode) take the
 * token-by-token recurrence. */
#define CPU_GDN_CHUNK_MIN 16

/* Fill the Gated DeltaNet slots of the CPU backend's op table (copy2d,
 * sigmoid_mul, conv1d_silu, l2norm, gdn_gates, gdn, gated_rmsnorm). */
void cpu_gdn_install(dl_backend *be);

/* One run of n tokens of one sequence for one value head. Token i's rows are
 * q[tok[i] * ldq + 0..Dk), k[tok[i] * ldq + ...], v[tok[i] * ldv + 0..Dv),
 * g[tok[i] * ldg], beta[tok[i] * ldg], out[tok[i] * ldv + ...] (the pointers
 * are already offset to this head). S [Dk, Dv] fp32 is the state before the
 * run, updated in place to the state after it. */
typedef struct {
    const float *q, *k, *v, *g, *beta;
    float *out;
    size_t ldq, ldv, ldg;
    const int32_t *tok;
    int n, Dk, Dv;
} cpu_gdn_run;

/* Both forms compute in double on a copy of S; scratch holds
 * cpu_gdn_scratch(Dk, Dv) doubles. */
size_t cpu_gdn_scratch(int Dk, int Dv);
/* Token-by-token recurrence (reference): S *= exp(g); u = k^T S;
 * S += k (x) (beta * (v - u)); out = q^T S. */
void cpu_gdn_recurrent(const cpu_gdn_run *r, float *S, double *scratch);
/* Chunked form: chunks of up to CPU_GDN_CHUNK tokens, each solved with the
 * UT transform (forward substitution of the unit lower-triangular system of
 * the intra-chunk delta updates), then one state update per chunk. Same
 * answer as the recurrence within rounding. */
void cpu_gdn_chunked(const cpu_gdn_run *r, float *S, double *scratch);
