/* Server metrics, rendered in the Prometheus text format for GET /metrics.
 * Counters are atomics updated from the HTTP and scheduler threads. */
#pragma once
#include <stdatomic.h>
#include <stdint.h>

#include "server/srv_buf.h"

#define SRV_HIST_NB 14

typedef struct {
    _Atomic uint64_t bucket[SRV_HIST_NB + 1]; /* last = +Inf */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
} srv_hist;

typedef struct {
    _Atomic uint64_t status[6];       /* 2xx 4xx... per class, see srv_metrics_status */
    _Atomic uint64_t by_code[600];    /* per HTTP status code */
    _Atomic uint64_t prompt_tokens, gen_tokens, cached_tokens;
    _Atomic uint64_t finished[4];     /* stop, length, tool_calls, error/cancelled */
    _Atomic uint64_t steps, step_tokens;
    srv_hist ttft, itl, e2e;
} srv_metrics;

extern srv_metrics g_srv_metrics;

void srv_metrics_status(int code);
/* Record seconds into a histogram. */
void srv_hist_observe(srv_hist *h, double seconds);
/* Gauges supplied by the caller at render time. */
typedef struct {
    int queue_len, running, max_seqs;
    int kv_used, kv_cached, kv_total;
    uint64_t prefix_hits, prefix_queries;
} srv_gauges;
/* Append the whole exposition (counters, gauges, histograms, kernel dispatch counters). */
int srv_metrics_render(srv_buf *out, const srv_gauges *g);
