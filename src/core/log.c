#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_level = -1;

int dl_log_level(void) {
    if (g_level < 0) {
        const char *e = getenv("DOTLM_LOG");
        g_level = LOG_INFO;
        if (e && !strcmp(e, "debug")) g_level = LOG_DEBUG;
        if (e && !strcmp(e, "warn")) g_level = LOG_WARN;
        if (e && !strcmp(e, "quiet")) g_level = LOG_QUIET;
    }
    return g_level;
}

void dl_log_set_level(int level) { g_level = level; }

void dl_log(int level, const char *fmt, ...) {
    if (level < dl_log_level()) return;
    va_list ap;
    va_start(ap, fmt);
    fputs(level >= LOG_WARN ? "dotlm: warning: " : "dotlm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
