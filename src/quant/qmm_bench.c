/* Quick bench of the quantized matmul: GEMV (M = 1) throughput as GB/s of
 * weight bytes (codes + scales) per format next to the machine's measured
 * memory read bandwidth, plus GEMM GFLOP/s at M = 64. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "quant/qmatmul.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    const uint8_t *buf;
    size_t chunk;
    uint64_t sink[64];
} bw_ctx;

__attribute__((target("avx2"))) static void bw_read(void *p, size_t b, size_t e) {
    bw_ctx *c = p;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = b; i < e; i++) {
        const __m256i *q = (const __m256i *)(c->buf + i * c->chunk);
        for (size_t j = 0; j < c->chunk / 32; j += 4) {
            a0 = _mm256_xor_si256(a0, _mm256_load_si256(q + j));
            a1 = _mm256_xor_si256(a1, _mm256_load_si256(q + j + 1));
            a2 = _mm256_xor_si256(a2, _mm256_load_si256(q + j + 2));
            a3 = _mm256_xor_si256(a3, _mm256_load_si256(q + j + 3));
        }
    }
    __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    c->sink[b % 64] ^= (uint64_t)_mm256_extract_epi64(a, 0); /* keep the loads alive */
}

double qmm_mem_read_bw(tpool *tp) {
    if (!__builtin_cpu_supports("avx2")) return dl_err("qmm_mem_read_bw: needs AVX2");
    const size_t size = (size_t)512 << 20, chunk = (size_t)1 << 20;
    uint8_t *buf = aligned_alloc(64, size);
    if (!buf) return dl_err("qmm_mem_read_bw: out of memory");
    memset(buf, 1, size);
    bw_ctx c = {.buf = buf, .chunk = chunk};
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = now_s();
        if (tp) tp_run(tp, size / chunk, 4, bw_read, &c);
        else bw_read(&c, 0, size / chunk);
        double gbs = (double)size / (now_s() - t0) * 1e-9;
        if (gbs > best) best = gbs;
    }
    free(buf);
    return best;
}

typedef struct {
    const char *name;
    dl_dtype dt;
    dl_wscale kind;
    dl_actq actq;
} bench_fmt;

/* Seconds per call, best of 3 timed batches of about 0.2 s each; each call
 * uses the next of the nw weights (nw copies larger than the last-level
 * cache make every call stream its weights from memory). */
static double time_call(float *y, const float *x, dl_weight *w, int nw, int M, tpool *tp) {
    if (qmm_matmul(y, x, &w[0], M, tp)) return -1;
    double best = 1e30;
    int c = 0;
    for (int rep = 0; rep < 3; rep++) {
        int it = 0;
        double t0 = now_s(), t;
        do {
            qmm_matmul(y, x, &w[c], M, tp);
            c = (c + 1) % nw;
            it++;
        } while ((t = now_s() - t0) < 0.2);
        if (t / it < best) best = t / it;
    }
    return best;
}

#define NCOPY 32 /* 32 x 16 MiB of codes: beyond any last-level cache here */

int qmm_bench(FILE *out, int nthreads) {
    static const bench_fmt F[] = {
        {"int8 channel W8A8", DT_I8, WS_CHANNEL, ACT_INT8_TOKEN},
        {"e4m3 block128 weight-only", DT_F8E4M3, WS_BLOCK, ACT_NATIVE},
        {"e4m3 block128 declared", DT_F8E4M3, WS_BLOCK, ACT_FP8_GROUP},
        {"e5m2 block128 weight-only", DT_F8E5M2, WS_BLOCK, ACT_NATIVE},
        {"e4m3 channel weight-only", DT_F8E4M3, WS_CHANNEL, ACT_NATIVE},
        {"e4m3 channel declared", DT_F8E4M3, WS_CHANNEL, ACT_FP8_TOKEN},
    };
    const int64_t N = 4096, K = 4096;
    const int MG = 64;
    tpool *tp = tp_create(nthreads);
    if (!tp) return -1;
    uint8_t *codes = malloc((size_t)(N * K) * NCOPY);
    float *scales = malloc((size_t)N * 4), *x = malloc((size_t)(MG * K) * 4);
    float *y = malloc((size_t)(MG * N) * 4);
    if (!codes || !scales || !x || !y) {
        free(codes), free(scales), free(x), free(y), tp_free(tp);
        return dl_err("qmm_bench: out of memory");
    }
    uint64_t s = 88172645463325252ull;
    for (int64_t i = 0; i < N * K * NCOPY; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        codes[i] = (uint8_t)(s % 0x7e) | (uint8_t)(s >> 63 << 7); /* finite in every format */
    }
    for (int64_t i = 0; i < N; i++) scales[i] = 1e-3f * (float)(1 + i % 5);
    for (int64_t i = 0; i < MG * K; i++) x[i] = (float)((i * 7919) % 2001 - 1000) * 1e-3f;
    double bw1 = qmm_mem_read_bw(NULL), bwn = tp_nthreads(tp) > 1 ? qmm_mem_read_bw(tp) : bw1;
    fprintf(out, "memory read bandwidth (512 MiB stream): %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n",
            bw1, bwn, tp_nthreads(tp));
    fprintf(out, "GEMV M=1, N=K=4096, %d threads; GB/s of weight bytes (codes + scales)\n",
            tp_nthreads(tp));
    fprintf(out, "%-28s %9s %9s %8s %9s %13s\n", "format", "cold us", "cold GB/s", "% of bw",
            "hot GB/s", "M=64 GFLOP/s");
    for (size_t i = 0; i < sizeof F / sizeof *F; i++) {
        dl_weight w[NCOPY];
        for (int c = 0; c < NCOPY; c++)
            w[c] = (dl_weight){.name = F[i].name, .dtype = F[i].dt, .n = N, .k = K, .ld = K,
                               .data = codes + (size_t)c * (size_t)(N * K),
                               .scale_kind = F[i].kind, .scale_dtype = DT_F32, .scale = scales,
                               .bn = 128, .bk = 128, .actq = F[i].actq};
        double tc = time_call(y, x, w, NCOPY, 1, tp), th = time_call(y, x, w, 1, 1, tp);
        double tg = time_call(y, x, w, 1, MG, tp);
        if (tc < 0 || th < 0 || tg < 0) {
            fprintf(out, "%-28s failed: %s\n", F[i].name, dl_errmsg());
            continue;
        }
        double b = (double)w_bytes(&w[0]);
        fprintf(out, "%-28s %9.1f %9.2f %7.0f%% %9.2f %13.1f\n", F[i].name, tc * 1e6, b / tc * 1e-9,
                100.0 * b / tc * 1e-9 / bwn, b / th * 1e-9, 2.0 * MG * N * K / tg * 1e-9);
    }
    free(codes), free(scales), free(x), free(y);
    tp_free(tp);
    return 0;
}
