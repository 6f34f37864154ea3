/* Gated DeltaNet CPU ops: the chunked gated delta rule against the
 * recurrence and both against a double-precision recurrence written here;
 * prefill split into calls of any size; mixed batches of several sequences;
 * conv1d state continuation; the small ops against double references. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_gdn.h"
#include "core/dtype.h"
#include "core/kreg.h"
#include "testutil.h"

static uint64_t rs;

static float *rnd(size_t n, float amp) {
    float *p = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++) p[i] = amp * tu_randf(&rs);
    return p;
}

static double maxdiff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

/* Inputs of one sequence of n tokens: q, k l2-normalised (q times 1/sqrt(Dk)), v, g < 0, beta in (0,1). */
typedef struct {
    int n, Hk, Hv, Dk, Dv;
    float *q, *k, *v, *g, *beta;
} seq_in;

static void norm_rows(float *x, size_t rows, int d, float scale) {
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < d; j++) s += (double)x[r * d + j] * x[r * d + j];
        for (int j = 0; j < d; j++) x[r * d + j] = (float)(x[r * d + j] / sqrt(s + 1e-6) * scale);
    }
}

/* gmax: largest decay magnitude (|g| up to gmax); small gmax = long memory. */
static seq_in make_seq(int n, int Hk, int Hv, int Dk, int Dv, float gmax) {
    seq_in s = {n, Hk, Hv, Dk, Dv, NULL, NULL, NULL, NULL, NULL};
    s.q = rnd((size_t)n * Hk * Dk, 1);
    s.k = rnd((size_t)n * Hk * Dk, 1);
    s.v = rnd((size_t)n * Hv * Dv, 1);
    s.g = rnd((size_t)n * Hv, 1);
    s.beta = rnd((size_t)n * Hv, 1);
    norm_rows(s.q, (size_t)n * Hk, Dk, 1.0f / sqrtf((float)Dk));
    norm_rows(s.k, (size_t)n * Hk, Dk, 1.0f);
    for (size_t i = 0; i < (size_t)n * Hv; i++) {
        s.g[i] = -gmax * (0.5f + 0.5f * s.g[i]) - 1e-4f;
        s.beta[i] = 0.5f + 0.49f * s.beta[i];
    }
    return s;
}

static void free_seq(seq_in *s) {
    free(s->q), free(s->k), free(s->v), free(s->g), free(s->beta);
}

/* Double-precision recurrence straight from the definition (FORMATS.md):
 * S *= exp(g); u = k^T S; S += k (x) ((v - u) * beta); o = q^T S.
 * S0 [Hv, Dk, Dv] (NULL = zeros); out [n, Hv*Dv]; Sout [Hv, Dk, Dv]. */
static void ref_rule(const seq_in *s, const float *S0, float *out, float *Sout) {
    int Hk = s->Hk, Hv = s->Hv, Dk = s->Dk, Dv = s->Dv, r = Hv / Hk;
    double *S = calloc((size_t)Dk * Dv, sizeof(double)), *u = calloc((size_t)Dv, sizeof(double));
    for (int h = 0; h < Hv; h++) {
        for (int i = 0; i < Dk * Dv; i++) S[i] = S0 ? S0[(size_t)h * Dk * Dv + i] : 0.0;
        for (int t = 0; t < s->n; t++) {
            const float *q = s->q + ((size_t)t * Hk + h / r) * Dk, *k = s->k + ((size_t)t * Hk + h / r) * Dk;
            const float *v = s->v + ((size_t)t * Hv + h) * Dv;
            double e = exp((double)s->g[(size_t)t * Hv + h]), b = s->beta[(size_t)t * Hv + h];
            for (int i = 0; i < Dk * Dv; i++) S[i] *= e;
            for (int j = 0; j < Dv; j++) {
                u[j] = 0;
                for (int d = 0; d < Dk; d++) u[j] += k[d] * S[d * Dv + j];
            }
            for (int d = 0; d < Dk; d++)
                for (int j = 0; j < Dv; j++) S[d * Dv + j] += k[d] * (v[j] - u[j]) * b;
            for (int j = 0; j < Dv; j++) {
                double o = 0;
                for (int d = 0; d < Dk; d++) o += q[d] * S[d * Dv + j];
                out[((size_t)t * Hv + h) * Dv + j] = (float)o;
            }
        }
        for (int i = 0; i < Dk * Dv; i++) Sout[(size_t)h * Dk * Dv + i] = (float)S[i];
    }
    free(S), free(u);
}

/* Run the gdn op over tokens [t0, t1) of sequence s in slot `slot`, positions
 * pos0 + t; state [nslots, Hv, Dk, Dv]. */
static void op_run(dl_backend *be, const seq_in *s, int t0, int t1, int slot, int pos0,
                   float *state, float *out) {
    int n = t1 - t0, Hk = s->Hk, Hv = s->Hv, Dk = s->Dk, Dv = s->Dv;
    int32_t *tok = calloc((size_t)n, 4), *seq = malloc((size_t)n * 4), *pos = malloc((size_t)n * 4);
    for (int i = 0; i < n; i++) seq[i] = slot, pos[i] = pos0 + t0 + i;
    dl_batch b = {n, tok, seq, pos};
    be->begin(be, &b, NULL);
    be->gdn(be, out + (size_t)t0 * Hv * Dv, s->q + (size_t)t0 * Hk * Dk, s->k + (size_t)t0 * Hk * Dk,
            s->v + (size_t)t0 * Hv * Dv, s->g + (size_t)t0 * Hv, s->beta + (size_t)t0 * Hv, state, Hk,
            Hv, Dk, Dv);
    free(tok), free(seq), free(pos);
}

/* Chunked vs recurrent vs double reference, through the op (with the
 * cpu.gdn.chunked switch) and through the run functions directly (chunked
 * forced at every length), from a zero state (pos 0) and from a random one. */
static void test_chunked_vs_recurrent(dl_backend *be) {
    static const int lens[] = {1, 2, 15, 16, 63, 64, 65, 128, 130, 300};
    static const int heads[][2] = {{2, 4}, {1, 3}, {2, 2}, {2, 6}};
    static const float gmaxs[] = {2.0f, 0.05f};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++)
            for (int cont = 0; cont < 2; cont++) {
                int n = lens[li], Hk = heads[hi][0], Hv = heads[hi][1];
                int Dk = 16 + 16 * (int)(hi % 2), Dv = 24 + 8 * (int)hi;
                float gmax = gmaxs[(li + hi + cont) % 2];
                seq_in s = make_seq(n, Hk, Hv, Dk, Dv, gmax);
                size_t sd = (size_t)Hv * Dk * Dv, on = (size_t)n * Hv * Dv;
                int slot = 1, pos0 = cont ? 7 : 0;
                float *S0 = rnd(sd, 0.5f);
                float *st_c = malloc(3 * sd * 4), *st_r = malloc(3 * sd * 4);
                memcpy(st_c + slot * sd, S0, sd * 4);
                memcpy(st_r + slot * sd, S0, sd * 4);
                float *o_c = malloc(on * 4), *o_r = malloc(on * 4), *o_ref = malloc(on * 4),
                      *S_ref = malloc(sd * 4);
                ref_rule(&s, cont ? S0 : NULL, o_ref, S_ref);
                kreg_reset_switches();
                op_run(be, &s, 0, n, slot, pos0, st_c, o_c);
                kreg_disable("cpu.gdn.chunked");
                op_run(be, &s, 0, n, slot, pos0, st_r, o_r);
                kreg_reset_switches();
                double e1 = maxdiff(o_c, o_r, on), e2 = maxdiff(st_c + slot * sd, st_r + slot * sd, sd);
                double e3 = maxdiff(o_r, o_ref, on), e4 = maxdiff(st_r + slot * sd, S_ref, sd);
                CHECKF(e1 <= 1e-4 && e2 <= 1e-4,
                       "op chunked vs recurrent n=%d Hk=%d Hv=%d cont=%d: out %.2e state %.2e", n,
                       Hk, Hv, cont, e1, e2);
                CHECKF(e3 <= 1e-4 && e4 <= 1e-4,
                       "recurrent vs double ref n=%d Hk=%d Hv=%d cont=%d: out %.2e state %.2e", n,
                       Hk, Hv, cont, e3, e4);
                /* direct: chunked forced at every length, per head */
                double *scratch = malloc(cpu_gdn_scratch(Dk, Dv) * sizeof(double));
                int32_t *tok = malloc((size_t)n * 4);
                for (int i = 0; i < n; i++) tok[i] = i;
                float *o_d = malloc(on * 4), *S_d = malloc(sd * 4);
                for (int h = 0; h < Hv; h++) {
                    int kh = h / (Hv / Hk);
                    float *Sh = S_d + (size_t)h * Dk * Dv;
                    if (cont) memcpy(Sh, S0 + (size_t)h * Dk * Dv, (size_t)Dk * Dv * 4);
                    else memset(Sh, 0, (size_t)Dk * Dv * 4);
                    cpu_gdn_run r = {s.q + kh * Dk, s.k + kh * Dk, s.v + h * Dv, s.g + h, s.beta + h,
                                     o_d + h * Dv, (size_t)Hk * Dk, (size_t)Hv * Dv, (size_t)Hv,
                                     tok, n, Dk, Dv};
                    cpu_gdn_chunked(&r, Sh, scratch);
                }
                double e5 = maxdiff(o_d, o_ref, on), e6 = maxdiff(S_d, S_ref, sd);
                CHECKF(e5 <= 1e-4 && e6 <= 1e-4,
                       "forced chunked vs double ref n=%d Hk=%d Hv=%d cont=%d: out %.2e state %.2e",
                       n, Hk, Hv, cont, e5, e6);
                free(scratch), free(tok), free(o_d), free(S_d);
                free(S0), free(st_c), free(st_r), free(o_c), free(o_r), free(o_ref), free(S_ref);
                free_seq(&s);
            }
    /* the counters show which algorithm ran */
    seq_in s = make_seq(100, 1, 2, 16, 16, 1.0f);
    float *st = malloc(2 * 16 * 16 * 4 * 2), *o = malloc(100 * 2 * 16 * 4);
    kreg_reset_counts();
    op_run(be, &s, 0, 100, 0, 0, st, o);
    CHECK(kreg_count("cpu.gdn.chunked") == 1 && kreg_count("cpu.gdn.recurrent.ref") == 0);
    kreg_disable("cpu.gdn.chunked");
    op_run(be, &s, 0, 100, 0, 0, st, o);
    kreg_reset_switches();
    CHECK(kreg_count("cpu.gdn.chunked") == 1 && kreg_count("cpu.gdn.recurrent.ref") == 1);
    free(st), free(o);
    free_seq(&s);
}

/* A prompt prefilled in one call, in calls of various sizes, or token by
 * token gives the same outputs and final state. */
static void test_split_prefill(dl_backend *be) {
    int n = 300, Hk = 2, Hv = 4, Dk = 32, Dv = 32;
    seq_in s = make_seq(n, Hk, Hv, Dk, Dv, 0.3f);
    size_t sd = (size_t)Hv * Dk * Dv, on = (size_t)n * Hv * Dv;
    float *st1 = malloc(sd * 4), *o1 = malloc(on * 4);
    op_run(be, &s, 0, n, 0, 0, st1, o1);
    static const int splits[][6] = {{64, 64, 64, 64, 44, 0}, {1, 63, 65, 100, 71, 0},
                                    {17, 16, 15, 200, 52, 0}, {256, 44, 0}};
    for (size_t k = 0; k <= sizeof splits / sizeof *splits; k++) {
        float *st = malloc(sd * 4), *o = malloc(on * 4);
        for (size_t i = 0; i < sd; i++) st[i] = 1e3f; /* garbage: pos 0 must reset it */
        int t = 0;
        for (int j = 0; t < n; j++) {
            int len = k < sizeof splits / sizeof *splits ? splits[k][j] : 1;
            if (!len || t + len > n) len = n - t;
            op_run(be, &s, t, t + len, 0, 0, st, o);
            t += len;
        }
        double e1 = maxdiff(o, o1, on), e2 = maxdiff(st, st1, sd);
        CHECKF(e1 <= 1e-4 && e2 <= 1e-4, "split prefill %zu: out %.2e state %.2e", k, e1, e2);
        free(st), free(o);
    }
    free(st1), free(o1);
    free_seq(&s);
}

/* A batch mixing two sequences (one prefilling from position 0, one
 * continuing at position 40), rows interleaved, equals running them one at a
 * time. Also conv1d in the same batch shape. */
static void test_mixed_batch(dl_backend *be) {
    int Hk = 2, Hv = 6, Dk = 16, Dv = 24;
    int nA = 90, nB = 30, posB = 40;
    seq_in A = make_seq(nA, Hk, Hv, Dk, Dv, 0.5f), B = make_seq(nB, Hk, Hv, Dk, Dv, 0.5f);
    size_t sd = (size_t)Hv * Dk * Dv;
    int slotA = 2, slotB = 0, nslots = 3;
    float *SB0 = rnd(sd, 0.5f);
    /* separately */
    float *st = malloc(nslots * sd * 4), *oA = malloc((size_t)nA * Hv * Dv * 4),
          *oB = malloc((size_t)nB * Hv * Dv * 4);
    memcpy(st + slotB * sd, SB0, sd * 4);
    op_run(be, &A, 0, nA, slotA, 0, st, oA);
    op_run(be, &B, 0, nB, slotB, posB, st, oB);
    /* mixed: rows in a random interleave that keeps each sequence's order */
    int T = nA + nB, ia = 0, ib = 0;
    int32_t *tok = calloc((size_t)T, 4), *seq = malloc((size_t)T * 4), *pos = malloc((size_t)T * 4);
    int *from = malloc((size_t)T * sizeof(int)), *row = malloc((size_t)T * sizeof(int));
    float *q = malloc((size_t)T * Hk * Dk * 4), *k = malloc((size_t)T * Hk * Dk * 4),
          *v = malloc((size_t)T * Hv * Dv * 4), *g = malloc((size_t)T * Hv * 4),
          *beta = malloc((size_t)T * Hv * 4), *o = malloc((size_t)T * Hv * Dv * 4);
    for (int t = 0; t < T; t++) {
        int pickA = ib >= nB || (ia < nA && tu_rand_u64(&rs) % 4 != 0);
        const seq_in *s = pickA ? &A : &B;
        int i = pickA ? ia++ : ib++;
        from[t] = pickA, row[t] = i;
        seq[t] = pickA ? slotA : slotB;
        pos[t] = pickA ? i : posB + i;
        memcpy(q + (size_t)t * Hk * Dk, s->q + (size_t)i * Hk * Dk, (size_t)Hk * Dk * 4);
        memcpy(k + (size_t)t * Hk * Dk, s->k + (size_t)i * Hk * Dk, (size_t)Hk * Dk * 4);
        memcpy(v + (size_t)t * Hv * Dv, s->v + (size_t)i * Hv * Dv, (size_t)Hv * Dv * 4);
        memcpy(g + (size_t)t * Hv, s->g + (size_t)i * Hv, (size_t)Hv * 4);
        memcpy(beta + (size_t)t * Hv, s->beta + (size_t)i * Hv, (size_t)Hv * 4);
    }
    float *st2 = malloc(nslots * sd * 4);
    for (size_t i = 0; i < nslots * sd; i++) st2[i] = -7.0f;
    memcpy(st2 + slotB * sd, SB0, sd * 4);
    dl_batch b = {T, tok, seq, pos};
    be->begin(be, &b, NULL);
    be->gdn(be, o, q, k, v, g, beta, st2, Hk, Hv, Dk, Dv);
    double e = 0;
    for (int t = 0; t < T; t++) {
        const float *want = (from[t] ? oA : oB) + (size_t)row[t] * Hv * Dv;
        double d = maxdiff(o + (size_t)t * Hv * Dv, want, (size_t)Hv * Dv);
        if (d > e) e = d;
    }
    CHECKF(e <= 1e-4, "mixed batch vs separate: out %.2e", e);
    double es = fmax(maxdiff(st2 + slotA * sd, st + slotA * sd, sd),
                     maxdiff(st2 + slotB * sd, st + slotB * sd, sd));
    CHECKF(es <= 1e-4, "mixed batch vs separate: state %.2e", es);
    CHECK(st2[1 * sd] == -7.0f); /* slot 1 not in the batch: untouched */

    /* conv1d over the same interleaved batch vs each sequence alone */
    int C = 37, K = 4;
    float *wv = rnd((size_t)C * K, 1);
    dl_weight w = {.name = "conv", .dtype = DT_F32, .n = C, .k = K, .ld = K, .data = wv};
    float *xA = rnd((size_t)nA * C, 2), *xB = rnd((size_t)nB * C, 2), *hB = rnd((size_t)(K - 1) * C, 2);
    float *cs = malloc((size_t)nslots * (K - 1) * C * 4), *yA = malloc((size_t)nA * C * 4),
          *yB = malloc((size_t)nB * C * 4);
    memcpy(cs + (size_t)slotB * (K - 1) * C, hB, (size_t)(K - 1) * C * 4);
    int32_t *sq1 = malloc((size_t)T * 4), *ps1 = malloc((size_t)T * 4);
    for (int i = 0; i < nA; i++) sq1[i] = slotA, ps1[i] = i;
    dl_batch bA = {nA, tok, sq1, ps1};
    be->begin(be, &bA, NULL);
    be->conv1d_silu(be, yA, xA, &w, cs, C);
    for (int i = 0; i < nB; i++) sq1[i] = slotB, ps1[i] = posB + i;
    dl_batch bB = {nB, tok, sq1, ps1};
    be->begin(be, &bB, NULL);
    be->conv1d_silu(be, yB, xB, &w, cs, C);
    float *x = malloc((size_t)T * C * 4), *y = malloc((size_t)T * C * 4),
          *cs2 = malloc((size_t)nslots * (K - 1) * C * 4);
    for (size_t i = 0; i < (size_t)nslots * (K - 1) * C; i++) cs2[i] = 9.0f;
    memcpy(cs2 + (size_t)slotB * (K - 1) * C, hB, (size_t)(K - 1) * C * 4);
    for (int t = 0; t < T; t++)
        memcpy(x + (size_t)t * C, (from[t] ? xA : xB) + (size_t)row[t] * C, (size_t)C * 4);
    be->begin(be, &b, NULL);
    be->conv1d_silu(be, y, x, &w, cs2, C);
    int same = 1;
    for (int t = 0; t < T; t++)
        same &= !memcmp(y + (size_t)t * C, (from[t] ? yA : yB) + (size_t)row[t] * C, (size_t)C * 4);
    CHECKF(same, "conv1d mixed batch differs from separate runs");
    CHECK(!memcmp(cs2 + (size_t)slotA * (K - 1) * C, cs + (size_t)slotA * (K - 1) * C, (size_t)(K - 1) * C * 4));
    CHECK(!memcmp(cs2 + (size_t)slotB * (K - 1) * C, cs + (size_t)slotB * (K - 1) * C, (size_t)(K - 1) * C * 4));
    free(wv), free(xA), free(xB), free(hB), free(cs), free(yA), free(yB), free(sq1), free(ps1);
    free(x), free(y), free(cs2);
    free(SB0), free(st), free(oA), free(oB), free(tok), free(seq), free(pos), free(from), free(row);
    free(q), free(k), free(v), free(g), free(beta), free(o), free(st2);
    free_seq(&A), free_seq(&B);
}

/* conv1d against a double reference over the whole sequence (zero history),
 * fed in calls of 1..9 tokens so the state carries between calls; bf16 weight. */
static void test_conv_continuation(dl_backend *be) {
    for (int K = 1; K <= 5; K++) {
        int n = 53, C = 70;
        float *x = rnd((size_t)n * C, 2), *wf = rnd((size_t)C * K, 1);
        uint16_t *wb = malloc((size_t)C * K * 2);
        for (int i = 0; i < C * K; i++) wb[i] = f32_to_bf16(wf[i]), wf[i] = bf16_to_f32(wb[i]);
        dl_weight w = {.name = "conv", .dtype = DT_BF16, .n = C, .k = K, .ld = K, .data = wb};
        float *y = malloc((size_t)n * C * 4), *st = malloc((size_t)(K > 1 ? K - 1 : 1) * C * 4 * 2);
        for (int i = 0; i < (K > 1 ? K - 1 : 1) * C * 2; i++) st[i] = 5.0f; /* reset by pos 0 */
        int32_t tok[16] = {0}, sq[16], ps[16];
        for (int t = 0; t < n;) {
            int len = 1 + (int)(tu_rand_u64(&rs) % 9);
            if (t + len > n) len = n - t;
            for (int i = 0; i < len; i++) sq[i] = 1, ps[i] = t + i;
            dl_batch b = {len, tok, sq, ps};
            be->begin(be, &b, NULL);
            be->conv1d_silu(be, y + (size_t)t * C, x + (size_t)t * C, &w, st, C);
            t += len;
        }
        double e = 0;
        for (int t = 0; t < n; t++)
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int j = 0; j < K; j++) {
                    int tt = t - (K - 1) + j;
                    if (tt >= 0) acc += (double)wf[c * K + j] * x[(size_t)tt * C + c];
                }
                double want = acc / (1 + exp(-acc));
                double d = fabs(want - y[(size_t)t * C + c]);
                if (d > e) e = d;
            }
        CHECKF(e <= 1e-5, "conv1d K=%d split calls vs reference: %.2e", K, e);
        /* state holds the last K-1 inputs */
        int ok = 1;
        for (int j = 0; j < K - 1; j++)
            for (int c = 0; c < C; c++)
                ok &= st[(size_t)(K - 1) * C + (size_t)j * C + c] == x[(size_t)(n - (K - 1) + j) * C + c];
        CHECKF(ok, "conv1d K=%d: state is not the last K-1 inputs", K);
        free(x), free(wf), free(wb), free(y), free(st);
    }
}

/* l2norm, gdn_gates, gated_rmsnorm, copy2d, sigmoid_mul vs double references. */
static void test_small_ops(dl_backend *be) {
    int rows = 29, d = 40;
    float *x = rnd((size_t)rows * d, 3), *x0 = malloc((size_t)rows * d * 4);
    memcpy(x0, x, (size_t)rows * d * 4);
    be->l2norm(be, x, rows, d, 1e-6f, 0.25f);
    double e = 0;
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < d; j++) s += (double)x0[r * d + j] * x0[r * d + j];
        for (int j = 0; j < d; j++) e = fmax(e, fabs(x0[r * d + j] / sqrt(s + 1e-6) * 0.25 - x[r * d + j]));
    }
    CHECKF(e <= 1e-6, "l2norm: %.2e", e);

    /* gated rmsnorm, in place, bf16 weight */
    float *z = rnd((size_t)rows * d, 3), *wf = rnd((size_t)d, 1);
    uint16_t *wb = malloc((size_t)d * 2);
    for (int j = 0; j < d; j++) wb[j] = f32_to_bf16(wf[j]), wf[j] = bf16_to_f32(wb[j]);
    dl_weight w = {.name = "norm", .dtype = DT_BF16, .n = d, .k = 1, .ld = 1, .data = wb};
    memcpy(x, x0, (size_t)rows * d * 4);
    be->gated_rmsnorm(be, x, x, z, &w, rows, d, 1e-6f);
    e = 0;
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < d; j++) s += (double)x0[r * d + j] * x0[r * d + j];
        for (int j = 0; j < d; j++) {
            double zz = z[r * d + j], want = x0[r * d + j] / sqrt(s / d + 1e-6) * wf[j] * zz / (1 + exp(-zz));
            e = fmax(e, fabs(want - x[r * d + j]) / (1 + fabs(want)));
        }
    }
    CHECKF(e <= 1e-5, "gated_rmsnorm: %.2e", e);

    /* gates over a batch of ntok tokens, f32 A_log / dt_bias, a spread wide enough to hit the softplus threshold */
    int ntok = 11, Hv = 5;
    int32_t tok[11] = {0}, sq[11] = {0}, ps[11];
    for (int i = 0; i < ntok; i++) ps[i] = i;
    dl_batch b = {ntok, tok, sq, ps};
    be->begin(be, &b, NULL);
    float *a = rnd((size_t)ntok * Hv, 30), *bb = rnd((size_t)ntok * Hv, 6), *Al = rnd(Hv, 2), *dt = rnd(Hv, 1);
    dl_weight WA = {.name = "A_log", .dtype = DT_F32, .n = Hv, .k = 1, .ld = 1, .data = Al};
    dl_weight WD = {.name = "dt_bias", .dtype = DT_F32, .n = Hv, .k = 1, .ld = 1, .data = dt};
    float *g = malloc((size_t)ntok * Hv * 4), *beta = malloc((size_t)ntok * Hv * 4);
    be->gdn_gates(be, g, beta, a, bb, &WA, &WD, Hv);
    e = 0;
    for (int t = 0; t < ntok; t++)
        for (int h = 0; h < Hv; h++) {
            double xx = (double)a[t * Hv + h] + dt[h], sp = log(1 + exp(xx));
            double wg = -exp((double)Al[h]) * sp, wbeta = 1 / (1 + exp(-(double)bb[t * Hv + h]));
            e = fmax(e, fabs(wg - g[t * Hv + h]) / (1 + fabs(wg)));
            e = fmax(e, fabs(wbeta - beta[t * Hv + h]));
        }
    CHECKF(e <= 1e-5, "gdn_gates: %.2e", e);

    /* copy2d and sigmoid_mul */
    float *src = rnd(13 * 20, 1), *dst = rnd(13 * 9, 1), *dst0 = malloc(13 * 9 * 4);
    memcpy(dst0, dst, 13 * 9 * 4);
    be->copy2d(be, dst, 9, src + 3, 20, 13, 7);
    int ok = 1;
    for (int r = 0; r < 13; r++)
        for (int c = 0; c < 9; c++) ok &= dst[r * 9 + c] == (c < 7 ? src[r * 20 + 3 + c] : dst0[r * 9 + c]);
    CHECK(ok);
    float *y = rnd(1000, 4), *y0 = malloc(4000), *gt = rnd(1000, 6);
    memcpy(y0, y, 4000);
    be->sigmoid_mul(be, y, gt, 1000);
    e = 0;
    for (int i = 0; i < 1000; i++) e = fmax(e, fabs(y0[i] / (1 + exp(-(double)gt[i])) - y[i]));
    CHECKF(e <= 1e-6, "sigmoid_mul: %.2e", e);
    free(x), free(x0), free(z), free(wf), free(wb), free(a), free(bb), free(Al), free(dt), free(g), free(beta);
    free(src), free(dst), free(dst0), free(y), free(y0), free(gt);
}

int main(void) {
    rs = tu_seed();
    dl_backend *be = be_create("cpu", 3);
    if (!be) {
        fprintf(stderr, "no cpu backend\n");
        return 1;
    }
    if (!be->gdn) cpu_gdn_install(be); /* until the backend's op table installs them itself */
    test_chunked_vs_recurrent(be);
    test_split_prefill(be);
    test_mixed_batch(be);
    test_conv_continuation(be);
    test_small_ops(be);
    be_destroy(be);
    return TEST_END();
}
