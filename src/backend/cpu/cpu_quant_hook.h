/* Hook to the quantized matmul kernels (FP8 / INT8 weights) that live in
 * src/quant/. When quant/qmatmul.h exists it is included and its strong
 * qmm_matmul() is linked; otherwise cpu_matmul.c defines a weak fallback
 * that reports the format as unsupported. */
#pragma once
#if __has_include("quant/qmatmul.h")
#include "quant/qmatmul.h"
#define CPU_HAVE_QMATMUL 1
#else
#include "core/tpool.h"
#include "quant/weight.h"
#define CPU_HAVE_QMATMUL 0
/* y[M, n] = x[M, k] W^T (+ bias) for quantized W; 0, or -1 + dl_errmsg when
 * the weight format is not supported. */
int qmm_matmul(float *y, const float *x, const dl_weight *w, int M, tpool *tp);
#endif
