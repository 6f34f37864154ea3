/* Quantized matmul on the CPU: y[M, n] = x[M, k] * dequant(W)^T (+ bias)
 * for W stored as DT_F8E4M3 / DT_F8E5M2 / DT_I8, with any scale layout
 * (tensor / channel / block with any bn, bk including partial edge blocks),
 * row stride w->ld, and the activation policy w->actq.
 *
 * Kernels (kreg names; each fast path has a scalar reference twin):
 *   cpu.qmm.int8.avx512vnni (qmm_i8_tiles_at) / cpu.qmm.int8.avxvnni / cpu.qmm.int8.avx2 /
 *     cpu.qmm.int8.ref                       W8A8 int32 dot
 *   cpu.qmm.fp8.avx512 / cpu.qmm.fp8.avx2 / cpu.qmm.fp8.ref
 *                                            fp8 weights, fp32 FMA accumulation
 *   cpu.qmm.i8wo.avx512 (M >= 2) / cpu.qmm.i8wo.avx2 / cpu.qmm.i8wo.ref
 *                                            int8 weights with fp32 activations
 *   cpu.actq.int8.avx2 / cpu.actq.int8.ref   per-token int8 activation quantizer
 *   cpu.actq.fp8.avx2 / cpu.actq.fp8.ref     fp8 e4m3 activation quantizer
 * Each is counted once per qmm_matmul call. Results of a row of x never
 * depend on M or on the thread count (see docs/quant_cpu.md). */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "core/tpool.h"
#include "quant/weight.h"

/* y: [M, w->n] row-major; x: [M, w->k] row-major. tp may be NULL (single
 * thread). Returns 0, or -1 with dl_err for an unsupported combination
 * (dtype/policy/scale layout) or out of memory. */
int qmm_matmul(float *y, const float *x, const dl_weight *w, int M, tpool *tp);

/* Same as qmm_matmul but forcing the reference (scalar) kernels, without
 * touching the switches (for tests and the sweep). */
int qmm_matmul_ref(float *y, const float *x, const dl_weight *w, int M, tpool *tp);

/* Whether a W8A8 matmul of M rows and K columns takes the AVX-512 VNNI
 * tiles (where the CPU has them): M >= 3, or M = 2 with K >= 4096; below,
 * the per-row VNNI dot with spread-out rows is as fast. */
int qmm_i8_tiles_at(int M, int64_t K);

/* K-group width used by ACT_FP8_GROUP: w->bk for block-scaled weights,
 * 128 otherwise. */
int qmm_act_group(const dl_weight *w);

/* Numeric sweep: every format x M x shapes against a float64 reference
 * computed from the same quantized operands; prints a table to out.
 * full = 0: reduced set (unit test). Returns 0 if every case is within its
 * threshold, -1 otherwise (dl_err says which). */
int qmm_sweep(FILE *out, int full);

/* Quick bench: GEMV (M = 1) GB/s of weight bytes per format on a
 * 4096x4096 shape next to the measured memory read bandwidth. */
int qmm_bench(FILE *out, int nthreads);
/* Memory read bandwidth (GB/s) streaming a 512 MiB buffer with tp's threads
 * (tp NULL: one thread). Returns < 0 on allocation failure. */
double qmm_mem_read_bw(tpool *tp);

/* Quantize an fp32 matrix src[n, k] (row stride k) into dtype (DT_F8E4M3,
 * DT_F8E5M2 or DT_I8) with the given scale layout, as the checkpoint
 * producers do: scale = amax(group)/qmax, q = round(v/scale) (RNE, clamped;
 * int8 symmetric to +-127). codes: [n, ld] bytes (ld >= k, padding zeroed),
 * scales: F32 buffer sized as the layout needs (1, n, or
 * ceil(n/bn)*ceil(k/bk)). Fills *w (data/scale point at the given buffers,
 * scale_dtype F32, actq ACT_NATIVE, no bias). Returns 0 or -1 + dl_err. */
int qmm_quantize_weight(dl_weight *w, const float *src, int64_t n, int64_t k, int64_t ld,
                        dl_dtype dtype, dl_wscale kind, int bn, int bk, uint8_t *codes,
                        float *scales);

/* CPU features the kernels need, from cpuid + xgetbv (detected once). */
#define QMM_CPU_AVX2 1    /* avx2 + fma + f16c with OS YMM support */
#define QMM_CPU_VNNI 2    /* AVX-VNNI (VEX vpdpbusd) */
#define QMM_CPU_AVX512 4  /* avx512 f + vl + dq + bw with OS ZMM support */
#define QMM_CPU_VNNI512 8 /* AVX512-VNNI on top of QMM_CPU_AVX512 */
#define QMM_CPU_VBMI 16   /* AVX512-VBMI (vpermb, vpermi2b) on top of QMM_CPU_AVX512 */
unsigned qmm_cpu_features(void);

/* ------------------------------------------------------------------------
 * Kernel layer (used by qmm_matmul, tests and the bench). */

/* fp32-accumulating job: x is the fp32 operand (activations, or the widened
 * fp8 activation code values of a declared policy). */
typedef struct qmm_f32job {
    const dl_weight *w; /* DT_F8E4M3, DT_F8E5M2 or DT_I8 */
    const float *x;     /* [M, w->k] */
    const float *xs;    /* activation scales per xs_mode, or NULL */
    int xs_mode;        /* 0: none; 1: xs[m] applied at the end; 2: xs[m*nseg+g] per segment */
    int64_t seg;        /* K segment length (block bk, activation group, or 512) */
    int M;
    float *y;   /* [M, w->n] */
    int spread; /* decode tiles take spread-out rows (core/rowspread.h; register GEMV and 4-row panels) */
    int vbmi;   /* AVX-512 fp8 register GEMV (e4m3, M <= QMM_F8_GEMV_MAX_M): vpermi2b tables */
} qmm_f32job;

/* The AVX-512 fp8 register GEMV (codes widened in registers, with the
 * VBMI tables or the fp16 widening) runs up to this M: it widens the codes
 * again per group of 4 activation rows, so beyond M = 8 the widened-panel
 * tiles, which widen once per panel, are faster. */
#define QMM_F8_GEMV_MAX_M 8

/* Output rows [n0, n1) for every m. Per (m, n): acc = sum over segments g of
 * t_g, t_g = p_g [* xs[m,g]] [* s_block(n,g)], p_g = the segment's dot in
 * fp32; y = acc [* xs[m]] [* s_channel/tensor] [+ bias]. Return 0, or -1 on
 * out of memory (no message: called from worker threads). */
int fp8mm_rows_ref(const qmm_f32job *j, int64_t n0, int64_t n1);
int fp8mm_rows_avx2(const qmm_f32job *j, int64_t n0, int64_t n1);
/* AVX-512 variant: fp8 at M <= QMM_F8_GEMV_MAX_M widens the codes in
 * registers (two weight rows per zmm), larger M (and int8 weights at
 * M >= 2) runs 6 x 8 register tiles on a widened panel; int8 weights at
 * M = 1 use fp8mm_rows_avx2 internally. Bitwise
 * the results of fp8mm_rows_avx2 (same per-output accumulation). */
int fp8mm_rows_avx512(const qmm_f32job *j, int64_t n0, int64_t n1);
/* Widen 16 stored codes of dtype to exact fp32 (AVX2). */
void fp8mm_widen16_avx2(dl_dtype dt, const uint8_t *src, float *dst);

/* W8A8 job: xq [M, qld] int8 with zero padding, xs[M] per-token scales. */
typedef struct qmm_i8job {
    const dl_weight *w; /* DT_I8 */
    const int8_t *xq;
    int64_t qld;
    const float *xs;
    const uint8_t *xu; /* [M, qld] xq ^ 0x80 (= xq + 128), for the AVX-512 VNNI kernel; or NULL */
    int M;
    float *y;
    int spread; /* decode tiles take spread-out rows (core/rowspread.h) */
} qmm_i8job;

/* Output rows [n0, n1): exact int32 dot per segment (segment = bk for
 * block scales, else all of K); channel/tensor: y = ((float)acc * xs[m]) *
 * s[n]; block: y = (sum_g (float)acc_g * s(n,g)) * xs[m]; then + bias. All
 * three variants give bitwise identical results. */
void int8mm_rows_ref(const qmm_i8job *j, int64_t n0, int64_t n1);
void int8mm_rows_avx2(const qmm_i8job *j, int64_t n0, int64_t n1);
void int8mm_rows_avxvnni(const qmm_i8job *j, int64_t n0, int64_t n1);
/* AVX-512 VNNI, register-blocked 4 x 6 tiles (qmm_i8_tiles_at): x + 128 times w
 * with vpdpbusd, minus 128 * sum(w) per row and segment (exact in wrapping
 * int32), so bitwise the other variants' results. */
void int8mm_rows_avx512vnni(const qmm_i8job *j, int64_t n0, int64_t n1);
