/* Reduced numeric sweep of the quantized matmul (full table: qmm_sweep(out, 1)). */
#include <stdio.h>

#include "core/err.h"
#include "quant/qmatmul.h"
#include "testutil.h"

int main(void) {
    int rc = qmm_sweep(stdout, 0);
    CHECKF(rc == 0, "%s", dl_errmsg());
    return TEST_END();
}
