/* Typed field readers for Hugging Face JSON configs (internal to src/io).
 * Each reader takes the object, the key and a context naming the file and the
 * path of the object ("" or "text_config."), and on failure leaves one line:
 * "<file>: field '<path><key>': <problem>". A missing key or JSON null takes
 * the default unless the field is required. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "io/hfconfig.h"

typedef struct {
    const char *label;  /* file name for messages */
    const char *path;   /* "" or "text_config." */
} cj_ctx;

/* printf-style "<label>: field '<path><key>': <msg>"; returns -1. */
int cj_err(const cj_ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *cj_kind(const json_t *v);
/* 1 when `key` exists and is not null. */
int cj_has(const json_t *o, const char *key);
/* Integer in [lo, hi]. An integral real (4096.0) is accepted. */
int cj_int(const cj_ctx *c, const json_t *o, const char *key, int required, int def, long long lo,
           long long hi, int *out);
/* Number (integer or real) in (lo_excl, hi]. */
int cj_num(const cj_ctx *c, const json_t *o, const char *key, int required, double def, double lo_excl,
           double hi, double *out);
int cj_bool(const cj_ctx *c, const json_t *o, const char *key, int def, int *out);
/* String of at most cap-1 bytes. */
int cj_str(const cj_ctx *c, const json_t *o, const char *key, int required, const char *def, char *out,
           size_t cap);
/* Validate a JSON value already fetched as an integer in [lo, hi]. */
int cj_int_value(const cj_ctx *c, const char *key, const json_t *v, long long lo, long long hi, int *out);
/* List of strings (or null/absent = empty); allocates *out (free each + array). */
int cj_strlist(const cj_ctx *c, const json_t *o, const char *key, char ***out, int *n);

/* quantization_config -> cfg_quant (hfconfig_quant.c). Unsupported schemes
 * are not errors (kind = QCFG_OTHER, detail says why); malformed JSON is. */
int cfgq_parse(const cj_ctx *c, const json_t *q, cfg_quant *out);
