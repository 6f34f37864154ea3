#include "server/srv_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(srv_buf *b, size_t extra) {
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

int sb_add(srv_buf *b, const char *s, size_t len) {
    if (grow(b, len)) return -1;
    if (len) memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
    return 0;
}

int sb_adds(srv_buf *b, const char *s) { return sb_add(b, s, strlen(s)); }

int sb_printf(srv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || grow(b, (size_t)k)) return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
    return 0;
}

void sb_consume(srv_buf *b, size_t n) {
    if (n >= b->n) {
        sb_reset(b);
        return;
    }
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
    b->p[b->n] = 0;
}

void sb_reset(srv_buf *b) {
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

void sb_free(srv_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

char *sb_take(srv_buf *b) {
    char *s = b->p ? b->p : calloc(1, 1);
    b->p = NULL;
    b->n = b->cap = 0;
    return s;
}
