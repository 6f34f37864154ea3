/* Row spreading for decode GEMVs on the CPU.
 *
 * A decode GEMV (M < 4) streams a few weight rows at a time, one FMA chain
 * per row. Adjacent rows are a few hundred bytes to a few KiB apart, and some
 * CPUs' hardware prefetchers lose such nearby interleaved streams: on the dev
 * machine (AMD EPYC, 2 cores) one core reads 4 interleaved streams 1.8 KiB
 * apart at 11 GB/s, 64 KiB apart at 30 GB/s, one sequential stream at 30
 * GB/s (docs/cpu_backend.md, "Row spreading"). So a kernel that takes G rows
 * per tile takes them from G far-apart parts of its chunk instead:
 *
 *   chunk [n0, n1), L = n1 - n0, q = L / G:
 *     tile t < q:  rows n0 + t + g q   (g = 0 .. G-1; stride q rows)
 *     the last L - G q rows: consecutive tiles as before.
 *
 * Every output row is still computed by the same per-row operations (same
 * FMA order, same epilogue), so the results are bitwise those of adjacent
 * rows; only the order the rows are visited in changes. Chunks are made
 * large enough that the G parts are ~128 KiB apart (rs_chunk_rows).
 *
 * Switch and counter: "cpu.gemv.spread" (DOTLM_DISABLE=cpu.gemv.spread goes
 * back to adjacent rows); one dispatch per matmul call that spread. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* 1 (and counts a dispatch) if row spreading is enabled. */
int rs_use(void);

/* Rows per thread-pool chunk for a spread GEMV over n rows of row_bytes
 * bytes each, G rows per tile, nthreads threads: enough for ~128 KiB
 * between the G parts, at most what gives every thread two chunks, at
 * least G; a multiple of G. */
size_t rs_chunk_rows(size_t n, size_t row_bytes, int G, int nthreads);

/* Tile t (0, 1, ...) of a chunk [n0, n1) with G rows per tile: its rows are
 * *first + r * *step for r < the returned count; 0 once t is past the last
 * tile. spread = 0: adjacent rows (step 1) throughout. */
static inline int64_t rs_tile(int64_t n0, int64_t n1, int G, int spread, int64_t t, int64_t *first,
                              int64_t *step) {
    const int64_t q = spread ? (n1 - n0) / G : 0;
    if (t < q) {
        *first = n0 + t, *step = q;
        return G;
    }
    const int64_t f = n0 + G * q + (t - q) * G;
    if (f >= n1) return 0;
    *first = f, *step = 1;
    return n1 - f < G ? n1 - f : G;
}
