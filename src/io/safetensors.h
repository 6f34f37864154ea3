/* safetensors container: one file or a sharded set (model.safetensors.index.json).
 * Files are memory-mapped read-only; every header field is validated against
 * the file size before any tensor is exposed. Tensor data pointers stay valid
 * until st_close(). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#define ST_MAX_DIMS 8

typedef struct {
    const char *name;  /* tensor name (owned by the set) */
    dl_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;  /* mapped bytes, nbytes long; NOT necessarily aligned
                          to the element size (offsets are the file's) */
    size_t nbytes;
    int file;          /* index of the shard it lives in */
} st_tensor;

typedef struct st_set st_set;

/* Open a single .safetensors file. NULL + dl_errmsg() naming the file and
 * problem on any inconsistency (short file, header length past EOF, bad JSON,
 * unknown dtype, offsets out of range or overlapping, shape/size mismatch). */
st_set *st_open_file(const char *path);
/* Open a model directory: model.safetensors.index.json if present (every shard
 * it names), else model.safetensors, else every *.safetensors in the dir. */
st_set *st_open_dir(const char *dir);
/* Parse a header held in memory (buf = whole file image of `len` bytes);
 * used by the fuzzer and tests. `label` names the source in errors. Tensor
 * data points into `buf`, which must outlive the set. */
st_set *st_open_mem(const void *buf, size_t len, const char *label);
void st_close(st_set *s);

size_t st_count(const st_set *s);
const st_tensor *st_at(const st_set *s, size_t i);
/* NULL if absent (no error set). */
const st_tensor *st_find(const st_set *s, const char *name);
/* Sum of all tensor bytes. */
size_t st_total_bytes(const st_set *s);
/* File name (path as opened) of shard i, for messages; "?" out of range. */
const char *st_file_name(const st_set *s, int i);
/* Number of files (shards) in the set. */
int st_file_count(const st_set *s);
