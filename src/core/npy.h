/* NumPy .npy writer/reader for float32 C-order arrays (format version 1.0). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Write data[shape[0]*...*shape[ndim-1]] as '<f4'. Returns 0 or -1 (dl_errmsg). */
int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape);
/* Read a '<f4' C-order array. *data is malloc'd; shape gets up to 8 dims. */
int npy_read_f32(const char *path, float **data, int *ndim, int64_t shape[8]);
