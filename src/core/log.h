/* Minimal levelled logging to stderr. DOTLM_LOG=debug|info|warn|quiet. */
#pragma once
enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_QUIET = 3 };
void dl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dl_log_set_level(int level);
int dl_log_level(void);
#define LOGD(...) dl_log(LOG_DEBUG, __VA_ARGS__)
#define LOGI(...) dl_log(LOG_INFO, __VA_ARGS__)
#define LOGW(...) dl_log(LOG_WARN, __VA_ARGS__)
