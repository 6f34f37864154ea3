/* Backend factory: maps a name to a backend implementation. GPU backends hook
 * in here under their build flags (#ifdef DOTLM_CUDA / DOTLM_HIP). */
#include "backend/backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "core/err.h"
#if defined(DOTLM_CUDA) || defined(DOTLM_HIP)
#include "backend/gpu/gpu_backend.h"
#endif

dl_backend *be_create(const char *name, int nthreads) {
    if (!name || !strcmp(name, "cpu")) return cpu_backend_create(nthreads);
#if defined(DOTLM_CUDA)
    if (!strcmp(name, "cuda")) return gpu_backend_create(name);
#elif defined(DOTLM_HIP)
    if (!strcmp(name, "hip")) return gpu_backend_create(name);
#endif
    if (!strcmp(name, "cuda") || !strcmp(name, "hip"))
        return dl_err("backend '%s' is not compiled into this build; rebuild with -DDOTLM_%s=ON",
                      name, !strcmp(name, "cuda") ? "CUDA" : "HIP"),
               NULL;
    return dl_err("unknown backend '%s' (expected cpu, cuda or hip)", name), NULL;
}

void be_destroy(dl_backend *be) {
    if (be) be->destroy(be);
}

/* The 64 bytes before every be_host_alloc() block: which allocator made it
 * (the block stays 64-byte aligned after it). */
typedef struct {
    uint64_t backend; /* 1: be->host_alloc, 0: malloc */
    uint64_t pad[7];
} host_hdr;

void *be_host_alloc(dl_backend *be, size_t bytes) {
    if (bytes > SIZE_MAX - sizeof(host_hdr)) return dl_err("host buffer of %zu bytes is too large", bytes), NULL;
    host_hdr *h = be && be->host_alloc ? be->host_alloc(be, bytes + sizeof *h) : NULL;
    const int from_be = h != NULL;
    if (!h) h = aligned_alloc(64, (bytes + sizeof *h + 63) / 64 * 64);
    if (!h) return dl_err("out of host memory for a buffer of %zu bytes", bytes), NULL;
    h->backend = (uint64_t)from_be;
    return h + 1;
}

void be_host_free(dl_backend *be, void *p) {
    if (!p) return;
    host_hdr *h = (host_hdr *)p - 1;
    if (h->backend && be && be->host_free) be->host_free(be, h);
    else free(h);
}
