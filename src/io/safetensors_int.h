/* Internals shared by safetensors.c (header parsing, the set, lookups) and
 * safetensors_dir.c (directories and sharded index files). Not a public API. */
#pragma once
#include <stddef.h>

#include "io/safetensors.h"

typedef struct {
    char *path;       /* as opened; used in every message */
    void *map;        /* mmap base (NULL for st_open_mem) */
    size_t map_len;
} st_file;

struct st_set {
    st_file *files;
    int n_files, cap_files;
    st_tensor *tensors;   /* [n] in file order, then header order */
    size_t n, cap;
    size_t *slots;        /* open-addressed hash: index+1 into tensors, 0 = empty */
    size_t n_slots;       /* power of two, >= 2n (0 until st__index) */
};

/* Empty set; NULL + message on allocation failure. */
st_set *st__new(void);
/* Map `path` read-only and append its tensors as shard `file` of `s`.
 * Returns 0, or -1 with "path: problem" set. Tensor names must not clash with
 * names already in `s` (checked later by st__index). */
int st__add_file(st_set *s, const char *path);
/* Build the name hash; fails on a duplicate name ("label: duplicate tensor 'x'
 * in a.safetensors and b.safetensors"). */
int st__index(st_set *s);
