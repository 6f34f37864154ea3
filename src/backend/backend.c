/* Backend factory: maps a name to a backend implementation. GPU backends hook
 * in here under their build flags (#ifdef DOTLM_CUDA / DOTLM_HIP). */
#include "backend/backend.h"

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
