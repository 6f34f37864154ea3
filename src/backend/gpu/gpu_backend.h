/* The GPU backend (CUDA, or HIP for AMD from the same sources). Built only
 * with -DDOTLM_CUDA=ON or -DDOTLM_HIP=ON; be_create("cuda"/"hip") calls
 * gpu_backend_create() in those builds. */
#pragma once
#include "backend/backend.h"
#include "backend/gpu/gpu_kernels.h"

/* Create the GPU backend on device 0 (DOTLM_GPU_DEVICE overrides). `name`
 * is "cuda" or "hip" and must match the build. NULL + dl_errmsg when no
 * device is present or the runtime fails. */
dl_backend *gpu_backend_create(const char *name);

/* For benchmarks and tests: the kernel view of an uploaded weight, and the
 * backend's stream (launchers in gpu_kernels.h take it). */
const gk_weight *gpu_weight_view(const dl_weight *w);
void *gpu_backend_stream(dl_backend *be);

/* For ops installed by other GPU modules (gpu_gdn.c): every op calls
 * gpu_backend_op() first (it drops state that is valid only until the next
 * op, such as a norm's cached int8 codes), and brackets its launches with
 * GPU_PROF(gpu_backend_prof(be), name, ...) (gpu_prof.h). */
void gpu_backend_op(dl_backend *be);
struct gpu_prof *gpu_backend_prof(dl_backend *be);
/* Count (as <backend>.pdl dispatches) the PDL launches made since
 * gk_pdl_launches() returned `before`. */
void gpu_backend_pdl_count(dl_backend *be, unsigned long long before);
/* For tests: at most n rows per split-KV launch of a large batch's decode
 * rows (cuda.attention.decode_rows; 0: only the workspace bound), for
 * every GPU backend of the process. Part of the graph key. */
void gpu_backend_dec_rows_set(int n);
