/* Growable byte buffer for building response bodies and text deltas. */
#pragma once
#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *p;    /* NUL-terminated when non-NULL */
    size_t n;   /* bytes used (excluding the NUL) */
    size_t cap;
} srv_buf;

/* Append len bytes; 0 or -1 (out of memory, buffer unchanged). */
int sb_add(srv_buf *b, const char *s, size_t len);
int sb_adds(srv_buf *b, const char *s);
int sb_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes. */
void sb_consume(srv_buf *b, size_t n);
void sb_reset(srv_buf *b);
void sb_free(srv_buf *b);
/* Hand the string over (caller frees; "" when empty) and reset the buffer. */
char *sb_take(srv_buf *b);
