#include "core/tpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/err.h"

struct tpool {
    int n;                /* total threads including the caller */
    pthread_t *th;        /* n - 1 workers */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    _Atomic unsigned long gen; /* bumped per job */
    _Atomic int active;   /* workers still running the current job */
    _Atomic int sleepers; /* workers blocked on cv_work */
    _Atomic int quit;
    /* current job (published by the release store to gen) */
    tp_fn fn;
    void *ctx;
    size_t total, grain;
    _Atomic size_t cursor;
};

/* Workers spin this many polls before sleeping: decode runs hundreds of
 * short parallel loops per token, and a futex wake-up per loop (tens of
 * microseconds in a VM) would cost more than the loop. */
#define TP_SPIN 4000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void run_chunks(tpool *tp) {
    for (;;) {
        size_t b = atomic_fetch_add(&tp->cursor, tp->grain);
        if (b >= tp->total) break;
        size_t e = b + tp->grain < tp->total ? b + tp->grain : tp->total;
        tp->fn(tp->ctx, b, e);
    }
}

static void *worker(void *arg) {
    tpool *tp = arg;
    unsigned long seen = 0;
    for (;;) {
        unsigned long g = atomic_load(&tp->gen);
        for (int i = 0; i < TP_SPIN && g == seen && !atomic_load(&tp->quit); i++) {
            cpu_relax();
            g = atomic_load(&tp->gen);
        }
        if (g == seen && !atomic_load(&tp->quit)) {
            pthread_mutex_lock(&tp->mu);
            atomic_fetch_add(&tp->sleepers, 1);
            while (!atomic_load(&tp->quit) && atomic_load(&tp->gen) == seen)
                pthread_cond_wait(&tp->cv_work, &tp->mu);
            atomic_fetch_sub(&tp->sleepers, 1);
            pthread_mutex_unlock(&tp->mu);
            g = atomic_load(&tp->gen);
        }
        if (atomic_load(&tp->quit)) break;
        seen = g;
        run_chunks(tp);
        if (atomic_fetch_sub(&tp->active, 1) == 1) {
            pthread_mutex_lock(&tp->mu);
            pthread_cond_signal(&tp->cv_done);
            pthread_mutex_unlock(&tp->mu);
        }
    }
    return NULL;
}

tpool *tp_create(int nthreads) {
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    if (nthreads > 512) nthreads = 512;
    tpool *tp = calloc(1, sizeof *tp);
    if (!tp) return dl_err("out of memory creating thread pool"), NULL;
    tp->n = nthreads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv_work, NULL);
    pthread_cond_init(&tp->cv_done, NULL);
    tp->th = calloc((size_t)nthreads, sizeof *tp->th);
    if (!tp->th) {
        free(tp);
        return dl_err("out of memory creating thread pool"), NULL;
    }
    for (int i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&tp->th[i], NULL, worker, tp)) {
            tp->n = i + 1;
            break;
        }
    }
    return tp;
}

void tp_free(tpool *tp) {
    if (!tp) return;
    pthread_mutex_lock(&tp->mu);
    atomic_store(&tp->quit, 1);
    pthread_cond_broadcast(&tp->cv_work);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 0; i < tp->n - 1; i++) pthread_join(tp->th[i], NULL);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv_work);
    pthread_cond_destroy(&tp->cv_done);
    free(tp->th);
    free(tp);
}

int tp_nthreads(const tpool *tp) { return tp ? tp->n : 1; }

void tp_run(tpool *tp, size_t n, size_t grain, tp_fn fn, void *ctx) {
    if (!n) return;
    if (grain < 1) grain = 1;
    if (!tp || tp->n == 1 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
    tp->fn = fn;
    tp->ctx = ctx;
    tp->total = n;
    tp->grain = grain;
    atomic_store(&tp->cursor, 0);
    atomic_store(&tp->active, tp->n - 1);
    atomic_fetch_add(&tp->gen, 1); /* publishes the job (seq_cst) */
    if (atomic_load(&tp->sleepers) > 0) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_broadcast(&tp->cv_work);
        pthread_mutex_unlock(&tp->mu);
    }
    run_chunks(tp);
    for (int i = 0; i < TP_SPIN && atomic_load(&tp->active) > 0; i++) cpu_relax();
    if (atomic_load(&tp->active) > 0) {
        pthread_mutex_lock(&tp->mu);
        while (atomic_load(&tp->active) > 0) pthread_cond_wait(&tp->cv_done, &tp->mu);
        pthread_mutex_unlock(&tp->mu);
    }
}

static tpool *g_default;
static int g_default_n;
static pthread_mutex_t g_def_mu = PTHREAD_MUTEX_INITIALIZER;

tpool *tp_default(void) {
    pthread_mutex_lock(&g_def_mu);
    if (!g_default) {
        int n = g_default_n;
        const char *e = getenv("DOTLM_THREADS");
        if (!n && e) n = atoi(e);
        g_default = tp_create(n);
    }
    pthread_mutex_unlock(&g_def_mu);
    return g_default;
}

int tp_set_default_threads(int nthreads) {
    pthread_mutex_lock(&g_def_mu);
    g_default_n = nthreads;
    if (g_default && tp_nthreads(g_default) != (nthreads > 0 ? nthreads : tp_nthreads(g_default))) {
        tp_free(g_default);
        g_default = NULL;
    } else if (g_default && nthreads <= 0) {
        /* keep */
    }
    pthread_mutex_unlock(&g_def_mu);
    return 0;
}
