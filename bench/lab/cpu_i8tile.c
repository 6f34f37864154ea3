/* Lab: where the AVX-512 VNNI W8A8 GEMM tile (4 activation rows x 6 weight
 * rows, lanes over K, int8mm_avx512.c's mk4x6 shape) loses its rate.
 * Times the tile over K bytes of each row with the operands hot in L1
 * (K = 512, repeated), in L2 (K = 4096: 40 KB per tile), and in the GEMM's
 * own order (every 4-row group against one 6-row group before the next, M
 * = 256 rows of activations, 1 MB, re-read per weight group), in GOP/s of
 * one core (dotlm bench prints the vpdpbusd zmm peak).
 * Build: cc -O2 -mavx512f -mavx512bw -mavx512vnni -o /tmp/i8tile bench/lab/cpu_i8tile.c */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint32_t hs(__m512i v) { return (uint32_t)_mm512_reduce_add_epi32(v); }

/* the tile: o[i][r] ^= sum_k u[i][k] * w[r][k]; named accumulators, as in
 * int8mm_avx512.c (an array stays in memory at -O2) */
static void tile(const uint8_t *const *u, const int8_t *const *w, long len, uint32_t *o) {
#define Z _mm512_setzero_si512()
    __m512i a00 = Z, a01 = Z, a02 = Z, a03 = Z, a04 = Z, a05 = Z;
    __m512i a10 = Z, a11 = Z, a12 = Z, a13 = Z, a14 = Z, a15 = Z;
    __m512i a20 = Z, a21 = Z, a22 = Z, a23 = Z, a24 = Z, a25 = Z;
    __m512i a30 = Z, a31 = Z, a32 = Z, a33 = Z, a34 = Z, a35 = Z;
    const uint8_t *u0 = u[0], *u1 = u[1], *u2 = u[2], *u3 = u[3];
    for (long k = 0; k < len; k += 64) {
        __m512i b0 = _mm512_loadu_si512(w[0] + k), b1 = _mm512_loadu_si512(w[1] + k), b2 = _mm512_loadu_si512(w[2] + k);
        __m512i b3 = _mm512_loadu_si512(w[3] + k), b4 = _mm512_loadu_si512(w[4] + k), b5 = _mm512_loadu_si512(w[5] + k);
#define ROW(i)                                                                         \
    {                                                                                  \
        __m512i x = _mm512_loadu_si512(u##i + k);                                      \
        a##i##0 = _mm512_dpbusd_epi32(a##i##0, x, b0), a##i##1 = _mm512_dpbusd_epi32(a##i##1, x, b1); \
        a##i##2 = _mm512_dpbusd_epi32(a##i##2, x, b2), a##i##3 = _mm512_dpbusd_epi32(a##i##3, x, b3); \
        a##i##4 = _mm512_dpbusd_epi32(a##i##4, x, b4), a##i##5 = _mm512_dpbusd_epi32(a##i##5, x, b5); \
    }
        ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
    }
#define OUT(i) o[i * 6 + 0] ^= hs(a##i##0), o[i * 6 + 1] ^= hs(a##i##1), o[i * 6 + 2] ^= hs(a##i##2), \
               o[i * 6 + 3] ^= hs(a##i##3), o[i * 6 + 4] ^= hs(a##i##4), o[i * 6 + 5] ^= hs(a##i##5);
    OUT(0) OUT(1) OUT(2) OUT(3)
#undef OUT
}

/* the same products as 6 activation rows x 4 weight rows: 24 accumulators,
 * 4 weights and 1 activation live (29 zmm: GCC keeps them in registers;
 * with 4 x 6, 31 live, it spills accumulators inside the K loop) */
static void tile64(const uint8_t *const *u, const int8_t *const *w, long len, uint32_t *o) {
    __m512i a00 = Z, a01 = Z, a02 = Z, a03 = Z, a10 = Z, a11 = Z, a12 = Z, a13 = Z;
    __m512i a20 = Z, a21 = Z, a22 = Z, a23 = Z, a30 = Z, a31 = Z, a32 = Z, a33 = Z;
    __m512i a40 = Z, a41 = Z, a42 = Z, a43 = Z, a50 = Z, a51 = Z, a52 = Z, a53 = Z;
    const uint8_t *u0 = u[0], *u1 = u[1], *u2 = u[2], *u3 = u[3], *u4 = u[4], *u5 = u[5];
    for (long k = 0; k < len; k += 64) {
        __m512i b0 = _mm512_loadu_si512(w[0] + k), b1 = _mm512_loadu_si512(w[1] + k);
        __m512i b2 = _mm512_loadu_si512(w[2] + k), b3 = _mm512_loadu_si512(w[3] + k);
#define ROW(i)                                                                         \
    {                                                                                  \
        __m512i x = _mm512_loadu_si512(u##i + k);                                      \
        a##i##0 = _mm512_dpbusd_epi32(a##i##0, x, b0), a##i##1 = _mm512_dpbusd_epi32(a##i##1, x, b1); \
        a##i##2 = _mm512_dpbusd_epi32(a##i##2, x, b2), a##i##3 = _mm512_dpbusd_epi32(a##i##3, x, b3); \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
    }
#define OUT(i) o[i * 4 + 0] ^= hs(a##i##0), o[i * 4 + 1] ^= hs(a##i##1), o[i * 4 + 2] ^= hs(a##i##2), \
               o[i * 4 + 3] ^= hs(a##i##3);
    OUT(0) OUT(1) OUT(2) OUT(3) OUT(4) OUT(5)
#undef OUT
}

int main(void) {
    const long M = 256, N = 64, KMAX = 4096;
    uint8_t *x = aligned_alloc(64, M * KMAX);
    int8_t *wt = aligned_alloc(64, N * KMAX);
    srand((unsigned)time(NULL));
    for (long i = 0; i < M * KMAX; i++) x[i] = (uint8_t)(1 + rand() % 255);
    for (long i = 0; i < N * KMAX; i++) wt[i] = (int8_t)(rand() % 255 - 127);
    uint32_t o[24] = {0};
    /* three cases: hot K = 512 (same rows), K = 4096 same rows, GEMM order over M x 64 */
    long Ks[2] = {512, 4096};
    for (int c = 0; c < 6; c++) {
        const int t64 = c >= 3; /* 6 x 4 tiles */
        long K = c % 3 == 0 ? Ks[0] : Ks[1];
        double best = 0;
        for (int rep = 0; rep < 5; rep++) {
            double ops = 0, t0 = now();
            const int MR = t64 ? 6 : 4, NR = t64 ? 4 : 6;
            if (c % 3 < 2) {
                const uint8_t *u[6];
                const int8_t *w[6];
                for (int i = 0; i < 6; i++) u[i] = x + i * KMAX, w[i] = wt + i * KMAX;
                long it = (1L << 28) / (24 * K);
                for (long r = 0; r < it; r++) t64 ? tile64(u, w, K, o) : tile(u, w, K, o);
                ops = 2.0 * 24 * K * it;
            } else {
                for (long r0 = 0; r0 < N; r0 += NR) {
                    const int8_t *w[6];
                    for (int r = 0; r < NR; r++) w[r] = wt + (r0 + r < N ? r0 + r : N - 1) * KMAX;
                    for (long m0 = 0; m0 < M; m0 += MR) {
                        const uint8_t *u[6];
                        for (int i = 0; i < MR; i++) u[i] = x + (m0 + i < M ? m0 + i : M - 1) * KMAX;
                        t64 ? tile64(u, w, K, o) : tile(u, w, K, o);
                        ops += 2.0 * 24 * K;
                    }
                }
            }
            double g = ops / (now() - t0) * 1e-9;
            if (g > best) best = g;
        }
        printf("%s %-36s %7.1f GOP/s\n", t64 ? "6x4" : "4x6", c % 3 == 0 ? "hot, K = 512" : c % 3 == 1 ? "same rows, K = 4096 (L2)" : "GEMM order, M = 256, K = 4096", best);
    }
    uint32_t s = 0;
    for (int i = 0; i < 24; i++) s ^= o[i];
    printf("(checksum %u)\n", s);
    return 0;
}
