/* GPU backend op table: memory, upload, per-forward batch state and the
 * dispatch of every op to a kernel (CUDA or HIP, see gpu_kernels.h).
 *
 * Ops are asynchronous on one stream; nothing here waits for the device
 * inside a forward except to_host()/sync(). Batch arrays (tokens, seq, pos,
 * block table) are copied in begin() through double-buffered pinned staging,
 * so the host never waits for the copy it just issued. Errors inside ops
 * (which return void) are kept sticky and reported by the next sync(). */
#include "backend/gpu/gpu_backend.h"
#include "backend/gpu/gpu_gdn.h"
#include "backend/gpu/gpu_graph.h"
#include "backend/gpu/gpu_prof.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/kreg.h"

#ifdef DOTLM_HIP
#define GPU_NAME "hip"
#else
#define GPU_NAME "cuda"
#endif
#define DG_MAXSHAPE 4 /* DOTLM_GPU_DIAG_SKIP matmul:NxK entries at most */
#define KN(s) GPU_NAME "." s

static kreg_kernel K_GEMV[5] = {
    KREG_KERNEL(KN("matmul.f32.gemv"), "fp32 GEMV M<=8, 16-byte loads, warp per row"),
    KREG_KERNEL(KN("matmul.f16.gemv"), "fp16 GEMV M<=8, widened to fp32 FMA"),
    KREG_KERNEL(KN("matmul.bf16.gemv"), "bf16 GEMV M<=8, shift to fp32 + FMA"),
    KREG_KERNEL(KN("matmul.fp8.gemv"), "fp8 GEMV M<=8, shared fp32 table, block scale folded per chunk"),
    KREG_KERNEL(KN("matmul.i8w.gemv"), "int8 weight-only GEMV M<=8 (fp32 activations)")};
static kreg_kernel K_GEMM[5] = {
    KREG_KERNEL(KN("matmul.f32.gemm"), "fp32 128x128 tiled GEMM, double-buffered smem"),
    KREG_KERNEL(KN("matmul.f16.gemm"), "fp16 tiled GEMM, fp32 FMA"),
    KREG_KERNEL(KN("matmul.bf16.gemm"), "bf16 tiled GEMM, fp32 FMA"),
    KREG_KERNEL(KN("matmul.fp8.gemm"), "fp8 tiled GEMM, fp32 table, fp32 FMA"),
    KREG_KERNEL(KN("matmul.i8w.gemm"), "int8 weight-only tiled GEMM")};
static kreg_kernel K_REF = KREG_KERNEL(KN("matmul.ref"), "reference matmul, one thread per output");
static kreg_kernel K_DOT2 =
    KREG_KERNEL(KN("matmul.fp8.gemv_dot2"), "fp8 GEMV via fp16 dot2 (opt-in: DOTLM_GPU_FP8_DOT2=1)");
static kreg_kernel K_I8_GEMV = KREG_KERNEL(KN("matmul.int8.gemv"), "W8A8 GEMV M<=8, dp4a, exact int32");
static kreg_kernel K_I8_GEMM = KREG_KERNEL(KN("matmul.int8.gemm"), "W8A8 128x128 GEMM, dp4a, double-buffered");
static kreg_kernel K_I8_REF = KREG_KERNEL(KN("matmul.int8.ref"), "W8A8 reference, one thread per output");
static kreg_kernel K_MULTI =
    KREG_KERNEL(KN("matmul.multi.gemv"), "float-weight GEMV M<=8 over 2-3 weights sharing x, one launch");
static kreg_kernel K_I8_MULTI =
    KREG_KERNEL(KN("matmul.int8.multi.gemv"), "W8A8 GEMV M<=8 over 2-3 weights sharing x, one launch");
static kreg_kernel K_AQ_I8 = KREG_KERNEL(KN("actq.int8"), "per-token int8 activation quantization");
static kreg_kernel K_AQ_F8 = KREG_KERNEL(KN("actq.fp8"), "fp8 activation quantize-dequantize");
static kreg_kernel K_ATT_SPLIT = KREG_KERNEL(KN("attention.split"), "split-KV decode attention (ntok<=8)");
static kreg_kernel K_ATT_FUSE =
    KREG_KERNEL(KN("attention.fused_combine"), "split-KV decode whose last segment block merges the segments, no "
                                               "combine launch (opt-in: DOTLM_GPU_ATTN_FUSE=1)");
static kreg_kernel K_ATT_CW =
    KREG_KERNEL(KN("attention.combine_wide"), "split-KV decode combine launches issuing each merge pass's loads "
                                              "together (same bits; off: one thread sums the weights' total)");
static kreg_kernel K_ATT_CRT =
    KREG_KERNEL(KN("attention.combine_rt"), "split-KV decode combine launches (wide form) issuing all their loads "
                                            "in one round trip, rows of <= 256 segments (same bits)");
static kreg_kernel K_ATT_IPRE =
    KREG_KERNEL(KN("attention.idx_prewait"), "split-KV decode launches whose split and combine kernels read the "
                                             "position, sequence and first cache page before their PDL wait "
                                             "(same bits)");
static kreg_kernel K_ATT_CL =
    KREG_KERNEL(KN("attention.cluster"), "split-KV decode whose segment blocks (2..16) form a thread block cluster "
                                         "and merge through its shared memory, no combine launch (sm_90+; same "
                                         "bits; opt-in: DOTLM_GPU_ATTN_CL=1)");
static kreg_kernel K_ATT_KL =
    KREG_KERNEL(KN("attention.keylanes"), "split decode attention with a lane per key and all heads of the group "
                                          "per block (grids of >= 4096 positions; DOTLM_GPU_ATTN_KL=0 or this "
                                          "switch: the split kernel; its own summation order)");
static kreg_kernel K_ATT_DEC =
    KREG_KERNEL(KN("attention.decode_rows"), "split-KV launches for the leading tokens of a batch of > 8 that are "
                                             "each the only token of their sequence (a server step's decodes; "
                                             "this switch: the whole batch through the prompt kernels)");
static kreg_kernel K_ATT_TILED = KREG_KERNEL(KN("attention.tiled"), "tiled causal GQA attention");
static kreg_kernel K_ATT_PF =
    KREG_KERNEL(KN("attention.prefill"), "causal GQA attention in register tiles for prompt batches (head_dim "
                                         "64 / 128; this switch: the tiled kernel; its own summation order)");
static kreg_kernel K_EMBED = KREG_KERNEL(KN("embed"), "");
static kreg_kernel K_RMS = KREG_KERNEL(KN("rmsnorm"), "");
static kreg_kernel K_ROPE = KREG_KERNEL(KN("rope"), "");
static kreg_kernel K_KVW = KREG_KERNEL(KN("kv_write"), "");
static kreg_kernel K_SILU = KREG_KERNEL(KN("silu_mul"), "");
static kreg_kernel K_ADD = KREG_KERNEL(KN("add"), "");
static kreg_kernel K_GATHER = KREG_KERNEL(KN("gather_rows"), "");
static kreg_kernel K_SIGM = KREG_KERNEL(KN("sigmoid_mul"), "");
static kreg_kernel K_COPY2D = KREG_KERNEL(KN("copy2d"), "");
static kreg_kernel K_NORMQ =
    KREG_KERNEL(KN("norm_actq"), "RMSNorm also writes the W8A8 per-token int8 codes of its output");
static kreg_kernel K_SILUQ =
    KREG_KERNEL(KN("silu_actq"), "SiLU*up also writes the W8A8 per-token int8 codes of its output");
static kreg_kernel K_GU_SILU = KREG_KERNEL(KN("gate_up_silu"), "float-weight gate/up GEMV M<=8 writing SiLU(gate)*up "
                                                                "from its epilogue (no silu_mul launch)");
static kreg_kernel K_ADD_RMS = KREG_KERNEL(KN("add_rmsnorm"), "residual add + RMSNorm in one launch");
static kreg_kernel K_QKROPE = KREG_KERNEL(KN("qk_rope_kv"), "q/k RMSNorm + RoPE + KV-cache write in one launch");
static kreg_kernel K_ATT_QK =
    KREG_KERNEL(KN("attention.qk_rope"), "split-KV decode with the q/k RMSNorm + RoPE + KV-cache write in its "
                                         "prologue, no qk_rope_kv launch (opt-in: DOTLM_GPU_ATTN_QK=1)");
static kreg_kernel K_ATT_WARM =
    KREG_KERNEL(KN("attention.warm"), "split-KV decode loading the K/V rows of earlier positions before its PDL "
                                      "wait, batches of one token per sequence (opt-in: DOTLM_GPU_ATTN_WARM=1)");
static kreg_kernel K_NORM_PRE =
    KREG_KERNEL(KN("norm_prewait"), "wide-row (add+)RMSNorm and qk_rope_kv loading their norm weights (and the "
                                    "position, cache page) before their PDL wait");
static kreg_kernel K_ATT_GBR =
    KREG_KERNEL(KN("attention.split_heads"), "split-KV decode launches with fewer query heads per block than the "
                                             "GQA group (grid rule, or the DOTLM_GPU_ATTN_GB cap); off: whole groups");
static kreg_kernel K_SILUQ_V4 =
    KREG_KERNEL(KN("silu_actq_v4"), "silu_actq with its rows held in registers: one load round trip (rows of up "
                                    "to 16384; off: the two-pass kernel, the same bits)");
static kreg_kernel K_RING = KREG_KERNEL(KN("gemv_ring"), "fp8 and W8A8 GEMV launches whose weights stream through a "
                                                         "shared-memory ring (cp.async, sm_80+); off: the register loops");
static kreg_kernel K_FOLD =
    KREG_KERNEL(KN("gemv_fold"), "fp8 e4m3 GEMV launches (every M) with the 2^8 of the fp16 widening folded into "
                                 "the chunk scale (bitwise h2 while every nonzero activation is in [2^-109, 2^120)); "
                                 "off: h2, one multiply per code pair");
static kreg_kernel K_HF =
    KREG_KERNEL(KN("gemv_hf"), "fp8 e4m3 GEMV launches at M = 1 with the chunk products in packed fp16 (opt-in: "
                               "DOTLM_GEMV=default,fp8=hf; ~1e-3 relative, not bitwise fold); off: fold");
static kreg_kernel K_RPF =
    KREG_KERNEL(KN("gemv_ring_xpf"), "fp8 ring GEMV launches at M = 1 that load the next chunk's activations and "
                                     "scales while this chunk computes (DOTLM_GEMV=xpf=1: two register sets, up to "
                                     "85 registers; xpf=2, the default: one set, reloaded as it is used up; the same "
                                     "bits); off: each chunk's inputs loaded as it starts");
static kreg_kernel K_OCC =
    KREG_KERNEL(KN("gemv_occ"), "M = 1 GEMV launches (fp8 ring: DOTLM_GEMV=occ=N, 6 by default on devices with "
                                ">= 32 GB/s of memory bandwidth per SM; W8A8: i8occ=N) whose blocks per SM are "
                                "capped at N by padded shared memory, so a PDL successor's early blocks spread "
                                "evenly (the same bits); off: no cap");
static kreg_kernel K_PINNED =
    KREG_KERNEL(KN("host_pinned"), "device-to-host copies (the logits) into page-locked host buffers of "
                                   "be_host_alloc (one DMA, ~4x faster than pageable memory for a logits "
                                   "row); off: those buffers are plain malloc memory");
static kreg_kernel K_UNSC =
    KREG_KERNEL(KN("gemv_unscaled"), "16/32-bit GEMV launches at M <= 2 without block scales, built without the "
                                     "per-chunk scale load (fma(p, 1, acc) = acc + p: the same bits); off: a load "
                                     "of the constant 1 per chunk");
static kreg_kernel K_L2EF =
    KREG_KERNEL(KN("gemv_l2_evict_first"), "fp8 ring GEMV launches whose weight copies carry the L2 evict_first "
                                           "policy, so that what the rest of a decode step reads again (the KV "
                                           "cache, activations, scales) stays in L2 (a cache hint: the same bits); "
                                           "off: the unhinted cp.async");
static kreg_kernel K_I8KS = KREG_KERNEL(KN("int8_gemv_ksplit"), "W8A8 GEMV launches with a weight's K split over 2 "
                                                                "or 4 warps (opt-in: DOTLM_GEMV=i8ks=0; exact int32 "
                                                                "sums, same bits); off: one warp per row group");
static kreg_kernel K_I8XP =
    KREG_KERNEL(KN("int8_gemv_xp"), "W8A8 register GEMV launches at M = 1 that load a group's activation codes "
                                    "with its weights, one group ahead (two register sets; the same bits; opt-in "
                                    "with DOTLM_GEMV=i8xp=1, or i8xp=2 for weights with k > 4096); off: each "
                                    "chunk's codes loaded as its dp4a use them");
static kreg_kernel K_XPERM =
    KREG_KERNEL(KN("gemv_xperm"), "fp8 / int8 weight-only GEMV launches at M >= 3 reading x permuted by a small "
                                  "kernel so that a warp's activation loads are contiguous (same bits); off: "
                                  "strided loads");
static kreg_kernel K_XT =
    KREG_KERNEL(KN("gemv_twin"), "fp8 GEMV launches at M = 1 reading x from a permuted twin that the kernel "
                                 "which made x wrote beside it (the norms, the gate/up SiLU epilogue), so that "
                                 "a warp's activation loads are contiguous (same bits; opt-in: "
                                 "DOTLM_GPU_GEMV_TWIN=1); off: strided loads");
static kreg_kernel K_PDL = KREG_KERNEL(KN("pdl"), "launches that may start before the kernel ahead ends (programmatic "
                                                  "dependent launch, sm_90+); GEMVs stream weights meanwhile");

#define GEMV_MAX_M 8
/* Batches up to this many rows (a server's decode steps) also go through the
 * GEMV, GEMV_MAX_M rows per launch: streaming the weights M/8 times beats a
 * 128-row GEMM tile that is mostly empty, and a row's result is the same as
 * in a batch of one (the GEMV order does not depend on M). */
#define GEMV_BATCH_M 32

typedef struct {
    gk_weight g;
    void *data, *scale, *bias; /* device allocations */
} gpu_weight;

typedef struct {
    void *stream;
    char devname[256];
    int err;          /* sticky error from a void op */
    char errmsg[512];
    int dot2;         /* DOTLM_GPU_FP8_DOT2=1 */
    /* batch state (device) */
    int ntok;
    int32_t *d_batch; /* [3 * cap]: tokens | seq | pos */
    size_t d_batch_cap;
    int32_t *d_btab;
    size_t d_btab_cap;
    int mbps;
    int maxlen;       /* max over the batch of pos + 1 */
    int ndec;         /* batches of > GEMV_MAX_M tokens: how many leading tokens are each the only token of
                       * their sequence (decode rows, gpu_attention), at begin() (part of graph keys) */
    int *seqcnt;      /* [seqcnt_cap] tokens per sequence id, scratch of begin() */
    void *xpb;        /* the GEMVs' permuted activations (xperm_begin) */
    size_t xpb_cap;
    int seqcnt_cap;
    int att_fuse_opt; /* DOTLM_GPU_ATTN_FUSE=1: the fused attention combine is opted in */
    int fuse_att;     /* opted in and cuda.attention.fused_combine on, at begin() (part of graph keys) */
    int att_cw;       /* cuda.attention.combine_wide on, at begin() (part of graph keys) */
    int att_ipre;     /* cuda.attention.idx_prewait on, at begin() (part of graph keys) */
    int att_crt;      /* cuda.attention.combine_rt on, at begin() (part of graph keys) */
    int att_seg;      /* gk_attn_seg_get() at begin(): the split attention's segment rule (graph keys) */
    int att_cl_opt;   /* DOTLM_GPU_ATTN_CL=1: the cluster merge of the decode attention is opted in */
    int att_cl;       /* opted in, cuda.attention.cluster on, no DOTLM_GPU_DIAG_SKIP=combine, at begin() (graph keys) */
    int att_cllate;   /* DOTLM_GPU_ATTN_CL_TRIG=late: the cluster merge's late PDL trigger (experiment) */
    int att_gb;       /* gk_attn_gb_get() at begin() (part of graph keys: the split grid) */
    int att_gbr;      /* cuda.attention.split_heads on, at begin() (part of graph keys) */
    int gu_silu;      /* cuda.gate_up_silu at begin() (part of graph keys) */
    int att_warm_opt; /* DOTLM_GPU_ATTN_WARM=1: the early K/V loads of the decode attention are opted in */
    int att_warm;     /* opted in, cuda.attention.warm on and every token of the batch of its own sequence, at
                       * begin() (part of graph keys) */
    int att_qk_opt;   /* DOTLM_GPU_ATTN_QK=1: the q/k norm + RoPE prologue in the decode attention is opted in */
    int att_qk;       /* opted in, cuda.attention.qk_rope on and every token of the batch of its own sequence, at
                       * begin() (part of graph keys) */
    unsigned diag;    /* DOTLM_GPU_DIAG_SKIP: DG_* groups of launches left out (timing diagnostics only) */
    int ndshape;      /* DOTLM_GPU_DIAG_SKIP matmul:NxK entries: GEMV launches of those shapes left out */
    int64_t dshape[DG_MAXSHAPE][2];
    int64_t mm_n, mm_k; /* the matmul launch being made: rows of all its weights, k (for dshape) */
    /* pinned staging, double-buffered */
    int32_t *h_stage[2];
    size_t h_stage_cap[2];
    void *ev[2];
    int ev_used[2];
    int cur;
    /* workspaces */
    void *ws;
    size_t ws_cap;
    void *wsa;
    size_t wsa_cap;
    gpu_prof *prof;       /* DOTLM_GPU_PROFILE=1, else NULL */
    /* int8 codes of a norm's output, made by the norm kernel for the W8A8
     * matmuls that read it next (valid until any other op runs) */
    int w8a8;             /* a W8A8 weight was uploaded */
    void *qc;
    size_t qc_cap;
    const float *qc_y;
    int qc_rows, qc_d, qc_kp, qc_valid;
    /* the permuted twin (gk_gemv_twin) of a norm's or gate/up SiLU's one-row
     * output, written by that kernel for the M = 1 fp8 GEMVs reading it next
     * (valid until any other op runs); two buffers, as a gate/up launch reads
     * one twin and writes the other */
    int fp8w;             /* an fp8 weight was uploaded */
    int xt_opt;           /* DOTLM_GPU_GEMV_TWIN=1: the twins are opted in */
    int xt_on;            /* opted in and cuda.gemv_twin on, at begin() (part of graph keys) */
    void *xt[2];
    size_t xt_cap[2];
    const float *xt_of;   /* the activation xt[xt_cur] twins */
    int64_t xt_k;
    int xt_valid, xt_cur, xt_next;
    gpu_graphs *graphs;   /* decode forwards recorded as graphs */
    int pdl_ok;           /* the device can use programmatic dependent launch */
    int pdl;              /* PDL on for the launches of this forward */
    int ring;             /* cuda.gemv_ring enabled for this forward */
    int fold;             /* cuda.gemv_fold enabled for this forward */
    int hf;               /* cuda.gemv_hf enabled for this forward (part of graph keys) */
    int i8ks;             /* cuda.int8_gemv_ksplit enabled for this forward */
    int l2ef;             /* cuda.gemv_l2_evict_first enabled for this forward (part of graph keys) */
    int rpf;              /* cuda.gemv_ring_xpf enabled for this forward (part of graph keys) */
    int i8xp;             /* cuda.int8_gemv_xp enabled for this forward (part of graph keys) */
    int occ;              /* cuda.gemv_occ enabled for this forward (part of graph keys) */
    /* page-locked host buffers made by gpu_host_alloc (to_host counts copies into them) */
    struct { const char *p; size_t n; } *pin;
    int npin, pin_cap;
} gpu_impl;

static gpu_impl *IMPL(dl_backend *be) { return (gpu_impl *)be->impl; }

/* Count a dispatch (and remember it for graph replays while capturing). */
static void hit(gpu_impl *g, kreg_kernel *k) {
    kreg_hit(k);
    if (gpu_graphs_capturing(g->graphs)) gpu_graphs_note(g->graphs, k);
}

/* kreg_use with the same bookkeeping: 1 (counted) if k is enabled. */
static int use(gpu_impl *g, kreg_kernel *k) {
    if (!kreg_use(k)) return 0;
    if (gpu_graphs_capturing(g->graphs)) gpu_graphs_note(g->graphs, k);
    return 1;
}

/* One dispatch of k per launch a kernel module counted since `before`
 * (its counter is now `now`): the launches some statement made with PDL,
 * through the weight ring, with a K split, and so on. */
static void hits_since(gpu_impl *g, kreg_kernel *k, unsigned long long before, unsigned long long now) {
    for (unsigned long long n = now - before; n > 0; n--) hit(g, k);
}
/* The launches made with PDL (one cuda.pdl dispatch each). */
static void pdl_count(gpu_impl *g, unsigned long long before) { hits_since(g, &K_PDL, before, gk_pdl_launches()); }
/* DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn,combine,silu,actq,matmul,matmul:NxK (any subset):
 * the launches of those groups are not made at all (attnwork: the split
 * attention kernel is launched but its blocks return after their PDL wait), so a decode step's
 * time can be compared with and without them (what each costs on the
 * critical path, PDL overlap included; there is no profiler on the test
 * machine that sees inside a graph replay). Outputs are wrong while it is
 * set; dotlm says so on stderr at backend creation. */
enum { DG_NORM = 1, DG_QKROPE = 2, DG_ATTN = 4, DG_COMBINE = 8, DG_SILU = 16, DG_MATMUL = 32, DG_ACTQ = 64,
       DG_ATTNWORK = 128 };
static const struct {
    const char *name;
    unsigned bit;
} DG_NAMES[] = {{"norm", DG_NORM},     {"qkrope", DG_QKROPE}, {"attn", DG_ATTN},
                {"combine", DG_COMBINE}, {"silu", DG_SILU},   {"matmul", DG_MATMUL}, {"actq", DG_ACTQ},
                {"attnwork", DG_ATTNWORK}};

/* Parses the DOTLM_GPU_DIAG_SKIP list e (NULL: 0) into the DG_* mask it
 * returns and g's shape filters; unknown names are an error (returns -1 and
 * names them). */
static long diag_parse(const char *e, gpu_impl *g) {
    long m = 0;
    if (!e) return 0;
    char *buf = strdup(e); /* the whole list, however long */
    if (!buf) {
        dl_err("%s: out of host memory", GPU_NAME);
        return -1;
    }
    for (char *sv = NULL, *t = strtok_r(buf, ", ", &sv); t && m >= 0; t = strtok_r(NULL, ", ", &sv)) {
        long long dn = 0, dk = 0;
        char tail = 0;
        if (!strncmp(t, "matmul:", 7)) { /* one launch shape: all its weights' rows x k */
            if (sscanf(t + 7, "%lldx%lld%c", &dn, &dk, &tail) != 2 || dn <= 0 || dk <= 0 || g->ndshape == DG_MAXSHAPE) {
                dl_err("DOTLM_GPU_DIAG_SKIP: '%s': want matmul:NxK (rows of the launch's weights x k; at most %d)", t,
                       DG_MAXSHAPE);
                m = -1;
            } else {
                g->dshape[g->ndshape][0] = dn;
                g->dshape[g->ndshape][1] = dk;
                g->ndshape++;
            }
            continue;
        }
        size_t i = 0;
        while (i < sizeof DG_NAMES / sizeof DG_NAMES[0] && strcmp(DG_NAMES[i].name, t)) i++;
        if (i == sizeof DG_NAMES / sizeof DG_NAMES[0]) {
            dl_err("DOTLM_GPU_DIAG_SKIP: unknown group '%s' (norm, qkrope, attn, combine, silu, actq, matmul, "
                   "attnwork)", t);
            m = -1;
        } else {
            m |= DG_NAMES[i].bit;
        }
    }
    free(buf);
    return m;
}

/* 1 if kernel k's launches are left out (DOTLM_GPU_DIAG_SKIP). */
static int diag_skip(const gpu_impl *g, const kreg_kernel *k) {
    if (!g->diag && !g->ndshape) return 0;
    unsigned b = 0;
    if (k == &K_ADD_RMS || k == &K_RMS) b = DG_NORM;
    else if (k == &K_QKROPE) b = DG_QKROPE;
    else if (k == &K_ATT_SPLIT || k == &K_ATT_QK || k == &K_ATT_KL) b = DG_ATTN;
    else if (k == &K_SILU || k == &K_SILUQ) b = DG_SILU;
    else if (k == &K_AQ_I8 || k == &K_AQ_F8) b = DG_ACTQ;
    else if (k == &K_MULTI || k == &K_I8_MULTI || k == &K_GU_SILU || k == &K_I8_GEMV || k == &K_DOT2 ||
             (k >= &K_GEMV[0] && k < &K_GEMV[5])) {
        b = DG_MATMUL;
        for (int i = 0; i < g->ndshape; i++)
            if (g->dshape[i][0] == g->mm_n && g->dshape[i][1] == g->mm_k) return 1;
    }
    return (g->diag & b) != 0;
}

/* Launch statement `stmt` for kernel k: counted, and timed when profiling. */
#define LAUNCH(g, k, stmt)                     \
    do {                                       \
        hit((g), (k));                         \
        TIMED(g, k, stmt);                     \
    } while (0)
/* Same, for a kernel whose kreg_use() was already counted; the launch
 * forms the kernel modules count (PDL, weight ring, ...) are counted too. */
#define TIMED(g, k, stmt)                                                     \
    do {                                                                      \
        const unsigned long long pdl0_ = gk_pdl_launches();                   \
        const unsigned long long ring0_ = gk_gemv_ring_launches();            \
        const unsigned long long fold0_ = gk_gemv_fold_launches();            \
        const unsigned long long hf0_ = gk_gemv_hf_launches();                \
        const unsigned long long rpf0_ = gk_gemv_ring_xpf_launches();         \
        const unsigned long long occ0_ = gk_gemv_occ_launches();              \
        const unsigned long long unsc0_ = gk_gemv_unscaled_launches();        \
        const unsigned long long l2ef0_ = gk_gemv_l2ef_launches();            \
        const unsigned long long npre0_ = gk_norm_prewait_launches();         \
        const unsigned long long i8ks0_ = gk_int8_ksplit_launches();          \
        const unsigned long long i8xp0_ = gk_int8_gemv_xp_launches();         \
        const unsigned long long nar0_ = gk_attn_narrow_launches();           \
        const unsigned long long sq0_ = gk_silu_actq_v4_launches();           \
        if (!diag_skip((g), (k))) GPU_PROF((g)->prof, (k)->name, stmt);       \
        pdl_count((g), pdl0_);                                                \
        hits_since((g), &K_RING, ring0_, gk_gemv_ring_launches());            \
        hits_since((g), &K_FOLD, fold0_, gk_gemv_fold_launches());            \
        hits_since((g), &K_HF, hf0_, gk_gemv_hf_launches());                  \
        hits_since((g), &K_RPF, rpf0_, gk_gemv_ring_xpf_launches());          \
        hits_since((g), &K_OCC, occ0_, gk_gemv_occ_launches());               \
        hits_since((g), &K_UNSC, unsc0_, gk_gemv_unscaled_launches());        \
        hits_since((g), &K_L2EF, l2ef0_, gk_gemv_l2ef_launches());            \
        hits_since((g), &K_NORM_PRE, npre0_, gk_norm_prewait_launches());     \
        hits_since((g), &K_I8KS, i8ks0_, gk_int8_ksplit_launches());          \
        hits_since((g), &K_I8XP, i8xp0_, gk_int8_gemv_xp_launches());        \
        hits_since((g), &K_ATT_GBR, nar0_, gk_attn_narrow_launches());        \
        hits_since((g), &K_SILUQ_V4, sq0_, gk_silu_actq_v4_launches());       \
    } while (0)

static void set_err(gpu_impl *g, const char *msg) {
    if (g->err) return;
    g->err = 1;
    snprintf(g->errmsg, sizeof g->errmsg, "%s: %s", GPU_NAME, msg);
}

/* Every op but the matmuls that read them: the cached int8 codes and the
 * permuted twin of an activation are stale. */
static void act_stale(gpu_impl *g) {
    g->qc_valid = 0;
    g->xt_valid = 0;
}

/* Grow a device buffer to at least `need` bytes; waits for the stream first
 * so that no in-flight kernel still reads the old buffer. */
static int ensure_dev(gpu_impl *g, void **buf, size_t *cap, size_t need) {
    if (need <= *cap && *buf) return 0;
    if (gpu_graphs_capturing(g->graphs)) { /* cannot wait inside a capture: redo eagerly */
        gpu_graphs_spoil(g->graphs);
        return -1;
    }
    gpu_graphs_clear(g->graphs); /* recordings hold the old pointer */
    if (gpurt_sync(g->stream)) {
        set_err(g, gpurt_errstr());
        return -1;
    }
    gpurt_free(*buf);
    *buf = NULL;
    *cap = 0;
    size_t n = need + need / 4 + 256;
    if (gpurt_malloc(buf, n)) {
        set_err(g, gpurt_errstr());
        return -1;
    }
    *cap = n;
    return 0;
}

/* Before float GEMV launches of M rows of k columns of weights of dtype:
 * the workspace the kernels permute x into at M >= 3 (cuda.gemv_xperm;
 * gk_gemv_xperm_ws), or none (switch off, M < 3, a format the kernels do
 * not permute for, or a capture that cannot grow it). Returns the launch
 * count so far, for xperm_done. */
static unsigned long long xperm_begin(gpu_impl *g, int M, int64_t k, int dtype) {
    void *ws = NULL;
    size_t cap = 0;
    if (M >= 3 && kreg_enabled(&K_XPERM) && gk_gemv_xperm_wants(dtype)) {
        const size_t need = gk_gemv_xperm_bytes(GEMV_MAX_M, k);
        if (!ensure_dev(g, &g->xpb, &g->xpb_cap, need)) ws = g->xpb, cap = g->xpb_cap;
    }
    gk_gemv_xperm_ws(ws, cap);
    return gk_gemv_xperm_launches();
}
/* After them: one cuda.gemv_xperm dispatch per launch that read x permuted. */
static void xperm_done(gpu_impl *g, unsigned long long before) {
    hits_since(g, &K_XPERM, before, gk_gemv_xperm_launches());
    gk_gemv_xperm_ws(NULL, 0);
}

/* ---------------- memory ---------------- */

static void *gpu_alloc(dl_backend *be, size_t bytes) {
    (void)be;
    void *p = NULL;
    if (gpurt_malloc(&p, bytes)) {
        dl_err("%s: %s", GPU_NAME, gpurt_errstr());
        return NULL;
    }
    return p;
}

static void gpu_free(dl_backend *be, void *p) {
    (void)be;
    gpurt_free(p);
}

static int n_scales(const dl_weight *w) {
    switch (w->scale_kind) {
    case WS_TENSOR: return 1;
    case WS_CHANNEL: return (int)w->n;
    case WS_BLOCK: return (int)(((w->n + w->bn - 1) / w->bn) * ((w->k + w->bk - 1) / w->bk));
    default: return 0;
    }
}

static float scalar_f32(dl_dtype t, const void *p, int64_t i) {
    switch (t) {
    case DT_F32: return ((const float *)p)[i];
    case DT_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    case DT_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    default: return 0.0f;
    }
}

static void release_gw(gpu_weight *gw) {
    if (!gw) return;
    gpurt_free(gw->data);
    gpurt_free(gw->scale);
    gpurt_free(gw->bias);
    free(gw);
}

/* Upload w in its stored format (data bytes as they are); scales and bias
 * are converted to fp32 (small). Fails on formats the kernels cannot run. */
static int gpu_upload(dl_backend *be, dl_weight *w) {
    const char *nm = w->name ? w->name : "?";
    switch (w->dtype) {
    case DT_F32: case DT_F16: case DT_BF16: case DT_F8E4M3: case DT_F8E5M2: case DT_I8: break;
    default: return dl_err("%s: weight %s: dtype %s is not supported by the GPU backend", GPU_NAME, nm, dt_name(w->dtype));
    }
    if (w->scale_kind != WS_NONE && !w->scale)
        return dl_err("%s: weight %s: scale kind set but no scale data", GPU_NAME, nm);
    if (w->scale_kind != WS_NONE && w->scale_dtype != DT_F32 && w->scale_dtype != DT_BF16 && w->scale_dtype != DT_F16)
        return dl_err("%s: weight %s: scale dtype %s not supported", GPU_NAME, nm, dt_name(w->scale_dtype));
    if (w->scale_kind == WS_BLOCK && (w->bn <= 0 || w->bk <= 0))
        return dl_err("%s: weight %s: bad block sizes %dx%d", GPU_NAME, nm, w->bn, w->bk);
    if (w->dtype == DT_I8 && w->actq == ACT_INT8_TOKEN && w->scale_kind == WS_BLOCK)
        return dl_err("%s: weight %s: W8A8 int8 with block scales is not supported", GPU_NAME, nm);
    if (w->n <= 0 || w->k <= 0 || w->ld < w->k) return dl_err("%s: weight %s: bad shape", GPU_NAME, nm);
    if (w->dev) return 0;
    gpu_weight *gw = calloc(1, sizeof *gw);
    if (!gw) return dl_err("%s: out of host memory", GPU_NAME);
    const size_t es = dt_size(w->dtype);
    /* last row needs only k elements: never read past the mapped tensor */
    const size_t bytes = ((size_t)(w->n - 1) * (size_t)w->ld + (size_t)w->k) * es;
    if (gpurt_malloc(&gw->data, bytes) || gpurt_h2d(gw->data, w->data, bytes)) goto fail;
    int ns = n_scales(w);
    if (ns > 0) {
        float *h = malloc((size_t)ns * sizeof(float));
        if (!h) { release_gw(gw); return dl_err("%s: out of host memory", GPU_NAME); }
        for (int i = 0; i < ns; i++) h[i] = scalar_f32(w->scale_dtype, w->scale, i);
        int rc = gpurt_malloc(&gw->scale, (size_t)ns * 4) || gpurt_h2d(gw->scale, h, (size_t)ns * 4);
        free(h);
        if (rc) goto fail;
    }
    if (w->bias) {
        float *h = malloc((size_t)w->n * sizeof(float));
        if (!h) { release_gw(gw); return dl_err("%s: out of host memory", GPU_NAME); }
        for (int64_t i = 0; i < w->n; i++) h[i] = w_bias_at(w, i);
        int rc = gpurt_malloc(&gw->bias, (size_t)w->n * 4) || gpurt_h2d(gw->bias, h, (size_t)w->n * 4);
        free(h);
        if (rc) goto fail;
    }
    gw->g.data = gw->data;
    gw->g.scale = gw->scale;
    gw->g.bias = gw->bias;
    gw->g.n = w->n;
    gw->g.k = w->k;
    gw->g.ld = w->ld;
    gw->g.dtype = (int)w->dtype;
    gw->g.scale_kind = (int)w->scale_kind;
    gw->g.bn = w->bn > 0 ? w->bn : 1;
    gw->g.bk = w->bk > 0 ? w->bk : 1;
    gw->g.kb = (int)((w->k + gw->g.bk - 1) / gw->g.bk);
    gw->g.bk_shift = -1;
    if (w->dtype == DT_I8 && w->actq == ACT_INT8_TOKEN) IMPL(be)->w8a8 = 1;
    if (w->dtype == DT_F8E4M3 || w->dtype == DT_F8E5M2) IMPL(be)->fp8w = 1;
    for (int sh = 0; sh < 31; sh++)
        if ((1 << sh) == gw->g.bk) gw->g.bk_shift = sh;
    w->dev = gw;
    return 0;
fail:
    dl_err("%s: upload of weight %s: %s", GPU_NAME, nm, gpurt_errstr());
    release_gw(gw);
    return -1;
}

static void gpu_release(dl_backend *be, dl_weight *w) {
    (void)be;
    release_gw((gpu_weight *)w->dev);
    w->dev = NULL;
}

static int gpu_to_host(dl_backend *be, void *dst, const void *src, size_t bytes) {
    gpu_impl *g = IMPL(be);
    if (gpurt_d2h_async(dst, src, bytes, g->stream) || gpurt_sync(g->stream))
        return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    for (int i = 0; i < g->npin; i++)
        if ((const char *)dst >= g->pin[i].p && (const char *)dst + bytes <= g->pin[i].p + g->pin[i].n) {
            kreg_hit(&K_PINNED);
            break;
        }
    return 0;
}

/* be->host_alloc: page-locked memory (DMA straight into it), remembered so
 * that to_host can count copies into it; NULL when cuda.host_pinned is
 * off or the driver refuses (be_host_alloc then takes malloc). */
static void *gpu_host_alloc(dl_backend *be, size_t bytes) {
    gpu_impl *g = IMPL(be);
    if (!kreg_enabled(&K_PINNED)) return NULL;
    if (g->npin == g->pin_cap) {
        int cap = g->pin_cap ? 2 * g->pin_cap : 8;
        void *t = realloc(g->pin, (size_t)cap * sizeof *g->pin);
        if (!t) return NULL;
        g->pin = t;
        g->pin_cap = cap;
    }
    void *p = NULL;
    if (gpurt_host_alloc(&p, bytes)) return NULL;
    g->pin[g->npin].p = p;
    g->pin[g->npin].n = bytes;
    g->npin++;
    return p;
}

static void gpu_host_free(dl_backend *be, void *p) {
    gpu_impl *g = IMPL(be);
    for (int i = 0; i < g->npin; i++)
        if (g->pin[i].p == p) {
            g->pin[i] = g->pin[--g->npin];
            break;
        }
    gpurt_host_free(p);
}

static int gpu_from_host(dl_backend *be, void *dst, const void *src, size_t bytes) {
    gpu_impl *g = IMPL(be);
    /* src is pageable and may be freed on return: complete before returning */
    if (gpurt_h2d_async(dst, src, bytes, g->stream) || gpurt_sync(g->stream))
        return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    return 0;
}

static int gpu_sync(dl_backend *be) {
    gpu_impl *g = IMPL(be);
    if (gpurt_sync(g->stream)) set_err(g, gpurt_errstr());
    gpu_prof_flush(g->prof);
    if (g->err) {
        g->err = 0;
        return dl_err("%s", g->errmsg);
    }
    return 0;
}

static void gpu_destroy(dl_backend *be) {
    if (!be) return;
    gpu_impl *g = IMPL(be);
    if (g) {
        (void)gpurt_sync(g->stream);
        gpu_prof_flush(g->prof);
        gpu_prof_report(g->prof, stderr);
        gpu_prof_destroy(g->prof);
        gpu_graphs_destroy(g->graphs);
        gpurt_free(g->d_batch);
        gpurt_free(g->d_btab);
        gpurt_free(g->ws);
        gpurt_free(g->wsa);
        gpurt_free(g->qc);
        for (int i = 0; i < 2; i++) {
            gpurt_host_free(g->h_stage[i]);
            gpurt_event_destroy(g->ev[i]);
        }
        gpurt_stream_destroy(g->stream);
        free(g->pin);
        free(g->seqcnt);
        gpurt_free(g->xpb);
        free(g);
    }
    free(be);
}

/* ---------------- batch state ---------------- */

/* The number of leading tokens of b that are each the only token of their
 * sequence in b (sequence ids in [0, nseq); 0 when one is not, or when the
 * scratch cannot grow). */
static int lead_single_rows(gpu_impl *g, const dl_batch *b, int nseq) {
    if (nseq <= 0) return 0;
    if (nseq > g->seqcnt_cap) {
        int *c = realloc(g->seqcnt, (size_t)nseq * sizeof *c);
        if (!c) return 0;
        g->seqcnt = c;
        g->seqcnt_cap = nseq;
    }
    memset(g->seqcnt, 0, (size_t)nseq * sizeof *g->seqcnt);
    for (int i = 0; i < b->ntok; i++) {
        if (b->seq[i] < 0 || b->seq[i] >= nseq) return 0;
        g->seqcnt[b->seq[i]]++;
    }
    int n = 0;
    while (n < b->ntok && g->seqcnt[b->seq[n]] == 1) n++;
    return n;
}

/* The GEMV kernel modules' process-wide gates from this backend's switches
 * (DOTLM_DISABLE=...), kept in g where they are part of graph keys: at
 * creation and at every forward's begin (switches may change between). */
static void gemv_switches(gpu_impl *g) {
    g->ring = kreg_enabled(&K_RING); /* cuda.gemv_ring off: the register K loop */
    gk_gemv_ring_allow(g->ring);
    g->fold = kreg_enabled(&K_FOLD); /* cuda.gemv_fold off: the h2 widening */
    gk_gemv_fold_allow(g->fold);
    g->hf = kreg_enabled(&K_HF); /* cuda.gemv_hf off: fp8=hf runs fold */
    gk_gemv_hf_allow(g->hf);
    g->rpf = kreg_enabled(&K_RPF); /* cuda.gemv_ring_xpf off: inputs loaded as each chunk starts */
    gk_gemv_ring_xpf_allow(g->rpf);
    gk_gemv_unscaled_allow(kreg_enabled(&K_UNSC)); /* cuda.gemv_unscaled off: the scale load */
    g->l2ef = kreg_enabled(&K_L2EF); /* cuda.gemv_l2_evict_first off: unhinted weight copies */
    gk_gemv_l2ef_allow(g->l2ef);
    g->i8ks = kreg_enabled(&K_I8KS); /* cuda.int8_gemv_ksplit off: one warp per row group */
    gk_int8_ksplit_allow(g->i8ks);
    g->i8xp = kreg_enabled(&K_I8XP); /* cuda.int8_gemv_xp off: codes loaded as used */
    gk_int8_gemv_xp_allow(g->i8xp);
    g->occ = kreg_enabled(&K_OCC); /* cuda.gemv_occ off: no block cap */
    gk_gemv_occ_allow(g->occ);
}

static int gpu_begin(dl_backend *be, const dl_batch *b, const dl_kvcache *kv) {
    gpu_impl *g = IMPL(be);
    /* PDL for decode-sized batches (the GEMV path), unless switched off
     * (DOTLM_DISABLE=cuda.pdl) or profiling (whose events between launches
     * serialise them anyway). Prompt forwards are long-kernel work where it
     * measured slower (H200, 2026-11-30: int8 prompt 2531 vs 3391 tok/s). */
    g->pdl = g->pdl_ok && !g->prof && b->ntok <= GEMV_BATCH_M && kreg_enabled(&K_PDL);
    gk_pdl_set(g->pdl);
    gemv_switches(g);
    /* opt-in: measured slower in decode (H200, 2026-11-30, Qwen3-8B fp8 at
     * 512: 241.6 and 238.7 tok/s with it, 251.9 and 250.7 without; the
     * last block merges after every other block of its group, a fence and
     * an atomic on the critical path, where the combine kernel's blocks
     * merge one head each) */
    g->fuse_att = g->att_fuse_opt && kreg_enabled(&K_ATT_FUSE);
    g->att_cw = kreg_enabled(&K_ATT_CW);
    g->att_ipre = kreg_enabled(&K_ATT_IPRE);
    g->att_crt = kreg_enabled(&K_ATT_CRT);
    /* opt-in: measured slower in decode (H200, 2026-12-01, Qwen3-8B at 512,
     * segments of 64: fp8 298.7 / 299.4 tok/s with it, 307.6 / 305.7
     * without; bf16 215.6 / 213.0 against 215.3 / 215.6). DIAG_SKIP=combine
     * times the combine kernel, so it keeps the kernel's launches (and leaves
     * them out). */
    g->att_cl = g->att_cl_opt && kreg_enabled(&K_ATT_CL) && !(g->diag & DG_COMBINE) && gk_attn_cluster_avail();
    g->att_gb = gk_attn_gb_get();
    g->att_gbr = kreg_enabled(&K_ATT_GBR);
    g->gu_silu = kreg_enabled(&K_GU_SILU);
    /* opt-in: measured slower in decode (H200, 2026-12-02, Qwen3-8B fp8 at
     * 512, bench/h200-2026-12-02d/run3, run4: 313.8 / 312.7 tok/s with
     * it, 314.1 / 313.7 with 4 rows per warp everywhere, 315.9 / 317.5
     * without), though the GEMV alone gains 1-4 points */
    g->xt_on = g->xt_opt && kreg_enabled(&K_XT);
    /* opt-in: measured slower in decode (H200, 2026-11-30, Qwen3-8B at 512, one
     * run: fp8 247.6 tok/s with it, 254.3 without; bf16 183.0 / 192.0; with PDL
     * off 228.8 / 242.0): every attention block norms and rotates its heads
     * on its own critical path, and under PDL its blocks, launched early to
     * load K/V, take SM slots from the q/k/v GEMV still running */
    int own = b->ntok <= GEMV_MAX_M; /* every token of its own sequence (else one may read a key another writes) */
    for (int i = 0; own && i < b->ntok; i++)
        for (int j = 0; j < i; j++)
            if (b->seq[j] == b->seq[i]) own = 0;
    g->att_qk = own && g->att_qk_opt && kreg_enabled(&K_ATT_QK);
    /* opt-in: measured slower (H200, 2026-11-30, Qwen3-8B fp8 decode, one run:
     * 264.6 tok/s with it, 267.3 without at 512; 224.0 / 226.6 at 4096) */
    g->att_warm = own && g->att_warm_opt && kreg_enabled(&K_ATT_WARM);
    g->ndec = b->ntok > GEMV_MAX_M && kv && kreg_enabled(&K_ATT_DEC) ? lead_single_rows(g, b, kv->max_seqs) : 0;
    gk_norm_prewait_set(kreg_enabled(&K_NORM_PRE));
    gk_silu_actq_v4_set(kreg_enabled(&K_SILUQ_V4));
    const size_t nt = (size_t)(b->ntok > 0 ? b->ntok : 0);
    const size_t nbt = kv && kv->block_table ? (size_t)kv->max_seqs * (size_t)kv->max_blocks_per_seq : 0;
    const size_t need = (3 * nt + nbt) * sizeof(int32_t);
    g->cur ^= 1;
    const int c = g->cur;
    /* the staging buffer was last used two forwards ago; its copy is long done */
    if (g->ev_used[c] && gpurt_event_sync(g->ev[c])) return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    if (need > g->h_stage_cap[c]) {
        gpurt_host_free(g->h_stage[c]);
        g->h_stage[c] = NULL;
        g->h_stage_cap[c] = 0;
        if (gpurt_host_alloc((void **)&g->h_stage[c], need + need / 2))
            return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
        g->h_stage_cap[c] = need + need / 2;
    }
    int32_t *h = g->h_stage[c];
    if (nt) {
        memcpy(h, b->tokens, nt * 4);
        memcpy(h + nt, b->seq, nt * 4);
        memcpy(h + 2 * nt, b->pos, nt * 4);
    }
    if (nbt) memcpy(h + 3 * nt, kv->block_table, nbt * 4);
    void *db = g->d_batch, *dt = g->d_btab;
    if (ensure_dev(g, &db, &g->d_batch_cap, 3 * nt * 4 + 16) || ensure_dev(g, &dt, &g->d_btab_cap, nbt * 4 + 16)) {
        g->d_batch = db;
        g->d_btab = dt;
        g->err = 0;
        return dl_err("%s", g->errmsg);
    }
    g->d_batch = db;
    g->d_btab = dt;
    if (nt && gpurt_h2d_async(g->d_batch, h, 3 * nt * 4, g->stream)) return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    if (nbt && gpurt_h2d_async(g->d_btab, h + 3 * nt, nbt * 4, g->stream))
        return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    if (gpurt_event_record(g->ev[c], g->stream)) return dl_err("%s: %s", GPU_NAME, gpurt_errstr());
    g->ev_used[c] = 1;
    g->ntok = (int)nt;
    act_stale(g);
    g->mbps = kv ? kv->max_blocks_per_seq : 0;
    int ml = 0;
    for (size_t i = 0; i < nt; i++)
        if (b->pos[i] + 1 > ml) ml = b->pos[i] + 1;
    /* an upper bound, rounded to a power of two (>= the first segment's
     * length, so that rows within one segment write directly) so that
     * recorded graphs (whose attention grid it sizes) serve many steps */
    g->att_seg = gk_attn_seg_get();
    g->maxlen = gk_attn_row_seg(g->att_seg, 0);
    while (g->maxlen < ml) g->maxlen *= 2;
    return 0;
}

static const int32_t *d_tokens(gpu_impl *g) { return g->d_batch; }
static const int32_t *d_seq(gpu_impl *g) { return g->d_batch + g->ntok; }
static const int32_t *d_pos(gpu_impl *g) { return g->d_batch + 2 * g->ntok; }

/* ---------------- ops ---------------- */

/* Where a kernel making a one-row activation of d floats writes its twin
 * (not the buffer its own launch may read), or NULL when none is wanted
 * (switch off, no fp8 weights, d % 16) or the buffer cannot be had. */
static float *twin_out(gpu_impl *g, int64_t d) {
    if (!g->xt_on || !g->fp8w || d % 16) return NULL;
    const int b = g->xt_valid && g->xt_cur == 0 ? 1 : 0;
    if (ensure_dev(g, &g->xt[b], &g->xt_cap[b], gk_gemv_twin_bytes(d))) return NULL;
    g->xt_next = b;
    return (float *)g->xt[b];
}
/* After that launch: the twin of y (d floats) is valid. */
static void twin_made(gpu_impl *g, const float *y, int64_t d) {
    g->xt_valid = 1;
    g->xt_cur = g->xt_next;
    g->xt_of = y;
    g->xt_k = d;
}
/* Before float GEMV launches of M rows of x on k-column weights: x's twin
 * for the M = 1 fp8 kernels when one is valid (and outt, where a gate/up
 * pair's output twin goes, or NULL); returns the twin-read count so far
 * for twin_done. */
static unsigned long long twin_begin(gpu_impl *g, const float *x, int64_t k, int M, float *outt) {
    const int ok = g->xt_valid && g->xt_of == x && g->xt_k == k && M == 1;
    gk_gemv_twin(ok ? (const float *)g->xt[g->xt_cur] : NULL, outt);
    return gk_gemv_twin_launches();
}
/* After them: one cuda.gemv_twin dispatch per launch that read a twin. */
static void twin_done(gpu_impl *g, unsigned long long before) {
    hits_since(g, &K_XT, before, gk_gemv_twin_launches());
    gk_gemv_twin(NULL, NULL);
}

/* Norm (after x += res when res is not NULL) that also makes the int8 codes
 * of y for the W8A8 matmuls reading y next, when the model has W8A8 weights
 * and the row is wide (<backend>.norm_actq). 1 if launched (dispatch of the
 * norm itself is counted by the caller), 0 if the plain kernel must run. */
static int norm_q(gpu_impl *g, float *x, const float *res, float *y, const gpu_weight *gw, const char *label,
                  int rows, int d, float eps, int zc) {
    if (!g->w8a8 || !kreg_enabled(&K_NORMQ)) return 0;
    const int kp = (d + 15) / 16 * 16;
    const size_t xq_b = ((size_t)rows * kp + 255) / 256 * 256;
    if (ensure_dev(g, &g->qc, &g->qc_cap, xq_b + (size_t)rows * 4)) return 0;
    int ok = 0;
    const unsigned long long pdl0 = gk_pdl_launches(), npre0 = gk_norm_prewait_launches();
    if (g->diag & DG_NORM) ok = 1; /* left out (timing diagnostics): the codes are stale */
    else
        GPU_PROF(g->prof, label, ok = gk_norm_q(g->stream, x, res, y, gw->g.data, gw->g.dtype, rows, d, eps, zc,
                                                  (int8_t *)g->qc, (float *)((char *)g->qc + xq_b), kp));
    pdl_count(g, pdl0);
    hits_since(g, &K_NORM_PRE, npre0, gk_norm_prewait_launches());
    if (!ok) return 0;
    (void)use(g, &K_NORMQ);
    g->qc_y = y;
    g->qc_rows = rows;
    g->qc_d = d;
    g->qc_kp = kp;
    g->qc_valid = 1;
    return 1;
}

/* After a matmul wrote y: a cached quantization of y is stale. */
static void qc_written(gpu_impl *g, const float *y) {
    if (g->qc_valid && g->qc_y == y) g->qc_valid = 0;
    if (g->xt_valid && g->xt_of == y) g->xt_valid = 0;
}

static void gpu_embed(dl_backend *be, float *x, const dl_weight *emb) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    const gpu_weight *gw = emb->dev;
    if (!gw) { set_err(g, "embed: weight not uploaded"); return; }
    LAUNCH(g, &K_EMBED, gk_embed(g->stream, x, &gw->g, d_tokens(g), g->ntok));
}

static void gpu_rmsnorm(dl_backend *be, float *y, const float *x, const dl_weight *w, int rows, int d,
                        float eps, int zc) {
    gpu_impl *g = IMPL(be);
    const gpu_weight *gw = w->dev;
    if (!gw) { set_err(g, "rmsnorm: weight not uploaded"); return; }
    act_stale(g);
    if (norm_q(g, (float *)x, NULL, y, gw, K_RMS.name, rows, d, eps, zc)) {
        hit(g, &K_RMS);
        return;
    }
    float *yt = rows == 1 ? twin_out(g, d) : NULL;
    if (yt && gk_norm_twin_ok(d, x, NULL, y, yt)) {
        LAUNCH(g, &K_RMS, gk_norm_twin(g->stream, (float *)x, NULL, y, gw->g.data, gw->g.dtype, d, eps, zc, yt));
        twin_made(g, y, d);
        return;
    }
    LAUNCH(g, &K_RMS, gk_rmsnorm(g->stream, y, x, gw->g.data, gw->g.dtype, rows, d, eps, zc));
}

static int dt_slot(int dt) {
    switch (dt) {
    case DT_F32: return 0;
    case DT_F16: return 1;
    case DT_BF16: return 2;
    case DT_F8E4M3: case DT_F8E5M2: return 3;
    default: return 4; /* int8 weight-only */
    }
}

static int is_w8a8(const dl_weight *w) { return w->dtype == DT_I8 && w->actq == ACT_INT8_TOKEN; }

/* The activation a matmul on w consumes, prepared once per x: for W8A8 the
 * per-token int8 codes + scales (xq/xs in g->ws), for fp8 with a declared
 * activation policy the quantize-dequantized x (in g->ws), else x itself.
 * Returns 0, or -1 (error kept sticky) when nothing may be launched. */
typedef struct {
    const float *x;   /* float activation for the float kernels */
    int8_t *xq;       /* W8A8: [M, kp] codes */
    float *xs;        /* W8A8: [M] scales */
    int kp;
} gpu_act;

static int prep_act(gpu_impl *g, gpu_act *a, const float *x, const dl_weight *w, int M) {
    const int k = (int)w->k;
    memset(a, 0, sizeof *a);
    a->x = x;
    if (is_w8a8(w)) {
        a->kp = (k + 15) / 16 * 16;
        if (g->qc_valid && g->qc_y == x && g->qc_rows == M && g->qc_d == k && g->qc_kp == a->kp) {
            const size_t xq_b = ((size_t)M * a->kp + 255) / 256 * 256;
            a->xq = g->qc; /* quantized by the norm that wrote x */
            a->xs = (float *)((char *)g->qc + xq_b);
            return 0;
        }
        const size_t xq_b = ((size_t)M * a->kp + 255) / 256 * 256;
        if (ensure_dev(g, &g->ws, &g->ws_cap, xq_b + (size_t)M * 4)) return -1;
        a->xq = g->ws;
        a->xs = (float *)((char *)g->ws + xq_b);
        LAUNCH(g, &K_AQ_I8, gk_actq_int8(g->stream, a->xq, a->xs, x, M, k, a->kp));
        return 0;
    }
    if ((w->dtype == DT_F8E4M3 || w->dtype == DT_F8E5M2) && w->actq != ACT_NATIVE) {
        int group = w->actq == ACT_FP8_GROUP ? (w->bk > 0 ? w->bk : 128) : k;
        float st = w->actq == ACT_FP8_STATIC ? w->act_scale : 0.0f;
        if (w->actq == ACT_FP8_STATIC && !(st > 0.0f)) {
            set_err(g, "matmul: static fp8 activation scale missing");
            return -1;
        }
        if (ensure_dev(g, &g->ws, &g->ws_cap, (size_t)M * k * 4)) return -1;
        LAUNCH(g, &K_AQ_F8, gk_actq_fp8(g->stream, g->ws, x, M, k, group, st));
        a->x = g->ws;
    }
    return 0;
}

/* y = a W^T for a prepared activation (one weight). */
static void matmul_prepared(gpu_impl *g, float *y, const gpu_act *a, const dl_weight *w, int M) {
    const gk_weight *gk = &((const gpu_weight *)w->dev)->g;
    g->mm_n = gk->n, g->mm_k = gk->k;
    if (is_w8a8(w)) {
        if (M <= GEMV_BATCH_M && gk_int8_gemv_ok(gk) && use(g, &K_I8_GEMV))
            for (int r0 = 0; r0 < M; r0 += GEMV_MAX_M) {
                const int m = M - r0 < GEMV_MAX_M ? M - r0 : GEMV_MAX_M;
                TIMED(g, &K_I8_GEMV, gk_int8_gemv(g->stream, y + (size_t)r0 * gk->n, a->xq + (size_t)r0 * a->kp,
                                                  a->xs + r0, gk, m, a->kp));
            }
        else if (gk_int8_gemm_ok(gk) && use(g, &K_I8_GEMM))
            TIMED(g, &K_I8_GEMM, gk_int8_gemm(g->stream, y, a->xq, a->xs, gk, M, a->kp));
        else
            LAUNCH(g, &K_I8_REF, gk_int8_ref(g->stream, y, a->xq, a->xs, gk, M, a->kp));
        return;
    }
    const float *x = a->x;
    const int s = dt_slot(w->dtype);
    /* the fast kernels read x rows as 16-byte vectors */
    const int xal = ((uintptr_t)x & 15) == 0 && (M <= GEMV_MAX_M || (w->k & 3) == 0);
    if (xal && M <= GEMV_BATCH_M && gk_gemv_ok(gk)) {
        const int dot2 = w->dtype == DT_F8E4M3 && g->dot2; /* e5m2 products overflow fp16 */
        kreg_kernel *kk = dot2 ? &K_DOT2 : &K_GEMV[s];
        if (use(g, kk)) {
            const unsigned long long x0 = xperm_begin(g, dot2 ? 0 : M, gk->k, w->dtype);
            const unsigned long long t0 = twin_begin(g, x, gk->k, dot2 ? 0 : M, NULL);
            for (int r0 = 0; r0 < M; r0 += GEMV_MAX_M) {
                const int m = M - r0 < GEMV_MAX_M ? M - r0 : GEMV_MAX_M;
                float *yc = y + (size_t)r0 * gk->n;
                const float *xc = x + (size_t)r0 * gk->k;
                if (dot2) TIMED(g, kk, gk_gemv_fp8_dot2(g->stream, yc, xc, gk, m));
                else TIMED(g, kk, gk_gemv(g->stream, yc, xc, gk, m));
            }
            twin_done(g, t0);
            xperm_done(g, x0);
            return;
        }
    }
    if (xal && gk_gemm_ok(gk) && use(g, &K_GEMM[s])) {
        TIMED(g, &K_GEMM[s], gk_gemm(g->stream, y, x, gk, M));
        return;
    }
    LAUNCH(g, &K_REF, gk_matmul_ref(g->stream, y, x, gk, M));
}

static void gpu_matmul(dl_backend *be, float *y, const float *x, const dl_weight *w, int M) {
    gpu_impl *g = IMPL(be);
    if (!w->dev) { set_err(g, "matmul: weight not uploaded"); return; }
    if (M <= 0) return;
    gpu_act a;
    if (prep_act(g, &a, x, w, M)) return;
    matmul_prepared(g, y, &a, w, M);
    qc_written(g, y);
}

/* Weights that one activation preparation and (for M <= 8) one multi-weight
 * GEMV launch can serve: same format, scales, activation policy and k. */
static int same_format(const dl_weight *a, const dl_weight *b) {
    return a->dtype == b->dtype && a->scale_kind == b->scale_kind && a->actq == b->actq && a->k == b->k &&
           a->bn == b->bn && a->bk == b->bk && a->act_scale == b->act_scale;
}

/* ys[i][M, ws[i]->n] = x ws[i]^T, i < n: the activation is prepared once and,
 * for decode-sized M, all weights go through one multi-weight GEMV launch
 * (bitwise equal to separate launches; switch: <backend>.matmul.multi). */
static void gpu_matmul_n(dl_backend *be, float *const *ys, const float *x, const dl_weight *const *ws, int n,
                         int M) {
    gpu_impl *g = IMPL(be);
    if (M <= 0 || n <= 0) return;
    int same = n <= GK_MULTI_MAX;
    for (int i = 0; i < n; i++) {
        if (!ws[i]->dev) { set_err(g, "matmul: weight not uploaded"); return; }
        if (!same_format(ws[0], ws[i])) same = 0;
    }
    if (!same) {
        for (int i = 0; i < n; i++) gpu_matmul(be, ys[i], x, ws[i], M);
        return;
    }
    gpu_act a;
    if (prep_act(g, &a, x, ws[0], M)) return;
    for (int i = 0; i < n; i++) qc_written(g, ys[i]); /* launches below are ordered after the reads */
    if (n > 1 && M <= GEMV_BATCH_M && !(ws[0]->dtype == DT_F8E4M3 && g->dot2)) {
        gk_multi mw = {.count = n};
        for (int i = 0; i < n; i++) {
            mw.w[i] = ((const gpu_weight *)ws[i]->dev)->g;
            mw.y[i] = ys[i];
        }
        const int64_t K = ws[0]->k;
        g->mm_n = 0, g->mm_k = K;
        for (int i = 0; i < n; i++) g->mm_n += ws[i]->n;
        if (is_w8a8(ws[0])) {
            if (gk_int8_gemv_multi_ok(&mw) && kreg_enabled(&K_I8_GEMV) && use(g, &K_I8_MULTI)) {
                for (int r0 = 0; r0 < M; r0 += GEMV_MAX_M) {
                    const int m = M - r0 < GEMV_MAX_M ? M - r0 : GEMV_MAX_M;
                    for (int i = 0; i < n; i++) mw.y[i] = ys[i] + (size_t)r0 * mw.w[i].n;
                    TIMED(g, &K_I8_MULTI, gk_int8_gemv_multi(g->stream, &mw, a.xq + (size_t)r0 * a.kp, a.xs + r0,
                                                             m, a.kp));
                }
                return;
            }
        } else if (((uintptr_t)a.x & 15) == 0 && (M <= GEMV_MAX_M || (K & 3) == 0) && gk_gemv_multi_ok(&mw) &&
                   kreg_enabled(&K_GEMV[dt_slot(ws[0]->dtype)]) && use(g, &K_MULTI)) {
            const unsigned long long x0 = xperm_begin(g, M, K, ws[0]->dtype);
            const unsigned long long t0 = twin_begin(g, a.x, K, M, NULL);
            for (int r0 = 0; r0 < M; r0 += GEMV_MAX_M) {
                const int m = M - r0 < GEMV_MAX_M ? M - r0 : GEMV_MAX_M;
                for (int i = 0; i < n; i++) mw.y[i] = ys[i] + (size_t)r0 * mw.w[i].n;
                TIMED(g, &K_MULTI, gk_gemv_multi(g->stream, &mw, a.x + (size_t)r0 * K, m));
            }
            twin_done(g, t0);
            xperm_done(g, x0);
            return;
        }
    }
    for (int i = 0; i < n; i++) matmul_prepared(g, ys[i], &a, ws[i], M);
}

static void gpu_rope(dl_backend *be, float *x, int nh, int hd, const dl_rope *rope) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    if (rope->rot > 512 || rope->rot > hd || rope->rot % 2) { set_err(g, "rope: rot must be even, <= head_dim and <= 512"); return; }
    LAUNCH(g, &K_ROPE, gk_rope(g->stream, x, g->ntok, nh, hd, rope->rot, rope->inv_freq, d_pos(g)));
}

static void gpu_kv_write(dl_backend *be, dl_kvcache *kv, int layer, const float *k, const float *v) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    if (kv->dtype != DT_F16 && kv->dtype != DT_F32) { set_err(g, "kv_write: KV dtype must be F16 or F32"); return; }
    LAUNCH(g, &K_KVW,
           gk_kv_write(g->stream, kv->k[layer], kv->v[layer], kv->dtype == DT_F16, k, v, g->ntok, kv->n_kv_heads,
                       kv->head_dim, kv->block_size, kv->max_blocks_per_seq, d_seq(g), d_pos(g), g->d_btab));
}

/* The split attention's workspace g->wsa, >= need bytes; zeroed whenever
 * it is (re)allocated (its arrival counters must start at zero, and every
 * launch leaves them so: gk_attn_split_ws). */
static int ensure_att_ws(gpu_impl *g, size_t need) {
    if (need <= g->wsa_cap && g->wsa) return 0;
    if (ensure_dev(g, &g->wsa, &g->wsa_cap, need)) return -1;
    if (gpurt_memset_async(g->wsa, 0, g->wsa_cap, g->stream)) {
        set_err(g, gpurt_errstr());
        return -1;
    }
    return 0;
}

/* The attention launch description of layer `layer` for the current batch. */
static gk_attn att_desc(gpu_impl *g, const dl_kvcache *kv, int layer, int nh, float scale) {
    return (gk_attn){.ntok = g->ntok, .nh = nh, .nkv = kv->n_kv_heads, .hd = kv->head_dim, .bs = kv->block_size,
                     .mbps = kv->max_blocks_per_seq, .maxlen = g->maxlen, .kv_f16 = kv->dtype == DT_F16,
                     .scale = scale, .kc = kv->k[layer], .vc = kv->v[layer], .seq = d_seq(g), .pos = d_pos(g),
                     .btab = g->d_btab, .fuse = g->fuse_att, .cwide = g->att_cw,
                     .segl = g->att_seg,
                     .crt = g->att_crt && g->att_cw && gk_attn_nseg(g->att_seg, g->maxlen) <= GK_ATTN_RT_MAXSEG,
                     .ipre = g->att_ipre, .gbrule = g->att_gbr,
                     .diag_nocombine = (g->diag & DG_COMBINE) != 0, .clu = g->att_cl, .cllate = g->att_cllate,
                     .diag_empty = (g->diag & DG_ATTNWORK) != 0};
}

/* The split-KV decode launch of *a (workspace grown first), counted:
 * with the q/k prologue qk (gk_attn_split_qk, cuda.attention.qk_rope) or
 * without it (qk NULL; then the opt-in early K/V loads, cuda.attention.warm). */
static void att_split(gpu_impl *g, float *out, const float *q, gk_attn *a, const gk_attn_qk *qk) {
    const size_t ws = gk_attn_split_ws(a); /* 0: one segment, no combine */
    if (ws && ensure_att_ws(g, ws)) return;
    (void)use(g, &K_ATT_SPLIT);
    int fused = 0;
    if (qk) {
        TIMED(g, &K_ATT_QK, fused = gk_attn_split_qk(g->stream, out, q, a, qk, g->wsa));
    } else if (!g->att_warm && !a->fuse && !a->clu && gk_attn_kl_ok(a) && use(g, &K_ATT_KL)) {
        /* a lane per key (long grids; the opt-in forms keep the split kernel) */
        TIMED(g, &K_ATT_KL, (void)gk_attn_kl(g->stream, out, q, a, g->wsa));
    } else {
        a->warm = g->att_warm && use(g, &K_ATT_WARM);
        if (!a->warm && a->ipre) (void)use(g, &K_ATT_IPRE); /* else the warm loads come first anyway */
        TIMED(g, &K_ATT_SPLIT, fused = gk_attn_split(g->stream, out, q, a, g->wsa));
    }
    if (fused == 1) (void)use(g, &K_ATT_FUSE);
    else if (fused == 2) (void)use(g, &K_ATT_CL);
    else if (ws && a->cwide) { /* several segments: the combine kernel ran */
        (void)use(g, &K_ATT_CW);
        if (a->crt) (void)use(g, &K_ATT_CRT);
    }
}

/* *a restricted to its rows r0 .. r0 + n - 1 (q and out are offset by the caller). */
static gk_attn att_rows(gk_attn a, int r0, int n) {
    a.ntok = n;
    a.seq += r0;
    a.pos += r0;
    return a;
}

/* Workspace bound of one decode-rows split launch, and a smaller row count
 * per launch set by tests (gpu_backend_dec_rows_set; 0: the bound only). */
#define ATT_DEC_WS_MAX ((size_t)64 << 20)
static int g_dec_rows;
void gpu_backend_dec_rows_set(int n) { g_dec_rows = n > 0 ? n : 0; }

/* The split-KV attention of rows 0 .. n - 1 of *a (q, out [n * nh][hd]), in
 * launches of as many rows as keep the partials within ATT_DEC_WS_MAX
 * (at least one), each counted as cuda.attention.decode_rows. */
static void att_split_rows(gpu_impl *g, float *out, const float *q, const gk_attn *a, int n) {
    const gk_attn one = att_rows(*a, 0, 1);
    const size_t cnt = (size_t)GK_ATTN_NCNT * sizeof(unsigned int), ws1 = gk_attn_split_ws(&one);
    size_t r = (size_t)n;
    if (ws1 > cnt) r = (ATT_DEC_WS_MAX - cnt) / (ws1 - cnt); /* ws1 = 0: one segment, no partials */
    if (r < 1) r = 1;
    if (g_dec_rows && r > (size_t)g_dec_rows) r = (size_t)g_dec_rows;
    const size_t qw = (size_t)a->nh * a->hd;
    for (int r0 = 0; r0 < n && !g->err; r0 += (int)r) {
        gk_attn s = att_rows(*a, r0, n - r0 < (int)r ? n - r0 : (int)r);
        hit(g, &K_ATT_DEC);
        att_split(g, out + (size_t)r0 * qw, q + (size_t)r0 * qw, &s, NULL);
    }
}

/* out[ntok, nh * hd] = causal GQA attention of q over the cache positions
 * [0, pos] of each row's sequence (see k_attention.cu). ntok <= 8 and K/V
 * rows of 16-byte vectors: split-KV decode (workspace g->wsa grown to
 * gk_attn_split_ws bytes, which depends on g->maxlen). Larger batches: their
 * g->ndec leading rows that are each the only token of their sequence (a
 * server step's decodes) also take the split kernel, in launches of
 * bounded workspace (att_split_rows): in the prompt kernels a block of 64
 * query vectors walks every key of each of its rows' sequences in turn,
 * so decodes of 16 sequences in one block cost 16 full passes. The other
 * rows: register tiles (k_attn_pf.cu) where the shape fits them, else
 * tiled. */
static void gpu_attention(dl_backend *be, float *out, const float *q, const dl_kvcache *kv, int layer, int nh,
                          float scale) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    if (!gk_attn_ok(kv->head_dim) || nh % kv->n_kv_heads) {
        set_err(g, "attention: head_dim must be even and <= 256, heads a multiple of kv heads");
        return;
    }
    gk_attn a = att_desc(g, kv, layer, nh, scale);
    /* decode-sized batches: split-KV over fixed segments of g->att_seg positions
     * (grid and workspace sized by g->maxlen, an upper bound); K/V rows that
     * are not 16-byte vectors, and larger batches: tiled */
    if (g->ntok <= GEMV_MAX_M && gk_attn_split_ok(&a) && kreg_enabled(&K_ATT_SPLIT)) {
        att_split(g, out, q, &a, NULL);
        return;
    }
    if (g->ndec > 0 && gk_attn_split_ok(&a) && kreg_enabled(&K_ATT_SPLIT)) {
        att_split_rows(g, out, q, &a, g->ndec);
        if (g->ndec == g->ntok) return;
        const size_t off = (size_t)g->ndec * nh * kv->head_dim;
        a = att_rows(a, g->ndec, g->ntok - g->ndec);
        q += off;
        out += off;
    }
    if (gk_attn_pf_ok(&a, q, out) && use(g, &K_ATT_PF)) {
        TIMED(g, &K_ATT_PF, gk_attn_pf(g->stream, out, q, &a));
        return;
    }
    LAUNCH(g, &K_ATT_TILED, gk_attn_tiled(g->stream, out, q, &a));
}

/* out = SiLU(gate) * up over the batch's rows. When the model has W8A8
 * weights (the down projection reads out next) and n splits into the
 * batch's rows, one kernel also makes out's int8 codes (<backend>.silu_actq),
 * cached for that matmul as norm_q does. */
static void gpu_silu_mul(dl_backend *be, float *out, const float *gate, const float *up, size_t n) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    const int rows = g->ntok;
    if (g->w8a8 && rows > 0 && n % (size_t)rows == 0 && n / (size_t)rows <= INT32_MAX / 2 && kreg_enabled(&K_SILUQ)) {
        const int d = (int)(n / (size_t)rows), kp = (d + 15) / 16 * 16;
        const size_t xq_b = ((size_t)rows * kp + 255) / 256 * 256;
        if (!ensure_dev(g, &g->qc, &g->qc_cap, xq_b + (size_t)rows * 4)) {
            hit(g, &K_SILU);
            (void)use(g, &K_SILUQ);
            TIMED(g, &K_SILUQ, gk_silu_actq_int8(g->stream, out, (int8_t *)g->qc, (float *)((char *)g->qc + xq_b),
                                                 gate, up, rows, d, kp));
            g->qc_y = out;
            g->qc_rows = rows;
            g->qc_d = d;
            g->qc_kp = kp;
            g->qc_valid = 1;
            return;
        }
    }
    LAUNCH(g, &K_SILU, gk_silu_mul(g->stream, out, gate, up, n));
}

/* out[M, n] = SiLU(x gate^T) * (x up^T). Decode-sized M with float weights
 * the GEMV takes: one launch whose epilogue makes the product (switch
 * <backend>.gate_up_silu; bitwise equal to the two steps); else
 * matmul_n into gate_buf / up_buf, then silu_mul (W8A8 models: with the
 * int8 codes of out for the down projection). */
static void gpu_gate_up_silu(dl_backend *be, float *out, float *gate_buf, float *up_buf, const float *x,
                             const dl_weight *gate, const dl_weight *up, int M) {
    gpu_impl *g = IMPL(be);
    if (M <= 0) return;
    if (!gate->dev || !up->dev) {
        set_err(g, "matmul: weight not uploaded");
        return;
    }
    if (M <= GEMV_BATCH_M && !is_w8a8(gate) && same_format(gate, up) && !(gate->dtype == DT_F8E4M3 && g->dot2) &&
        kreg_enabled(&K_GEMV[dt_slot(gate->dtype)]) && kreg_enabled(&K_MULTI) && g->gu_silu) {
        gk_multi mw = {.count = 2, .y = {gate_buf, up_buf}, .silu = out};
        mw.w[0] = ((const gpu_weight *)gate->dev)->g;
        mw.w[1] = ((const gpu_weight *)up->dev)->g;
        const int64_t K = gate->k, n = gate->n;
        g->mm_n = 2 * n, g->mm_k = K;
        gpu_act a;
        if (gk_gemv_silu_ok(&mw, M < GEMV_MAX_M ? M : GEMV_MAX_M) && (M <= GEMV_MAX_M || (K & 3) == 0)) {
            if (prep_act(g, &a, x, gate, M)) return;
            if (((uintptr_t)a.x & 15) == 0 && use(g, &K_GU_SILU)) {
                /* x's twin (if valid) is read, out's written beside out (M = 1) */
                float *ot = M == 1 ? twin_out(g, n) : NULL;
                const unsigned long long t0 = twin_begin(g, a.x, K, M, ot);
                act_stale(g);
                const unsigned long long x0 = xperm_begin(g, M, K, gate->dtype);
                for (int r0 = 0; r0 < M; r0 += GEMV_MAX_M) { /* GEMV_MAX_M rows per launch, as matmul_n */
                    const int m = M - r0 < GEMV_MAX_M ? M - r0 : GEMV_MAX_M;
                    mw.y[0] = gate_buf + (size_t)r0 * n;
                    mw.y[1] = up_buf + (size_t)r0 * n;
                    mw.silu = out + (size_t)r0 * n;
                    TIMED(g, &K_GU_SILU, gk_gemv_silu(g->stream, &mw, a.x + (size_t)r0 * K, m));
                }
                xperm_done(g, x0);
                twin_done(g, t0);
                if (ot) twin_made(g, out, n);
                return;
            }
        }
    }
    float *const ys[2] = {gate_buf, up_buf};
    const dl_weight *const ws[2] = {gate, up};
    gpu_matmul_n(be, ys, x, ws, 2, M);
    gpu_silu_mul(be, out, gate_buf, up_buf, (size_t)M * (size_t)gate->n);
}

static void gpu_add(dl_backend *be, float *y, const float *x, size_t n) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    LAUNCH(g, &K_ADD, gk_add(g->stream, y, x, n));
}

static void gpu_gather_rows(dl_backend *be, float *dst, const float *src, const int32_t *idx, int n, int d) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    LAUNCH(g, &K_GATHER, gk_gather_rows(g->stream, dst, src, idx, n, d));
}

static void gpu_sigmoid_mul(dl_backend *be, float *y, const float *gate, size_t n) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    LAUNCH(g, &K_SIGM, gk_sigmoid_mul(g->stream, y, gate, n));
}

static void gpu_copy2d(dl_backend *be, float *dst, int dst_ld, const float *src, int src_ld, int rows, int cols) {
    gpu_impl *g = IMPL(be);
    act_stale(g);
    LAUNCH(g, &K_COPY2D, gk_copy2d(g->stream, dst, dst_ld, src, src_ld, rows, cols));
}

/* x += res; y = rmsnorm(x) in one launch (switch back: <backend>.add_rmsnorm). */
static void gpu_add_rmsnorm(dl_backend *be, float *x, const float *res, float *y, const dl_weight *w, int rows,
                            int d, float eps, int zc) {
    gpu_impl *g = IMPL(be);
    const gpu_weight *gw = w->dev;
    if (!gw) { set_err(g, "rmsnorm: weight not uploaded"); return; }
    act_stale(g);
    if (!use(g, &K_ADD_RMS)) {
        gpu_add(be, x, res, (size_t)rows * d);
        gpu_rmsnorm(be, y, x, w, rows, d, eps, zc);
        return;
    }
    if (norm_q(g, x, res, y, gw, K_ADD_RMS.name, rows, d, eps, zc)) return;
    float *yt = rows == 1 ? twin_out(g, d) : NULL;
    if (yt && gk_norm_twin_ok(d, x, res, y, yt)) {
        TIMED(g, &K_ADD_RMS, gk_norm_twin(g->stream, x, res, y, gw->g.data, gw->g.dtype, d, eps, zc, yt));
        twin_made(g, y, d);
        return;
    }
    TIMED(g, &K_ADD_RMS, gk_add_rmsnorm(g->stream, x, res, y, gw->g.data, gw->g.dtype, rows, d, eps, zc));
}

/* 1 if one kernel can apply the q/k norms qn / kn (both or neither, uploaded,
 * one dtype), RoPE and the KV write for this cache and rope. */
static int qk_fusable(const dl_weight *qn, const dl_weight *kn, const dl_kvcache *kv, const dl_rope *rope) {
    const gpu_weight *qw = qn ? qn->dev : NULL, *kw = kn ? kn->dev : NULL;
    const int hd = kv->head_dim;
    return (!qn || qw) && (!kn || kw) && !qn == !kn && (!qw || qw->g.dtype == kw->g.dtype) && hd <= 256 &&
           rope->rot <= hd && rope->rot % 2 == 0 && (kv->dtype == DT_F16 || kv->dtype == DT_F32);
}

/* q/k RMSNorm (optional) + RoPE + KV write in one launch (switch back:
 * <backend>.qk_rope_kv issues the separate kernels). */
static void gpu_qk_rope_kv(dl_backend *be, dl_kvcache *kv, int layer, float *q, float *k, const float *v, int nh,
                           const dl_weight *qn, const dl_weight *kn, float eps, int zc, const dl_rope *rope) {
    gpu_impl *g = IMPL(be);
    const int hd = kv->head_dim, nkv = kv->n_kv_heads;
    const gpu_weight *qw = qn ? qn->dev : NULL, *kw = kn ? kn->dev : NULL;
    act_stale(g);
    if (!qk_fusable(qn, kn, kv, rope) || !use(g, &K_QKROPE)) {
        if (qn) gpu_rmsnorm(be, q, q, qn, g->ntok * nh, hd, eps, zc);
        if (kn) gpu_rmsnorm(be, k, k, kn, g->ntok * nkv, hd, eps, zc);
        gpu_rope(be, q, nh, hd, rope);
        gpu_rope(be, k, nkv, hd, rope);
        gpu_kv_write(be, kv, layer, k, v);
        return;
    }
    TIMED(g, &K_QKROPE,
          gk_qk_rope_kv(g->stream, q, k, v, g->ntok, nh, nkv, hd, qw ? qw->g.data : NULL, kw ? kw->g.data : NULL,
                        qw ? qw->g.dtype : 0, eps, zc, rope->rot, rope->inv_freq, kv->k[layer], kv->v[layer],
                        kv->dtype == DT_F16, kv->block_size, kv->max_blocks_per_seq, d_seq(g), d_pos(g),
                        g->d_btab));
}

/* qk_rope_kv then attention. Batches whose tokens are each of a different
 * sequence (g->att_qk) on shapes the split kernel takes with one head chunk
 * per KV head: one launch, the norm + RoPE + KV write in the decode
 * attention's prologue (cuda.attention.qk_rope; same out and cache bits,
 * q and k left as the matmul wrote them). Otherwise the two ops. */
static void gpu_qk_rope_attention(dl_backend *be, float *out, dl_kvcache *kv, int layer, float *q, float *k,
                                  const float *v, int nh, const dl_weight *qn, const dl_weight *kn, float eps, int zc,
                                  const dl_rope *rope, float scale) {
    gpu_impl *g = IMPL(be);
    const int hd = kv->head_dim, nkv = kv->n_kv_heads;
    const gpu_weight *qw = qn ? qn->dev : NULL, *kw = kn ? kn->dev : NULL;
    act_stale(g);
    if (g->att_qk && gk_attn_ok(hd) && nkv > 0 && nh % nkv == 0 && qk_fusable(qn, kn, kv, rope) &&
        kreg_enabled(&K_ATT_SPLIT)) {
        gk_attn a = att_desc(g, kv, layer, nh, scale);
        const gk_attn_qk x = {.k = k, .v = v, .qw = qw ? qw->g.data : NULL, .kw = kw ? kw->g.data : NULL,
                              .wdt = qw ? qw->g.dtype : 0, .zc = zc, .rot = rope->rot, .eps = eps,
                              .inv_freq = rope->inv_freq};
        if (gk_attn_split_qk_ok(&a, &x) && use(g, &K_ATT_QK)) {
            att_split(g, out, q, &a, &x);
            return;
        }
    }
    gpu_qk_rope_kv(be, kv, layer, q, k, v, nh, qn, kn, eps, zc, rope);
    gpu_attention(be, out, q, kv, layer, nh, scale);
}

/* Graph record/replay of a forward (see gpu_graph.h); never while profiling. */
static int gpu_graph_begin(dl_backend *be, uint64_t key) {
    gpu_impl *g = IMPL(be);
    if (g->prof || g->err) return GG_EAGER;
    /* the attention grid depends on the batch's length bucket */
    key ^= (uint64_t)g->maxlen * 0x9E3779B97F4A7C15ull;
    /* every on/off choice a recording depends on, one bit each (distinct
     * bits: two flags can never cancel as equal multipliers would) */
    const int flag[] = {
        g->pdl,      /* PDL edges are part of a recording */
        g->ring,     /* so is the GEMV kernel chosen */
        g->fold,     /* and its widening */
        g->hf,       /* and its arithmetic */
        g->rpf,      /* and its loop */
        g->i8ks,     /* and the W8A8 grid */
        g->i8xp,     /* and the W8A8 loop */
        g->occ,      /* and the GEMVs' shared memory */
        g->l2ef,     /* and the weights' L2 policy */
        g->fuse_att, /* and the launches the fusions leave out */
        g->att_cw, g->att_ipre, g->att_crt, g->att_cl, g->att_cllate, g->att_gbr, g->gu_silu, g->att_qk,
        g->att_warm, kreg_enabled(&K_NORM_PRE), kreg_enabled(&K_SILUQ_V4),
        kreg_enabled(&K_ATT_KL), /* the attention kernel chosen */
        kreg_enabled(&K_XPERM),  /* the GEMVs' x: permuted or not */
        g->xt_on,                /* and at M = 1: its twin */
    };
    uint64_t fb = 0;
    for (size_t i = 0; i < sizeof flag / sizeof flag[0]; i++) fb |= (uint64_t)(flag[i] != 0) << i;
    key ^= (fb + 1) * 0xC2B2AE3D27D4EB4Full;
    key ^= (uint64_t)(g->att_seg + 1) * 0x2127599BF4325C37ull;
    key ^= (uint64_t)(g->att_gb + 1) * 0x9E6C63D0676A9A99ull;
    key ^= (uint64_t)(g->ndec + 1) * 0x3C79AC492BA7B653ull; /* the rows the twin takes */
    key ^= (uint64_t)(g_dec_rows + 1) * 0x1C69B3F74AC4AE35ull;
    return gpu_graphs_begin(g->graphs, key, g->stream);
}

static int gpu_graph_end(dl_backend *be) { return gpu_graphs_end(IMPL(be)->graphs, IMPL(be)->stream); }

/* ---------------- create ---------------- */

dl_backend *gpu_backend_create(const char *name) {
    if (!name || strcmp(name, GPU_NAME) != 0) {
        dl_err("backend '%s' not compiled in: this build has the %s backend", name ? name : "?", GPU_NAME);
        return NULL;
    }
    int ndev = gpurt_device_count();
    if (ndev <= 0) {
        dl_err("%s: no GPU device found (%s runtime reports none)", GPU_NAME, GPU_NAME);
        return NULL;
    }
    int dev = 0;
    const char *e = getenv("DOTLM_GPU_DEVICE");
    if (e) dev = atoi(e);
    if (dev < 0 || dev >= ndev) {
        dl_err("%s: DOTLM_GPU_DEVICE=%d but only %d device(s)", GPU_NAME, dev, ndev);
        return NULL;
    }
    dl_backend *be = calloc(1, sizeof *be);
    gpu_impl *g = calloc(1, sizeof *g);
    if (!be || !g) {
        free(be);
        free(g);
        dl_err("%s: out of host memory", GPU_NAME);
        return NULL;
    }
    be->impl = g;
    if (gpurt_open(dev, g->devname, sizeof g->devname) || gpurt_stream_create(&g->stream) ||
        gpurt_event_create(&g->ev[0]) || gpurt_event_create(&g->ev[1])) {
        dl_err("%s: init of device %d failed: %s", GPU_NAME, dev, gpurt_errstr());
        gpu_destroy(be);
        return NULL;
    }
    g->prof = gpu_prof_create(g->stream);
    g->graphs = gpu_graphs_create();
    if (!g->graphs) {
        dl_err("%s: out of host memory", GPU_NAME);
        gpu_destroy(be);
        return NULL;
    }
    g->pdl_ok = gpurt_pdl_supported();
    g->pdl = g->pdl_ok && !g->prof && kreg_enabled(&K_PDL);
    gk_pdl_set(g->pdl);
    gemv_switches(g);
    const char *d2 = getenv("DOTLM_GPU_FP8_DOT2");
    g->dot2 = d2 && atoi(d2) != 0;
    const char *af = getenv("DOTLM_GPU_ATTN_FUSE");
    g->att_fuse_opt = af && atoi(af) != 0;
    const char *xt = getenv("DOTLM_GPU_GEMV_TWIN");
    g->xt_opt = xt && atoi(xt) != 0;
    const char *acl = getenv("DOTLM_GPU_ATTN_CL");
    g->att_cl_opt = acl && atoi(acl) != 0;
    const char *ct = getenv("DOTLM_GPU_ATTN_CL_TRIG");
    g->att_cllate = ct && !strcmp(ct, "late");
    const char *aq = getenv("DOTLM_GPU_ATTN_QK"), *aw = getenv("DOTLM_GPU_ATTN_WARM");
    g->att_qk_opt = aq && atoi(aq) != 0;
    g->att_warm_opt = aw && atoi(aw) != 0;
    const char *agb = getenv("DOTLM_GPU_ATTN_GB");
    if (agb) gk_attn_gb_set(atoi(agb));
    const char *asg = getenv("DOTLM_GPU_ATTN_SEG");
    if (asg && *asg) { /* 32, 64, or pos: by the row's position (the default) */
        /* the whole value must be the number: "32x" or "0" are refused */
        const int n = !strcmp(asg, "pos") ? GK_ATTN_SEG_BYPOS : !strcmp(asg, "32") ? 32 : !strcmp(asg, "64") ? 64 : -1;
        if (!gk_attn_seg_ok(n)) {
            dl_err("DOTLM_GPU_ATTN_SEG=%s: the split attention takes segments of 32 or 64 positions, or 'pos' (32 "
                   "below position %d, 64 from there)", asg, GK_ATTN_SEG_LONG);
            gpu_destroy(be);
            return NULL;
        }
        gk_attn_seg_set(n);
    }
    const long dg = diag_parse(getenv("DOTLM_GPU_DIAG_SKIP"), g);
    if (dg < 0) {
        gpu_destroy(be);
        return NULL;
    }
    g->diag = (unsigned)dg;
    if (g->diag || g->ndshape)
        fprintf(stderr, "dotlm: DOTLM_GPU_DIAG_SKIP=%s: those launches are left out, so every output is wrong "
                        "(timing diagnostics only)\n", getenv("DOTLM_GPU_DIAG_SKIP"));
    be->name = GPU_NAME;
    be->alloc = gpu_alloc;
    be->free = gpu_free;
    be->upload = gpu_upload;
    be->release = gpu_release;
    be->to_host = gpu_to_host;
    be->from_host = gpu_from_host;
    be->host_alloc = gpu_host_alloc;
    be->host_free = gpu_host_free;
    be->sync = gpu_sync;
    be->destroy = gpu_destroy;
    be->begin = gpu_begin;
    be->embed = gpu_embed;
    be->rmsnorm = gpu_rmsnorm;
    be->matmul = gpu_matmul;
    be->rope = gpu_rope;
    be->kv_write = gpu_kv_write;
    be->attention = gpu_attention;
    be->silu_mul = gpu_silu_mul;
    be->add = gpu_add;
    be->gather_rows = gpu_gather_rows;
    be->sigmoid_mul = gpu_sigmoid_mul;
    be->copy2d = gpu_copy2d;
    be->matmul_n = gpu_matmul_n;
    be->gate_up_silu = gpu_gate_up_silu;
    be->add_rmsnorm = gpu_add_rmsnorm;
    be->qk_rope_kv = gpu_qk_rope_kv;
    be->qk_rope_attention = gpu_qk_rope_attention;
    be->graph_begin = gpu_graph_begin;
    be->graph_end = gpu_graph_end;
    /* Gated DeltaNet ops (k_gdn.cu); wraps begin/sync/destroy, so last. */
    gpu_gdn_install(be);
    return be;
}

const gk_weight *gpu_weight_view(const dl_weight *w) { return w->dev ? &((const gpu_weight *)w->dev)->g : NULL; }

void *gpu_backend_stream(dl_backend *be) { return IMPL(be)->stream; }

void gpu_backend_op(dl_backend *be) { act_stale(IMPL(be)); }

gpu_prof *gpu_backend_prof(dl_backend *be) { return IMPL(be)->prof; }

void gpu_backend_pdl_count(dl_backend *be, unsigned long long before) { pdl_count(IMPL(be), before); }
