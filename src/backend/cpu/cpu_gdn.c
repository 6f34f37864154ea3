/* Gated DeltaNet ops of the CPU backend: copy2d, sigmoid_mul, conv1d_silu,
 * l2norm, gdn_gates, gdn, gated_rmsnorm (contracts in backend/backend.h).
 * Every op splits its work into independent items run on the thread pool;
 * each output element is computed from its own inputs in a fixed order, so
 * results do not depend on the thread count. The gated delta rule itself
 * (recurrence and chunked form) is in cpu_gdn_rule.c. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_gdn.h"
#include "backend/cpu/cpu_internal.h"
#include "core/kreg.h"
#include "core/log.h"

static kreg_kernel K_chunk = KREG_KERNEL("cpu.gdn.chunked", "chunked (UT transform) gated delta rule for prefill runs");
static kreg_kernel K_rec = KREG_KERNEL("cpu.gdn.recurrent.ref", "token-by-token gated delta rule");
static kreg_kernel K_conv = KREG_KERNEL("cpu.conv1d.ref", "depthwise causal conv1d + SiLU with slot state");
static kreg_kernel K_l2 = KREG_KERNEL("cpu.l2norm.ref", "row l2 normalisation");
static kreg_kernel K_gates = KREG_KERNEL("cpu.gdn_gates.ref", "Gated DeltaNet beta / g gates");
static kreg_kernel K_grms = KREG_KERNEL("cpu.gated_rmsnorm.ref", "RMSNorm times silu(z)");
static kreg_kernel K_copy = KREG_KERNEL("cpu.copy2d.ref", "strided 2-D copy");
static kreg_kernel K_sig = KREG_KERNEL("cpu.sigmoid_mul.ref", "y *= sigmoid(gate)");

#define CONV_CB 32  /* channels per conv work item */
#define CONV_MAXK 16

static cpu_state *S(dl_backend *be) { return be->impl; }

static inline float silu(float x) { return x / (1.0f + expf(-x)); }
static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Shared argument bag of the simple ops. */
typedef struct {
    float *y;
    const float *x, *z;
    const dl_weight *w, *w2;
    float *state;
    int d, ld_y, ld_x, C;
    float eps, scale;
    const dl_batch *b;
} gdn_args;

/* ---- copy2d: items = rows ---- */
static void copy2d_cb(void *ctx, size_t r0, size_t r1) {
    const gdn_args *a = ctx;
    for (size_t r = r0; r < r1; r++)
        memcpy(a->y + r * (size_t)a->ld_y, a->x + r * (size_t)a->ld_x, (size_t)a->d * sizeof(float));
}

static void op_copy2d(dl_backend *be, float *dst, int dst_ld, const float *src, int src_ld,
                      int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    kreg_hit(&K_copy);
    gdn_args a = {.y = dst, .x = src, .d = cols, .ld_y = dst_ld, .ld_x = src_ld};
    tp_run(S(be)->tp, (size_t)rows, cols >= 512 ? 16 : 256, copy2d_cb, &a);
}

/* ---- sigmoid_mul: items = elements ---- */
static void sigmoid_mul_cb(void *ctx, size_t i0, size_t i1) {
    const gdn_args *a = ctx;
    for (size_t i = i0; i < i1; i++) a->y[i] *= sigmoid(a->x[i]);
}

static void op_sigmoid_mul(dl_backend *be, float *y, const float *gate, size_t n) {
    if (!n) return;
    kreg_hit(&K_sig);
    gdn_args a = {.y = y, .x = gate};
    tp_run(S(be)->tp, n, 8192, sigmoid_mul_cb, &a);
}

/* ---- conv1d_silu: items = blocks of CONV_CB channels; each walks the batch
 * in order, so a slot's tokens see the inputs before them. ---- */
static void conv_cb(void *ctx, size_t i0, size_t i1) {
    const gdn_args *a = ctx;
    const dl_batch *b = a->b;
    int C = a->C, K = (int)a->w->k, K1 = K - 1;
    float wb[CONV_CB * CONV_MAXK];
    for (size_t blk = i0; blk < i1; blk++) {
        int c0 = (int)blk * CONV_CB, c1 = c0 + CONV_CB < C ? c0 + CONV_CB : C;
        for (int c = c0; c < c1; c++)
            for (int j = 0; j < K; j++)
                wb[(c - c0) * K + j] = cpu_loadf(a->w->dtype, a->w->data, (int64_t)c * a->w->ld + j);
        for (int t = 0; t < b->ntok; t++) {
            float *st = a->state + (size_t)b->seq[t] * K1 * C;
            const float *x = a->x + (size_t)t * C;
            float *y = a->y + (size_t)t * C;
            if (b->pos[t] == 0)
                for (int j = 0; j < K1; j++) memset(st + (size_t)j * C + c0, 0, (size_t)(c1 - c0) * sizeof(float));
            for (int c = c0; c < c1; c++) {
                const float *wc = wb + (c - c0) * K;
                float acc = wc[K1] * x[c];
                for (int j = 0; j < K1; j++) acc += wc[j] * st[(size_t)j * C + c];
                for (int j = 0; j + 1 < K1; j++) st[(size_t)j * C + c] = st[(size_t)(j + 1) * C + c];
                if (K1 > 0) st[(size_t)(K1 - 1) * C + c] = x[c];
                y[c] = silu(acc);
            }
        }
    }
}

static void op_conv1d_silu(dl_backend *be, float *y, const float *x, const dl_weight *w,
                           float *state, int C) {
    cpu_state *st = S(be);
    if (st->batch.ntok <= 0) return;
    kreg_hit(&K_conv);
    gdn_args a = {.y = y, .x = x, .w = w, .state = state, .C = C, .b = &st->batch};
    tp_run(st->tp, (size_t)(C + CONV_CB - 1) / CONV_CB, 1, conv_cb, &a);
}

/* ---- l2norm: items = rows ---- */
static void l2norm_cb(void *ctx, size_t r0, size_t r1) {
    const gdn_args *a = ctx;
    for (size_t r = r0; r < r1; r++) {
        float *x = a->y + r * (size_t)a->d;
        double ss = 0.0;
        for (int j = 0; j < a->d; j++) ss += (double)x[j] * x[j];
        float inv = (float)(1.0 / sqrt(ss + a->eps)) * a->scale;
        for (int j = 0; j < a->d; j++) x[j] *= inv;
    }
}

static void op_l2norm(dl_backend *be, float *x, int rows, int d, float eps, float scale) {
    if (rows <= 0) return;
    kreg_hit(&K_l2);
    gdn_args a = {.y = x, .d = d, .eps = eps, .scale = scale};
    tp_run(S(be)->tp, (size_t)rows, 64, l2norm_cb, &a);
}

/* ---- gdn_gates: items = (token, head) elements ---- */
typedef struct {
    float *g, *beta;
    const float *a, *b;
    const dl_weight *A_log, *dt_bias;
    int Hv;
} gates_args;

static void gates_cb(void *ctx, size_t i0, size_t i1) {
    const gates_args *p = ctx;
    for (size_t i = i0; i < i1; i++) {
        int h = (int)(i % (size_t)p->Hv);
        float A = expf(cpu_loadf(p->A_log->dtype, p->A_log->data, h));
        float x = p->a[i] + cpu_loadf(p->dt_bias->dtype, p->dt_bias->data, h);
        float sp = x > 20.0f ? x : log1pf(expf(x)); /* torch softplus, threshold 20 */
        p->g[i] = -A * sp;
        p->beta[i] = sigmoid(p->b[i]);
    }
}

static void op_gdn_gates(dl_backend *be, float *g, float *beta, const float *a, const float *b,
                         const dl_weight *A_log, const dl_weight *dt_bias, int Hv) {
    cpu_state *st = S(be);
    size_t n = (size_t)st->batch.ntok * (size_t)Hv;
    if (!n) return;
    kreg_hit(&K_gates);
    gates_args p = {g, beta, a, b, A_log, dt_bias, Hv};
    tp_run(st->tp, n, 1024, gates_cb, &p);
}

/* ---- gated_rmsnorm: items = rows ---- */
static void grms_cb(void *ctx, size_t r0, size_t r1) {
    const gdn_args *a = ctx;
    int d = a->d;
    for (size_t r = r0; r < r1; r++) {
        const float *x = a->x + r * (size_t)d, *z = a->z + r * (size_t)d;
        float *y = a->y + r * (size_t)d;
        double ss = 0.0;
        for (int j = 0; j < d; j++) ss += (double)x[j] * x[j];
        float inv = (float)(1.0 / sqrt(ss / d + a->eps));
        for (int j = 0; j < d; j++)
            y[j] = x[j] * inv * cpu_loadf(a->w->dtype, a->w->data, j) * silu(z[j]);
    }
}

static void op_gated_rmsnorm(dl_backend *be, float *y, const float *x, const float *z,
                             const dl_weight *w, int rows, int d, float eps) {
    if (rows <= 0) return;
    kreg_hit(&K_grms);
    gdn_args a = {.y = y, .x = x, .z = z, .w = w, .d = d, .eps = eps};
    tp_run(S(be)->tp, (size_t)rows, 32, grms_cb, &a);
}

/* ---- gdn: items = (slot, value head) ---- */
typedef struct {
    const float *q, *k, *v, *g, *beta;
    float *out, *state;
    int Hk, Hv, Dk, Dv;
    int nslots;
    const int32_t *slot;  /* [nslots] slot of group i */
    const int32_t *off;   /* [nslots + 1] group i's tokens are idx[off[i] .. off[i+1]) */
    const int32_t *idx;   /* token rows grouped by slot, batch order inside a group */
    const int32_t *pos;   /* batch positions */
    int chunked;          /* cpu.gdn.chunked is on */
    atomic_int used_chunk, used_rec;
} gdn_ctx;

static void gdn_cb(void *ctx, size_t i0, size_t i1) {
    gdn_ctx *p = ctx;
    int r = p->Hv / p->Hk;
    double *scratch = malloc(cpu_gdn_scratch(p->Dk, p->Dv) * sizeof(double));
    for (size_t it = i0; it < i1; it++) {
        int gi = (int)(it / (size_t)p->Hv), h = (int)(it % (size_t)p->Hv), kh = h / r;
        size_t dd = (size_t)p->Dk * p->Dv;
        float *Sh = p->state + ((size_t)p->slot[gi] * p->Hv + h) * dd;
        cpu_gdn_run run = {.q = p->q + (size_t)kh * p->Dk, .k = p->k + (size_t)kh * p->Dk,
                           .v = p->v + (size_t)h * p->Dv, .g = p->g + h, .beta = p->beta + h,
                           .out = p->out + (size_t)h * p->Dv, .ldq = (size_t)p->Hk * p->Dk,
                           .ldv = (size_t)p->Hv * p->Dv, .ldg = (size_t)p->Hv,
                           .Dk = p->Dk, .Dv = p->Dv};
        /* runs of the group split where a token restarts its sequence (pos 0) */
        int a = p->off[gi], end = p->off[gi + 1];
        while (a < end) {
            int e = a + 1;
            while (e < end && p->pos[p->idx[e]] != 0) e++;
            if (p->pos[p->idx[a]] == 0) memset(Sh, 0, dd * sizeof(float));
            run.tok = p->idx + a;
            run.n = e - a;
            if (!scratch) {
                /* out of memory: make the failure visible in the output */
                LOGW("cpu gdn: out of memory for scratch; output set to NaN");
                for (int i = 0; i < run.n; i++)
                    for (int j = 0; j < p->Dv; j++) run.out[(size_t)run.tok[i] * run.ldv + j] = NAN;
            } else if (p->chunked && run.n >= CPU_GDN_CHUNK_MIN) {
                cpu_gdn_chunked(&run, Sh, scratch);
                atomic_store_explicit(&p->used_chunk, 1, memory_order_relaxed);
            } else {
                cpu_gdn_recurrent(&run, Sh, scratch);
                atomic_store_explicit(&p->used_rec, 1, memory_order_relaxed);
            }
            a = e;
        }
    }
    free(scratch);
}

static void op_gdn(dl_backend *be, float *out, const float *q, const float *k, const float *v,
                   const float *g, const float *beta, float *state, int Hk, int Hv, int Dk,
                   int Dv) {
    cpu_state *st = S(be);
    const dl_batch *b = &st->batch;
    int T = b->ntok;
    if (T <= 0) return;
    gdn_ctx p = {.q = q, .k = k, .v = v, .g = g, .beta = beta, .out = out, .state = state,
                 .Hk = Hk, .Hv = Hv, .Dk = Dk, .Dv = Dv, .pos = b->pos,
                 .chunked = kreg_enabled(&K_chunk)};
    atomic_init(&p.used_chunk, 0);
    atomic_init(&p.used_rec, 0);
    /* group the batch rows by slot (counting sort, stable) */
    int32_t maxs = 0;
    for (int t = 0; t < T; t++)
        if (b->seq[t] > maxs) maxs = b->seq[t];
    size_t M = (size_t)maxs + 1;
    int32_t *buf = calloc(3 * (size_t)T + 1 + 2 * M, sizeof(int32_t));
    if (!buf) {
        /* out of memory: every token is its own run, in batch order, on this thread */
        int32_t one[2] = {0, 1};
        for (int t = 0; t < T; t++) {
            int32_t sl = b->seq[t], tt = t;
            p.nslots = 1;
            p.slot = &sl;
            p.off = one;
            p.idx = &tt;
            p.chunked = 0;
            gdn_cb(&p, 0, (size_t)Hv);
        }
        kreg_hit(&K_rec);
        return;
    }
    int32_t *idx = buf, *slot = buf + T, *off = buf + 2 * (size_t)T;
    int32_t *cnt = off + T + 1, *start = cnt + M;
    int ns = 0;
    for (int t = 0; t < T; t++)
        if (cnt[b->seq[t]]++ == 0) slot[ns++] = b->seq[t];
    int o = 0; /* groups in order of first appearance */
    for (int i = 0; i < ns; i++) {
        off[i] = o;
        start[slot[i]] = o;
        o += cnt[slot[i]];
    }
    off[ns] = o;
    for (int t = 0; t < T; t++) idx[start[b->seq[t]]++] = t;
    p.nslots = ns;
    p.slot = slot;
    p.off = off;
    p.idx = idx;
    tp_run(st->tp, (size_t)ns * (size_t)Hv, 1, gdn_cb, &p);
    if (atomic_load(&p.used_chunk)) kreg_hit(&K_chunk);
    if (atomic_load(&p.used_rec)) kreg_hit(&K_rec);
    free(buf);
}

void cpu_gdn_install(dl_backend *be) {
    be->copy2d = op_copy2d;
    be->sigmoid_mul = op_sigmoid_mul;
    be->conv1d_silu = op_conv1d_silu;
    be->l2norm = op_l2norm;
    be->gdn_gates = op_gdn_gates;
    be->gdn = op_gdn;
    be->gated_rmsnorm = op_gated_rmsnorm;
}
