/* Arithmetic peaks of the instructions the CPU matmul kernels are built on,
 * measured on this machine (independent accumulator chains, no memory
 * traffic), so that a GEMM's rate can be read as a fraction of what its
 * instruction allows: the compute counterpart of qmm_mem_read_bw. */
#pragma once
#include "core/tpool.h"

typedef enum {
    QPK_FMA_YMM = 0, /* vfmadd231ps ymm: 8 FMAs (16 flops) per instruction */
    QPK_FMA_ZMM,     /* vfmadd231ps zmm: 16 FMAs */
    QPK_DPBUSD_YMM,  /* vpdpbusd ymm (AVX-VNNI): 32 u8 x s8 products summed into int32 */
    QPK_DPBUSD_ZMM,  /* vpdpbusd zmm (AVX512-VNNI): 64 products */
    QPK_MADDUBS_YMM, /* vpmaddubsw + vpmaddwd + vpaddd ymm (AVX2 int8): 32 products per triple */
    QPK_COUNT
} qpk_instr;

/* Operations per second (a multiply-add counts 2) of each instruction over
 * the pool's threads; 0 where the CPU lacks it. */
typedef struct {
    double ops[QPK_COUNT];
} qmm_peaks;

/* Measure every instruction the CPU has, best of 3 runs of ~30 ms each.
 * tp NULL: the calling thread only. Returns 0, or -1 with dl_err set. */
int qmm_peak_measure(qmm_peaks *p, tpool *tp);
/* Short name of an instruction ("fma ymm", ...). */
const char *qmm_peak_name(qpk_instr i);
/* The instruction the CPU matmul kernel `kernel` (a kreg name such as
 * "cpu.qmm.int8.avx512vnni") multiplies with at GEMM sizes, or -1 for
 * reference paths and kernels this table does not know. */
int qmm_peak_of_kernel(const char *kernel);
