/* Tiny test harness: CHECK records a failure and continues; each test
 * executable ends with TEST_END(), printing "N passed, M failed". */
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdint.h>

extern int tu_pass, tu_fail;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) tu_pass++;                                                         \
        else {                                                                       \
            tu_fail++;                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECKF(cond, ...)                                                  \
    do {                                                                   \
        if (cond) tu_pass++;                                               \
        else {                                                             \
            tu_fail++;                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

#define TEST_END() tu_end(__FILE__)
int tu_end(const char *file);

/* Deterministic xorshift RNG for test data (seeded per test; never zeros). */
uint64_t tu_rand_u64(uint64_t *s);
/* uniform in [-1, 1) */
float tu_randf(uint64_t *s);
/* Seed from DOTLM_TEST_SEED or the clock; printed so failures reproduce. */
uint64_t tu_seed(void);
/* max |a - b| / max(max|b|, tiny) */
double tu_max_rel(const float *a, const float *b, size_t n);
