/* Request objects shared by the HTTP threads and the scheduler (reference
 * counted), and the monotonic clock. Kept apart from the scheduler so the
 * request parser links without the model (fuzz/fuzz_request.c). */
#include <stdlib.h>
#include <time.h>

#include "server/srv_sched.h"

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

srv_req *srv_req_new(void) {
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_store(&r->refs, 1);
    samp_defaults(&r->sp);
    return r;
}

void srv_req_ref(srv_req *r) { atomic_fetch_add(&r->refs, 1); }

void srv_req_unref(srv_req *r) {
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
    free(r->prompt);
    for (int i = 0; i < r->n_stops; i++) free(r->stops[i]);
    free(r->stops);
    sb_free(&r->text);
    free(r->lp);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

void srv_req_cancel(srv_req *r) { atomic_store(&r->cancel, 1); }

