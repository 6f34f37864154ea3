/* Tiny test harness: CHECK records a failure and continues; each test
 * executable ends with TEST_END(), printing "N passed, M failed". */
#pragma once
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

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
/* n floats stored as dtype t (DT_F32, DT_F16 or DT_BF16, rounded to
 * nearest even); malloc'd, with 4 spare bytes; the caller frees. */
void *tu_store(const float *v, size_t n, dl_dtype t);
/* Element i of p (dtype t as for tu_store), widened to double. */
double tu_load(const void *p, size_t i, dl_dtype t);
