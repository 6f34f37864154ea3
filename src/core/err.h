/* Error reporting: functions that can fail return a negative int (or NULL)
 * and leave one human-readable line in a thread-local buffer. Callers that
 * add context prepend it with dl_err_prefix(). Nothing outside main() exits. */
#pragma once
#include <stdarg.h>

/* Set the current thread's error message (printf-style). Always returns -1
 * so that `return dl_err("...")` reads naturally. */
int dl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the existing message: "prefix: old message". Returns -1. */
int dl_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The current thread's last message ("" when none). */
const char *dl_errmsg(void);
void dl_err_clear(void);
