/* Token sampling: greedy, temperature, top-k, top-p, min-p, repetition /
 * presence / frequency penalties, with a per-sequence seeded RNG so the
 * same seed gives the same output. */
#pragma once
#include <stdint.h>

typedef struct {
    float temperature;      /* 0 = greedy */
    int top_k;              /* 0 = off */
    float top_p;            /* 1 = off */
    float min_p;            /* 0 = off */
    float repetition_penalty; /* 1 = off (HF: divides positive logits, multiplies negative) */
    float presence_penalty;   /* 0 = off (OpenAI: minus once per token seen in output) */
    float frequency_penalty;  /* 0 = off (OpenAI: minus per occurrence in output) */
    uint64_t seed;
} samp_params;

typedef struct {
    samp_params p;
    uint64_t rng[4];   /* xoshiro256** state */
    int vocab;
    /* scratch */
    int32_t *idx;      /* [vocab] */
    float *prob;       /* [vocab] */
    int32_t *counts;   /* [vocab] occurrences in the generated output */
    uint8_t *seen;     /* [vocab] tokens in prompt or output (repetition penalty) */
} sampler;

void samp_defaults(samp_params *p);
/* Allocate scratch for `vocab` ids; 0 or -1. */
int samp_init(sampler *s, const samp_params *p, int vocab);
void samp_free(sampler *s);
/* Record prompt tokens (repetition penalty context). */
void samp_add_prompt(sampler *s, const int32_t *ids, int n);
/* Record a generated token (all penalties). */
void samp_accept(sampler *s, int32_t id);
/* Pick the next token from logits[vocab] (modified in place: penalties and
 * temperature applied). Only ids < n_valid are eligible (padded vocab).
 * If logprob != NULL it receives log softmax of the chosen id after
 * penalties (before temperature / truncation). */
int32_t samp_sample(sampler *s, float *logits, int n_valid, float *logprob);
/* Uniform double in [0,1) from the sampler's stream. */
double samp_uniform(sampler *s);
