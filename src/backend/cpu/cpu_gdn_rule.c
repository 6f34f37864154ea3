/* The gated delta rule on one (sequence, value head) run of tokens, in its
 * two forms: the token-by-token recurrence (decode, and the reference) and
 * the chunked form used for long prefill runs.
 *
 * Chunked form. Inside a chunk of C tokens starting from state S0, let
 * c_i = g_0 + ... + g_i (cumulative log-decay) and u_i the "new value" the
 * recurrence adds at step i: S_i = exp(g_i) S_{i-1} + k_i u_i^T with
 * u_i = beta_i (v_i - k_i^T exp(g_i) S_{i-1}). Unrolling S_{i-1} gives
 *   u_i + sum_{j<i} beta_i exp(c_i - c_j) (k_i . k_j) u_j
 *       = beta_i (v_i - exp(c_i) k_i^T S0),
 * a unit lower-triangular system (the UT transform of the WY
 * representation) solved by forward substitution. Then
 *   o_i  = exp(c_i) q_i^T S0 + sum_{j<=i} exp(c_i - c_j) (q_i . k_j) u_j
 *   S_C  = exp(c_{C-1}) S0 + sum_j exp(c_{C-1} - c_j) k_j u_j^T.
 * Every exponent is <= 0 (g < 0), so nothing overflows.
 *
 * Both forms compute in double on a double copy of the state (the stored
 * state stays fp32): the gated RMSNorm after the rule rescales each head's
 * output to unit size, so a head whose output is small would otherwise turn
 * the two forms' different fp32 rounding into visible logit differences. */
#include <math.h>
#include <string.h>

/* The inner loops are plain axpy / dot loops over a head's Dv or Dk values;
 * GCC's -O2 cost model leaves loops of unknown trip count scalar, -O3
 * vectorizes them (clang already does at -O2). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include "backend/cpu/cpu_gdn.h"

/* y[0..n) += a * x[0..n) */
static inline void axpy(double *restrict y, double a, const double *restrict x, int n) {
    for (int j = 0; j < n; j++) y[j] += a * x[j];
}

static inline double dot(const double *restrict a, const double *restrict b, int n) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += a[j] * b[j];
    return s;
}

/* out[0..Dv) = x^T S for x [Dk], S [Dk, Dv]. */
static void vec_mat(double *restrict out, const double *restrict x, const double *restrict S,
                    int Dk, int Dv) {
    memset(out, 0, (size_t)Dv * sizeof(double));
    for (int d = 0; d < Dk; d++) axpy(out, x[d], S + (size_t)d * Dv, Dv);
}

static void load_state(double *D, const float *S, size_t n) {
    for (size_t i = 0; i < n; i++) D[i] = S[i];
}
static void store_state(float *S, const double *D, size_t n) {
    for (size_t i = 0; i < n; i++) S[i] = (float)D[i];
}
static void load_vec(double *d, const float *s, int n) {
    for (int i = 0; i < n; i++) d[i] = s[i];
}
static void store_vec(float *d, const double *s, int n) {
    for (int i = 0; i < n; i++) d[i] = (float)s[i];
}

size_t cpu_gdn_scratch(int Dk, int Dv) {
    size_t C = CPU_GDN_CHUNK;
    /* state [Dk, Dv]; Qc, Kc [C, Dk]; U [C, Dv]; KK, QK [C, C]; c, w [C]; tmp, tmp2 [Dv] */
    return (size_t)Dk * Dv + 2 * C * (size_t)Dk + C * (size_t)Dv + 2 * C * C + 2 * C +
           2 * (size_t)Dv;
}

void cpu_gdn_recurrent(const cpu_gdn_run *r, float *Sf, double *scratch) {
    int Dk = r->Dk, Dv = r->Dv;
    double *S = scratch, *u = S + (size_t)Dk * Dv, *o = u + Dv, *q = o + Dv, *k = q + Dk;
    load_state(S, Sf, (size_t)Dk * Dv);
    for (int i = 0; i < r->n; i++) {
        size_t t = (size_t)r->tok[i];
        load_vec(q, r->q + t * r->ldq, Dk);
        load_vec(k, r->k + t * r->ldq, Dk);
        const float *v = r->v + t * r->ldv;
        double e = exp((double)r->g[t * r->ldg]), b = r->beta[t * r->ldg];
        /* pass 1: decay the state and read u = k^T S */
        memset(u, 0, (size_t)Dv * sizeof(double));
        for (int d = 0; d < Dk; d++) {
            double *row = S + (size_t)d * Dv;
            for (int j = 0; j < Dv; j++) row[j] *= e;
            axpy(u, k[d], row, Dv);
        }
        for (int j = 0; j < Dv; j++) u[j] = (v[j] - u[j]) * b;
        /* pass 2: rank-1 update and read out = q^T S */
        memset(o, 0, (size_t)Dv * sizeof(double));
        for (int d = 0; d < Dk; d++) {
            double *row = S + (size_t)d * Dv;
            axpy(row, k[d], u, Dv);
            axpy(o, q[d], row, Dv);
        }
        store_vec(r->out + t * r->ldv, o, Dv);
    }
    store_state(Sf, S, (size_t)Dk * Dv);
}

/* One chunk of C <= CPU_GDN_CHUNK tokens (tok[0..C)) from state S. */
static void chunk(const cpu_gdn_run *r, const int32_t *tok, int C, double *S, double *scratch) {
    int Dk = r->Dk, Dv = r->Dv;
    const int CM = CPU_GDN_CHUNK;
    double *Qc = scratch, *Kc = Qc + (size_t)CM * Dk, *U = Kc + (size_t)CM * Dk;
    double *KK = U + (size_t)CM * Dv, *QK = KK + (size_t)CM * CM, *c = QK + (size_t)CM * CM;
    double *w = c + CM, *tmp = w + CM;
    double acc = 0.0;
    for (int i = 0; i < C; i++) {
        size_t t = (size_t)tok[i];
        load_vec(Qc + (size_t)i * Dk, r->q + t * r->ldq, Dk);
        load_vec(Kc + (size_t)i * Dk, r->k + t * r->ldq, Dk);
        acc += r->g[t * r->ldg];
        c[i] = acc;
    }
    /* intra-chunk products with their decays */
    for (int i = 0; i < C; i++) {
        const double *qi = Qc + (size_t)i * Dk, *ki = Kc + (size_t)i * Dk;
        double bi = r->beta[(size_t)tok[i] * r->ldg];
        for (int j = 0; j <= i; j++) {
            const double *kj = Kc + (size_t)j * Dk;
            double dec = exp(c[i] - c[j]);
            QK[(size_t)i * CM + j] = dot(qi, kj, Dk) * dec;
            if (j < i) KK[(size_t)i * CM + j] = dot(ki, kj, Dk) * dec * bi;
        }
    }
    /* right-hand side beta_i (v_i - exp(c_i) k_i^T S0), then forward substitution */
    for (int i = 0; i < C; i++) {
        size_t t = (size_t)tok[i];
        const float *v = r->v + t * r->ldv;
        double bi = r->beta[t * r->ldg], e = exp(c[i]);
        double *ui = U + (size_t)i * Dv;
        vec_mat(tmp, Kc + (size_t)i * Dk, S, Dk, Dv);
        for (int j = 0; j < Dv; j++) ui[j] = bi * (v[j] - e * tmp[j]);
        for (int j = 0; j < i; j++) axpy(ui, -KK[(size_t)i * CM + j], U + (size_t)j * Dv, Dv);
    }
    /* outputs from the state before the chunk plus the intra-chunk part */
    for (int i = 0; i < C; i++) {
        vec_mat(tmp, Qc + (size_t)i * Dk, S, Dk, Dv);
        double e = exp(c[i]);
        for (int j = 0; j < Dv; j++) tmp[j] *= e;
        for (int j = 0; j <= i; j++) axpy(tmp, QK[(size_t)i * CM + j], U + (size_t)j * Dv, Dv);
        store_vec(r->out + (size_t)tok[i] * r->ldv, tmp, Dv);
    }
    /* state after the chunk */
    double eC = exp(c[C - 1]);
    for (int j = 0; j < C; j++) w[j] = exp(c[C - 1] - c[j]);
    for (int d = 0; d < Dk; d++) {
        double *row = S + (size_t)d * Dv;
        for (int j = 0; j < Dv; j++) row[j] *= eC;
        for (int j = 0; j < C; j++) axpy(row, w[j] * Kc[(size_t)j * Dk + d], U + (size_t)j * Dv, Dv);
    }
}

void cpu_gdn_chunked(const cpu_gdn_run *r, float *Sf, double *scratch) {
    size_t dd = (size_t)r->Dk * r->Dv;
    double *S = scratch;
    load_state(S, Sf, dd);
    for (int i0 = 0; i0 < r->n; i0 += CPU_GDN_CHUNK) {
        int C = r->n - i0 < CPU_GDN_CHUNK ? r->n - i0 : CPU_GDN_CHUNK;
        chunk(r, r->tok + i0, C, S, scratch + dd);
    }
    store_state(Sf, S, dd);
}
