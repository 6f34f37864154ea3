/* Gated DeltaNet ops of the GPU backend: the C side (op table slots, checks,
 * kernel counters, the per-forward grouping of the batch by sequence slot).
 *
 * The GPU backend's own state is private to gpu_backend.c, so this file
 * keeps a small side record per backend (found by the dl_backend pointer)
 * and wraps three table entries: begin() also uploads the batch grouping
 * the kernels need (through double-buffered pinned staging, like the
 * backend's own batch arrays, so the host never waits on its own copy);
 * sync() also reports errors of these void ops; destroy() frees the record.
 * Kernels are in k_gdn.cu. */
#include "backend/gpu/gpu_gdn.h"
#include "backend/gpu/gpu_prof.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu/gpu_backend.h"
#include "core/err.h"
#include "core/kreg.h"
#include "core/log.h"

#ifdef DOTLM_HIP
#define GDN_GPU "hip"
#else
#define GDN_GPU "cuda"
#endif
#define KN(s) GDN_GPU "." s

static kreg_kernel K_REC = KREG_KERNEL(KN("gdn.recurrent"),
                                       "gated delta rule, token by token, state in registers per sequence run");
static kreg_kernel K_CHUNK = KREG_KERNEL(KN("gdn.chunked"),
                                         "gated delta rule, chunked (WY/UT) form for sequences with a long run");
static kreg_kernel K_CONV = KREG_KERNEL(KN("conv1d"), "depthwise causal conv1d + SiLU with slot state");
static kreg_kernel K_L2 = KREG_KERNEL(KN("l2norm"), "row l2 normalisation, warp per row");
static kreg_kernel K_GATES = KREG_KERNEL(KN("gdn_gates"), "Gated DeltaNet beta / g gates");
static kreg_kernel K_GRMS = KREG_KERNEL(KN("gated_rmsnorm"), "RMSNorm times silu(z), warp per row");
static kreg_kernel K_COPY = KREG_KERNEL(KN("gdn.copy2d"), "strided 2-D copy (installed when the table had none)");
static kreg_kernel K_SIGM = KREG_KERNEL(KN("gdn.sigmoid_mul"), "y *= sigmoid(gate) (installed when the table had none)");

/* Side record of one GPU backend. */
typedef struct gdn_side {
    dl_backend *be;
    struct gdn_side *next;
    int (*begin)(dl_backend *, const dl_batch *, const dl_kvcache *);
    int (*sync)(dl_backend *);
    void (*destroy)(dl_backend *);
    void *stream;
    int err; /* sticky error of a void op, reported by sync() */
    char errmsg[256];
    int chunk_min; /* runs of at least this many tokens take the chunked form */
    int bv;        /* chunked scan column tile (0 = by grid size) */
    /* chunked-form workspace (device), Hv * ntok * GK_GDN_WSROW floats */
    float *d_ws;
    size_t ws_cap;
    int ws_warned;
    /* batch grouping (device): seq | pos | prev | idx [ntok each], off [ngrp + 1], slot [ngrp],
     * glist [ngrp], loff [nlong + 1], cst | clen [nch each] */
    gk_gdn_batch kb;
    int32_t *d_buf;
    size_t d_cap;
    /* pinned staging, double-buffered, and host scratch of the grouping */
    int32_t *h_stage[2];
    size_t h_cap[2];
    void *ev[2];
    int ev_used[2];
    int cur;
    int32_t *scr; /* [2 * (max slot + 1)] counts | starts */
    size_t scr_cap;
} gdn_side;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static gdn_side *g_sides;

static gdn_side *side_of(dl_backend *be) {
    pthread_mutex_lock(&g_lock);
    gdn_side *s = g_sides;
    while (s && s->be != be) s = s->next;
    pthread_mutex_unlock(&g_lock);
    return s;
}

static void side_err(gdn_side *s, const char *msg) {
    if (s->err) return;
    s->err = 1;
    snprintf(s->errmsg, sizeof s->errmsg, "%s: %s", GDN_GPU, msg);
}

/* Grow a pinned staging buffer (the caller has waited for its last copy). */
static int grow_host(int32_t **p, size_t *cap, size_t need) {
    if (need <= *cap && *p) return 0;
    gpurt_host_free(*p);
    *p = NULL;
    *cap = 0;
    size_t n = need + need / 2 + 64;
    if (gpurt_host_alloc((void **)p, n)) return -1;
    *cap = n;
    return 0;
}

/* Group the batch rows by slot into h (layout of gdn_side.d_buf, up to
 * 10 * ntok + 2 entries); sets *nlong / *nch (groups for the chunked form,
 * and their chunks); returns the number of groups, -1 on out of memory. */
static int build_groups(gdn_side *s, const dl_batch *b, int32_t *h, int *nlong, int *nch) {
    const int T = b->ntok;
    int32_t *seq = h, *pos = h + T, *prev = h + 2 * (size_t)T, *idx = h + 3 * (size_t)T;
    int32_t *off = h + 4 * (size_t)T;
    int32_t maxs = 0;
    for (int t = 0; t < T; t++)
        if (b->seq[t] > maxs) maxs = b->seq[t];
    const size_t M = (size_t)maxs + 1;
    if (2 * M > s->scr_cap) {
        free(s->scr);
        s->scr = malloc(2 * M * sizeof(int32_t));
        s->scr_cap = s->scr ? 2 * M : 0;
        if (!s->scr) return -1;
    }
    int32_t *last = s->scr, *start = s->scr + M; /* last: last row seen of a slot, then group start */
    for (size_t i = 0; i < M; i++) last[i] = -1;
    memcpy(seq, b->seq, (size_t)T * sizeof(int32_t));
    memcpy(pos, b->pos, (size_t)T * sizeof(int32_t));
    /* prev rows; group sizes counted in start[] */
    int ng = 0;
    for (int t = 0; t < T; t++) {
        const int32_t sl = b->seq[t];
        if (last[sl] < 0) {
            start[sl] = 0;
            ng++;
        }
        prev[t] = b->pos[t] == 0 ? -1 : last[sl];
        last[sl] = t;
        start[sl]++;
    }
    int32_t *slot = off + ng + 1;
    /* groups in order of first appearance: offsets */
    for (size_t i = 0; i < M; i++) last[i] = -1;
    int gi = 0, o = 0;
    for (int t = 0; t < T; t++) {
        const int32_t sl = b->seq[t];
        if (last[sl] >= 0) continue;
        last[sl] = gi;
        slot[gi] = sl;
        off[gi] = o;
        o += start[sl];
        start[sl] = off[gi];
        gi++;
    }
    off[ng] = o;
    for (int t = 0; t < T; t++) idx[start[b->seq[t]]++] = t;

    /* The CPU backend's rule, per group: runs split where a token restarts
     * its sequence (position 0); a group with a run of >= chunk_min tokens
     * is long and the chunked kernel takes all of it (its short runs too, as
     * chunks of their own: the same math), cut into chunks of <=
     * GK_GDN_CHUNK tokens inside each run. last[g] = the group's chunk
     * count if long, else -1 (last has M >= ng entries). */
    int nl = 0, nc = 0;
    for (int g = 0; g < ng; g++) {
        int chunks = 0, lng = 0;
        for (int k = off[g]; k < off[g + 1];) {
            int e = k + 1;
            while (e < off[g + 1] && pos[idx[e]] != 0) e++;
            if (e - k >= s->chunk_min) lng = 1;
            chunks += (e - k + GK_GDN_CHUNK - 1) / GK_GDN_CHUNK;
            k = e;
        }
        last[g] = lng ? chunks : -1;
        if (lng) {
            nl++;
            nc += chunks;
        }
    }
    int32_t *glist = slot + ng, *loff = glist + ng, *cst = loff + nl + 1, *clen = cst + nc;
    int ns = 0, li = 0, ci = 0;
    for (int g = 0; g < ng; g++)
        if (last[g] < 0) glist[ns++] = g;
    for (int g = 0; g < ng; g++) {
        if (last[g] < 0) continue;
        glist[ns + li] = g;
        loff[li++] = ci;
        for (int k = off[g]; k < off[g + 1];) {
            int e = k + 1;
            while (e < off[g + 1] && pos[idx[e]] != 0) e++;
            for (int x = k; x < e; x += GK_GDN_CHUNK) {
                cst[ci] = x;
                clen[ci++] = e - x < GK_GDN_CHUNK ? e - x : GK_GDN_CHUNK;
            }
            k = e;
        }
    }
    loff[nl] = ci;
    assert(ci == nc && ns + nl == ng);
    *nlong = nl;
    *nch = nc;
    return ng;
}

static int gdn_begin(dl_backend *be, const dl_batch *b, const dl_kvcache *kv) {
    gdn_side *s = side_of(be);
    if (!s) return dl_err("%s: Gated DeltaNet state missing", GDN_GPU);
    if (s->begin(be, b, kv)) return -1;
    s->kb.ntok = 0;
    s->kb.ngrp = 0;
    const int T = b->ntok > 0 ? b->ntok : 0;
    if (!T) return 0;
    for (int t = 0; t < T; t++)
        if (b->seq[t] < 0 || b->pos[t] < 0) return dl_err("%s: batch row %d has a negative slot or position", GDN_GPU, t);
    /* worst case T groups, all long, T chunks */
    const size_t need = (10 * (size_t)T + 2) * sizeof(int32_t);
    s->cur ^= 1;
    const int c = s->cur;
    if (s->ev_used[c] && gpurt_event_sync(s->ev[c])) return dl_err("%s: %s", GDN_GPU, gpurt_errstr());
    if (grow_host(&s->h_stage[c], &s->h_cap[c], need)) return dl_err("%s: %s", GDN_GPU, gpurt_errstr());
    int nl = 0, nc = 0;
    const int ng = build_groups(s, b, s->h_stage[c], &nl, &nc);
    if (ng < 0) return dl_err("%s: out of host memory", GDN_GPU);
    const size_t used = (4 * (size_t)T + 3 * (size_t)ng + 2 + (size_t)nl + 2 * (size_t)nc) * sizeof(int32_t);
    /* layout: seq pos prev idx [T each] off [ng+1] slot [ng] glist [ng] loff [nl+1] cst clen [nc each] */
    if (used > s->d_cap || !s->d_buf) {
        /* no kernel in flight may still read the old buffer */
        if (gpurt_sync(s->stream)) return dl_err("%s: %s", GDN_GPU, gpurt_errstr());
        gpurt_free(s->d_buf);
        s->d_buf = NULL;
        s->d_cap = 0;
        size_t n = used + used / 4 + 256;
        if (gpurt_malloc((void **)&s->d_buf, n)) return dl_err("%s: %s", GDN_GPU, gpurt_errstr());
        s->d_cap = n;
    }
    if (gpurt_h2d_async(s->d_buf, s->h_stage[c], used, s->stream) || gpurt_event_record(s->ev[c], s->stream))
        return dl_err("%s: %s", GDN_GPU, gpurt_errstr());
    s->ev_used[c] = 1;
    int32_t *d = s->d_buf, *slot = d + 4 * (size_t)T + ng + 1, *loff = slot + 2 * (size_t)ng;
    s->kb = (gk_gdn_batch){.ntok = T, .ngrp = ng, .nlong = nl, .nch = nc, .seq = d, .pos = d + T,
                           .prev = d + 2 * (size_t)T, .idx = d + 3 * (size_t)T, .off = d + 4 * (size_t)T,
                           .slot = slot, .glist = slot + ng, .loff = loff, .cst = loff + nl + 1,
                           .clen = loff + nl + 1 + nc};
    return 0;
}

static int gdn_sync(dl_backend *be) {
    gdn_side *s = side_of(be);
    if (!s) return dl_err("%s: Gated DeltaNet state missing", GDN_GPU);
    int rc = s->sync(be);
    if (s->err) {
        s->err = 0;
        if (!rc) return dl_err("%s", s->errmsg);
    }
    return rc;
}

static void gdn_destroy(dl_backend *be) {
    pthread_mutex_lock(&g_lock);
    gdn_side **pp = &g_sides, *s = NULL;
    while (*pp && (*pp)->be != be) pp = &(*pp)->next;
    if (*pp) {
        s = *pp;
        *pp = s->next;
    }
    pthread_mutex_unlock(&g_lock);
    if (!s) return; /* not installed: nothing of ours to free, and no destroy to call */
    (void)gpurt_sync(s->stream);
    gpurt_free(s->d_buf);
    gpurt_free(s->d_ws);
    for (int i = 0; i < 2; i++) {
        gpurt_host_free(s->h_stage[i]);
        gpurt_event_destroy(s->ev[i]);
    }
    free(s->scr);
    void (*destroy)(dl_backend *) = s->destroy;
    free(s);
    destroy(be);
}

/* Device data of an uploaded float weight, or NULL (error recorded). */
static const gk_weight *wview(gdn_side *s, const dl_weight *w, const char *op) {
    const gk_weight *g = gpu_weight_view(w);
    if (!g) {
        char m[128];
        snprintf(m, sizeof m, "%s: weight not uploaded", op);
        side_err(s, m);
        return NULL;
    }
    if (g->dtype != DT_F32 && g->dtype != DT_F16 && g->dtype != DT_BF16) {
        char m[128];
        snprintf(m, sizeof m, "%s: weight must be f32, f16 or bf16", op);
        side_err(s, m);
        return NULL;
    }
    return g;
}

/* Run a launch statement: timed when profiling, its PDL launches counted. */
#define GDN_RUN(be, name, stmt)                                  \
    do {                                                         \
        const unsigned long long pdl0_ = gk_pdl_launches();      \
        GPU_PROF(gpu_backend_prof(be), name, stmt);              \
        gpu_backend_pdl_count((be), pdl0_);                      \
    } while (0)

/* ---------------- ops ---------------- */

static void op_copy2d(dl_backend *be, float *dst, int dst_ld, const float *src, int src_ld, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    gpu_backend_op(be);
    kreg_hit(&K_COPY);
    GDN_RUN(be, K_COPY.name, gk_copy2d(gpu_backend_stream(be), dst, dst_ld, src, src_ld, rows, cols));
}

static void op_sigmoid_mul(dl_backend *be, float *y, const float *gate, size_t n) {
    if (!n) return;
    gpu_backend_op(be);
    kreg_hit(&K_SIGM);
    GDN_RUN(be, K_SIGM.name, gk_sigmoid_mul(gpu_backend_stream(be), y, gate, n));
}

static void op_conv1d_silu(dl_backend *be, float *y, const float *x, const dl_weight *w, float *state, int C) {
    gdn_side *s = side_of(be);
    if (!s || s->kb.ntok <= 0 || C <= 0) return;
    const gk_weight *g = wview(s, w, "conv1d_silu");
    if (!g) return;
    if (g->k < 1 || g->k > GK_GDN_MAXK || g->n < C) {
        side_err(s, "conv1d_silu: kernel length must be 1..16 and the weight must have C rows");
        return;
    }
    gpu_backend_op(be);
    kreg_hit(&K_CONV);
    GDN_RUN(be, K_CONV.name,
             gk_gdn_conv1d_silu(s->stream, y, x, g->data, g->dtype, g->ld, (int)g->k, state, C, &s->kb));
}

static void op_l2norm(dl_backend *be, float *x, int rows, int d, float eps, float scale) {
    if (rows <= 0 || d <= 0) return;
    gpu_backend_op(be);
    kreg_hit(&K_L2);
    GDN_RUN(be, K_L2.name, gk_gdn_l2norm(gpu_backend_stream(be), x, rows, d, eps, scale));
}

static void op_gdn_gates(dl_backend *be, float *g, float *beta, const float *a, const float *b,
                         const dl_weight *A_log, const dl_weight *dt_bias, int Hv) {
    gdn_side *s = side_of(be);
    if (!s || s->kb.ntok <= 0 || Hv <= 0) return;
    const gk_weight *wa = wview(s, A_log, "gdn_gates"), *wb = wview(s, dt_bias, "gdn_gates");
    if (!wa || !wb) return;
    gpu_backend_op(be);
    kreg_hit(&K_GATES);
    GDN_RUN(be, K_GATES.name,
             gk_gdn_gates(s->stream, g, beta, a, b, wa->data, wa->dtype, wb->data, wb->dtype, s->kb.ntok, Hv));
}

/* The chunked form's workspace for Hv heads of the current batch; 0, or -1
 * when it cannot be had (the caller then runs the recurrence). Growing waits
 * for the stream (kernels in flight may still read the old one). */
static int ensure_ws(gdn_side *s, int Hv) {
    const size_t need = (size_t)Hv * (size_t)s->kb.ntok * GK_GDN_WSROW * sizeof(float);
    if (s->d_ws && need <= s->ws_cap) return 0;
    if (gpurt_sync(s->stream)) {
        side_err(s, gpurt_errstr());
        return -1;
    }
    gpurt_free(s->d_ws);
    s->d_ws = NULL;
    s->ws_cap = 0;
    const size_t n = need + need / 4;
    if (gpurt_malloc((void **)&s->d_ws, n)) {
        s->d_ws = NULL;
        if (!s->ws_warned) LOGW("%s gdn: no device memory for the chunked workspace (%zu bytes): %s; "
                                "running the recurrence", GDN_GPU, n, gpurt_errstr());
        s->ws_warned = 1;
        return -1;
    }
    s->ws_cap = n;
    return 0;
}

/* Long groups (a run of >= chunk_min tokens) take the chunked kernel unless
 * it is switched off (DOTLM_DISABLE=<gpu>.gdn.chunked), Dk is above its limit
 * or its workspace cannot be allocated; every other group, the recurrence. */
static void op_gdn(dl_backend *be, float *out, const float *q, const float *k, const float *v, const float *g,
                   const float *beta, float *state, int Hk, int Hv, int Dk, int Dv) {
    gdn_side *s = side_of(be);
    if (!s || s->kb.ntok <= 0) return;
    if (Hk <= 0 || Hv <= 0 || Hv % Hk || Dk <= 0 || Dv <= 0 || Dk > GK_GDN_MAXD || Dv > GK_GDN_MAXD) {
        side_err(s, "gdn: need Hv a multiple of Hk and head sizes 1..256");
        return;
    }
    gpu_backend_op(be);
    const gk_gdn_batch *kb = &s->kb;
    int nrec = kb->ngrp;
    if (kb->nlong > 0 && Dk <= GK_GDN_CHUNK_MAXDK && kreg_enabled(&K_CHUNK) && !ensure_ws(s, Hv)) {
        assert(kb->nch >= kb->nlong && kb->nlong <= kb->ngrp && kb->nch <= kb->ntok);
        int rc = 0;
        GDN_RUN(be, K_CHUNK.name,
                 rc = gk_gdn_chunked(s->stream, out, q, k, v, g, beta, state, s->d_ws, Hk, Hv, Dk, Dv, kb, s->bv));
        if (!rc) {
            kreg_hit(&K_CHUNK);
            nrec = kb->ngrp - kb->nlong;
        }
    }
    if (nrec > 0) {
        kreg_hit(&K_REC);
        GDN_RUN(be, K_REC.name,
                 gk_gdn_recurrent(s->stream, out, q, k, v, g, beta, state, Hk, Hv, Dk, Dv, kb, nrec));
    }
}

static void op_gated_rmsnorm(dl_backend *be, float *y, const float *x, const float *z, const dl_weight *w,
                             int rows, int d, float eps) {
    gdn_side *s = side_of(be);
    if (!s || rows <= 0 || d <= 0) return;
    const gk_weight *g = wview(s, w, "gated_rmsnorm");
    if (!g) return;
    gpu_backend_op(be);
    kreg_hit(&K_GRMS);
    GDN_RUN(be, K_GRMS.name, gk_gdn_gated_rmsnorm(s->stream, y, x, z, g->data, g->dtype, rows, d, eps));
}

int gpu_gdn_tune(dl_backend *be, int chunk_min, int bv) {
    gdn_side *s = side_of(be);
    if (!s) return -1;
    s->chunk_min = chunk_min < 1 ? 1 : chunk_min;
    s->bv = bv == 16 || bv == 32 ? bv : 0;
    return 0;
}

void gpu_gdn_install(dl_backend *be) {
    if (!be || !be->begin || !be->sync || !be->destroy || side_of(be)) return;
    gdn_side *s = calloc(1, sizeof *s);
    if (!s) return; /* ops stay NULL: the model reports "unsupported" */
    s->be = be;
    s->stream = gpu_backend_stream(be);
    const char *e = getenv("DOTLM_GPU_GDN_CHUNK_MIN");
    s->chunk_min = e && *e ? atoi(e) : GK_GDN_CHUNK_MIN;
    if (s->chunk_min < 1) s->chunk_min = 1;
    e = getenv("DOTLM_GPU_GDN_BV");
    s->bv = e && *e ? atoi(e) : 0;
    (void)kreg_enabled(&K_CHUNK); /* registered now, so listings show it before first use */
    if (gpurt_event_create(&s->ev[0]) || gpurt_event_create(&s->ev[1])) {
        gpurt_event_destroy(s->ev[0]);
        gpurt_event_destroy(s->ev[1]);
        free(s);
        return;
    }
    s->begin = be->begin;
    s->sync = be->sync;
    s->destroy = be->destroy;
    pthread_mutex_lock(&g_lock);
    s->next = g_sides;
    g_sides = s;
    pthread_mutex_unlock(&g_lock);
    be->begin = gdn_begin;
    be->sync = gdn_sync;
    be->destroy = gdn_destroy;
    if (!be->copy2d) be->copy2d = op_copy2d;
    if (!be->sigmoid_mul) be->sigmoid_mul = op_sigmoid_mul;
    be->conv1d_silu = op_conv1d_silu;
    be->l2norm = op_l2norm;
    be->gdn_gates = op_gdn_gates;
    be->gdn = op_gdn;
    be->gated_rmsnorm = op_gated_rmsnorm;
}
