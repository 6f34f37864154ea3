#include "core/err.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char g_err[1024];

int dl_err(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return -1;
}

int dl_err_prefix(const char *fmt, ...) {
    char pre[512], old[sizeof g_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, g_err, sizeof old);
    size_t n = strlen(pre);
    if (n > sizeof g_err - 3) n = sizeof g_err - 3;
    memcpy(g_err, pre, n);
    g_err[n] = ':';
    g_err[n + 1] = ' ';
    size_t m = strlen(old);
    if (m > sizeof g_err - n - 3) m = sizeof g_err - n - 3;
    memcpy(g_err + n + 2, old, m);
    g_err[n + 2 + m] = 0;
    return -1;
}

const char *dl_errmsg(void) { return g_err; }
void dl_err_clear(void) { g_err[0] = 0; }
