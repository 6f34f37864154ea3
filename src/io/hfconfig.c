/* config.json -> hf_config. Every spelling listed in FORMATS.md is folded
 * into one normalised struct; defaults follow transformers' configuration_*.py
 * for each model type (e.g. qwen3 head_dim 128, hybrid partial_rotary 0.25,
 * full_attention_interval 4). Anything the engine cannot run correctly (other
 * activations, sliding windows, wrong sizes) is refused with a message naming
 * the field. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "io/cfg_json.h"

#define CFG_BIG (1 << 24) /* generous upper bound for any size field */

static const struct {
    const char *name;
    cfg_arch arch;
} k_types[] = {
    {"llama", ARCH_LLAMA},          {"qwen2", ARCH_QWEN2},   {"qwen3", ARCH_QWEN3},
    {"qwen3_5_text", ARCH_QWEN3_5}, {"qwen3_5", ARCH_QWEN3_5}, {"qwen3_next", ARCH_QWEN3_NEXT},
};
#define CFG_SUPPORTED "llama, qwen2, qwen3, qwen3_5_text, qwen3_5, qwen3_next"

const char *cfg_arch_name(cfg_arch a) {
    switch (a) {
    case ARCH_LLAMA: return "llama";
    case ARCH_QWEN2: return "qwen2";
    case ARCH_QWEN3: return "qwen3";
    case ARCH_QWEN3_5: return "qwen3_5";
    case ARCH_QWEN3_NEXT: return "qwen3_next";
    }
    return "?";
}

static int is_hybrid(cfg_arch a) { return a == ARCH_QWEN3_5 || a == ARCH_QWEN3_NEXT; }

/* eos_token_id: int, list of ints, or null/absent (none). */
static int cfg_eos(const cj_ctx *c, const json_t *o, int *ids, int *n) {
    const json_t *v = json_object_get(o, "eos_token_id");
    *n = 0;
    if (!v || json_is_null(v)) return 0;
    if (json_is_array(v)) {
        size_t m = json_array_size(v);
        if (m > CFG_MAX_EOS) return cj_err(c, "eos_token_id", "%zu ids (at most %d supported)", m, CFG_MAX_EOS);
        for (size_t i = 0; i < m; i++)
            if (cj_int_value(c, "eos_token_id", json_array_get(v, i), 0, 0x7fffffff, &ids[i])) return -1;
        *n = (int)m;
        return 0;
    }
    if (cj_int_value(c, "eos_token_id", v, 0, 0x7fffffff, &ids[0])) return -1;
    *n = 1;
    return 0;
}

/* bos_token_id: int or null/absent (-1). */
static int cfg_bos(const cj_ctx *c, const json_t *o, int *bos) {
    return cj_int(c, o, "bos_token_id", 0, -1, 0, 0x7fffffff, bos);
}

/* RoPE: theta, partial rotary factor and scaling, from rope_parameters
 * (transformers 5), legacy top-level keys, or legacy rope_scaling. */
static int cfg_rope(const cj_ctx *c, const json_t *o, hf_config *h) {
    const json_t *rp = json_object_get(o, "rope_parameters"), *rs = json_object_get(o, "rope_scaling");
    if (rp && !json_is_null(rp) && !json_is_object(rp))
        return cj_err(c, "rope_parameters", "expected an object, got %s", cj_kind(rp));
    if (rs && !json_is_null(rs) && !json_is_object(rs))
        return cj_err(c, "rope_scaling", "expected an object, got %s", cj_kind(rs));
    if (!json_is_object(rp)) rp = NULL;
    if (!json_is_object(rs)) rs = NULL;
    char path[64];
    snprintf(path, sizeof path, "%srope_parameters.", c->path);
    cj_ctx pc = {c->label, path};
    double d;
    /* rope_parameters wins over the legacy top-level key (transformers folds
     * the latter into the former only when absent). */
    if (rp && cj_has(rp, "rope_theta")) {
        if (cj_num(&pc, rp, "rope_theta", 1, 0, 0, 1e30, &h->rope_theta)) return -1;
    } else if (cj_num(c, o, "rope_theta", 0, 10000.0, 0, 1e30, &h->rope_theta))
        return -1;
    double prf_def = is_hybrid(h->arch) ? 0.25 : 1.0;
    if (rp && cj_has(rp, "partial_rotary_factor")) {
        if (cj_num(&pc, rp, "partial_rotary_factor", 1, 0, 0, 1, &d)) return -1;
    } else if (cj_num(c, o, "partial_rotary_factor", 0, prf_def, 0, 1, &d))
        return -1;
    h->partial_rotary = (float)d;
    /* scaling: whichever object declares a type */
    const json_t *so = NULL;
    cj_ctx sc = pc;
    char spath[64];
    if (rp && (cj_has(rp, "rope_type") || cj_has(rp, "type"))) so = rp;
    else if (rs) {
        so = rs;
        snprintf(spath, sizeof spath, "%srope_scaling.", c->path);
        sc.path = spath;
    }
    strcpy(h->rope_type, "default");
    if (!so) return 0;
    const char *tk = cj_has(so, "rope_type") ? "rope_type" : "type";
    if (cj_str(&sc, so, tk, 0, "default", h->rope_type, sizeof h->rope_type)) return -1;
    if (!strcmp(h->rope_type, "llama3")) {
        if (cj_num(&sc, so, "factor", 1, 0, 0, 1e6, &h->rope_factor) ||
            cj_num(&sc, so, "low_freq_factor", 1, 0, 0, 1e6, &h->rope_low_freq) ||
            cj_num(&sc, so, "high_freq_factor", 1, 0, 0, 1e6, &h->rope_high_freq) ||
            cj_int(&sc, so, "original_max_position_embeddings", 1, 0, 1, 1 << 30, &h->rope_orig_max_pos))
            return -1;
        if (h->rope_high_freq <= h->rope_low_freq)
            return cj_err(&sc, "high_freq_factor", "must exceed low_freq_factor (%g <= %g)", h->rope_high_freq,
                          h->rope_low_freq);
    } else if (strcmp(h->rope_type, "default")) {
        /* linear, dynamic, yarn...: recorded; the model decides whether it runs them */
        if (cj_num(&sc, so, "factor", 0, 0, -1, 1e6, &h->rope_factor) ||
            cj_int(&sc, so, "original_max_position_embeddings", 0, 0, 0, 1 << 30, &h->rope_orig_max_pos))
            return -1;
    }
    return 0;
}

/* layer_types (explicit) or full_attention_interval (hybrid) -> h->layer_types. */
static int cfg_layers(const cj_ctx *c, const json_t *o, hf_config *h) {
    const json_t *lt = json_object_get(o, "layer_types");
    int hyb = is_hybrid(h->arch);
    for (int i = 0; i < h->n_layers; i++) h->layer_types[i] = LAYER_FULL_ATTN;
    if (lt && !json_is_null(lt)) {
        if (!json_is_array(lt)) return cj_err(c, "layer_types", "expected a list of strings, got %s", cj_kind(lt));
        if (json_array_size(lt) != (size_t)h->n_layers)
            return cj_err(c, "layer_types", "has %zu entries but num_hidden_layers is %d", json_array_size(lt),
                          h->n_layers);
        for (int i = 0; i < h->n_layers; i++) {
            const json_t *e = json_array_get(lt, (size_t)i);
            const char *s = json_is_string(e) ? json_string_value(e) : NULL;
            if (!s) return cj_err(c, "layer_types", "entry %d is %s, expected a string", i, cj_kind(e));
            if (!strcmp(s, "full_attention")) h->layer_types[i] = LAYER_FULL_ATTN;
            else if (hyb && !strcmp(s, "linear_attention")) h->layer_types[i] = LAYER_LINEAR_ATTN;
            else
                return cj_err(c, "layer_types", "entry %d '%.40s' is not supported for %s", i, s,
                              cfg_arch_name(h->arch));
        }
        h->full_attn_interval = 0;
        return 0;
    }
    if (!hyb) return 0;
    if (cj_int(c, o, "full_attention_interval", 0, 4, 1, CFG_MAX_LAYERS, &h->full_attn_interval)) return -1;
    for (int i = 0; i < h->n_layers; i++)
        h->layer_types[i] = (i + 1) % h->full_attn_interval ? LAYER_LINEAR_ATTN : LAYER_FULL_ATTN;
    return 0;
}

/* Gated DeltaNet sizes and the attention output gate (hybrid only). */
static int cfg_hybrid(const cj_ctx *c, const json_t *o, hf_config *h) {
    if (cj_int(c, o, "linear_num_key_heads", 0, 16, 1, 4096, &h->lin_n_key_heads) ||
        cj_int(c, o, "linear_num_value_heads", 0, 32, 1, 4096, &h->lin_n_value_heads) ||
        cj_int(c, o, "linear_key_head_dim", 0, 128, 1, 65536, &h->lin_key_dim) ||
        cj_int(c, o, "linear_value_head_dim", 0, 128, 1, 65536, &h->lin_value_dim) ||
        cj_int(c, o, "linear_conv_kernel_dim", 0, 4, 1, 64, &h->lin_conv_kernel) ||
        cj_bool(c, o, "attn_output_gate", 1, &h->attn_output_gate))
        return -1;
    if (h->lin_n_value_heads % h->lin_n_key_heads)
        return cj_err(c, "linear_num_value_heads", "%d is not a multiple of linear_num_key_heads (%d)",
                      h->lin_n_value_heads, h->lin_n_key_heads);
    return 0;
}

/* Sparse MoE MLP (qwen3_next): which layers use it and its sizes. */
static int cfg_moe(const cj_ctx *c, const json_t *o, hf_config *h) {
    if (h->arch != ARCH_QWEN3_NEXT) return 0;
    int step;
    if (cj_int(c, o, "num_experts", 0, 512, 0, 1 << 16, &h->n_experts) ||
        cj_int(c, o, "num_experts_per_tok", 0, 10, 1, 1 << 16, &h->n_experts_per_tok) ||
        cj_int(c, o, "moe_intermediate_size", 0, 512, 1, CFG_BIG, &h->moe_intermediate) ||
        cj_int(c, o, "shared_expert_intermediate_size", 0, 512, 0, CFG_BIG, &h->shared_expert_intermediate) ||
        cj_bool(c, o, "norm_topk_prob", 1, &h->norm_topk_prob) ||
        cj_int(c, o, "decoder_sparse_step", 0, 1, 1, CFG_MAX_LAYERS, &step))
        return -1;
    if (h->n_experts && h->n_experts_per_tok > h->n_experts)
        return cj_err(c, "num_experts_per_tok", "%d exceeds num_experts (%d)", h->n_experts_per_tok, h->n_experts);
    for (int i = 0; i < h->n_layers; i++) h->layer_moe[i] = h->n_experts > 0 && (i + 1) % step == 0;
    const json_t *ml = json_object_get(o, "mlp_only_layers");
    if (ml && !json_is_null(ml)) {
        if (!json_is_array(ml)) return cj_err(c, "mlp_only_layers", "expected a list of ints, got %s", cj_kind(ml));
        for (size_t i = 0; i < json_array_size(ml); i++) {
            int l;
            if (cj_int_value(c, "mlp_only_layers", json_array_get(ml, i), 0, h->n_layers - 1, &l)) return -1;
            h->layer_moe[l] = 0;
        }
    }
    return 0;
}

/* Sizes and heads of the decoder. */
static int cfg_sizes(const cj_ctx *c, const json_t *o, hf_config *h) {
    if (cj_int(c, o, "hidden_size", 1, 0, 1, CFG_BIG, &h->hidden) ||
        cj_int(c, o, "intermediate_size", 1, 0, 1, CFG_BIG, &h->intermediate) ||
        cj_int(c, o, "num_hidden_layers", 1, 0, 1, CFG_MAX_LAYERS, &h->n_layers) ||
        cj_int(c, o, "num_attention_heads", 1, 0, 1, 65536, &h->n_heads) ||
        cj_int(c, o, "vocab_size", 1, 0, 1, 1 << 30, &h->vocab) ||
        cj_int(c, o, "num_key_value_heads", 0, h->n_heads, 1, 65536, &h->n_kv_heads) ||
        cj_int(c, o, "max_position_embeddings", 0, h->arch == ARCH_LLAMA ? 2048 : 32768, 1, 1 << 30, &h->max_pos))
        return -1;
    if (h->n_heads % h->n_kv_heads)
        return cj_err(c, "num_key_value_heads", "%d does not divide num_attention_heads (%d)", h->n_kv_heads,
                      h->n_heads);
    const json_t *hd = json_object_get(o, "head_dim");
    if (hd && !json_is_null(hd)) {
        if (cj_int_value(c, "head_dim", hd, 1, 65536, &h->head_dim)) return -1;
    } else if (!hd && h->arch == ARCH_QWEN3) {
        h->head_dim = 128; /* Qwen3Config default */
    } else if (!hd && is_hybrid(h->arch)) {
        h->head_dim = 256; /* Qwen3NextConfig / Qwen3_5TextConfig default */
    } else {
        if (h->hidden % h->n_heads)
            return cj_err(c, "num_attention_heads", "%d does not divide hidden_size (%d) and head_dim is not given",
                          h->n_heads, h->hidden);
        h->head_dim = h->hidden / h->n_heads;
    }
    double eps;
    if (cj_num(c, o, "rms_norm_eps", 0, 1e-6, 0, 1, &eps)) return -1;
    h->rms_eps = (float)eps;
    char act[32];
    if (cj_str(c, o, "hidden_act", 0, "silu", act, sizeof act)) return -1;
    if (strcmp(act, "silu")) return cj_err(c, "hidden_act", "'%s' is not supported (only silu)", act);
    int sw;
    if (cj_bool(c, o, "use_sliding_window", 0, &sw)) return -1;
    if (sw) return cj_err(c, "use_sliding_window", "sliding-window attention is not supported");
    return 0;
}

/* Parse a config JSON object held in `root`. `out` is zeroed first. */
static int cfg_from_json(const char *label, const json_t *root, hf_config *h) {
    cj_ctx top = {label, ""};
    if (!json_is_object(root)) return dl_err("%s: not a JSON object", label);
    if (cj_str(&top, root, "model_type", 1, "", h->model_type, sizeof h->model_type)) return -1;
    int found = 0;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (!strcmp(h->model_type, k_types[i].name)) h->arch = k_types[i].arch, found = 1;
    if (!found)
        return cj_err(&top, "model_type", "unknown model type '%s' (supported: " CFG_SUPPORTED ")", h->model_type);
    /* qwen3_5 nests the language model under text_config; top-level keys
     * fill in what the text config leaves out (ids, dtype, quantization). */
    const json_t *o = root;
    cj_ctx c = top;
    if (!strcmp(h->model_type, "qwen3_5")) {
        o = json_object_get(root, "text_config");
        if (!o || json_is_null(o)) return cj_err(&top, "text_config", "missing (required for qwen3_5)");
        if (!json_is_object(o)) return cj_err(&top, "text_config", "expected an object, got %s", cj_kind(o));
        c.path = "text_config.";
        h->text_prefix = 1;
    }
    if (cfg_sizes(&c, o, h) || cfg_rope(&c, o, h) || cfg_layers(&c, o, h) || cfg_moe(&c, o, h)) return -1;
    if (is_hybrid(h->arch) && cfg_hybrid(&c, o, h)) return -1;
    double rot = h->head_dim * (double)h->partial_rotary;
    if (fabs(rot - nearbyint(rot)) > 1e-6 || (int)nearbyint(rot) % 2 || rot < 2)
        return cj_err(&c, "partial_rotary_factor", "%g x head_dim %d is not a positive even number of dims",
                      h->partial_rotary, h->head_dim);
    /* biases: qwen2 always has q/k/v bias; llama's attention_bias covers
     * q/k/v/o; other models take attention_bias as written (default off). */
    if (cj_bool(&c, o, "attention_bias", 0, &h->attn_bias) || cj_bool(&c, o, "mlp_bias", 0, &h->mlp_bias))
        return -1;
    if (h->arch == ARCH_QWEN2) h->attn_bias = 1;
    /* tie_word_embeddings: transformers default False for all these types;
     * for qwen3_5 the top-level value (Qwen3_5Config's own field) wins. */
    const json_t *tie_src = o;
    cj_ctx tie_c = c;
    if (o != root && cj_has(root, "tie_word_embeddings")) tie_src = root, tie_c = top;
    if (cj_bool(&tie_c, tie_src, "tie_word_embeddings", 0, &h->tie_embeddings)) return -1;
    /* dtype: torch_dtype (transformers 4) or dtype (5); text_config first */
    const json_t *srcs[2] = {o, root};
    cj_ctx ctxs[2] = {c, top};
    h->dtype[0] = 0;
    for (int i = 0; i < 2 && !h->dtype[0]; i++) {
        const char *key = cj_has(srcs[i], "dtype") ? "dtype" : "torch_dtype";
        if (cj_str(&ctxs[i], srcs[i], key, 0, "", h->dtype, sizeof h->dtype)) return -1;
    }
    /* special ids: text_config first, then top level */
    int n_src = o == root ? 1 : 2;
    h->bos_id = -1;
    for (int i = 0; i < n_src && h->bos_id < 0; i++)
        if (cfg_bos(&ctxs[i], srcs[i], &h->bos_id)) return -1;
    for (int i = 0; i < n_src && !h->n_eos; i++)
        if (cfg_eos(&ctxs[i], srcs[i], h->eos_ids, &h->n_eos)) return -1;
    /* quantization_config: top level (where quantizers write it), else nested */
    for (int i = n_src - 1; i >= 0; i--) {
        const json_t *q = json_object_get(srcs[i], "quantization_config");
        if (q && !json_is_null(q)) return cfgq_parse(&ctxs[i], q, &h->quant);
    }
    return 0;
}

int cfg_parse(const char *json, size_t len, const char *label, hf_config *out) {
    memset(out, 0, sizeof *out);
    if (!label) label = "config.json";
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return dl_err("%s: not valid JSON: %s (line %d, column %d)", label, je.text, je.line, je.column);
    int rc = cfg_from_json(label, root, out);
    json_decref(root);
    if (rc) {
        cfg_free(out);
        out->quant.kind = QCFG_NONE;
    }
    return rc;
}

int cfg_load(const char *path, hf_config *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return dl_err("%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            if (cap > (64u << 20)) {
                free(buf);
                fclose(f);
                return dl_err("%s: larger than 64 MiB, not a config file", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return dl_err("%s: out of memory", path);
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return dl_err("%s: read error", path);
    }
    int rc = cfg_parse(buf, n, path, out);
    free(buf);
    return rc;
}

void cfg_free(hf_config *c) {
    if (!c) return;
    for (int i = 0; i < c->quant.n_ignore; i++) free(c->quant.ignore[i]);
    free(c->quant.ignore);
    c->quant.ignore = NULL;
    c->quant.n_ignore = 0;
}
