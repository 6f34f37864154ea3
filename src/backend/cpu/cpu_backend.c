/* The CPU backend: host memory, batch state and the op table. Each op picks
 * its AVX2 kernel when the CPU supports it and the kernel's kreg switch is on,
 * else the scalar reference, counts one dispatch, and runs the chosen range
 * kernel on the thread pool. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_gdn.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_quant_hook.h"
#if CPU_X86
#include <cpuid.h>
#endif
#include "core/err.h"
#include "core/kreg.h"

/* ---- kernel registry entries (one fast + one reference per op) ---- */
static kreg_kernel K_embed = KREG_KERNEL("cpu.embed.avx2", "AVX2 embedding row gather/convert");
static kreg_kernel K_embed_ref = KREG_KERNEL("cpu.embed.ref", "scalar embedding");
static kreg_kernel K_rms = KREG_KERNEL("cpu.rmsnorm.avx2", "AVX2 RMSNorm");
static kreg_kernel K_rms_ref = KREG_KERNEL("cpu.rmsnorm.ref", "scalar RMSNorm");
static kreg_kernel K_rope = KREG_KERNEL("cpu.rope.avx2", "AVX2 rotate-half RoPE");
static kreg_kernel K_rope_ref = KREG_KERNEL("cpu.rope.ref", "scalar rotate-half RoPE");
static kreg_kernel K_kvw = KREG_KERNEL("cpu.kv_write.avx2", "AVX2/F16C paged KV write");
static kreg_kernel K_kvw_ref = KREG_KERNEL("cpu.kv_write.ref", "scalar paged KV write");
static kreg_kernel K_attn = KREG_KERNEL("cpu.attention.avx2", "AVX2 paged causal GQA attention");
static kreg_kernel K_attn_ref = KREG_KERNEL("cpu.attention.ref", "scalar paged attention");
static kreg_kernel K_silu = KREG_KERNEL("cpu.silu_mul.avx2", "AVX2 silu(gate)*up");
static kreg_kernel K_silu_ref = KREG_KERNEL("cpu.silu_mul.ref", "scalar silu(gate)*up");
static kreg_kernel K_add = KREG_KERNEL("cpu.add.avx2", "AVX2 residual add");
static kreg_kernel K_add_ref = KREG_KERNEL("cpu.add.ref", "scalar residual add");
static kreg_kernel K_gather = KREG_KERNEL("cpu.gather_rows.ref", "row gather (memcpy)");

typedef struct {
    cpu_range_fn fn;
    cpu_args a;
} cpu_job;

static void job_cb(void *ctx, size_t b, size_t e) {
    const cpu_job *j = ctx;
    j->fn(&j->a, b, e);
}

static cpu_state *S(dl_backend *be) { return be->impl; }

/* Choose fast or reference kernel for one op call and count it. */
static cpu_range_fn pick(cpu_state *st, kreg_kernel *fast, kreg_kernel *ref, cpu_range_fn ffn,
                         cpu_range_fn rfn) {
    if (st->avx2 && ffn && kreg_use(fast)) return ffn;
    kreg_hit(ref);
    return rfn;
}

static void run(cpu_state *st, cpu_range_fn fn, const cpu_args *a, size_t n, size_t grain) {
    cpu_job j = {fn, *a};
    tp_run(st->tp, n, grain, job_cb, &j);
}

#if CPU_X86
#define FAST(f) f
#else
#define FAST(f) NULL
#endif

/* ---- memory ---- */
static void *cpu_alloc(dl_backend *be, size_t bytes) {
    (void)be;
    size_t sz = (bytes + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, sz ? sz : 64))
        return dl_err("cpu backend: out of memory allocating %zu bytes", bytes), NULL;
    return p;
}
static void cpu_free(dl_backend *be, void *p) {
    (void)be;
    free(p);
}
static int cpu_upload(dl_backend *be, dl_weight *w) {
    (void)be;
    switch (w->dtype) {
    case DT_F32: case DT_F16: case DT_BF16:
    case DT_F8E4M3: case DT_F8E5M2: case DT_I8: return 0;
    default:
        return dl_err("weight %s: format %s not supported by the CPU backend",
                      w->name ? w->name : "?", dt_name(w->dtype));
    }
}
static void cpu_release(dl_backend *be, dl_weight *w) {
    (void)be;
    (void)w;
}
static int cpu_copy(dl_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memmove(dst, src, bytes);
    return 0;
}
static int cpu_sync(dl_backend *be) {
    (void)be;
    return 0;
}
static void cpu_destroy(dl_backend *be) {
    cpu_state *st = S(be);
    if (st->own_tp) tp_free(st->tp);
    free(st);
    free(be);
}

/* ---- per-forward state ---- */
static int cpu_begin(dl_backend *be, const dl_batch *b, const dl_kvcache *kv) {
    cpu_state *st = S(be);
    if (!b || b->ntok < 0) return dl_err("cpu backend: begin() without a batch");
    st->batch = *b;
    st->kv = kv;
    return 0;
}

/* ---- ops ---- */
static void op_embed(dl_backend *be, float *x, const dl_weight *emb) {
    cpu_state *st = S(be);
    cpu_args a = {.y = x, .w = emb, .d = (int)emb->k, .b = &st->batch};
    int plain = emb->dtype == DT_F32 || emb->dtype == DT_F16 || emb->dtype == DT_BF16;
    /* quantized tables (fp8 / int8 with scales) take the reference path */
    run(st, pick(st, &K_embed, &K_embed_ref, plain ? FAST(cpu_embed_avx2) : NULL, cpu_embed_ref), &a,
        (size_t)st->batch.ntok, 16);
}

static void op_rmsnorm(dl_backend *be, float *y, const float *x, const dl_weight *w, int rows,
                       int d, float eps, int zc) {
    cpu_state *st = S(be);
    cpu_args a = {.y = y, .x = x, .w = w, .d = d, .eps = eps, .zc = zc};
    size_t grain = d >= 1024 ? 4 : 32;
    run(st, pick(st, &K_rms, &K_rms_ref, FAST(cpu_rmsnorm_avx2), cpu_rmsnorm_ref), &a,
        (size_t)rows, grain);
}

static void op_matmul(dl_backend *be, float *y, const float *x, const dl_weight *w, int M) {
    cpu_matmul(S(be), y, x, w, M);
}

static void op_rope(dl_backend *be, float *x, int nh, int hd, const dl_rope *rope) {
    cpu_state *st = S(be);
    cpu_args a = {.y = x, .nh = nh, .hd = hd, .rope = rope, .b = &st->batch};
    run(st, pick(st, &K_rope, &K_rope_ref, FAST(cpu_rope_avx2), cpu_rope_ref), &a,
        (size_t)st->batch.ntok, 4);
}

static void op_kv_write(dl_backend *be, dl_kvcache *kv, int layer, const float *k,
                        const float *v) {
    cpu_state *st = S(be);
    cpu_args a = {.x = k, .x2 = v, .kv = kv, .layer = layer, .b = &st->batch};
    run(st, pick(st, &K_kvw, &K_kvw_ref, FAST(cpu_kv_write_avx2), cpu_kv_write_ref), &a,
        (size_t)st->batch.ntok, 16);
}

static void op_attention(dl_backend *be, float *out, const float *q, const dl_kvcache *kv,
                         int layer, int nh, float scale) {
    cpu_state *st = S(be);
    cpu_args a = {.y = out, .x = q, .kv = kv, .layer = layer, .nh = nh, .hd = kv->head_dim,
                  .scale = scale, .b = &st->batch};
    run(st, pick(st, &K_attn, &K_attn_ref, FAST(cpu_attention_avx2), cpu_attention_ref), &a,
        (size_t)st->batch.ntok * (size_t)nh, 1);
}

static void op_silu_mul(dl_backend *be, float *out, const float *gate, const float *up,
                        size_t n) {
    cpu_state *st = S(be);
    cpu_args a = {.y = out, .x = gate, .x2 = up};
    run(st, pick(st, &K_silu, &K_silu_ref, FAST(cpu_silu_mul_avx2), cpu_silu_mul_ref), &a, n,
        8192);
}

static void op_add(dl_backend *be, float *y, const float *x, size_t n) {
    cpu_state *st = S(be);
    cpu_args a = {.y = y, .x = x};
    run(st, pick(st, &K_add, &K_add_ref, FAST(cpu_add_avx2), cpu_add_ref), &a, n, 16384);
}

static void op_gather_rows(dl_backend *be, float *dst, const float *src, const int32_t *idx,
                           int n, int d) {
    (void)be;
    kreg_hit(&K_gather);
    for (int i = 0; i < n; i++)
        memmove(dst + (size_t)i * d, src + (size_t)idx[i] * d, (size_t)d * sizeof(float));
}

/* AVX2 + FMA + F16C usable: CPUID bits and OS support for YMM state (XCR0).
 * Read with cpuid directly (clang's __builtin_cpu_supports lacks "f16c"). */
static int has_avx2(void) {
#if CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(fma && osxsave && avx && f16c)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) return 0; /* XMM and YMM state enabled */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 5) & 1; /* AVX2 */
#else
    return 0;
#endif
}

/* Create the CPU backend. nthreads > 0: a pool of that many threads owned by
 * the backend; <= 0: the process-wide default pool. NULL + dl_errmsg. */
dl_backend *cpu_backend_create(int nthreads) {
    dl_backend *be = calloc(1, sizeof *be);
    cpu_state *st = calloc(1, sizeof *st);
    if (!be || !st) {
        free(be);
        free(st);
        return dl_err("cpu backend: out of memory"), NULL;
    }
    if (nthreads > 0) {
        st->tp = tp_create(nthreads);
        st->own_tp = 1;
    } else {
        st->tp = tp_default();
    }
    if (!st->tp) {
        free(be);
        free(st);
        return dl_err_prefix("cpu backend"), NULL;
    }
    st->avx2 = has_avx2();
#if CPU_HAVE_QMATMUL /* the quantized kernels' cpuid + xgetbv reading (F, VL, DQ, BW, ZMM state) */
    st->avx512 = st->avx2 && (qmm_cpu_features() & QMM_CPU_AVX512) != 0;
#endif
    be->name = "cpu";
    be->impl = st;
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->upload = cpu_upload;
    be->release = cpu_release;
    be->to_host = cpu_copy;
    be->from_host = cpu_copy;
    be->sync = cpu_sync;
    be->destroy = cpu_destroy;
    be->begin = cpu_begin;
    be->embed = op_embed;
    be->rmsnorm = op_rmsnorm;
    be->matmul = op_matmul;
    be->rope = op_rope;
    be->kv_write = op_kv_write;
    be->attention = op_attention;
    be->silu_mul = op_silu_mul;
    be->add = op_add;
    be->gather_rows = op_gather_rows;
    cpu_gdn_install(be); /* copy2d, sigmoid_mul and the Gated DeltaNet ops (cpu_gdn.c) */
    return be;
}
