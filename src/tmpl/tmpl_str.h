/* Python string operations used by filters and methods (src/tmpl only). */
#pragma once
#include "tmpl/tmpl_int.h"

enum { TS_UPPER, TS_LOWER, TS_PYTITLE, TS_CAPITALIZE, TS_JTITLE };
/* Build a JSON string from b and free b (NULL if b overflowed). */
json_t *ts_take(tbuf *b);
/* Case mapping: str.upper/lower/title/capitalize, or jinja's title filter. */
json_t *ts_case(const char *s, size_t n, int mode);
/* str.strip/lstrip/rstrip; chars NULL = whitespace. */
json_t *ts_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right);
/* str.split/rsplit; sep NULL = whitespace runs; maxsplit < 0 = all. */
json_t *ts_split(const char *s, size_t n, const char *sep, size_t nsep, long long maxsplit, int from_right);
/* str.replace; count < 0 = all. */
json_t *ts_replace(const char *s, size_t n, const char *old, size_t no, const char *nw, size_t nn, long long count);
/* str.find (last=0) / rfind (last=1): code point index or -1. */
long long ts_find(const char *s, size_t n, const char *sub, size_t ns, int last);
long long ts_count(const char *s, size_t n, const char *sub, size_t ns);
