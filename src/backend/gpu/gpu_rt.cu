/* Runtime wrappers: the only place that calls the CUDA/HIP runtime, so the
 * C side never includes vendor headers. Each wrapper records one line
 * describing a failure in a thread-local buffer (gpurt_errstr()). */
#include <stdio.h>

#include "hip_compat.h"
#include "gpu_kernels.h"
#include "gpu_common.cuh"

static thread_local char g_err[320];

static int fail(const char *what, cudaError_t e) {
    snprintf(g_err, sizeof g_err, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}

#define RT(call, what)                        \
    do {                                      \
        cudaError_t e_ = (call);              \
        if (e_ != cudaSuccess) return fail(what, e_); \
    } while (0)

extern "C" const char *gpurt_errstr(void) { return g_err; }

int dl_pdl_on = 0;
unsigned long long dl_pdl_n = 0;

extern "C" int gpurt_pdl_supported(void) {
#if DL_WARP == 32 && !defined(__HIPCC__)
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major >= 9;
#else
    return 0;
#endif
}

extern "C" void gk_pdl_set(int on) { dl_pdl_on = on != 0; }
extern "C" int gk_pdl_get(void) { return dl_pdl_on; }
extern "C" unsigned long long gk_pdl_launches(void) { return dl_pdl_n; }

extern "C" int gpurt_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int gpurt_open(int dev, char *name, size_t name_len) {
    RT(cudaSetDevice(dev), "set device");
    cudaDeviceProp p;
    RT(cudaGetDeviceProperties(&p, dev), "device properties");
    snprintf(name, name_len, "%s", p.name);
    return 0;
}

extern "C" void gpurt_mem_info(size_t *free_b, size_t *total_b) {
    *free_b = *total_b = 0;
    if (cudaMemGetInfo(free_b, total_b) != cudaSuccess) (void)cudaGetLastError();
}

extern "C" int gpurt_malloc(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t fr = 0, tot = 0;
        gpurt_mem_info(&fr, &tot);
        snprintf(g_err, sizeof g_err,
                 "out of device memory: needed %zu bytes (%.1f MiB), %zu bytes (%.1f MiB) free of %.1f MiB (%s)",
                 bytes, bytes / 1048576.0, fr, fr / 1048576.0, tot / 1048576.0,
                 cudaGetErrorString(e));
        *p = NULL;
        return -1;
    }
    return 0;
}

extern "C" void gpurt_free(void *p) {
    if (p) (void)cudaFree(p);
}

extern "C" int gpurt_host_alloc(void **p, size_t bytes) {
    RT(cudaMallocHost(p, bytes ? bytes : 16), "pinned host allocation");
    return 0;
}

extern "C" void gpurt_host_free(void *p) {
    if (p) (void)cudaFreeHost(p);
}

extern "C" int gpurt_stream_create(void **s) {
    cudaStream_t st;
    RT(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream create");
    *s = (void *)st;
    return 0;
}

extern "C" void gpurt_stream_destroy(void *s) {
    if (s) (void)cudaStreamDestroy((cudaStream_t)s);
}

extern "C" int gpurt_h2d_async(void *dst, const void *src, size_t bytes, void *s) {
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)s), "copy to device");
    return 0;
}

extern "C" int gpurt_d2h_async(void *dst, const void *src, size_t bytes, void *s) {
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)s), "copy to host");
    return 0;
}

extern "C" int gpurt_d2d_async(void *dst, const void *src, size_t bytes, void *s) {
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)s), "device copy");
    return 0;
}

extern "C" int gpurt_memset_async(void *dst, int v, size_t bytes, void *s) {
    RT(cudaMemsetAsync(dst, v, bytes, (cudaStream_t)s), "memset");
    return 0;
}

extern "C" int gpurt_h2d(void *dst, const void *src, size_t bytes) {
    RT(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
    return 0;
}

extern "C" int gpurt_sync(void *s) {
    RT(cudaGetLastError(), "kernel launch");
    RT(cudaStreamSynchronize((cudaStream_t)s), "stream synchronize");
    RT(cudaGetLastError(), "kernel execution");
    return 0;
}

extern "C" int gpurt_event_create(void **e) {
    cudaEvent_t ev;
    RT(cudaEventCreate(&ev), "event create");
    *e = (void *)ev;
    return 0;
}

extern "C" void gpurt_event_destroy(void *e) {
    if (e) (void)cudaEventDestroy((cudaEvent_t)e);
}

extern "C" int gpurt_event_record(void *e, void *s) {
    RT(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s), "event record");
    return 0;
}

extern "C" int gpurt_event_sync(void *e) {
    RT(cudaEventSynchronize((cudaEvent_t)e), "event synchronize");
    return 0;
}

extern "C" float gpurt_event_ms(void *a, void *b) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b) != cudaSuccess) return -1.0f;
    return ms;
}

extern "C" int gpurt_capture_begin(void *s) {
    RT(cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeThreadLocal), "graph capture begin");
    return 0;
}

extern "C" int gpurt_capture_end(void *s, void **exec) {
    *exec = NULL;
    cudaGraph_t gr = nullptr;
    cudaError_t e = cudaStreamEndCapture((cudaStream_t)s, &gr);
    if (e != cudaSuccess) {
        if (gr) (void)cudaGraphDestroy(gr);
        (void)cudaGetLastError();
        return fail("graph capture", e);
    }
    cudaGraphExec_t ex;
    e = cudaGraphInstantiateWithFlags(&ex, gr, 0);
    (void)cudaGraphDestroy(gr);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fail("graph instantiate", e);
    }
    *exec = (void *)ex;
    return 0;
}

extern "C" int gpurt_graph_launch(void *exec, void *s) {
    RT(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)s), "graph launch");
    return 0;
}

extern "C" void gpurt_graph_destroy(void *exec) {
    if (exec) (void)cudaGraphExecDestroy((cudaGraphExec_t)exec);
}
