/* quantization_config -> cfg_quant. Three schemes are runnable (FP8 block
 * scaled "fp8", compressed-tensors float-quantized FP8 and int-quantized W8A8
 * INT8); every other scheme is recorded as QCFG_OTHER with a description so
 * the model loader can refuse it with a precise message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "io/cfg_json.h"

/* Record an unsupported scheme; always returns 0 (not a parse error). */
__attribute__((format(printf, 2, 3))) static int q_other(cfg_quant *q, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->detail, sizeof q->detail, fmt, ap);
    va_end(ap);
    q->kind = QCFG_OTHER;
    return 0;
}

/* quant_method "fp8" (transformers FineGrainedFP8 / Qwen, DeepSeek -FP8). */
static int q_fp8(const cj_ctx *c, const json_t *o, cfg_quant *q) {
    char fmt[16], act[16];
    if (cj_str(c, o, "fmt", 0, "e4m3", fmt, sizeof fmt)) return -1;
    if (strcmp(fmt, "e4m3") && strcmp(fmt, "e5m2"))
        return cj_err(c, "fmt", "unknown fp8 format '%s' (expected e4m3 or e5m2)", fmt);
    if (cj_str(c, o, "activation_scheme", 0, "dynamic", act, sizeof act)) return -1;
    if (strcmp(act, "dynamic") && strcmp(act, "static"))
        return cj_err(c, "activation_scheme", "unknown scheme '%s' (expected dynamic or static)", act);
    q->fp8_e5m2 = !strcmp(fmt, "e5m2");
    q->act_dynamic = !strcmp(act, "dynamic");
    q->act_present = 1;
    const json_t *b = json_object_get(o, "weight_block_size");
    if (!b || json_is_null(b)) {
        strcpy(q->w_strategy, "tensor");
        strcpy(q->act_strategy, "tensor");
    } else {
        if (!json_is_array(b) || json_array_size(b) != 2)
            return cj_err(c, "weight_block_size", "expected [block_n, block_k], got %s", cj_kind(b));
        if (cj_int_value(c, "weight_block_size", json_array_get(b, 0), 1, 1 << 20, &q->block_n) ||
            cj_int_value(c, "weight_block_size", json_array_get(b, 1), 1, 1 << 20, &q->block_k))
            return -1;
        strcpy(q->w_strategy, "block");
        strcpy(q->act_strategy, "group");
    }
    if (cj_strlist(c, o, "modules_to_not_convert", &q->ignore, &q->n_ignore)) return -1;
    q->kind = QCFG_FP8_BLOCK;
    if (q->block_n)
        snprintf(q->detail, sizeof q->detail, "fp8 %s, %dx%d block-scaled weights, %s activations", fmt,
                 q->block_n, q->block_k, act);
    else
        snprintf(q->detail, sizeof q->detail, "fp8 %s, per-tensor weights, %s activations", fmt, act);
    return 0;
}

/* One compressed-tensors quantization args object (weights or activations). */
typedef struct {
    char type[16], strategy[16];
    int bits, symmetric, dynamic;
} q_args;

static int q_read_args(const cj_ctx *gc, const char *key, const json_t *a, q_args *r) {
    if (!json_is_object(a)) return cj_err(gc, key, "expected an object, got %s", cj_kind(a));
    char path[240];
    snprintf(path, sizeof path, "%s%s.", gc->path, key);
    cj_ctx cc = {gc->label, path}, *c = &cc;
    if (cj_str(c, a, "type", 0, "int", r->type, sizeof r->type) ||
        cj_str(c, a, "strategy", 0, "tensor", r->strategy, sizeof r->strategy) ||
        cj_int(c, a, "num_bits", 0, 8, 1, 64, &r->bits) || cj_bool(c, a, "symmetric", 1, &r->symmetric) ||
        cj_bool(c, a, "dynamic", 0, &r->dynamic))
        return -1;
    return 0;
}

/* quant_method "compressed-tensors" (llm-compressor output). */
static int q_ct(const cj_ctx *c, const json_t *o, cfg_quant *q) {
    char format[40] = "";
    if (cj_str(c, o, "format", 0, "", format, sizeof format)) return -1;
    const json_t *groups = json_object_get(o, "config_groups");
    if (!json_is_object(groups) || !json_object_size(groups))
        return cj_err(c, "config_groups", groups ? "expected a non-empty object" : "missing");
    if (cj_strlist(c, o, "ignore", &q->ignore, &q->n_ignore)) return -1;
    const char *gname;
    json_t *g;
    q_args w0 = {0}, a0 = {0};
    int first = 1, act0 = 0;
    json_object_foreach((json_t *)groups, gname, g) {
        char path[160];
        snprintf(path, sizeof path, "%sconfig_groups.%.64s.", c->path, gname);
        cj_ctx gc = {c->label, path};
        if (!json_is_object(g)) return dl_err("%s: field '%.150s': expected an object", c->label, path);
        if (!format[0] && cj_str(&gc, g, "format", 0, "", format, sizeof format)) return -1;
        const json_t *w = json_object_get(g, "weights");
        if (!w || json_is_null(w)) return cj_err(&gc, "weights", "missing");
        q_args wa = {0}, aa = {0};
        if (q_read_args(&gc, "weights", w, &wa)) return -1;
        const json_t *a = json_object_get(g, "input_activations");
        int act = a && !json_is_null(a);
        if (act && q_read_args(&gc, "input_activations", a, &aa)) return -1;
        if (first) {
            w0 = wa, a0 = aa, act0 = act, first = 0;
        } else if (memcmp(&w0, &wa, sizeof wa) || memcmp(&a0, &aa, sizeof aa) || act0 != act) {
            return q_other(q, "compressed-tensors with differing schemes per config group");
        }
    }
    q->act_present = act0;
    q->act_dynamic = act0 && a0.dynamic;
    snprintf(q->w_strategy, sizeof q->w_strategy, "%s", w0.strategy);
    if (act0) snprintf(q->act_strategy, sizeof q->act_strategy, "%s", a0.strategy);
    int is_float = !strcmp(format, "float-quantized"), is_int = !strcmp(format, "int-quantized");
    if (!is_float && !is_int)
        return q_other(q, "compressed-tensors format '%s' (%d-bit %s weights) is not supported",
                       format[0] ? format : "?", w0.bits, w0.type);
    if (strcmp(w0.type, is_float ? "float" : "int") || w0.bits != 8)
        return q_other(q, "compressed-tensors %s with %d-bit %s weights is not supported", format, w0.bits,
                       w0.type);
    if (!w0.symmetric) return q_other(q, "compressed-tensors %s with asymmetric weights is not supported", format);
    if (w0.dynamic) return q_other(q, "compressed-tensors %s with dynamic weight scales is not supported", format);
    if (strcmp(w0.strategy, "channel") && strcmp(w0.strategy, "tensor"))
        return q_other(q, "compressed-tensors %s with '%s' weight strategy is not supported", format, w0.strategy);
    if (act0) {
        if (a0.bits != 8 || strcmp(a0.type, w0.type))
            return q_other(q, "compressed-tensors %s with %d-bit %s activations is not supported", format,
                           a0.bits, a0.type);
        if (!a0.symmetric)
            return q_other(q, "compressed-tensors %s with asymmetric activations is not supported", format);
    }
    q->kind = is_float ? QCFG_CT_FP8 : QCFG_CT_INT8;
    snprintf(q->detail, sizeof q->detail, "compressed-tensors %s, per-%s weights, %s", format, w0.strategy,
             !act0 ? "weight-only" : a0.dynamic ? "dynamic activations" : "static activations");
    return 0;
}

int cfgq_parse(const cj_ctx *c0, const json_t *o, cfg_quant *q) {
    char path[64];
    snprintf(path, sizeof path, "%squantization_config.", c0->path);
    cj_ctx c = {c0->label, path};
    memset(q, 0, sizeof *q);
    if (!json_is_object(o))
        return dl_err("%s: field '%squantization_config': expected an object, got %s", c0->label, c0->path,
                      cj_kind(o));
    if (cj_str(&c, o, "quant_method", 1, "", q->method, sizeof q->method)) return -1;
    if (!strcmp(q->method, "fp8")) return q_fp8(&c, o, q);
    if (!strcmp(q->method, "compressed-tensors")) return q_ct(&c, o, q);
    int bits = 0, group = 0;
    const json_t *jb = json_object_get(o, "bits"), *jg = json_object_get(o, "group_size");
    if (json_is_integer(jb)) bits = (int)json_integer_value(jb);
    if (json_is_integer(jg)) group = (int)json_integer_value(jg);
    if (!strcmp(q->method, "bitsandbytes"))
        return q_other(q, "bitsandbytes %s quantization is not supported",
                       json_is_true(json_object_get(o, "load_in_4bit")) ? "4-bit" : "8-bit");
    if (bits)
        return q_other(q, "%s quantization (%d-bit, group size %d) is not supported", q->method, bits, group);
    return q_other(q, "%s quantization is not supported", q->method);
}
