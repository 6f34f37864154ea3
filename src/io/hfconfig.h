/* Hugging Face config.json / generation_config.json reader for the model
 * families dotlm runs. Every variant listed in FORMATS.md is normalised here
 * so the model code sees one shape of config. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define CFG_MAX_LAYERS 512
#define CFG_MAX_EOS 16

typedef enum {
    ARCH_LLAMA = 1,
    ARCH_QWEN2,
    ARCH_QWEN3,
    ARCH_QWEN3_5,   /* qwen3_5_text or qwen3_5 (text_config) */
    ARCH_QWEN3_NEXT,
} cfg_arch;

typedef enum { LAYER_FULL_ATTN = 0, LAYER_LINEAR_ATTN = 1 } cfg_layer_type;

/* Quantization as declared in config.json (cross-checked per tensor at load). */
typedef enum { QCFG_NONE = 0, QCFG_FP8_BLOCK, QCFG_CT_FP8, QCFG_CT_INT8, QCFG_OTHER } cfg_quant_kind;

typedef struct {
    cfg_quant_kind kind;
    char method[48];          /* quant_method as written */
    char detail[128];         /* e.g. format / unsupported reason */
    int fp8_e5m2;             /* fmt e5m2 (else e4m3) */
    int block_n, block_k;     /* weight_block_size (fp8 block) */
    int act_dynamic;          /* activation_scheme dynamic (1) / static (0) */
    char act_strategy[16];    /* "token", "group", "tensor" ... */
    char w_strategy[16];      /* "channel", "tensor", "block" */
    int act_present;          /* activations are quantized too (0: weight-only) */
    int n_ignore;
    char **ignore;            /* modules_to_not_convert / ignore (owned) */
} cfg_quant;

typedef struct {
    cfg_arch arch;
    char model_type[32];
    int hidden;            /* hidden_size */
    int intermediate;      /* intermediate_size */
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;          /* explicit head_dim, else hidden / n_heads */
    int vocab;
    int max_pos;           /* max_position_embeddings */
    float rms_eps;
    double rope_theta;
    float partial_rotary;  /* 1.0 unless given */
    int tie_embeddings;
    int attn_bias;         /* qwen2: q/k/v bias (and attention_bias for llama) */
    int mlp_bias;
    char dtype[16];        /* torch_dtype or dtype ("bfloat16"...) */
    /* rope scaling (llama3 style) */
    char rope_type[16];    /* "default", "llama3", "linear" ... */
    double rope_factor, rope_low_freq, rope_high_freq;
    int rope_orig_max_pos;
    /* hybrid (qwen3_5 / qwen3_next) */
    cfg_layer_type layer_types[CFG_MAX_LAYERS];
    int full_attn_interval; /* as given / defaulted (0 when layer_types is explicit) */
    int lin_n_key_heads, lin_n_value_heads, lin_key_dim, lin_value_dim, lin_conv_kernel;
    int attn_output_gate;  /* full attention layers gate their output */
    int text_prefix;       /* tensors prefixed "model.language_model." */
    /* sparse MoE MLP (qwen3_next); n_experts == 0 means every MLP is dense */
    int n_experts, n_experts_per_tok;
    int moe_intermediate;            /* moe_intermediate_size (per expert) */
    int shared_expert_intermediate;  /* shared_expert_intermediate_size */
    int norm_topk_prob;
    unsigned char layer_moe[CFG_MAX_LAYERS]; /* 1: layer i uses the MoE block */
    /* special ids */
    int bos_id;            /* -1 if none */
    int n_eos;
    int eos_ids[CFG_MAX_EOS];
    cfg_quant quant;
} hf_config;

typedef struct {
    int present;
    int do_sample;
    float temperature, top_p, min_p, repetition_penalty;
    int top_k;
    int n_eos;
    int eos_ids[CFG_MAX_EOS];
    int bos_id;
} hf_genconfig;

/* Parse config.json from a path. Returns 0, or -1 with a message naming the
 * file and the field (missing, wrong type, out of range, unknown model_type). */
int cfg_load(const char *path, hf_config *out);
/* Same from a string (fuzzer, tests). */
int cfg_parse(const char *json, size_t len, const char *label, hf_config *out);
void cfg_free(hf_config *c);
/* generation_config.json; a missing file is not an error (present = 0). */
int gencfg_load(const char *path, hf_genconfig *out);
/* Same from a string (tests); sets present = 1 on success. */
int gencfg_parse(const char *json, size_t len, const char *label, hf_genconfig *out);
const char *cfg_arch_name(cfg_arch a);
