#include "testutil.h"

#include <stdlib.h>
#include <time.h>

int tu_pass, tu_fail;

int tu_end(const char *file) {
    printf("%s: %d passed, %d failed\n", file, tu_pass, tu_fail);
    return tu_fail ? 1 : 0;
}

uint64_t tu_rand_u64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

float tu_randf(uint64_t *s) { return (float)((tu_rand_u64(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

uint64_t tu_seed(void) {
    const char *e = getenv("DOTLM_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    if (!s) s = 88172645463325252ull;
    fprintf(stderr, "test seed: DOTLM_TEST_SEED=%llu\n", (unsigned long long)s);
    return s;
}

double tu_max_rel(const float *a, const float *b, size_t n) {
    double m = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)b[i]);
        if (v > m) m = v;
        double e = fabs((double)a[i] - (double)b[i]);
        if (e != e) return INFINITY;
        if (e > d) d = e;
    }
    return d / (m > 1e-30 ? m : 1e-30);
}

void *tu_store(const float *v, size_t n, dl_dtype t) {
    void *p = malloc(n * 4 + 4);
    if (!p) {
        fprintf(stderr, "tu_store: out of memory (%zu values)\n", n);
        exit(2);
    }
    for (size_t i = 0; i < n; i++) {
        if (t == DT_F32) ((float *)p)[i] = v[i];
        else if (t == DT_F16) ((uint16_t *)p)[i] = f32_to_f16(v[i]);
        else ((uint16_t *)p)[i] = f32_to_bf16(v[i]);
    }
    return p;
}

double tu_load(const void *p, size_t i, dl_dtype t) {
    if (t == DT_F32) return ((const float *)p)[i];
    if (t == DT_F16) return f16_to_f32(((const uint16_t *)p)[i]);
    return bf16_to_f32(((const uint16_t *)p)[i]);
}
