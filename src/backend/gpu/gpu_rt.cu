/* Runtime wrappers: the only place that calls the CUDA/HIP runtime, so the
 * C side never includes vendor headers. Each wrapper records one line
 * describing a failure in a thread-local buffer (gpurt_errstr()). */
#include <atomic>
#include <stdio.h>
#include <stdlib.h>

#include "hip_compat.h"
#include "gpu_kernels.h"
#include "gpu_common.cuh"
#if DL_WARP == 32 && !defined(__HIPCC__)
#include <cuda.h>
#endif

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

/* Which device (and, under DOTLM_GPU_SMS, which green context) the backend
 * runs on, so that a thread other than the one that created it (the
 * server's scheduler) makes the same one current before its first call:
 * every wrapper below that touches the device starts with BIND. A new
 * gpurt_open or green context bumps g_bind_gen; each thread binds once
 * per generation. */
static int g_bind_dev = 0;
static std::atomic<int> g_bind_gen{0};
static thread_local int t_bind_gen = -1;
/* The SMs the backend's stream may use: the device's count (queried at the
 * first gpurt_sm_count after gpurt_open), or the green context's under
 * DOTLM_GPU_SMS; 0 = not known yet. */
static int g_sms = 0;
static void *g_bind_ctx = nullptr;               /* CUcontext of the green context, or NULL */
static int (*g_bind_set)(void *ctx) = nullptr;  /* cuCtxSetCurrent */

extern "C" int gpurt_bind(void) {
    const int gen = g_bind_gen.load(std::memory_order_acquire);
    if (t_bind_gen == gen) return 0;
    if (g_bind_ctx && g_bind_set) {
        if (g_bind_set(g_bind_ctx) != 0) {
            snprintf(g_err, sizeof g_err, "DOTLM_GPU_SMS: could not make the green context current in this thread");
            return -1;
        }
    } else {
        RT(cudaSetDevice(g_bind_dev), "set device");
    }
    t_bind_gen = gen;
    return 0;
}

#define BIND()                          \
    do {                                \
        if (gpurt_bind()) return -1;    \
    } while (0)
#define BIND_VOID() (void)gpurt_bind()

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
    g_bind_dev = dev;
    g_bind_ctx = nullptr;
    g_sms = 0; /* the new device's count, until a green context says otherwise */
    t_bind_gen = g_bind_gen.fetch_add(1, std::memory_order_acq_rel) + 1;
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
    BIND();
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
    BIND_VOID();
    if (p) (void)cudaFree(p);
}

extern "C" int gpurt_host_alloc(void **p, size_t bytes) {
    BIND();
    RT(cudaMallocHost(p, bytes ? bytes : 16), "pinned host allocation");
    return 0;
}

extern "C" void gpurt_host_free(void *p) {
    BIND_VOID();
    if (p) (void)cudaFreeHost(p);
}

extern "C" int gpurt_sm_count(void) {
    if (g_sms > 0) return g_sms;
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) {
        (void)cudaGetLastError();
        return 0;
    }
    return g_sms = v;
}

#if DL_WARP == 32 && !defined(__HIPCC__)
/* The first driver entry point drv_fn could not find (for the message). */
static const char *g_drv_missing = nullptr;

/* Looks up driver entry point `name` in its CUDA 12.5 form (green context
 * streams came in 12.5), through the runtime so that nothing links
 * libcuda; NULL if the driver lacks it. */
static void *drv_fn(const char *name) {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12050, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        (void)cudaGetLastError();
        if (!g_drv_missing) g_drv_missing = name;
        return nullptr;
    }
    return fn;
}

/* DOTLM_GPU_SMS=N (a measuring aid): makes a green context of at least N
 * of the current device's SMs (the driver rounds up to its partition
 * granularity, 8 on Hopper), makes it current for the calling thread and
 * creates *st in it, so that every kernel of the backend runs on those SMs
 * only; g_sms becomes the partition's count. An H100 (3.0 TB/s, 132 SMs)
 * limited to 96 SMs has an H200's bytes per second per SM (4.2 TB/s on
 * 132). 0 = ok, -1 = error (g_err says why). */
static int green_stream(int want, cudaStream_t *st) {
    auto get_dev = (decltype(&cuDeviceGet))drv_fn("cuDeviceGet");
    auto get_res = (decltype(&cuDeviceGetDevResource))drv_fn("cuDeviceGetDevResource");
    auto split = (decltype(&cuDevSmResourceSplitByCount))drv_fn("cuDevSmResourceSplitByCount");
    auto gen = (decltype(&cuDevResourceGenerateDesc))drv_fn("cuDevResourceGenerateDesc");
    auto create = (decltype(&cuGreenCtxCreate))drv_fn("cuGreenCtxCreate");
    auto to_ctx = (decltype(&cuCtxFromGreenCtx))drv_fn("cuCtxFromGreenCtx");
    auto set_cur = (decltype(&cuCtxSetCurrent))drv_fn("cuCtxSetCurrent");
    auto mk_stream = (decltype(&cuGreenCtxStreamCreate))drv_fn("cuGreenCtxStreamCreate");
    if (!get_dev || !get_res || !split || !gen || !create || !to_ctx || !set_cur || !mk_stream) {
        snprintf(g_err, sizeof g_err,
                 "DOTLM_GPU_SMS needs green contexts (CUDA driver 12.5 or later; this driver lacks %s); unset it",
                 g_drv_missing ? g_drv_missing : "?");
        return -1;
    }
    int ord = 0;
    RT(cudaGetDevice(&ord), "get device");
    RT(cudaFree(nullptr), "primary context init");
    CUdevice dev;
    CUdevResource all, part[1];
    CUdevResourceDesc desc;
    CUgreenCtx gc;
    CUcontext ctx;
    CUstream s;
    unsigned groups = 1;
    if (get_dev(&dev, ord) != CUDA_SUCCESS || get_res(dev, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS) {
        snprintf(g_err, sizeof g_err, "DOTLM_GPU_SMS: the driver did not report the device's SMs");
        return -1;
    }
    if (want > (int)all.sm.smCount) {
        snprintf(g_err, sizeof g_err, "DOTLM_GPU_SMS=%d but the device has %u SMs", want, all.sm.smCount);
        return -1;
    }
    if (split(part, &groups, &all, nullptr, 0, (unsigned)want) != CUDA_SUCCESS || groups != 1 ||
        gen(&desc, part, 1) != CUDA_SUCCESS || create(&gc, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS ||
        to_ctx(&ctx, gc) != CUDA_SUCCESS || set_cur(ctx) != CUDA_SUCCESS ||
        mk_stream(&s, gc, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) {
        snprintf(g_err, sizeof g_err,
                 "DOTLM_GPU_SMS=%d: the driver refused a green context of that many SMs (minimum %u, in steps of "
                 "%u)", want, all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment);
        return -1;
    }
    g_sms = (int)part[0].sm.smCount;
    *st = (cudaStream_t)s;
    g_bind_set = (int (*)(void *))set_cur;
    g_bind_ctx = (void *)ctx;
    t_bind_gen = g_bind_gen.fetch_add(1, std::memory_order_acq_rel) + 1;
    fprintf(stderr, "dotlm: DOTLM_GPU_SMS=%d: the backend's kernels run on %d of the device's %u SMs\n", want, g_sms,
            all.sm.smCount);
    return 0;
}
#endif

/* Creates the backend's stream (non-blocking). With DOTLM_GPU_SMS=N set,
 * the stream lives in a green context of N SMs (CUDA only). */
extern "C" int gpurt_stream_create(void **s) {
    cudaStream_t st;
    const char *e = getenv("DOTLM_GPU_SMS");
    if (e && *e) {
        char *end = nullptr;
        const long want = strtol(e, &end, 10);
        if (*end || want <= 0 || want > 100000) {
            snprintf(g_err, sizeof g_err, "DOTLM_GPU_SMS=%s: give a number of SMs, e.g. 96", e);
            return -1;
        }
#if DL_WARP == 32 && !defined(__HIPCC__)
        if (green_stream((int)want, &st)) return -1;
        *s = (void *)st;
        return 0;
#else
        snprintf(g_err, sizeof g_err, "DOTLM_GPU_SMS is a CUDA-only measuring aid (green contexts); unset it");
        return -1;
#endif
    }
    RT(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream create");
    *s = (void *)st;
    return 0;
}

extern "C" void gpurt_stream_destroy(void *s) {
    if (s) (void)cudaStreamDestroy((cudaStream_t)s);
}

extern "C" int gpurt_h2d_async(void *dst, const void *src, size_t bytes, void *s) {
    BIND();
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)s), "copy to device");
    return 0;
}

extern "C" int gpurt_d2h_async(void *dst, const void *src, size_t bytes, void *s) {
    BIND();
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)s), "copy to host");
    return 0;
}

extern "C" int gpurt_d2d_async(void *dst, const void *src, size_t bytes, void *s) {
    BIND();
    RT(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)s), "device copy");
    return 0;
}

extern "C" int gpurt_memset_async(void *dst, int v, size_t bytes, void *s) {
    BIND();
    RT(cudaMemsetAsync(dst, v, bytes, (cudaStream_t)s), "memset");
    return 0;
}

extern "C" int gpurt_h2d(void *dst, const void *src, size_t bytes) {
    BIND();
    RT(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
    return 0;
}

extern "C" int gpurt_sync(void *s) {
    BIND();
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
    BIND();
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
    BIND();
    RT(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)s), "graph launch");
    return 0;
}

extern "C" void gpurt_graph_destroy(void *exec) {
    if (exec) (void)cudaGraphExecDestroy((cudaGraphExec_t)exec);
}
