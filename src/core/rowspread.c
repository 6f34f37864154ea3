/* Row spreading for decode GEMVs: switch, counter and chunk size
 * (see rowspread.h). */
#include "core/rowspread.h"

#include "core/kreg.h"

static kreg_kernel K_spread = KREG_KERNEL(
    "cpu.gemv.spread", "decode GEMV tiles take their rows from far-apart parts of a chunk "
                       "(prefetch-friendly streams; same bits as adjacent rows)");

int rs_use(void) { return kreg_use(&K_spread); }

enum { RS_SPAN = 128 << 10 }; /* bytes between the parts a tile reads */

size_t rs_chunk_rows(size_t n, size_t row_bytes, int G, int nthreads) {
    size_t g = G > 0 ? (size_t)G : 1, nt = nthreads > 0 ? (size_t)nthreads : 1;
    size_t rb = row_bytes ? row_bytes : 1;
    size_t part = (RS_SPAN + rb - 1) / rb;          /* rows per part */
    size_t rows = part * g;
    size_t fair = (n + 2 * nt - 1) / (2 * nt);      /* two chunks per thread */
    if (nt > 1 && rows > fair) rows = fair;
    rows = rows / g * g;
    return rows < g ? g : rows;
}
