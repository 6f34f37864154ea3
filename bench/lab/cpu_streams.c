/* How fast one core reads S interleaved forward streams `sep` bytes apart.
 *
 * A decode GEMV tile reads S weight rows at once, one stream per row; rows
 * are adjacent in memory, so the streams are one row length apart. This
 * lab reads a 1 GiB buffer once per pass in exactly that pattern (blocks of
 * S * sep bytes; stream s reads the s-th sep-byte slice of its block, 32
 * bytes per step, the S streams in turn) and prints the best of 4 passes in
 * GB/s. It is what chose the row spreading of the CPU GEMVs
 * (src/core/rowspread.h, docs/cpu_backend.md "Row spreading").
 *
 *   cc -O2 -mavx2 -o /tmp/cpu_streams bench/lab/cpu_streams.c
 *   /tmp/cpu_streams                # the default table
 *   /tmp/cpu_streams SEP S          # one pattern
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best GB/s of 4 passes over buf (bytes long) with S streams sep apart. */
static double streams(const uint8_t *buf, size_t bytes, size_t sep, int S) {
    const size_t blk = sep * (size_t)S, nb = bytes / blk;
    __m256i acc = _mm256_setzero_si256();
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        double t = now_s();
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *p = buf + b * blk;
            for (size_t o = 0; o < sep; o += 32)
                for (int s = 0; s < S; s++)
                    acc = _mm256_xor_si256(acc, _mm256_loadu_si256((const __m256i *)(p + s * sep + o)));
        }
        t = now_s() - t;
        double g = (double)(nb * blk) / t * 1e-9;
        if (g > best) best = g;
    }
    volatile int sink = _mm256_extract_epi32(acc, 0); /* keep the loads alive */
    (void)sink;
    return best;
}

int main(int argc, char **argv) {
    const size_t bytes = (size_t)1 << 30;
    uint8_t *buf = aligned_alloc(4096, bytes);
    if (!buf) return fprintf(stderr, "cpu_streams: out of memory\n"), 1;
    for (size_t i = 0; i < bytes; i++) buf[i] = (uint8_t)(i * 2654435761u >> 24);
    if (argc == 3) {
        size_t sep = (size_t)atol(argv[1]);
        int S = atoi(argv[2]);
        if (sep < 32 || sep % 32 || S < 1) return fprintf(stderr, "usage: cpu_streams [SEP S] (SEP a multiple of 32)\n"), 2;
        printf("sep %zu B, %d streams: %.1f GB/s\n", sep, S, streams(buf, bytes, sep, S));
    } else {
        static const size_t seps[] = {64, 256, 896, 1792, 4096, 8192, 16384, 32768, 65536, 131072};
        printf("one core, GB/s; a stream per row, rows sep bytes apart\n");
        printf("%10s %8s %8s %8s\n", "sep (B)", "S = 1", "S = 4", "S = 8");
        for (size_t i = 0; i < sizeof seps / sizeof *seps; i++)
            printf("%10zu %8.1f %8.1f %8.1f\n", seps[i], streams(buf, bytes, seps[i], 1),
                   streams(buf, bytes, seps[i], 4), streams(buf, bytes, seps[i], 8));
    }
    free(buf);
    return 0;
}
