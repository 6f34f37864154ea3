#include "server/srv_metrics.h"

#include "core/kreg.h"

srv_metrics g_srv_metrics;

static const double k_bounds[SRV_HIST_NB] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,  0.5,    1,     2.5,  5,     10,  30};

void srv_metrics_status(int code) {
    if (code >= 0 && code < 600) atomic_fetch_add(&g_srv_metrics.by_code[code], 1);
}

void srv_hist_observe(srv_hist *h, double s) {
    int i = 0;
    while (i < SRV_HIST_NB && s > k_bounds[i]) i++;
    atomic_fetch_add(&h->bucket[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, (uint64_t)(s > 0 ? s * 1e6 : 0));
}

static void hist(srv_buf *o, const char *name, const char *help, srv_hist *h) {
    sb_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t c = 0;
    for (int i = 0; i <= SRV_HIST_NB; i++) {
        c += atomic_load(&h->bucket[i]);
        if (i < SRV_HIST_NB) sb_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, k_bounds[i], (unsigned long long)c);
        else sb_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)c);
    }
    sb_printf(o, "%s_sum %.6f\n%s_count %llu\n", name, atomic_load(&h->sum_us) * 1e-6, name,
              (unsigned long long)atomic_load(&h->count));
}

static void kern(const kreg_kernel *k, void *ctx) {
    sb_printf((srv_buf *)ctx, "dotlm_kernel_dispatch_total{kernel=\"%s\",enabled=\"%d\"} %llu\n",
              k->name, atomic_load(&((kreg_kernel *)k)->state) != 2,
              (unsigned long long)atomic_load(&((kreg_kernel *)k)->count));
}

#define COUNTER(o, name, help, v)                                                              \
    sb_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,         \
              (unsigned long long)(v))
#define GAUGE(o, name, help, fmt, v)                                                           \
    sb_printf(o, "# HELP %s %s\n# TYPE %s gauge\n%s " fmt "\n", name, help, name, name, v)

int srv_metrics_render(srv_buf *o, const srv_gauges *g) {
    srv_metrics *m = &g_srv_metrics;
    sb_adds(o, "# HELP dotlm_requests_total HTTP requests answered, by status code\n"
               "# TYPE dotlm_requests_total counter\n");
    for (int c = 100; c < 600; c++) {
        uint64_t v = atomic_load(&m->by_code[c]);
        if (v) sb_printf(o, "dotlm_requests_total{code=\"%d\"} %llu\n", c, (unsigned long long)v);
    }
    COUNTER(o, "dotlm_prompt_tokens_total", "Prompt tokens admitted", atomic_load(&m->prompt_tokens));
    COUNTER(o, "dotlm_generation_tokens_total", "Tokens generated", atomic_load(&m->gen_tokens));
    COUNTER(o, "dotlm_prefix_cache_tokens_total", "Prompt tokens served from the prefix cache",
            atomic_load(&m->cached_tokens));
    static const char *fr[4] = {"stop", "length", "tool_calls", "error"};
    sb_adds(o, "# HELP dotlm_finished_total Finished sequences by reason\n"
               "# TYPE dotlm_finished_total counter\n");
    for (int i = 0; i < 4; i++)
        sb_printf(o, "dotlm_finished_total{reason=\"%s\"} %llu\n", fr[i],
                  (unsigned long long)atomic_load(&m->finished[i]));
    COUNTER(o, "dotlm_forward_steps_total", "Batched forward steps", atomic_load(&m->steps));
    COUNTER(o, "dotlm_forward_step_tokens_total", "Tokens computed in forward steps",
            atomic_load(&m->step_tokens));
    GAUGE(o, "dotlm_queue_length", "Requests waiting for a sequence slot", "%d", g->queue_len);
    GAUGE(o, "dotlm_running_sequences", "Sequences being prefilled or decoded", "%d", g->running);
    GAUGE(o, "dotlm_max_sequences", "Sequence slots", "%d", g->max_seqs);
    GAUGE(o, "dotlm_kv_blocks_used", "KV blocks referenced by sequences", "%d", g->kv_used);
    GAUGE(o, "dotlm_kv_blocks_cached", "Unreferenced KV blocks kept for prefix reuse", "%d", g->kv_cached);
    GAUGE(o, "dotlm_kv_blocks_total", "KV blocks in the pool", "%d", g->kv_total);
    GAUGE(o, "dotlm_kv_cache_usage_ratio", "Fraction of KV blocks referenced", "%.6f",
          g->kv_total ? (double)g->kv_used / g->kv_total : 0.0);
    COUNTER(o, "dotlm_prefix_cache_block_hits_total", "Prompt blocks found in the prefix cache",
            g->prefix_hits);
    COUNTER(o, "dotlm_prefix_cache_block_queries_total", "Prompt blocks looked up in the prefix cache",
            g->prefix_queries);
    hist(o, "dotlm_time_to_first_token_seconds", "Time from arrival to the first generated token", &m->ttft);
    hist(o, "dotlm_inter_token_latency_seconds", "Time between consecutive generated tokens", &m->itl);
    hist(o, "dotlm_request_latency_seconds", "Time from arrival to the end of generation", &m->e2e);
    sb_adds(o, "# HELP dotlm_kernel_dispatch_total Kernel dispatches (kreg counters)\n"
               "# TYPE dotlm_kernel_dispatch_total counter\n");
    kreg_foreach(kern, o);
    return o->p ? 0 : -1;
}
