/* Private interface of the CPU backend: backend state, the argument bag that
 * every range kernel takes, and the reference / AVX2 kernel twins.
 *
 * Every op is split into a range kernel `fn(args, i0, i1)` over independent
 * items (rows, tokens, (token, head) pairs, elements) so the thread pool can
 * run ranges in any order: each output element is computed from its own
 * inputs only, in a fixed order, so results do not depend on the number of
 * threads or on the other rows of the batch. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/tpool.h"

/* Shared by every op file of the backend (cpu_gdn.c reads tp and batch). */
typedef struct {
    tpool *tp;       /* pool ops run on */
    int own_tp;      /* 1 if tp was created for this backend */
    int avx2;        /* CPU has AVX2 + FMA + F16C */
    int avx512;      /* and AVX-512 F/VL/DQ/BW with the OS saving ZMM state (qmm_cpu_features) */
    dl_batch batch;  /* copy of the current forward's batch (host pointers) */
    const dl_kvcache *kv;
} cpu_state;

/* Arguments of one op call; each kernel reads the fields it needs. */
typedef struct {
    float *y;               /* output */
    const float *x, *x2;    /* inputs (x2: second input, e.g. up / v) */
    const dl_weight *w;     /* weight (embed / rmsnorm) */
    int d;                  /* row width */
    int nh, hd, layer;
    int zc;
    float eps, scale;
    const dl_rope *rope;
    const dl_kvcache *kv;
    const dl_batch *b;
} cpu_args;

typedef void (*cpu_range_fn)(const cpu_args *a, size_t i0, size_t i1);

/* Items: embed / rope / kv_write: tokens; rmsnorm: rows; attention:
 * token * nh + head; silu_mul / add: elements. */
void cpu_embed_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_rmsnorm_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_rope_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_kv_write_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_attention_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_silu_mul_ref(const cpu_args *a, size_t i0, size_t i1);
void cpu_add_ref(const cpu_args *a, size_t i0, size_t i1);

#if defined(__x86_64__) || defined(__i386__)
#define CPU_X86 1
void cpu_embed_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_rmsnorm_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_rope_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_kv_write_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_attention_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_silu_mul_avx2(const cpu_args *a, size_t i0, size_t i1);
void cpu_add_avx2(const cpu_args *a, size_t i0, size_t i1);
#else
#define CPU_X86 0
#endif

/* Element i of a float vector stored as F32 / F16 / BF16 (reference path). */
float cpu_loadf(dl_dtype t, const void *p, int64_t i);
/* Row of the KV cache for (layer, token's seq, pos): element offset into
 * kv->k[layer] / kv->v[layer]. */
size_t cpu_kv_offset(const dl_kvcache *kv, int32_t seq, int32_t pos);

/* Create the CPU backend (cpu_backend.c). nthreads > 0: a pool of that many
 * threads owned by the backend; <= 0: the process-wide default pool. */
dl_backend *cpu_backend_create(int nthreads);

/* Matmul (cpu_matmul.c): y[M, n] = x[M, k] W^T + bias. */
void cpu_matmul(cpu_state *st, float *y, const float *x, const dl_weight *w, int M);
