/* GEMV variant knobs (k_matmul_float.cu), for tests and dotlm_gpu_bench.
 * Every variant is bitwise equal to every other (same widened values, same
 * per-row FMA order); they differ in speed only, except fp8=hf (fp16
 * arithmetic inside each chunk, opt-in, below). The process starts from
 * the defaults, then DOTLM_GEMV_R1/RM, DOTLM_I8_R1/RM and the spec in
 * DOTLM_GEMV (read once, at the first GEMV). Spec: comma-separated
 * key=value, or the words "default" and "v1" (the kernels before the
 * variants existed: fp8=f32,u=2,na=0,wpb=4,r1=0,rm=0,i8u=2,i8na=0,i8wpb=4,
 * i8r1=0,i8rm=0,loop=0,ring=0,i8ring=0,i8ks=1,xp=0,mlb=0,xpf=0,i8xp=0,occ=0,i8occ=0; "default" is fp8=fold,u=0,
 * na=1,wpb=4,r1=0,rm=0,i8u=0,i8na=1,i8wpb=4,i8r1=2,i8rm=0,loop=0,ring=1,
 * i8ring=0,i8ks=1,xp=1,mlb=3,xpf=2,i8occ=0, and i8xp and occ by device: 1 and 6
 * where the memory bandwidth per SM the device's specification gives is
 * >= 32 GB/s (an H200, or an H100 under DOTLM_GPU_SMS=96), else 0 and 0
 * (an H100, gfx906): fastest measured, see the comments at cfg_default). Keys:
 *   fp8=f32|f32s|h2|h2x|fold|hf  fp8 widening (f32 = the original; f32s:
 *                    e4m3 at M <= 2 only; fold: e4m3 at M <= 2, and above
 *                    with na=1; h2x: e4m3, the 2^8 of h2 moved
 *                    into x where that saves multiplies (M = 1, 4 rows),
 *                    else h2; h2x is exact for |x| < 2^120, fold only for
 *                    2^-109 <= |x| < 2^120 or 0, see docs/gpu_backend.md;
 *                    hf (CUDA; HIP runs fold): e4m3 at M = 1 with 4 rows
 *                    per warp (the default shape; elsewhere fold), fold's codes times the
 *                    activations rounded to fp16 by packed fp16 FMAs
 *                    within each 16-code chunk, chunks summed in fp32:
 *                    NOT bitwise, ~1e-3 relative, inf where a chunk's
 *                    fp16 sum passes 65504; switch and counter
 *                    cuda.gemv_hf)
 *   loop=0|1|2       float GEMV K loop at M <= 2: 0 the original, 1 the
 *                    software-pipelined one for fp8 weights only, 2 for
 *                    every format (int8 weight-only then also widens
 *                    without I2F); M > 2 always use the original
 *   ring=0|1|2       fp8 weights at M <= 4 stream through a two-stage
 *                    (1) or three-stage (2: two chunks requested before the
 *                    PDL wait) shared-memory ring filled by cp.async (dl_k_gemv_fa;
 *                    CUDA sm_80+, ignored elsewhere); it takes precedence
 *                    over loop; u and na do not apply to it (its PDL
 *                    trigger: DOTLM_GEMV_TRIG=late, see dl_k_gemv_fa; its
 *                    first block scales before the PDL wait unless
 *                    DOTLM_GEMV_SPRE=0)
 *   i8ring=0|1       the same for the int8 W8A8 GEMV (dl_k_i8_gemv_fa: 4
 *                    rows per warp at M = 1, 2 above, K over 2 warps);
 *                    i8u, i8na, i8r1 and i8rm do not apply to it
 *   u=0|2|4          16-byte vectors in flight per lane and row (4: M <= 2
 *                    only; 0 = auto: 4 when a warp streams one row, else 2)
 *   na=0|1           weights loaded with L1 no-allocate (CUDA)
 *   wpb=4|8          warps per block (8: CUDA only, gk_gemv_wpb_max)
 *   r1, rm=0|1|2|4   rows per warp at M = 1 / M > 1 (0: per format default)
 *   i8u, i8na, i8wpb, i8r1, i8rm   the same for the int8 W8A8 GEMV
 *   i8ks=0|1|2|4     warps splitting K in the W8A8 register GEMV (0: by
 *                    shape, see i8_ks in k_matmul_int8.cu; 1: none; 2, 4:
 *                    forced; the same bits every way: exact int32 sums)
 *   xp=0|1           float GEMVs of 8-bit weights at M >= 3 (na=1, k a
 *                    multiple of the chunk) read x permuted into the
 *                    workspace the caller set (gk_gemv_xperm_ws), lanes'
 *                    loads contiguous
 *   mlb=0|1|2|3      fp8 GEMVs at M >= 3 that read x permuted: 0 as
 *                    before (the unbounded ring at M <= 4, ~180 registers,
 *                    the register loop above, 4 rows per warp); 1 the
 *                    two-stage ring (ring=1|2; CUDA sm_80+) at every M up
 *                    to 8, built with at most 128 registers per thread
 *                    (four blocks of 4 warps per SM where the unbounded
 *                    kernels fit two); 2 that ring at M <= 4 only, and with
 *                    rm=0 the rows per warp by shape (gv_rows_batch); 3
 *                    (the default) as 2, and the register loop at M >= 5
 *                    with 2 rows per warp built with at most 128 registers
 *                    (gk_gemv_capped_launches counts those launches; on
 *                    gfx906 the cap is not applied, GEMV_LB)
 *   xpf=0|1|2        the two-stage fp8 ring (ring=1) at M = 1: 0 loads
 *                    chunk c's activations and scales as it starts; 1
 *                    loads chunk c + 1's while chunk c computes, into a
 *                    second register set (at most 85 registers instead of
 *                    64: fp8 decode 1% slower on an H100 and 3.6% on an
 *                    H200, the GEMV alone 1-14 points faster); 2 (the
 *                    default) loads them into the one set as chunk c's
 *                    are used up (64 registers: decode 2-4% faster,
 *                    docs/gpu_backend.md); the backend's
 *                    cuda.gemv_ring_xpf gates 1 and 2
 *   i8xp=0|1|2       the W8A8 register GEMV at M = 1 (i8ring=0): 0 (the
 *                    default below 32 GB/s per SM) loads each 16-byte chunk's activation codes
 *                    as its dp4a use them; 1 loads them with the group's
 *                    weights, one group ahead (a second register set: 78
 *                    registers at 2 rows x 2 vectors instead of 64; the
 *                    GEMV alone 6-15 points faster; int8 decode 4% slower
 *                    on an H100, within +-1% on an H200, where it is the
 *                    default, docs/gpu_backend.md); 2 as 1 for weights
 *                    with k > 4096 only; the backend's cuda.int8_gemv_xp
 *                    gates 1 and 2
 *   occ=0|2..7       the two-stage fp8 ring (ring=1) at M = 1: a grid of
 *                    at most this many blocks per SM runs with at most
 *                    this many per SM (0: as many as fit; the default is
 *                    6 on devices of >= 32 GB/s per SM, else 0), by
 *                    padding the launch's dynamic shared memory (CUDA
 *                    only; no padding where registers already allow no
 *                    more, nor for larger grids). A grid capped below what
 *                    fits leaves slots that the next kernel's early (PDL)
 *                    blocks fill evenly (H100: the GEMV alone +1 to +10
 *                    points at 6; fp8 decode -1.1% with every GEMV capped;
 *                    H200: +16 on 5120x17408, +5 on 6144x5120, 0 on
 *                    17408x5120, decode unchanged).
 *                    The backend's cuda.gemv_occ gates it and counts the
 *                    padded launches (docs/gpu_backend.md, "Occupancy caps")
 *   i8occ=0|2..7     the same for the W8A8 register GEMV at M = 1
 * Not thread-safe: call between launches, from the thread that launches. */
#pragma once
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Apply spec on top of the current settings; 0 = ok, -1 = unknown key or
 * value (nothing changed). */
int gk_gemv_tune(const char *spec);
/* Largest wpb / i8wpb this build accepts: 8 on CUDA, 4 on gfx906 (wave64;
 * the GEMVs' launch bounds, see DL_GEMV_MAXW). */
int gk_gemv_wpb_max(void);
/* Current settings as a full spec string. */
void gk_gemv_tune_str(char *buf, size_t n);
/* The memory bandwidth per SM the current device's specification gives
 * (GB/s, over the SMs in use: DOTLM_GPU_SMS), which picks "default"'s
 * i8xp (1 at >= 32); 0 if unknown and on HIP. */
double gk_gemv_bw_per_sm(void);

#ifdef __cplusplus
}
#endif
