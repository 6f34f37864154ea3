/* The C-callable face of the GPU kernels (CUDA or HIP). gpu_backend.c (C)
 * owns the dl_backend table, switches and error messages; the *.cu files
 * own the kernels and expose only these launchers and runtime wrappers.
 * Every launcher enqueues work on `stream` and returns at once; launch
 * errors surface at the next gpurt_sync(). Pointers are device pointers
 * unless a parameter says host. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A weight as the kernels see it (device copy made by upload()). */
typedef struct {
    const void *data;   /* [n, ld] in dtype (stored format, never widened) */
    const float *scale; /* fp32 copy: [1] tensor, [n] channel, [nb, kb] block; NULL = none */
    const float *bias;  /* [n] fp32 or NULL */
    int64_t n, k, ld;
    int dtype;          /* dl_dtype */
    int scale_kind;     /* dl_wscale */
    int bn, bk, kb;     /* block sizes; kb = ceil(k / bk) */
    int bk_shift;       /* log2(bk) when bk is a power of two, else -1 */
} gk_weight;

/* ---- runtime (gpu_rt.cu); 0 = ok, -1 = error (gpurt_errstr() says why) ---- */
const char *gpurt_errstr(void);
int gpurt_device_count(void);
int gpurt_open(int dev, char *name, size_t name_len);
/* Makes the backend's device (or DOTLM_GPU_SMS green context) current in
 * the calling thread, once per thread; the wrappers that touch the device
 * call it themselves. */
int gpurt_bind(void);
int gpurt_malloc(void **p, size_t bytes);
void gpurt_free(void *p);
void gpurt_mem_info(size_t *free_b, size_t *total_b);
int gpurt_host_alloc(void **p, size_t bytes); /* pinned */
void gpurt_host_free(void *p);
int gpurt_stream_create(void **s);
/* SMs the backend's kernels may use (DOTLM_GPU_SMS or the device's; 0 if
 * unknown). */
int gpurt_sm_count(void);
void gpurt_stream_destroy(void *s);
int gpurt_h2d_async(void *dst, const void *src, size_t bytes, void *s);
int gpurt_d2h_async(void *dst, const void *src, size_t bytes, void *s);
int gpurt_d2d_async(void *dst, const void *src, size_t bytes, void *s);
int gpurt_memset_async(void *dst, int v, size_t bytes, void *s);
int gpurt_h2d(void *dst, const void *src, size_t bytes); /* synchronous */
int gpurt_sync(void *s); /* waits and reports any pending launch error */
int gpurt_event_create(void **e);
void gpurt_event_destroy(void *e);
int gpurt_event_record(void *e, void *s);
int gpurt_event_sync(void *e);
float gpurt_event_ms(void *a, void *b);
/* graphs: capture the work issued on stream s, instantiate it, replay it */
int gpurt_capture_begin(void *s);
int gpurt_capture_end(void *s, void **exec); /* *exec = NULL on failure */
int gpurt_graph_launch(void *exec, void *s);
void gpurt_graph_destroy(void *exec);

/* Programmatic dependent launch (gpu_common.cuh, dl_launch): 1 if the
 * current device can use it (CUDA, compute capability >= 9.0); turn it on
 * or off for later launches; launches made with it so far. */
int gpurt_pdl_supported(void);
void gk_pdl_set(int on);
int gk_pdl_get(void);
unsigned long long gk_pdl_launches(void);
/* The GEMV shared-memory weight rings (fp8: dl_k_gemv_fa, W8A8:
 * dl_k_i8_gemv_fa): launches made through them so far (the cuda.gemv_ring
 * dispatch counter); 1 if the current device can run them (CUDA, compute
 * capability >= 8.0, for cp.async), else 0 (HIP, older devices). */
unsigned long long gk_gemv_ring_launches(void);
/* Every GEMV's PDL trigger: after its wait (0, the default), or after its
 * K loop / at its end (1, as DOTLM_GEMV_TRIG=late); -1 = the environment's
 * choice. Same bits either way (the bench times both). */
void gk_gemv_trig_late(int on);
/* The W8A8 register GEMV splitting a weight's K over 2 or 4 warps of a
 * block (exact int32 sums, so the same bits; by shape, knob i8ks):
 * launches with a split weight so far (the cuda.int8_gemv_ksplit dispatch
 * counter); allow(0) keeps one warp per row group. */
unsigned long long gk_int8_ksplit_launches(void);
void gk_int8_ksplit_allow(int on);
/* The W8A8 register GEMV at M = 1 loading a group's activation codes
 * with its weights, one group ahead (gpu_tune.h i8xp=1 for every weight,
 * i8xp=2 for weights with k > 4096; the same bits): launches made so far
 * (the cuda.int8_gemv_xp dispatch counter), and its gate (off: each
 * chunk's codes loaded as used; on at start). */
unsigned long long gk_int8_gemv_xp_launches(void);
void gk_int8_gemv_xp_allow(int on);
/* The wide-row RMSNorms and qk_rope_kv (k_ops.cu) load their norm weights
 * (qk_rope_kv: also the position and cache page) before the PDL wait (on,
 * the default) or after it; launches made the first way so far. */
void gk_norm_prewait_set(int on);
unsigned long long gk_norm_prewait_launches(void);
int gk_gemv_ring_supported(void);
/* Process-wide gate over the ring knob (gpu_tune.h ring=1): off, fp8
 * GEMVs use the register K loop whatever the knob says (the backend sets
 * it per forward from DOTLM_DISABLE=cuda.gemv_ring). On at start. */
void gk_gemv_ring_allow(int on);
/* The e4m3 fold widening (gpu_tune.h fp8=fold, the default at M <= 2):
 * launches made with it so far (the cuda.gemv_fold dispatch counter), and
 * its process-wide gate (off: those launches use h2; on at start). */
unsigned long long gk_gemv_fold_launches(void);
void gk_gemv_fold_allow(int on);
/* fp8 e4m3 GEMV launches at M = 1 with the chunk products in packed fp16
 * (knob fp8=hf, opt-in; ~1e-3 relative, not bitwise), and their gate. */
unsigned long long gk_gemv_hf_launches(void);
void gk_gemv_hf_allow(int on);
int gk_gemv_hf_built(void); /* 1 on CUDA; 0 on HIP, where fp8=hf runs fold */
/* The two-stage fp8 ring at M = 1 with chunk c + 1's activations and
 * scales loaded during chunk c (gpu_tune.h xpf=1, opt-in): launches
 * made so far (the cuda.gemv_ring_xpf dispatch counter), and its gate (off:
 * the ring loads each chunk's inputs as the chunk starts; on at start). */
unsigned long long gk_gemv_ring_xpf_launches(void);
void gk_gemv_ring_xpf_allow(int on);
/* M = 1 GEMV launches (the two-stage fp8 ring, knob occ; the W8A8
 * register GEMV, knob i8occ; gpu_tune.h) whose blocks per SM were capped
 * by padded shared memory: launches so far (the cuda.gemv_occ dispatch
 * counter), and the gate (off: no padding; on at start). CUDA only. */
unsigned long long gk_gemv_occ_launches(void);
void gk_gemv_occ_allow(int on);
int gk_gemv_occ_supported(void); /* 1 where the caps can pad (CUDA); 0 on HIP */
/* Launches with a cap asked for (and allowed) that it left unpadded: the
 * grid more than the cap's blocks per SM, or registers already allowing no
 * more than the cap. CUDA only. */
unsigned long long gk_gemv_occ_left_launches(void);
/* 16/32-bit GEMV launches at M <= 2 without block scales built without the
 * per-chunk scale load (the same bits), and their gate (default on). */
unsigned long long gk_gemv_unscaled_launches(void);
void gk_gemv_unscaled_allow(int on);
/* fp8 ring GEMV launches whose weight copies carry the L2 evict_first
 * policy (CUDA sm_80+; a cache hint, the same bits): launches made so far
 * (the cuda.gemv_l2_evict_first dispatch counter), and the gate (off: the
 * unhinted copies; on at start). HIP has no hint: no launch counts there. */
unsigned long long gk_gemv_l2ef_launches(void);
void gk_gemv_l2ef_allow(int on);
/* Permuted activations (gpu_tune.h xp=1, the default): float GEMV
 * launches of 8-bit weights at M >= 3 first copy x into ws (gk_gemv_xperm_bytes; set by
 * the caller before its launches, NULL: none) in the order the kernel's
 * lanes read it, so that a warp's activation loads are contiguous; the
 * same bits. Launches made so (the cuda.gemv_xperm dispatch counter). */
void gk_gemv_xperm_ws(void *ws, size_t bytes);
unsigned long long gk_gemv_xperm_launches(void);
/* 1 when float GEMVs of dtype at M >= 3 would read x permuted under the
 * current knobs (the workspace is needed), else 0. */
int gk_gemv_xperm_wants(int dtype);
/* The workspace M rows of k activations take (>= M * k floats: k padded to
 * whole groups of chunks). */
size_t gk_gemv_xperm_bytes(int M, int64_t k);
/* Permuted twins (dl_xp1_at): for the next launches at M = 1 of fp8
 * weights, xt is the twin of the x they are given (NULL: none), so their
 * lanes' activation loads are contiguous (the same values: the same bits),
 * and outt (NULL: none) receives the twin of a gate/up pair's SiLU output
 * (gk_gemv_silu at M = 1) besides the output itself. The caller sets them
 * before its launches and clears them after. Launches that read a twin (the
 * cuda.gemv_twin dispatch counter); the bytes of one row's twin (k padded to
 * whole groups); a twin made from x by a small kernel (tests; k % 4 == 0:
 * it copies whole float4s). */
void gk_gemv_twin(const float *xt, float *outt);
unsigned long long gk_gemv_twin_launches(void);
size_t gk_gemv_twin_bytes(int64_t k);
void gk_gemv_twin_fill(void *s, float *xt, const float *x, int64_t k);
/* Launches of the fp8 register loop built with at most 128 registers per
 * thread (gpu_tune.h mlb=3: M >= 5, 2 rows per warp, x permuted). */
unsigned long long gk_gemv_capped_launches(void);

/* ---- matmul (k_matmul_float.cu, k_matmul_int8.cu, k_actq.cu) ----
 * y[M, n] = x[M, k] W^T (+ bias). */
/* Conditions for the fast paths (host checks before launching). */
int gk_gemv_ok(const gk_weight *w);      /* 16-byte row alignment, block scale fits */
int gk_gemm_ok(const gk_weight *w);
void gk_gemv(void *s, float *y, const float *x, const gk_weight *w, int M); /* M <= 8 */
void gk_gemv_fp8_dot2(void *s, float *y, const float *x, const gk_weight *w, int M);
void gk_gemm(void *s, float *y, const float *x, const gk_weight *w, int M);
void gk_matmul_ref(void *s, float *y, const float *x, const gk_weight *w, int M);
/* int8 W8A8: xq [M, kp] int8 (kp = k rounded up to 16, zero padded), xs [M] */
void gk_actq_int8(void *s, int8_t *xq, float *xs, const float *x, int M, int k, int kp);
/* out = SiLU(gate) * up ([M, k]) and its W8A8 codes into xq/xs as
 * gk_actq_int8(out) would make them (bitwise), in one launch. */
void gk_silu_actq_int8(void *s, float *out, int8_t *xq, float *xs, const float *gate, const float *up, int M, int k,
                       int kp);
/* gk_silu_actq_int8 through its register-resident kernel where the row fits
 * (on by default; off: the two-pass kernel, the same bits), and the number
 * of such launches. */
void gk_silu_actq_v4_set(int on);
unsigned long long gk_silu_actq_v4_launches(void);
int gk_int8_gemv_ok(const gk_weight *w);
int gk_int8_gemm_ok(const gk_weight *w);
void gk_int8_gemv(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w, int M, int kp);
void gk_int8_gemm(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w, int M, int kp);
void gk_int8_ref(void *s, float *y, const int8_t *xq, const float *xs, const gk_weight *w, int M, int kp);
/* fp8 activation policies: xo = dequant(fp8_e4m3(x / scale)) * scale, scale
 * per (token, group of `group` columns) (group = k: per token) = amax/448,
 * or the static scale when static_scale > 0. */
void gk_actq_fp8(void *s, float *xo, const float *x, int M, int k, int group, float static_scale);

/* Several weights of one format sharing the activation x (q/k/v, gate/up)
 * in one launch: y[i][M, w[i].n] = x[M, k] W_i^T. Every weight has the same
 * dtype, scale_kind, block sizes and k, and passes gk_gemv_ok (float
 * formats) or gk_int8_gemv_ok (W8A8). Each output is bitwise equal to
 * gk_gemv / gk_int8_gemv on that weight alone. M <= 8. */
#define GK_MULTI_MAX 3
typedef struct {
    int count;
    gk_weight w[GK_MULTI_MAX];
    float *y[GK_MULTI_MAX];
    float *silu; /* gk_gemv_silu only: out[M, n] */
} gk_multi;
int gk_gemv_multi_ok(const gk_multi *mw); /* same format/k and every gk_gemv_ok */
void gk_gemv_multi(void *s, const gk_multi *mw, const float *x, int M);
/* Gate/up with the SiLU product in the epilogue: count == 2 (w[0] gate,
 * w[1] up, the same n), mw->silu[m, n] = silu(g) * u with g and u the bits
 * gk_gemv_multi would write to y[0] / y[1] (which are not written), and the
 * product as gk_silu_mul makes it: bitwise equal to gk_gemv_multi then
 * gk_silu_mul. A warp takes R / 2 rows of each weight (R >= 2).
 * gk_gemv_silu_ok: the weights and M can take it (count 2, gk_gemv_multi_ok,
 * equal n and ld, M <= 8, silu set); else the caller runs the two steps. */
int gk_gemv_silu_ok(const gk_multi *mw, int M);
void gk_gemv_silu(void *s, const gk_multi *mw, const float *x, int M);
int gk_int8_gemv_multi_ok(const gk_multi *mw);
void gk_int8_gemv_multi(void *s, const gk_multi *mw, const int8_t *xq, const float *xs, int M, int kp);

/* ---- elementwise (k_ops.cu) ---- */
/* x[i, :] = emb[tokens[i], :] * row scale (tensor/channel scales honoured) */
void gk_embed(void *s, float *x, const gk_weight *emb, const int32_t *tokens, int ntok);
void gk_rmsnorm(void *s, float *y, const float *x, const void *w, int wdtype, int rows, int d,
                float eps, int zc);
/* x[r] += res[r]; y[r] = rmsnorm(x[r]) (bitwise = gk_add then gk_rmsnorm); res may alias y */
void gk_add_rmsnorm(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int rows,
                    int d, float eps, int zc);
/* RMSNorm (after x += res when res is not NULL) that also writes the int8
 * per-token codes of y the W8A8 matmul would make (xq [rows, kp], zero
 * padded, xs [rows]; bitwise = gk_actq_int8 on y). Only wide rows (the
 * float4 path: 1024 <= d <= 8192, d % 4 == 0, aligned); returns 1 if
 * launched, 0 if the shape does not qualify (nothing done). */
/* One row (after x += res when res is not NULL): y = rmsnorm(x), and y's
 * permuted twin into yt (gk_gemv_twin_bytes(d), 16-byte aligned): the same
 * kernel and bits as the wide norm. 1 if launched, 0 if the row does not fit
 * it (d % 16, the wide path's bounds, alignment): nothing launched. */
int gk_norm_twin(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int d, float eps, int zc,
                 float *yt);
int gk_norm_twin_ok(int d, const void *x, const void *res, const void *y, const void *yt);
int gk_norm_q(void *s, float *x, const float *res, float *y, const void *w, int wdtype, int rows, int d,
              float eps, int zc, int8_t *xq, float *xs, int kp);
/* Attention prologue in one launch: per token, q heads [nh] and k heads [nkv]
 * (rows of hd) get RMSNorm (qw / kw [hd], NULL = none; one dtype), RoPE of
 * the first rot dims, in place; k and v rows are written into the paged
 * cache. Bitwise = rmsnorm + rope + kv_write. rot <= hd <= 256. */
void gk_qk_rope_kv(void *s, float *q, float *k, const float *v, int ntok, int nh, int nkv, int hd,
                   const void *qw, const void *kw, int wdtype, float eps, int zc, int rot,
                   const float *inv_freq, void *kc, void *vc, int kv_f16, int bs, int mbps,
                   const int32_t *seq, const int32_t *pos, const int32_t *btab);
/* inv_freq: host array [rot/2], rot <= 512 (passed by value) */
void gk_rope(void *s, float *x, int ntok, int nh, int hd, int rot, const float *inv_freq,
             const int32_t *pos);
void gk_kv_write(void *s, void *kc, void *vc, int kv_f16, const float *k, const float *v, int ntok,
                 int nkv, int hd, int bs, int mbps, const int32_t *seq, const int32_t *pos,
                 const int32_t *btab);
void gk_silu_mul(void *s, float *out, const float *gate, const float *up, size_t n);
void gk_add(void *s, float *y, const float *x, size_t n);
void gk_sigmoid_mul(void *s, float *y, const float *gate, size_t n);
void gk_copy2d(void *s, float *dst, int dst_ld, const float *src, int src_ld, int rows, int cols);
/* idx: host array [n] (passed by value in chunks) */
void gk_gather_rows(void *s, float *dst, const float *src, const int32_t *idx, int n, int d);

/* ---- attention (k_attention.cu) ---- */
typedef struct {
    int ntok, nh, nkv, hd, bs, mbps, kv_f16;
    int maxlen;                /* >= max over the batch of pos + 1 (sizes the split grid and workspace;
                                * any such bound gives the same results) */
    int segl;                  /* split decode: positions per segment, 32 or 64, or GK_ATTN_SEG_BYPOS: by
                                * the row's own position (gk_attn_row_seg); part of the summation order,
                                * so of the bits */
    float scale;
    const void *kc, *vc;       /* layer's cache */
    const int32_t *seq, *pos, *btab;
    int fuse; /* 1: no combine launch: the last segment block of each (token, KV head x head chunk) merges
               * the segments (same bits as the combine kernel) */
    int cwide; /* 1: the combine kernel issues each pass's loads together (cuda.attention.combine_wide;
                * 0: its previous form; same bits) */
    int warm; /* 1 (split kernel): every token of the batch is of its own sequence, so the cache rows of
               * positions < pos were written by earlier forwards: each block loads its rows of those
               * into L1 before its PDL wait (same results) */
    int crt; /* 1 (with cwide; only when gk_attn_nseg(segl, maxlen) <= GK_ATTN_RT_MAXSEG): the combine
              * issues all its loads in one round trip (cuda.attention.combine_rt; same bits) */
    int ipre; /* 1: the split and combine kernels read the position, the sequence and the warp's first cache
               * page before their PDL wait (uploaded before the forward's first kernel; same results;
               * cuda.attention.idx_prewait) */
    int gbrule; /* 1: the split kernel's query heads per block follow the grid rule (fewer than the GQA
                 * group on small grids; cuda.attention.split_heads); 0: the whole group (or the
                 * gk_attn_gb_set cap); same arithmetic either way */
    int diag_nocombine; /* 1: the combine kernel is not launched (DOTLM_GPU_DIAG_SKIP=combine: timing
                         * diagnostics only; the output is then wrong) */
    int clu;    /* 1: rows of 2..GK_ATTN_CL_MAXSEG segments merge in a thread block cluster (the segment
                 * blocks of one (token, KV head x head chunk), CUDA sm_90+; cuda.attention.cluster): no
                 * combine launch, the same bits */
    int cllate; /* 1 (cluster merge): the kernel after it launches as the blocks pass the cluster barrier,
                 * not at their PDL wait (an experiment switch: DOTLM_GPU_ATTN_CL_TRIG=late) */
    int diag_empty; /* 1: the split kernel's blocks return after their PDL wait (DOTLM_GPU_DIAG_SKIP=attnwork:
                     * the launch's cost without its work; the output is then wrong) */
} gk_attn;
/* Split-KV decode (ntok <= 8): each row's [0, pos] is cut into segments of
 * a->segl positions (or by position, gk_attn_row_seg) aligned at 0; one block per (token, KV head,
 * segment) serves all query heads of the group, then a combine merges a
 * row's segments in order (skipped when every row fits one), or with
 * a->fuse the last segment block of each group to finish does (bitwise the
 * same output, one launch instead of two). A row's result depends only on
 * its own sequence and position.
 * ws: >= gk_attn_split_ws(a) bytes (0 when the grid has one segment). When
 * that is not 0, ws starts with GK_ATTN_NCNT unsigned int arrival counters
 * (the fused mode's; at that fixed offset whatever maxlen / ntok): they must
 * be all zero before the first launch on a workspace (cudaMemset the
 * workspace to 0 when allocating it) and every launch leaves them all zero.
 * Returns 1 when the fused merge ran (a->fuse, more than one segment, at
 * most GK_ATTN_NCNT groups), 2 when the cluster merge did (a->clu, 2 to
 * GK_ATTN_CL_MAXSEG segments, a device and shape whose cluster fits), else
 * 0 (combine kernel, single segment or tiled).
 * gk_attn_split_ok: the split kernel takes this shape (K/V rows of 16-byte
 * vectors, 16-byte aligned caches); otherwise gk_attn_split runs the tiled
 * kernel. */
#define GK_ATTN_SEG_BYPOS 0   /* segl: 32 positions per segment below GK_ATTN_SEG_LONG, 64 from there */
/* The row position from which segments by position are 64 long (a
 * multiple of 32, so that gk_attn_nseg counts whole 32-position segments
 * below it). 640: on the H200 (2026-12-01, Qwen3-8B decode, fp8) 32 was
 * faster after 512 positions and 64 after 640 and 768 (+2.6%) and 1024. */
#define GK_ATTN_SEG_LONG 640
#define GK_ATTN_SEG GK_ATTN_SEG_BYPOS /* the default (gk_attn_seg_get) */
/* Segment lengths the split kernel takes (1: 32, 64 or GK_ATTN_SEG_BYPOS),
 * and the one the backend uses (process-wide like gk_attn_gb_set; set from
 * DOTLM_GPU_ATTN_SEG at creation, part of its graph keys). The segment
 * length is part of the summation order: another one gives other bits
 * (every form of the split kernel still agrees with every other). */
int gk_attn_seg_ok(int n);
void gk_attn_seg_set(int n);
int gk_attn_seg_get(void);
/* A row's segment length at position pos under segl, and the segments
 * of the longest row a grid sized by maxlen holds (its grid's x). */
int gk_attn_row_seg(int segl, int pos);
int gk_attn_nseg(int segl, int maxlen);
#define GK_ATTN_NCNT 2048
#define GK_ATTN_RT_MAXSEG 256 /* segments the one-round-trip combine takes (one per thread) */
#define GK_ATTN_CL_MAXSEG 16  /* segments the cluster merge takes (one block each: H100/H200 clusters) */
/* 1 if the cluster merge can run on the current device at all (CUDA,
 * kernels built for sm_90+); the launch still falls back to the combine
 * kernel where a shape's cluster does not fit. */
int gk_attn_cluster_avail(void);
size_t gk_attn_split_ws(const gk_attn *a);
/* At most n query heads per split block (0: chosen by the grid size; up
 * to 4 or 8 heads share each K/V load). Every head's arithmetic is its
 * own; a head count is taken only where it keeps the keys per lane per
 * batch (which the heads' register slots can lower), so any n gives the
 * same bits and changes only the grid.
 * Process-wide; the backend sets it from DOTLM_GPU_ATTN_GB at creation and
 * keys its graph recordings on gk_attn_gb_get(). */
void gk_attn_gb_set(int n);
int gk_attn_gb_get(void);
/* Split launches (gk_attn_split, gk_attn_split_qk) made with fewer query
 * heads per block than the GQA group's full chunk, by the grid rule or the
 * cap. */
unsigned long long gk_attn_narrow_launches(void);
int gk_attn_split_ok(const gk_attn *a);
int gk_attn_split(void *s, float *out, const float *q, const gk_attn *a, void *ws);
/* Split-KV decode with the q/k norm + RoPE + KV write of the batch's
 * tokens in the attention kernel's prologue (no qk_rope_kv launch): q and
 * k are the q/k/v matmul's raw outputs (q is not modified), v its value
 * rows; qw / kw the head norm weights ([hd], dtype wdt, NULL = no norm; both
 * or neither), zc zero-centred, RoPE of the first rot dims with inv_freq
 * (host array [rot / 2]). The output, the cache rows written and the
 * workspace contract are bitwise those of gk_qk_rope_kv then gk_attn_split.
 * The caller guarantees every token of the batch belongs to a different
 * sequence (pure decode: a token's key is then read only by its own
 * blocks). gk_attn_split_qk_ok: the shape allows it (split kernel, one head
 * chunk per KV head, ntok <= GK_ATTN_QK_MAXTOK); gk_attn_split_qk returns -1
 * (nothing launched) where it does not, else what gk_attn_split returns. */
#define GK_ATTN_QK_MAXTOK 8
typedef struct {
    const float *k, *v;
    const void *qw, *kw;
    int wdt, zc, rot;
    float eps;
    const float *inv_freq;
} gk_attn_qk;
int gk_attn_split_qk_ok(const gk_attn *a, const gk_attn_qk *qk);
int gk_attn_split_qk(void *s, float *out, const float *q, const gk_attn *a, const gk_attn_qk *qk, void *ws);
/* Split decode with a lane per key (k_attn_kl.cu, cuda.attention.keylanes):
 * segments of 4 x the warp width positions (128; 256 on wave64), one block
 * per (segment, KV head, token) for all query heads of the group; partials
 * in gk_attn_split's workspace layout, merged by gk_attn_combine. Its own
 * summation order, a function of the row alone. gk_attn_kl_ok: the shape
 * takes it (fp16 KV, head_dim 2, 4 or 8 x the warp width, group <= 8) and
 * the mode allows it at a->maxlen; gk_attn_kl returns 1 when it launched
 * (0: the caller runs gk_attn_split). gk_attn_kl_set(mode, minlen) for
 * later launches: mode 0 off, 1 on for grids of >= minlen positions; -1
 * each: DOTLM_GPU_ATTN_KL / DOTLM_GPU_ATTN_KL_MIN, else on from 4096 (a grid
 * bound: rows past position 2048). */
int gk_attn_kl_ok(const gk_attn *a);
int gk_attn_kl(void *s, float *out, const float *q, const gk_attn *a, void *ws);
void gk_attn_kl_set(int mode, int minlen);
/* The split decode's combine over nseg segments of a->segl positions
 * (32, 64, or gk_attn_kl's 128 / 256): partials w (wml, then wo) -> out. */
void gk_attn_combine(void *s, float *out, const float *w, const gk_attn *a, int nseg);
/* Tiled causal GQA (prefill; also valid for any batch). */
void gk_attn_tiled(void *s, float *out, const float *q, const gk_attn *a);
/* Causal GQA in register tiles (k_attn_pf.cu, cuda.attention.prefill; any
 * batch): 32 query vectors of one KV head per block, keys in tiles of 64
 * from position 0, fp32 scores and softmax. Its own summation order, a
 * function of the row alone. gk_attn_pf_ok: head_dim 64 or 128, 16-byte
 * aligned caches, q and out. */
int gk_attn_pf_ok(const gk_attn *a, const float *q, const float *out);
void gk_attn_pf(void *s, float *out, const float *q, const gk_attn *a);
/* Query vectors per gk_attn_pf block for later launches: 32, or 64 (CUDA;
 * its default); anything else restores the default. Same bits either way.
 * Returns the previous value. Env: DOTLM_GPU_ATTN_PF_BQ (read once). */
int gk_attn_pf_bq_set(int bq);
int gk_attn_ok(int hd); /* hd <= 256 and even */

/* ---- benchmarks (k_peak.cu) ---- */
/* Peak throughput microbenchmarks; return ops/s (FMA = 2 flops; dp4a = 8 ops,
 * hfma2 = 4 flops) measured over `ms_target` milliseconds at least. */
double gk_peak_fp32(void *s);
double gk_peak_hfma2(void *s);
double gk_peak_dp4a(void *s);

#ifdef __cplusplus
}
#endif
