#include "server/srv_stop.h"

#include <stdlib.h>
#include <string.h>

int srv_stop_init(srv_stop *s, const char *const *stops, int n) {
    memset(s, 0, sizeof *s);
    if (n <= 0) return 0;
    s->stops = calloc((size_t)n, sizeof *s->stops);
    if (!s->stops) return -1;
    for (int i = 0; i < n; i++) {
        if (!stops[i] || !stops[i][0]) continue;
        s->stops[s->n] = strdup(stops[i]);
        if (!s->stops[s->n]) return srv_stop_free(s), -1;
        s->n++;
    }
    return 0;
}

void srv_stop_free(srv_stop *s) {
    for (int i = 0; i < s->n; i++) free(s->stops[i]);
    free(s->stops);
    sb_free(&s->held);
    memset(s, 0, sizeof *s);
}

size_t srv_partial_suffix(const char *text, size_t n, const char *const *needles, int k) {
    size_t best = 0;
    for (int i = 0; i < k; i++) {
        size_t L = strlen(needles[i]);
        size_t m = L - 1 < n ? L - 1 : n; /* proper prefixes only */
        for (size_t len = m; len > best; len--)
            if (!memcmp(text + n - len, needles[i], len)) {
                best = len;
                break;
            }
    }
    return best;
}

/* The stop match that completes first in h[0..n) (smallest end; on a tie the
 * longer one): this is the one a token-by-token generator would have hit
 * first, whatever the feed boundaries. Returns its start, or -1. */
static long find_first(const srv_stop *s, const char *h, size_t n) {
    long best = -1;
    size_t best_end = 0;
    for (int i = 0; i < s->n; i++) {
        size_t L = strlen(s->stops[i]);
        if (L > n) continue;
        for (size_t at = 0; at + L <= n; at++) {
            if (best >= 0 && at + L > best_end) break;
            if (h[at] == s->stops[i][0] && !memcmp(h + at, s->stops[i], L)) {
                if (best < 0 || at + L < best_end || (long)at < best) best = (long)at, best_end = at + L;
                break;
            }
        }
    }
    return best;
}

int srv_stop_feed(srv_stop *s, const char *txt, size_t len, srv_buf *out) {
    if (s->hit) return 1;
    if (!s->n) return sb_add(out, txt, len) ? -1 : 0;
    if (sb_add(&s->held, txt, len)) return -1;
    long at = find_first(s, s->held.p, s->held.n);
    if (at >= 0) {
        if (sb_add(out, s->held.p, (size_t)at)) return -1;
        sb_reset(&s->held);
        s->hit = 1;
        return 1;
    }
    size_t keep = srv_partial_suffix(s->held.p, s->held.n, (const char *const *)s->stops, s->n);
    size_t emit = s->held.n - keep;
    if (sb_add(out, s->held.p, emit)) return -1;
    sb_consume(&s->held, emit);
    return 0;
}

int srv_stop_flush(srv_stop *s, srv_buf *out) {
    if (s->hit || !s->held.n) return 0;
    int rc = sb_add(out, s->held.p, s->held.n);
    sb_reset(&s->held);
    return rc;
}
