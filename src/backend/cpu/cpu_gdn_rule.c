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
 * Every exponent is <= 0 (g < 0), so nothing overflows. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_gdn.h"

/* y[0..n) += a * x[0..n) */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
    for (int j = 0; j < n; j++) y[j] += a * x[j];
}

static inline float dot(const float *restrict a, const float *restrict b, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) s += a[j] * b[j];
    return s;
}

/* out[0..Dv) = x^T S for x [Dk], S [Dk, Dv]. */
static void vec_mat(float *restrict out, const float *restrict x, const float *restrict S, int Dk,
                    int Dv) {
    memset(out, 0, (size_t)Dv * sizeof(float));
    for (int d = 0; d < Dk; d++) axpy(out, x[d], S + (size_t)d * Dv, Dv);
}

void cpu_gdn_recurrent(const cpu_gdn_run *r, float *S) {
    int Dk = r->Dk, Dv = r->Dv;
    float u[CPU_GDN_MAX_DV], o[CPU_GDN_MAX_DV];
    for (int i = 0; i < r->n; i++) {
        size_t t = (size_t)r->tok[i];
        const float *q = r->q + t * r->ldq, *k = r->k + t * r->ldq, *v = r->v + t * r->ldv;
        float e = expf(r->g[t * r->ldg]), b = r->beta[t * r->ldg];
        /* pass 1: decay the state and read u = k^T S */
        memset(u, 0, (size_t)Dv * sizeof(float));
        for (int d = 0; d < Dk; d++) {
            float *row = S + (size_t)d * Dv;
            for (int j = 0; j < Dv; j++) row[j] *= e;
            axpy(u, k[d], row, Dv);
        }
        for (int j = 0; j < Dv; j++) u[j] = (v[j] - u[j]) * b;
        /* pass 2: rank-1 update and read out = q^T S */
        memset(o, 0, (size_t)Dv * sizeof(float));
        for (int d = 0; d < Dk; d++) {
            float *row = S + (size_t)d * Dv;
            axpy(row, k[d], u, Dv);
            axpy(o, q[d], row, Dv);
        }
        memcpy(r->out + t * r->ldv, o, (size_t)Dv * sizeof(float));
    }
}

size_t cpu_gdn_chunk_scratch(int Dk, int Dv) {
    size_t C = CPU_GDN_CHUNK;
    /* Qc, Kc [C, Dk]; U [C, Dv]; KK, QK [C, C]; c, w [C]; tmp [Dv] */
    return 2 * C * (size_t)Dk + C * (size_t)Dv + 2 * C * C + 2 * C + (size_t)Dv;
}

/* One chunk of C <= CPU_GDN_CHUNK tokens (tok[0..C)) from state S. */
static void chunk(const cpu_gdn_run *r, const int32_t *tok, int C, float *S, float *scratch) {
    int Dk = r->Dk, Dv = r->Dv;
    const int CM = CPU_GDN_CHUNK;
    float *Qc = scratch, *Kc = Qc + (size_t)CM * Dk, *U = Kc + (size_t)CM * Dk;
    float *KK = U + (size_t)CM * Dv, *QK = KK + (size_t)CM * CM, *c = QK + (size_t)CM * CM;
    float *w = c + CM, *tmp = w + CM;
    double acc = 0.0;
    for (int i = 0; i < C; i++) {
        size_t t = (size_t)tok[i];
        memcpy(Qc + (size_t)i * Dk, r->q + t * r->ldq, (size_t)Dk * sizeof(float));
        memcpy(Kc + (size_t)i * Dk, r->k + t * r->ldq, (size_t)Dk * sizeof(float));
        acc += r->g[t * r->ldg];
        c[i] = (float)acc;
    }
    /* intra-chunk products with their decays */
    for (int i = 0; i < C; i++) {
        const float *qi = Qc + (size_t)i * Dk, *ki = Kc + (size_t)i * Dk;
        float bi = r->beta[(size_t)tok[i] * r->ldg];
        for (int j = 0; j <= i; j++) {
            const float *kj = Kc + (size_t)j * Dk;
            float dec = expf(c[i] - c[j]);
            QK[(size_t)i * CM + j] = dot(qi, kj, Dk) * dec;
            if (j < i) KK[(size_t)i * CM + j] = dot(ki, kj, Dk) * dec * bi;
        }
    }
    /* right-hand side beta_i (v_i - exp(c_i) k_i^T S0), then forward substitution */
    for (int i = 0; i < C; i++) {
        size_t t = (size_t)tok[i];
        const float *v = r->v + t * r->ldv;
        float bi = r->beta[t * r->ldg], e = expf(c[i]);
        float *ui = U + (size_t)i * Dv;
        vec_mat(tmp, Kc + (size_t)i * Dk, S, Dk, Dv);
        for (int j = 0; j < Dv; j++) ui[j] = bi * (v[j] - e * tmp[j]);
        for (int j = 0; j < i; j++) axpy(ui, -KK[(size_t)i * CM + j], U + (size_t)j * Dv, Dv);
    }
    /* outputs from the state before the chunk plus the intra-chunk part */
    for (int i = 0; i < C; i++) {
        float *o = r->out + (size_t)tok[i] * r->ldv;
        vec_mat(tmp, Qc + (size_t)i * Dk, S, Dk, Dv);
        float e = expf(c[i]);
        for (int j = 0; j < Dv; j++) tmp[j] *= e;
        for (int j = 0; j <= i; j++) axpy(tmp, QK[(size_t)i * CM + j], U + (size_t)j * Dv, Dv);
        memcpy(o, tmp, (size_t)Dv * sizeof(float));
    }
    /* state after the chunk */
    float eC = expf(c[C - 1]);
    for (int j = 0; j < C; j++) w[j] = expf(c[C - 1] - c[j]);
    for (int d = 0; d < Dk; d++) {
        float *row = S + (size_t)d * Dv;
        for (int j = 0; j < Dv; j++) row[j] *= eC;
        for (int j = 0; j < C; j++) axpy(row, w[j] * Kc[(size_t)j * Dk + d], U + (size_t)j * Dv, Dv);
    }
}

void cpu_gdn_chunked(const cpu_gdn_run *r, float *S, float *scratch) {
    for (int i0 = 0; i0 < r->n; i0 += CPU_GDN_CHUNK) {
        int C = r->n - i0 < CPU_GDN_CHUNK ? r->n - i0 : CPU_GDN_CHUNK;
        chunk(r, r->tok + i0, C, S, scratch);
    }
}
