/* Instruction peaks (qmm_peak.h): each thread runs NACC independent
 * accumulator chains of one instruction over register operands, so neither
 * latency nor memory limits the rate; the operands are drawn at run time
 * and the results are kept, so the compiler can neither fold nor drop the
 * chains. */
#include "quant/qmm_peak.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "quant/qmatmul.h"

#define NACC 12 /* chains per thread: > latency x instructions per cycle on current cores */
#define ITERS 4096 /* instructions per chain and work item */

static volatile uint64_t pk_sink;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    uint32_t seed;  /* operand bits, drawn by the caller */
    uint64_t sink[64]; /* one slot per work item mod 64, keeps the results alive */
} pk_ctx;

/* NACC = 12 named accumulators (an array was left in memory at -O2) */
#define PK_BODY(T, SET1, OP, SUM)                                                          \
    pk_ctx *c = p;                                                                       \
    for (size_t it = b; it < e; it++) {                                                  \
        const uint32_t s0 = c->seed;                                                     \
        T a0 = SET1(s0), a1 = SET1(s0 + 1), a2 = SET1(s0 + 2), a3 = SET1(s0 + 3);        \
        T a4 = SET1(s0 + 4), a5 = SET1(s0 + 5), a6 = SET1(s0 + 6), a7 = SET1(s0 + 7);    \
        T a8 = SET1(s0 + 8), a9 = SET1(s0 + 9), a10 = SET1(s0 + 10), a11 = SET1(s0 + 11); \
        const T x = SET1(s0 ^ 0x3c00u), y = SET1(s0 ^ 0x1f00u);                          \
        for (int n = 0; n < ITERS; n++) {                                                \
            a0 = OP(a0, x, y), a1 = OP(a1, x, y), a2 = OP(a2, x, y), a3 = OP(a3, x, y);  \
            a4 = OP(a4, x, y), a5 = OP(a5, x, y), a6 = OP(a6, x, y), a7 = OP(a7, x, y);  \
            a8 = OP(a8, x, y), a9 = OP(a9, x, y), a10 = OP(a10, x, y), a11 = OP(a11, x, y); \
        }                                                                                \
        a0 = SUM(SUM(SUM(a0, a1), SUM(a2, a3)), SUM(SUM(a4, a5), SUM(a6, a7)));          \
        a0 = SUM(a0, SUM(SUM(a8, a9), SUM(a10, a11)));                                   \
        uint64_t v;                                                                      \
        memcpy(&v, &a0, sizeof v);                                                       \
        c->sink[it % 64] ^= v;                                                           \
    }

#define SET1_PS256(u) _mm256_castsi256_ps(_mm256_set1_epi32((int)(0x3f800000u | ((u) & 0xffffu))))
#define FMA256(a, x, y) _mm256_fmadd_ps(x, y, a)
__attribute__((target("avx2,fma"))) static void pk_fma_ymm(void *p, size_t b, size_t e) {
    PK_BODY(__m256, SET1_PS256, FMA256, _mm256_add_ps)
}

#define SET1_PS512(u) _mm512_castsi512_ps(_mm512_set1_epi32((int)(0x3f800000u | ((u) & 0xffffu))))
#define FMA512(a, x, y) _mm512_fmadd_ps(x, y, a)
__attribute__((target("avx512f"))) static void pk_fma_zmm(void *p, size_t b, size_t e) {
    PK_BODY(__m512, SET1_PS512, FMA512, _mm512_add_ps)
}

#define SET1_I256(u) _mm256_set1_epi32((int)((u) & 0x7f7f7f7fu))
#define DP256(a, x, y) _mm256_dpbusd_avx_epi32(a, x, y)
__attribute__((target("avx2,avxvnni"))) static void pk_dpbusd_ymm(void *p, size_t b, size_t e) {
    PK_BODY(__m256i, SET1_I256, DP256, _mm256_add_epi32)
}

#define SET1_I512(u) _mm512_set1_epi32((int)((u) & 0x7f7f7f7fu))
#define DP512(a, x, y) _mm512_dpbusd_epi32(a, x, y)
__attribute__((target("avx512f,avx512vnni"))) static void pk_dpbusd_zmm(void *p, size_t b, size_t e) {
    PK_BODY(__m512i, SET1_I512, DP512, _mm512_add_epi32)
}

/* the AVX2 int8 kernel's step: u8 x s8 pairs to int16, pairs of those to
 * int32 (times ones), added into the accumulator */
__attribute__((target("avx2"))) static inline __m256i pk_maddubs(__m256i a, __m256i x, __m256i y) {
    return _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1)));
}
__attribute__((target("avx2"))) static void pk_maddubs_ymm(void *p, size_t b, size_t e) {
    PK_BODY(__m256i, SET1_I256, pk_maddubs, _mm256_add_epi32)
}

static const struct {
    const char *name;
    tp_fn fn;
    double ops; /* per instruction (or per triple) and chain step */
} PK[QPK_COUNT] = {
    [QPK_FMA_YMM] = {"fma ymm", pk_fma_ymm, 16},
    [QPK_FMA_ZMM] = {"fma zmm", pk_fma_zmm, 32},
    [QPK_DPBUSD_YMM] = {"vpdpbusd ymm", pk_dpbusd_ymm, 64},
    [QPK_DPBUSD_ZMM] = {"vpdpbusd zmm", pk_dpbusd_zmm, 128},
    [QPK_MADDUBS_YMM] = {"maddubs ymm", pk_maddubs_ymm, 64},
};

static int pk_have(unsigned f, int i) {
    switch (i) {
    case QPK_FMA_YMM:
    case QPK_MADDUBS_YMM: return !!(f & QMM_CPU_AVX2);
    case QPK_FMA_ZMM: return !!(f & QMM_CPU_AVX512);
    case QPK_DPBUSD_YMM: return !!(f & QMM_CPU_VNNI);
    case QPK_DPBUSD_ZMM: return !!(f & QMM_CPU_VNNI512);
    default: return 0;
    }
}

int qmm_peak_measure(qmm_peaks *p, tpool *tp) {
    memset(p, 0, sizeof *p);
    const unsigned f = qmm_cpu_features();
    const int nt = tp ? tp_nthreads(tp) : 1;
    pk_ctx c;
    memset(&c, 0, sizeof c);
    c.seed = (uint32_t)time(NULL) * 2654435761u; /* operands drawn per run */
    for (int i = 0; i < QPK_COUNT; i++) {
        if (!pk_have(f, i)) continue;
        /* items per run: ~30 ms at a guess of 2 G chain steps per second and thread */
        size_t items = (size_t)nt * 2;
        double best = 0;
        for (int rep = 0; rep < 4; rep++) {
            double t0 = now_s();
            if (tp) tp_run(tp, items, 1, PK[i].fn, &c);
            else PK[i].fn(&c, 0, items);
            double dt = now_s() - t0;
            if (rep == 0) { /* calibrate once, then time */
                size_t want = (size_t)((double)items * 0.03 / (dt > 1e-6 ? dt : 1e-6));
                items = want < (size_t)nt ? (size_t)nt : want;
                items = (items + (size_t)nt - 1) / (size_t)nt * (size_t)nt;
                continue;
            }
            double ops = (double)items * NACC * ITERS * PK[i].ops / dt;
            if (ops > best) best = ops;
        }
        p->ops[i] = best;
    }
    uint64_t s = 0;
    for (int i = 0; i < 64; i++) s ^= c.sink[i];
    pk_sink = s; /* the chains' results stay observable */
    return 0;
}

const char *qmm_peak_name(qpk_instr i) { return i >= 0 && i < QPK_COUNT ? PK[i].name : "?"; }

int qmm_peak_of_kernel(const char *k) {
    static const struct {
        const char *kernel;
        int instr;
    } T[] = {
        {"cpu.matmul.f32.avx2", QPK_FMA_YMM},       {"cpu.matmul.f16.avx2", QPK_FMA_YMM},
        {"cpu.matmul.bf16.avx2", QPK_FMA_YMM},      {"cpu.qmm.fp8.avx2", QPK_FMA_YMM},
        {"cpu.qmm.i8wo.avx2", QPK_FMA_YMM},         {"cpu.qmm.fp8.avx512", QPK_FMA_ZMM},
        {"cpu.qmm.i8wo.avx512", QPK_FMA_ZMM},       {"cpu.qmm.int8.avx512vnni", QPK_DPBUSD_ZMM},
        {"cpu.qmm.int8.avxvnni", QPK_DPBUSD_YMM},   {"cpu.qmm.int8.avx2", QPK_MADDUBS_YMM},
        {"cpu.matmul.f32.avx512vl", QPK_FMA_YMM},   {"cpu.matmul.f16.avx512vl", QPK_FMA_YMM},
        {"cpu.matmul.bf16.avx512vl", QPK_FMA_YMM},
    };
    for (size_t i = 0; k && i < sizeof T / sizeof *T; i++)
        if (!strcmp(k, T[i].kernel)) return T[i].instr;
    return -1;
}
