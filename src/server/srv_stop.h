/* Stop-string matcher for streamed text: text that could still become the
 * start of a stop string is held back until it is decided, a matched stop
 * string is never emitted, and matches spanning token boundaries are found
 * because the held text is searched together with the new text. */
#pragma once
#include <stddef.h>

#include "server/srv_buf.h"

typedef struct {
    char **stops; /* [n] non-empty stop strings (copies) */
    int n;
    srv_buf held;
    int hit;      /* a stop string matched */
} srv_stop;

/* Copy the stop strings (empty ones are ignored). 0 or -1. */
int srv_stop_init(srv_stop *s, const char *const *stops, int n);
void srv_stop_free(srv_stop *s);
/* Feed new text; append what is safe to emit to out. Returns 1 when a stop
 * string matched (out got the text before it; later calls emit nothing),
 * 0 otherwise, -1 out of memory. */
int srv_stop_feed(srv_stop *s, const char *txt, size_t len, srv_buf *out);
/* End of generation without a match: emit the held text. */
int srv_stop_flush(srv_stop *s, srv_buf *out);
/* Length of the longest suffix of text[0..n) that is a proper prefix of one
 * of the k needles (shared with the tool-call parser). */
size_t srv_partial_suffix(const char *text, size_t n, const char *const *needles, int k);
