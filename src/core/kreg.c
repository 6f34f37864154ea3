#include "core/kreg.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static kreg_kernel *g_head;
static char *g_disabled; /* comma-joined patterns */
static int g_env_read;

/* Shell-style match of one pattern (not NUL-terminated) against a name. */
static int pat_match(const char *pat, size_t plen, const char *name) {
    char buf[256];
    if (plen >= sizeof buf) return 0;
    memcpy(buf, pat, plen);
    buf[plen] = 0;
    return fnmatch(buf, name, 0) == 0;
}

static int is_disabled_locked(const char *name) {
    if (!g_disabled) return 0;
    const char *p = g_disabled;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && (*p == ' ')) p++, n--;
        while (n && p[n - 1] == ' ') n--;
        if (n && pat_match(p, n, name)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void add_patterns_locked(const char *list) {
    if (!list || !*list) return;
    size_t a = g_disabled ? strlen(g_disabled) : 0, b = strlen(list);
    char *s = realloc(g_disabled, a + b + 2);
    if (!s) return;
    if (a) s[a++] = ',';
    memcpy(s + a, list, b + 1);
    g_disabled = s;
}

static void register_locked(kreg_kernel *k) {
    if (!g_env_read) {
        g_env_read = 1;
        add_patterns_locked(getenv("DOTLM_DISABLE"));
    }
    if (atomic_load(&k->state) != 0) return;
    k->next = g_head;
    g_head = k;
    atomic_store(&k->state, is_disabled_locked(k->name) ? 2 : 1);
}

static int state_of(kreg_kernel *k) {
    int s = atomic_load_explicit(&k->state, memory_order_acquire);
    if (s) return s;
    pthread_mutex_lock(&g_mu);
    register_locked(k);
    pthread_mutex_unlock(&g_mu);
    return atomic_load(&k->state);
}

int kreg_enabled(kreg_kernel *k) { return state_of(k) == 1; }

int kreg_use(kreg_kernel *k) {
    if (state_of(k) != 1) return 0;
    atomic_fetch_add_explicit(&k->count, 1, memory_order_relaxed);
    return 1;
}

void kreg_hit(kreg_kernel *k) {
    state_of(k);
    atomic_fetch_add_explicit(&k->count, 1, memory_order_relaxed);
}

void kreg_disable(const char *list) {
    pthread_mutex_lock(&g_mu);
    if (!g_env_read) {
        g_env_read = 1;
        add_patterns_locked(getenv("DOTLM_DISABLE"));
    }
    add_patterns_locked(list);
    for (kreg_kernel *k = g_head; k; k = k->next)
        atomic_store(&k->state, is_disabled_locked(k->name) ? 2 : 1);
    pthread_mutex_unlock(&g_mu);
}

void kreg_reset_switches(void) {
    pthread_mutex_lock(&g_mu);
    free(g_disabled);
    g_disabled = NULL;
    g_env_read = 1;
    for (kreg_kernel *k = g_head; k; k = k->next) atomic_store(&k->state, 1);
    pthread_mutex_unlock(&g_mu);
}

void kreg_reset_counts(void) {
    pthread_mutex_lock(&g_mu);
    for (kreg_kernel *k = g_head; k; k = k->next) atomic_store(&k->count, 0);
    pthread_mutex_unlock(&g_mu);
}

void kreg_foreach(kreg_visit_fn fn, void *ctx) {
    pthread_mutex_lock(&g_mu);
    for (kreg_kernel *k = g_head; k; k = k->next) fn(k, ctx);
    pthread_mutex_unlock(&g_mu);
}

uint64_t kreg_count(const char *name) {
    uint64_t c = 0;
    pthread_mutex_lock(&g_mu);
    for (kreg_kernel *k = g_head; k; k = k->next)
        if (!strcmp(k->name, name)) c += atomic_load(&k->count);
    pthread_mutex_unlock(&g_mu);
    return c;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp((*(kreg_kernel *const *)a)->name, (*(kreg_kernel *const *)b)->name);
}

void kreg_print(FILE *f, int all) {
    pthread_mutex_lock(&g_mu);
    size_t n = 0;
    for (kreg_kernel *k = g_head; k; k = k->next) n++;
    kreg_kernel **v = malloc((n ? n : 1) * sizeof *v);
    if (v) {
        n = 0;
        for (kreg_kernel *k = g_head; k; k = k->next) v[n++] = k;
        qsort(v, n, sizeof *v, cmp_name);
        fprintf(f, "%-40s %12s  %s\n", "kernel", "dispatches", "state");
        for (size_t i = 0; i < n; i++) {
            uint64_t c = atomic_load(&v[i]->count);
            if (!all && !c) continue;
            fprintf(f, "%-40s %12llu  %s\n", v[i]->name, (unsigned long long)c,
                    atomic_load(&v[i]->state) == 2 ? "disabled" : "enabled");
        }
        free(v);
    }
    pthread_mutex_unlock(&g_mu);
}
