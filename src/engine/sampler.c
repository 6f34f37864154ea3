#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

void samp_defaults(samp_params *p) {
    memset(p, 0, sizeof *p);
    p->temperature = 0.0f;
    p->top_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next_u64(sampler *s) {
    uint64_t *r = s->rng;
    uint64_t out = rotl(r[1] * 5, 7) * 9, t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return out;
}

double samp_uniform(sampler *s) { return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0); }

int samp_init(sampler *s, const samp_params *p, int vocab) {
    memset(s, 0, sizeof *s);
    s->p = *p;
    s->vocab = vocab;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix(&x);
    s->idx = malloc((size_t)vocab * sizeof *s->idx);
    s->prob = malloc((size_t)vocab * sizeof *s->prob);
    s->counts = calloc((size_t)vocab, sizeof *s->counts);
    s->seen = calloc((size_t)vocab, 1);
    if (!s->idx || !s->prob || !s->counts || !s->seen) {
        samp_free(s);
        return dl_err("out of memory for the sampler (vocab %d)", vocab);
    }
    return 0;
}

void samp_free(sampler *s) {
    free(s->idx);
    free(s->prob);
    free(s->counts);
    free(s->seen);
    memset(s, 0, sizeof *s);
}

void samp_add_prompt(sampler *s, const int32_t *ids, int n) {
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < s->vocab) s->seen[ids[i]] = 1;
}

void samp_accept(sampler *s, int32_t id) {
    if (id < 0 || id >= s->vocab) return;
    s->seen[id] = 1;
    s->counts[id]++;
}

/* qsort has no context argument: the values being sorted by, per thread. */
static _Thread_local const float *g_sort_vals;

static int cmp_desc(const void *a, const void *b) {
    float x = g_sort_vals[*(const int32_t *)a], y = g_sort_vals[*(const int32_t *)b];
    if (x > y) return -1;
    if (x < y) return 1;
    return *(const int32_t *)a - *(const int32_t *)b; /* ties: lower id first */
}

/* Sort the first n entries of idx by vals descending (stable by id). */
static void sort_desc(int32_t *idx, int n, const float *vals) {
    g_sort_vals = vals;
    qsort(idx, (size_t)n, sizeof *idx, cmp_desc);
}

int32_t samp_sample(sampler *s, float *logits, int n_valid, float *logprob) {
    const samp_params *p = &s->p;
    if (n_valid > s->vocab) n_valid = s->vocab;
    for (int i = 0; i < n_valid; i++) {
        if (p->repetition_penalty != 1.0f && s->seen[i])
            logits[i] = logits[i] > 0 ? logits[i] / p->repetition_penalty
                                      : logits[i] * p->repetition_penalty;
        if (s->counts[i])
            logits[i] -= p->presence_penalty + p->frequency_penalty * (float)s->counts[i];
    }
    /* argmax (first maximum, like torch.argmax); NaN logits never win */
    int32_t best = 0;
    for (int i = 1; i < n_valid; i++)
        if (logits[i] > logits[best] || (logits[best] != logits[best])) best = i;
    double mx = logits[best], lse = 0;
    if (logprob) {
        for (int i = 0; i < n_valid; i++) lse += exp((double)logits[i] - mx);
        lse = mx + log(lse);
    }
    int32_t pick = best;
    if (p->temperature > 0.0f) {
        float t = p->temperature;
        int n = n_valid;
        int k = (p->top_k > 0 && p->top_k < n_valid) ? p->top_k : n_valid;
        double sum = 0;
        if (k < n_valid || p->top_p < 1.0f || p->min_p > 0.0f) {
            /* Truncated sampling needs the survivors in sorted order. Sorting
             * a 150k vocabulary per token is the slow part, so gather only the
             * tokens within a probability ratio of the maximum that provably
             * contains every survivor (top-k: at least k of them; top-p: at
             * least top_p of the total mass; min-p: its own cut-off), widening
             * the ratio until it does; the result is identical to a full sort. */
            double total = 0;
            for (int i = 0; i < n_valid; i++) total += exp(((double)logits[i] - mx) / t);
            static const double ratios[] = {1e-4, 1e-8, 1e-16, 0.0};
            for (size_t r = 0; r < sizeof ratios / sizeof *ratios; r++) {
                double lo = ratios[r] > 0 ? mx + t * log(ratios[r]) : -INFINITY;
                int by_min_p = 0; /* everything below lo fails min-p anyway */
                if (p->min_p > 0.0f && mx + t * log((double)p->min_p) >= lo) {
                    lo = mx + t * log((double)p->min_p);
                    by_min_p = 1;
                }
                double mass = 0;
                n = 0;
                for (int i = 0; i < n_valid; i++)
                    if ((double)logits[i] >= lo) {
                        s->idx[n++] = i;
                        mass += exp(((double)logits[i] - mx) / t);
                    }
                int exact = ratios[r] == 0.0 || by_min_p ||
                            (k < n_valid ? n >= k
                                         : (p->top_p >= 1.0f || mass >= p->top_p * total));
                if (exact) break;
            }
            sort_desc(s->idx, n, logits);
            if (k < n) n = k;
            for (int i = 0; i < n; i++) {
                double e = exp(((double)logits[s->idx[i]] - mx) / t);
                s->prob[i] = (float)e;
                sum += e;
            }
            if (k == n_valid) sum = total; /* top-p is relative to the whole vocabulary */
        } else {
            for (int i = 0; i < n; i++) {
                s->idx[i] = i;
                double e = exp(((double)logits[i] - mx) / t);
                s->prob[i] = (float)e;
                sum += e;
            }
        }
        if (p->top_p < 1.0f) {
            double c = 0;
            int keep = n;
            for (int i = 0; i < n; i++) {
                c += s->prob[i] / sum;
                if (c >= p->top_p) {
                    keep = i + 1;
                    break;
                }
            }
            n = keep;
        }
        if (p->min_p > 0.0f) {
            float lim = s->prob[0] * p->min_p;
            int keep = 1;
            while (keep < n && s->prob[keep] >= lim) keep++;
            n = keep;
        }
        sum = 0;
        for (int i = 0; i < n; i++) sum += s->prob[i];
        double r = samp_uniform(s) * sum, c = 0;
        pick = s->idx[n - 1];
        for (int i = 0; i < n; i++) {
            c += s->prob[i];
            if (r < c) {
                pick = s->idx[i];
                break;
            }
        }
    }
    if (logprob) *logprob = (float)((double)logits[pick] - lse);
    return pick;
}
