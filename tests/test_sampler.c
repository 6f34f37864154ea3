/* Sampler: greedy, truncations (top-k, top-p, min-p), penalties, seeded determinism. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler.h"
#include "testutil.h"

#define V 1000

static void fill(float *l, uint64_t *s) {
    for (int i = 0; i < V; i++) l[i] = 4.0f * tu_randf(s);
}

int main(void) {
    uint64_t seed = tu_seed();
    float l[V], c[V];
    samp_params p;
    sampler s;

    /* greedy = argmax (first maximum on ties) */
    samp_defaults(&p);
    CHECK(samp_init(&s, &p, V) == 0);
    for (int t = 0; t < 20; t++) {
        fill(l, &seed);
        int best = 0;
        for (int i = 1; i < V; i++)
            if (l[i] > l[best]) best = i;
        memcpy(c, l, sizeof l);
        CHECK(samp_sample(&s, c, V, NULL) == best);
    }
    for (int i = 0; i < V; i++) l[i] = 1.0f;
    l[7] = l[3] = 2.0f;
    CHECK(samp_sample(&s, l, V, NULL) == 3);
    /* n_valid excludes padded ids */
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[V - 1] = 10.0f;
    l[5] = 1.0f;
    CHECK(samp_sample(&s, l, V - 10, NULL) == 5);
    samp_free(&s);

    /* same seed -> same sequence; different seed -> (almost surely) different */
    fill(l, &seed);
    int a[64], b[64], d[64];
    for (int run = 0; run < 3; run++) {
        samp_defaults(&p);
        p.temperature = 1.5f;
        p.seed = run == 2 ? 99 : 42;
        CHECK(samp_init(&s, &p, V) == 0);
        for (int t = 0; t < 64; t++) {
            memcpy(c, l, sizeof l);
            int id = samp_sample(&s, c, V, NULL);
            (run == 0 ? a : run == 1 ? b : d)[t] = id;
        }
        samp_free(&s);
    }
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(memcmp(a, d, sizeof a) != 0);

    /* top-k: only the k largest are ever drawn */
    samp_defaults(&p);
    p.temperature = 5.0f;
    p.top_k = 3;
    p.seed = 7;
    CHECK(samp_init(&s, &p, V) == 0);
    fill(l, &seed);
    int order[V];
    for (int i = 0; i < V; i++) order[i] = i;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < V; j++)
            if (l[order[j]] > l[order[i]]) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    int ok = 1, seen[3] = {0};
    for (int t = 0; t < 500; t++) {
        memcpy(c, l, sizeof l);
        int id = samp_sample(&s, c, V, NULL);
        int in = 0;
        for (int j = 0; j < 3; j++)
            if (id == order[j]) in = 1, seen[j] = 1;
        ok &= in;
    }
    CHECK(ok);
    CHECK(seen[0] && seen[1] && seen[2]);
    samp_free(&s);

    /* top-p: two tokens hold 0.9 of the mass; top_p 0.85 keeps exactly them */
    samp_defaults(&p);
    p.temperature = 1.0f;
    p.top_p = 0.85f;
    p.seed = 3;
    CHECK(samp_init(&s, &p, V) == 0);
    for (int i = 0; i < V; i++) l[i] = -3.0f;
    l[10] = logf(0.5f * 1000);
    l[20] = logf(0.4f * 1000);
    ok = 1;
    int hit10 = 0, hit20 = 0;
    for (int t = 0; t < 400; t++) {
        memcpy(c, l, sizeof l);
        int id = samp_sample(&s, c, V, NULL);
        ok &= id == 10 || id == 20;
        hit10 += id == 10;
        hit20 += id == 20;
    }
    CHECK(ok);
    CHECKF(hit10 > 150 && hit20 > 110, "hit10 %d hit20 %d", hit10, hit20);
    samp_free(&s);

    /* min-p: tokens below min_p x top prob are never drawn */
    samp_defaults(&p);
    p.temperature = 1.0f;
    p.min_p = 0.5f;
    p.seed = 5;
    CHECK(samp_init(&s, &p, V) == 0);
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[1] = 3.0f;
    l[2] = 3.0f - 0.5f; /* p2/p1 = e^-0.5 = 0.61 > 0.5: kept */
    l[3] = 3.0f - 1.0f; /* 0.37 < 0.5: dropped */
    ok = 1;
    int h2 = 0;
    for (int t = 0; t < 300; t++) {
        memcpy(c, l, sizeof l);
        int id = samp_sample(&s, c, V, NULL);
        ok &= id == 1 || id == 2;
        h2 += id == 2;
    }
    CHECK(ok);
    CHECK(h2 > 50);
    samp_free(&s);

    /* penalties: repetition (HF), presence and frequency (OpenAI) */
    samp_defaults(&p);
    p.repetition_penalty = 2.0f;
    CHECK(samp_init(&s, &p, V) == 0);
    for (int i = 0; i < V; i++) l[i] = 0.0f;
    l[4] = 3.0f;
    l[5] = 2.0f;
    int32_t prompt[] = {4};
    samp_add_prompt(&s, prompt, 1);
    memcpy(c, l, sizeof l);
    CHECK(samp_sample(&s, c, V, NULL) == 5); /* 3/2 = 1.5 < 2 */
    CHECK(fabsf(c[4] - 1.5f) < 1e-6f);
    samp_free(&s);
    samp_defaults(&p);
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    CHECK(samp_init(&s, &p, V) == 0);
    samp_accept(&s, 4);
    samp_accept(&s, 4);
    memcpy(c, l, sizeof l);
    samp_sample(&s, c, V, NULL);
    CHECK(fabsf(c[4] - (3.0f - 0.5f - 0.5f)) < 1e-6f);
    CHECK(c[5] == 2.0f);
    samp_free(&s);

    /* logprob of the greedy pick equals log softmax */
    samp_defaults(&p);
    CHECK(samp_init(&s, &p, V) == 0);
    fill(l, &seed);
    double mx = -1e30, sum = 0;
    for (int i = 0; i < V; i++) mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < V; i++) sum += exp(l[i] - mx);
    memcpy(c, l, sizeof l);
    float lp;
    int id = samp_sample(&s, c, V, &lp);
    CHECK(fabs(lp - (l[id] - mx - log(sum))) < 1e-5);
    samp_free(&s);
    /* the candidate pre-selection gives the same picks as sorting the whole
     * vocabulary (reference below), across random truncation settings */
    {
        static float big[20000], work[20000], pr[20000];
        static int32_t ix[20000];
        int mism = 0, draws = 0;
        for (int trial = 0; trial < 30; trial++) {
            samp_defaults(&p);
            p.temperature = 0.3f + 1.5f * (float)(tu_rand_u64(&seed) % 100) / 100.0f;
            p.top_k = trial % 3 == 0 ? (int)(tu_rand_u64(&seed) % 60) : 0;
            p.top_p = trial % 2 ? 0.5f + 0.5f * (float)(tu_rand_u64(&seed) % 100) / 100.0f : 1.0f;
            p.min_p = trial % 5 == 1 ? 0.05f : 0.0f;
            p.seed = tu_rand_u64(&seed);
            for (int i = 0; i < 20000; i++) big[i] = 6.0f * tu_randf(&seed);
            sampler a, b;
            CHECK(samp_init(&a, &p, 20000) == 0 && samp_init(&b, &p, 20000) == 0);
            for (int d = 0; d < 15; d++, draws++) {
                memcpy(work, big, sizeof big);
                int got = samp_sample(&a, work, 20000, NULL);
                /* reference: full sort, then the same truncation rules */
                float mx = big[0];
                for (int i = 0; i < 20000; i++) mx = big[i] > mx ? big[i] : mx;
                int n = 0;
                for (int i = 0; i < 20000; i++) ix[n++] = i;
                /* sort by (logit desc, id asc) unless nothing truncates (then
                 * the sampler draws in id order) */
                int truncates = p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f;
                for (int gap = truncates ? n / 2 : 0; gap > 0; gap /= 2)
                    for (int i = gap; i < n; i++)
                        for (int j = i - gap; j >= 0; j -= gap) {
                            int x = ix[j], y = ix[j + gap];
                            if (big[x] > big[y] || (big[x] == big[y] && x < y)) break;
                            ix[j] = y, ix[j + gap] = x;
                        }
                double total = 0;
                for (int i = 0; i < 20000; i++) total += exp(((double)big[i] - mx) / p.temperature);
                int k = p.top_k > 0 && p.top_k < n ? p.top_k : n;
                double sum = 0;
                for (int i = 0; i < k; i++) {
                    pr[i] = (float)exp(((double)big[ix[i]] - mx) / p.temperature);
                    sum += pr[i];
                }
                if (k == n) sum = total;
                n = k;
                if (p.top_p < 1.0f) {
                    double c = 0;
                    for (int i = 0; i < n; i++) {
                        c += pr[i] / sum;
                        if (c >= p.top_p) {
                            n = i + 1;
                            break;
                        }
                    }
                }
                if (p.min_p > 0.0f) {
                    int keep = 1;
                    while (keep < n && pr[keep] >= pr[0] * p.min_p) keep++;
                    n = keep;
                }
                sum = 0;
                for (int i = 0; i < n; i++) sum += pr[i];
                double r = samp_uniform(&b) * sum, c = 0;
                int want = ix[n - 1];
                for (int i = 0; i < n; i++) {
                    c += pr[i];
                    if (r < c) {
                        want = ix[i];
                        break;
                    }
                }
                mism += got != want;
            }
            samp_free(&a);
            samp_free(&b);
        }
        CHECKF(mism <= draws / 200, "%d of %d picks differ from a full-sort reference", mism, draws);
    }
    return TEST_END();
}
