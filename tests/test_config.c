/* config.json / generation_config.json: every variant in FORMATS.md, the
 * transformers defaults per model type, quantization_config schemes, random
 * valid configs built with jansson, and every malformed case (one line naming
 * the file and field). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "io/hfconfig.h"
#include "testutil.h"

static uint64_t g_rng;

static int parse(const char *json, hf_config *c) { return cfg_parse(json, strlen(json), "cfg.json", c); }

/* Must parse; prints the message otherwise. */
static int ok(const char *json, hf_config *c, const char *ctx) {
    int rc = parse(json, c);
    CHECKF(rc == 0, "%s: refused: %s", ctx, dl_errmsg());
    return rc == 0;
}

/* Must be refused with one line naming the file and containing `want`. */
static void bad(const char *json, const char *want) {
    hf_config c;
    dl_err_clear();
    int rc = parse(json, &c);
    const char *m = dl_errmsg();
    CHECKF(rc == -1, "accepted: %s", json);
    CHECKF(strstr(m, "cfg.json: ") == m && strstr(m, want) && !strchr(m, '\n'), "message '%s' lacks '%s' (%s)", m,
           want, json);
    CHECK(c.quant.ignore == NULL && c.quant.n_ignore == 0);
}

/* `base` with the fields of the object `frag` replacing its own (JSON
 * duplicates are refused, so overrides go through jansson). Caller frees. */
static char *merged(const char *base, const char *frag) {
    json_error_t je;
    json_t *b = json_loads(base, 0, &je), *o = json_loads(frag, 0, &je);
    if (!b || !o) {
        fprintf(stderr, "bad test JSON: %s / %s\n", base, frag);
        exit(2);
    }
    json_object_update(b, o);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    json_decref(o);
    return s;
}

static void bad_with(const char *base, const char *frag, const char *want) {
    char *s = merged(base, frag);
    bad(s, want);
    free(s);
}

#define LLAMA_BASE                                                                                             \
    "\"model_type\":\"llama\",\"hidden_size\":2048,\"intermediate_size\":8192,\"num_hidden_layers\":16," \
    "\"num_attention_heads\":32,\"vocab_size\":128256"

static void test_llama(void) {
    hf_config c;
    /* Llama 3.2 style (transformers 4 spelling) */
    if (ok("{" LLAMA_BASE ",\"num_key_value_heads\":8,\"head_dim\":64,\"max_position_embeddings\":131072,"
           "\"rms_norm_eps\":1e-05,\"rope_theta\":500000.0,\"rope_scaling\":{\"factor\":32.0,\"high_freq_factor\":4.0,"
           "\"low_freq_factor\":1.0,\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},"
           "\"tie_word_embeddings\":true,\"torch_dtype\":\"bfloat16\",\"bos_token_id\":128000,"
           "\"eos_token_id\":[128001,128008,128009],\"attention_bias\":false,\"mlp_bias\":false,\"hidden_act\":\"silu\"}",
           &c, "llama 3.2")) {
        CHECK(c.arch == ARCH_LLAMA && !strcmp(c.model_type, "llama") && !strcmp(cfg_arch_name(c.arch), "llama"));
        CHECK(c.hidden == 2048 && c.intermediate == 8192 && c.n_layers == 16 && c.n_heads == 32);
        CHECK(c.n_kv_heads == 8 && c.head_dim == 64 && c.vocab == 128256 && c.max_pos == 131072);
        CHECK(c.rms_eps == 1e-5f && c.rope_theta == 500000.0 && c.partial_rotary == 1.0f);
        CHECK(!strcmp(c.rope_type, "llama3") && c.rope_factor == 32.0 && c.rope_low_freq == 1.0 &&
              c.rope_high_freq == 4.0 && c.rope_orig_max_pos == 8192);
        CHECK(c.tie_embeddings == 1 && c.attn_bias == 0 && c.mlp_bias == 0 && !strcmp(c.dtype, "bfloat16"));
        CHECK(c.bos_id == 128000 && c.n_eos == 3 && c.eos_ids[0] == 128001 && c.eos_ids[2] == 128009);
        CHECK(c.quant.kind == QCFG_NONE && c.text_prefix == 0 && c.n_experts == 0);
        int full = 1;
        for (int i = 0; i < c.n_layers; i++) full &= c.layer_types[i] == LAYER_FULL_ATTN;
        CHECK(full);
        cfg_free(&c);
    }
    /* transformers 5 spelling: rope_parameters, dtype, eos int */
    if (ok("{" LLAMA_BASE ",\"dtype\":\"float16\",\"eos_token_id\":2,\"bos_token_id\":null,"
           "\"rope_parameters\":{\"rope_type\":\"llama3\",\"rope_theta\":500000.0,\"factor\":8.0,"
           "\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,\"original_max_position_embeddings\":8192}}",
           &c, "llama v5")) {
        CHECK(!strcmp(c.dtype, "float16") && c.rope_theta == 500000.0 && c.rope_factor == 8.0);
        CHECK(!strcmp(c.rope_type, "llama3") && c.rope_orig_max_pos == 8192);
        CHECK(c.n_eos == 1 && c.eos_ids[0] == 2 && c.bos_id == -1);
        cfg_free(&c);
    }
    /* defaults (LlamaConfig): kv heads = heads, head_dim = hidden/heads,
     * theta 10000, max_pos 2048, eps 1e-6, untied, no bias */
    if (ok("{" LLAMA_BASE "}", &c, "llama minimal")) {
        CHECK(c.n_kv_heads == 32 && c.head_dim == 64 && c.rope_theta == 10000.0 && c.max_pos == 2048);
        CHECK(c.rms_eps == 1e-6f && c.tie_embeddings == 0 && c.attn_bias == 0 && c.mlp_bias == 0);
        CHECK(!strcmp(c.rope_type, "default") && c.bos_id == -1 && c.n_eos == 0 && c.dtype[0] == 0);
        cfg_free(&c);
    }
    /* explicit nulls take defaults; attention_bias / mlp_bias honoured */
    if (ok("{" LLAMA_BASE ",\"head_dim\":null,\"num_key_value_heads\":null,\"rope_scaling\":null,"
           "\"attention_bias\":true,\"mlp_bias\":true,\"rope_theta\":1e6}",
           &c, "llama nulls")) {
        CHECK(c.head_dim == 64 && c.n_kv_heads == 32 && c.attn_bias == 1 && c.mlp_bias == 1);
        CHECK(c.rope_theta == 1e6 && !strcmp(c.rope_type, "default"));
        cfg_free(&c);
    }
    /* legacy rope_scaling with "type" instead of "rope_type"; partial rotary top-level */
    if (ok("{" LLAMA_BASE ",\"rope_scaling\":{\"type\":\"linear\",\"factor\":2.0},\"partial_rotary_factor\":0.5}",
           &c, "linear rope")) {
        CHECK(!strcmp(c.rope_type, "linear") && c.rope_factor == 2.0 && c.partial_rotary == 0.5f);
        cfg_free(&c);
    }
    /* rope_parameters wins over the legacy top-level key */
    if (ok("{" LLAMA_BASE ",\"rope_theta\":10000,\"rope_parameters\":{\"rope_type\":\"default\","
           "\"rope_theta\":250000,\"partial_rotary_factor\":0.5}}",
           &c, "rope_parameters precedence")) {
        CHECK(c.rope_theta == 250000.0 && c.partial_rotary == 0.5f);
        cfg_free(&c);
    }
}

static void test_qwen_dense(void) {
    hf_config c;
    /* Qwen2.5: q/k/v bias always; tie default false; theta top-level */
    if (ok("{\"model_type\":\"qwen2\",\"hidden_size\":896,\"intermediate_size\":4864,\"num_hidden_layers\":24,"
           "\"num_attention_heads\":14,\"num_key_value_heads\":2,\"vocab_size\":151936,\"rope_theta\":1000000.0,"
           "\"max_position_embeddings\":32768,\"rms_norm_eps\":1e-06,\"torch_dtype\":\"bfloat16\","
           "\"use_sliding_window\":false,\"sliding_window\":32768,\"max_window_layers\":21,"
           "\"bos_token_id\":151643,\"eos_token_id\":151645}",
           &c, "qwen2")) {
        CHECK(c.arch == ARCH_QWEN2 && c.attn_bias == 1 && c.tie_embeddings == 0 && c.head_dim == 64);
        CHECK(c.n_kv_heads == 2 && c.rope_theta == 1e6 && c.max_pos == 32768 && c.bos_id == 151643);
        CHECK(c.n_eos == 1 && c.eos_ids[0] == 151645);
        cfg_free(&c);
    }
    if (ok("{\"model_type\":\"qwen2\",\"hidden_size\":896,\"intermediate_size\":4864,\"num_hidden_layers\":24,"
           "\"num_attention_heads\":14,\"vocab_size\":151936,\"attention_bias\":false,\"tie_word_embeddings\":true}",
           &c, "qwen2 tied")) {
        CHECK(c.attn_bias == 1 && c.tie_embeddings == 1 && c.max_pos == 32768);
        cfg_free(&c);
    }
    /* Qwen3: explicit head_dim larger than hidden/heads */
    const char *q3 = "{\"model_type\":\"qwen3\",\"hidden_size\":1024,\"intermediate_size\":3072,\"num_hidden_layers\":28,"
                     "\"num_attention_heads\":16,\"num_key_value_heads\":8,\"head_dim\":128,\"vocab_size\":151936,"
                     "\"rope_theta\":1000000,\"tie_word_embeddings\":true,\"attention_bias\":false,"
                     "\"layer_types\":null,\"dtype\":\"bfloat16\"}";
    if (ok(q3, &c, "qwen3")) {
        CHECK(c.arch == ARCH_QWEN3 && c.head_dim == 128 && c.hidden == 1024 && c.tie_embeddings == 1);
        CHECK(c.attn_bias == 0 && c.partial_rotary == 1.0f && c.attn_output_gate == 0);
        cfg_free(&c);
    }
    /* Qwen3Config head_dim default is 128 when absent; null means hidden/heads */
    if (ok("{\"model_type\":\"qwen3\",\"hidden_size\":512,\"intermediate_size\":1024,\"num_hidden_layers\":2,"
           "\"num_attention_heads\":8,\"vocab_size\":1000}",
           &c, "qwen3 default head_dim")) {
        CHECK(c.head_dim == 128);
        cfg_free(&c);
    }
    if (ok("{\"model_type\":\"qwen3\",\"hidden_size\":512,\"intermediate_size\":1024,\"num_hidden_layers\":2,"
           "\"num_attention_heads\":8,\"vocab_size\":1000,\"head_dim\":null}",
           &c, "qwen3 null head_dim")) {
        CHECK(c.head_dim == 64);
        cfg_free(&c);
    }
    /* explicit full_attention layer_types (transformers 5 writes them) */
    if (ok("{\"model_type\":\"qwen3\",\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":2,"
           "\"num_attention_heads\":4,\"head_dim\":16,\"vocab_size\":100,"
           "\"layer_types\":[\"full_attention\",\"full_attention\"]}",
           &c, "qwen3 layer_types")) {
        CHECK(c.layer_types[0] == LAYER_FULL_ATTN && c.layer_types[1] == LAYER_FULL_ATTN);
        cfg_free(&c);
    }
}

#define HYB_TEXT                                                                                              \
    "\"hidden_size\":1024,\"intermediate_size\":3584,\"num_hidden_layers\":8,\"num_attention_heads\":8,"     \
    "\"num_key_value_heads\":2,\"head_dim\":256,\"vocab_size\":248320,\"linear_num_key_heads\":16,"          \
    "\"linear_num_value_heads\":16,\"linear_key_head_dim\":128,\"linear_value_head_dim\":128,"                \
    "\"linear_conv_kernel_dim\":4,\"rms_norm_eps\":1e-06"

static void test_hybrid(void) {
    hf_config c;
    /* qwen3_5_text with explicit layer_types and rope_parameters */
    if (ok("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"layer_types\":[\"linear_attention\",\"linear_attention\","
           "\"linear_attention\",\"full_attention\",\"linear_attention\",\"linear_attention\",\"linear_attention\","
           "\"full_attention\"],\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":10000000,"
           "\"partial_rotary_factor\":0.25,\"mrope_section\":[11,11,10],\"mrope_interleaved\":true},"
           "\"eos_token_id\":248044,\"tie_word_embeddings\":true}",
           &c, "qwen3_5_text")) {
        CHECK(c.arch == ARCH_QWEN3_5 && c.text_prefix == 0 && c.attn_output_gate == 1);
        CHECK(c.rope_theta == 1e7 && c.partial_rotary == 0.25f && c.head_dim == 256);
        CHECK(c.layer_types[0] == LAYER_LINEAR_ATTN && c.layer_types[3] == LAYER_FULL_ATTN &&
              c.layer_types[7] == LAYER_FULL_ATTN && c.layer_types[6] == LAYER_LINEAR_ATTN);
        CHECK(c.lin_n_key_heads == 16 && c.lin_n_value_heads == 16 && c.lin_key_dim == 128 && c.lin_value_dim == 128);
        CHECK(c.lin_conv_kernel == 4 && c.tie_embeddings == 1 && c.full_attn_interval == 0 && c.n_experts == 0);
        cfg_free(&c);
    }
    /* qwen3_5 multimodal: text under text_config, top-level tie and quant */
    if (ok("{\"model_type\":\"qwen3_5\",\"tie_word_embeddings\":true,\"image_token_id\":248056,"
           "\"text_config\":{\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"tie_word_embeddings\":false,"
           "\"dtype\":\"bfloat16\",\"eos_token_id\":248044,\"full_attention_interval\":2},"
           "\"vision_config\":{\"depth\":12},\"quantization_config\":{\"quant_method\":\"fp8\","
           "\"weight_block_size\":[128,128],\"modules_to_not_convert\":[\"model.visual\",\"lm_head\"]}}",
           &c, "qwen3_5")) {
        CHECK(c.arch == ARCH_QWEN3_5 && c.text_prefix == 1 && !strcmp(c.model_type, "qwen3_5"));
        CHECK(c.hidden == 1024 && c.n_layers == 8 && c.tie_embeddings == 1 && !strcmp(c.dtype, "bfloat16"));
        CHECK(c.n_eos == 1 && c.eos_ids[0] == 248044 && c.full_attn_interval == 2);
        CHECK(c.layer_types[0] == LAYER_LINEAR_ATTN && c.layer_types[1] == LAYER_FULL_ATTN);
        CHECK(c.partial_rotary == 0.25f && c.rope_theta == 10000.0);
        CHECK(c.quant.kind == QCFG_FP8_BLOCK && c.quant.n_ignore == 2 && !strcmp(c.quant.ignore[0], "model.visual"));
        cfg_free(&c);
        CHECK(c.quant.ignore == NULL);
    }
    /* qwen3_next: layer types from full_attention_interval (default 4), MoE */
    if (ok("{\"model_type\":\"qwen3_next\"," HYB_TEXT ",\"partial_rotary_factor\":0.25,\"rope_theta\":10000000,"
           "\"num_experts\":64,\"num_experts_per_tok\":8,\"moe_intermediate_size\":256,"
           "\"shared_expert_intermediate_size\":512,\"decoder_sparse_step\":1,\"mlp_only_layers\":[2],"
           "\"norm_topk_prob\":true,\"attn_output_gate\":true}",
           &c, "qwen3_next")) {
        CHECK(c.arch == ARCH_QWEN3_NEXT && c.full_attn_interval == 4 && c.attn_output_gate == 1);
        int okl = 1;
        for (int i = 0; i < 8; i++) okl &= c.layer_types[i] == ((i + 1) % 4 ? LAYER_LINEAR_ATTN : LAYER_FULL_ATTN);
        CHECK(okl);
        CHECK(c.n_experts == 64 && c.n_experts_per_tok == 8 && c.moe_intermediate == 256);
        CHECK(c.shared_expert_intermediate == 512 && c.norm_topk_prob == 1);
        CHECK(c.layer_moe[0] == 1 && c.layer_moe[2] == 0 && c.layer_moe[7] == 1);
        cfg_free(&c);
    }
    /* hybrid defaults from Qwen3NextConfig: head_dim 256, partial 0.25, gate on */
    if (ok("{\"model_type\":\"qwen3_next\",\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":4,"
           "\"num_attention_heads\":4,\"vocab_size\":1000,\"attn_output_gate\":false}",
           &c, "qwen3_next defaults")) {
        CHECK(c.head_dim == 256 && c.partial_rotary == 0.25f && c.attn_output_gate == 0);
        CHECK(c.lin_n_key_heads == 16 && c.lin_n_value_heads == 32 && c.lin_conv_kernel == 4);
        CHECK(c.layer_types[3] == LAYER_FULL_ATTN && c.layer_types[2] == LAYER_LINEAR_ATTN);
        cfg_free(&c);
    }
}

static const char *quant_cfg(const char *q) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "{" LLAMA_BASE ",\"quantization_config\":%s}", q);
    return buf;
}

static void test_quant(void) {
    hf_config c;
    if (ok(quant_cfg("{\"quant_method\":\"fp8\",\"fmt\":\"e4m3\",\"activation_scheme\":\"dynamic\","
                     "\"weight_block_size\":[128,64],\"modules_to_not_convert\":[\"lm_head\",\"model.layers.0.mlp\"]}"),
           &c, "fp8 block")) {
        CHECK(c.quant.kind == QCFG_FP8_BLOCK && !strcmp(c.quant.method, "fp8") && c.quant.fp8_e5m2 == 0);
        CHECK(c.quant.block_n == 128 && c.quant.block_k == 64 && c.quant.act_dynamic == 1 && c.quant.act_present);
        CHECK(!strcmp(c.quant.w_strategy, "block") && !strcmp(c.quant.act_strategy, "group"));
        CHECK(c.quant.n_ignore == 2 && !strcmp(c.quant.ignore[1], "model.layers.0.mlp"));
        cfg_free(&c);
    }
    if (ok(quant_cfg("{\"quant_method\":\"fp8\",\"fmt\":\"e5m2\",\"activation_scheme\":\"static\"}"), &c, "fp8 tensor")) {
        CHECK(c.quant.kind == QCFG_FP8_BLOCK && c.quant.fp8_e5m2 == 1 && c.quant.act_dynamic == 0);
        CHECK(c.quant.block_n == 0 && !strcmp(c.quant.w_strategy, "tensor") && c.quant.n_ignore == 0);
        cfg_free(&c);
    }
    const char *ct_fp8 =
        "{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"ignore\":[\"lm_head\"],"
        "\"quantization_status\":\"compressed\",\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],"
        "\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"channel\",\"symmetric\":true,\"dynamic\":false},"
        "\"input_activations\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"token\",\"dynamic\":true,"
        "\"symmetric\":true}}}}";
    if (ok(quant_cfg(ct_fp8), &c, "ct fp8")) {
        CHECK(c.quant.kind == QCFG_CT_FP8 && !strcmp(c.quant.w_strategy, "channel"));
        CHECK(c.quant.act_present == 1 && c.quant.act_dynamic == 1 && !strcmp(c.quant.act_strategy, "token"));
        CHECK(c.quant.n_ignore == 1 && !strcmp(c.quant.ignore[0], "lm_head"));
        cfg_free(&c);
    }
    if (ok(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"config_groups\":"
                     "{\"g\":{\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"tensor\"},"
                     "\"input_activations\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"tensor\",\"dynamic\":false}}}}"),
           &c, "ct fp8 static")) {
        CHECK(c.quant.kind == QCFG_CT_FP8 && !strcmp(c.quant.w_strategy, "tensor") && c.quant.act_dynamic == 0 &&
              c.quant.act_present == 1);
        cfg_free(&c);
    }
    if (ok(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"config_groups\":"
                     "{\"g\":{\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"channel\"},"
                     "\"input_activations\":null}}}"),
           &c, "ct fp8 weight-only")) {
        CHECK(c.quant.kind == QCFG_CT_FP8 && c.quant.act_present == 0 && strstr(c.quant.detail, "weight-only"));
        cfg_free(&c);
    }
    const char *ct_int8 =
        "{\"quant_method\":\"compressed-tensors\",\"format\":\"int-quantized\",\"ignore\":[\"lm_head\"],"
        "\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":{\"num_bits\":8,\"type\":\"int\","
        "\"strategy\":\"channel\",\"symmetric\":true},\"input_activations\":{\"num_bits\":8,\"type\":\"int\","
        "\"strategy\":\"token\",\"dynamic\":true,\"symmetric\":true}}}}";
    if (ok(quant_cfg(ct_int8), &c, "ct int8")) {
        CHECK(c.quant.kind == QCFG_CT_INT8 && c.quant.act_dynamic == 1 && !strcmp(c.quant.act_strategy, "token"));
        cfg_free(&c);
    }
    /* unsupported schemes: parsed, kind OTHER, detail says why */
    struct {
        const char *q, *want;
    } other[] = {
        {"{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":128,\"desc_act\":false}", "gptq quantization (4-bit, group size 128)"},
        {"{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":128,\"zero_point\":true}", "awq quantization (4-bit"},
        {"{\"quant_method\":\"bitsandbytes\",\"load_in_4bit\":true}", "bitsandbytes 4-bit"},
        {"{\"quant_method\":\"compressed-tensors\",\"format\":\"pack-quantized\",\"config_groups\":{\"g\":"
         "{\"weights\":{\"num_bits\":4,\"type\":\"int\",\"strategy\":\"group\",\"group_size\":128}}}}",
         "format 'pack-quantized' (4-bit int weights)"},
        {"{\"quant_method\":\"compressed-tensors\",\"format\":\"int-quantized\",\"config_groups\":{\"g\":"
         "{\"weights\":{\"num_bits\":8,\"type\":\"int\",\"strategy\":\"channel\",\"symmetric\":false}}}}",
         "asymmetric weights"},
        {"{\"quant_method\":\"compressed-tensors\",\"format\":\"int-quantized\",\"config_groups\":{\"g\":"
         "{\"weights\":{\"num_bits\":8,\"type\":\"int\",\"strategy\":\"channel\"},\"input_activations\":{\"num_bits\":8,"
         "\"type\":\"int\",\"strategy\":\"token\",\"dynamic\":true,\"symmetric\":false}}}}",
         "asymmetric activations"},
        {"{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"config_groups\":{\"g\":"
         "{\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"block\",\"block_structure\":[128,128]}}}}",
         "'block' weight strategy"},
        {"{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\",\"config_groups\":{"
         "\"a\":{\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"channel\"}},"
         "\"b\":{\"weights\":{\"num_bits\":8,\"type\":\"float\",\"strategy\":\"tensor\"}}}}",
         "differing schemes"},
        {"{\"quant_method\":\"hqq\"}", "hqq quantization is not supported"},
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        if (!ok(quant_cfg(other[i].q), &c, other[i].want)) continue;
        CHECKF(c.quant.kind == QCFG_OTHER && strstr(c.quant.detail, other[i].want), "detail '%s' lacks '%s'",
               c.quant.detail, other[i].want);
        cfg_free(&c);
    }
    /* malformed quantization_config: errors naming the field */
    bad(quant_cfg("[]"), "field 'quantization_config': expected an object");
    bad(quant_cfg("{\"bits\":4}"), "field 'quantization_config.quant_method': missing");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"fmt\":\"e3m4\"}"), "'quantization_config.fmt': unknown fp8 format 'e3m4'");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"activation_scheme\":\"sometimes\"}"), "activation_scheme");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"weight_block_size\":[128]}"), "'quantization_config.weight_block_size'");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"weight_block_size\":[128,0]}"), "out of range");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"modules_to_not_convert\":\"lm_head\"}"), "modules_to_not_convert");
    bad(quant_cfg("{\"quant_method\":\"fp8\",\"modules_to_not_convert\":[\"lm_head\",3]}"), "entry 1 is an integer");
    bad(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\"}"),
        "'quantization_config.config_groups': missing");
    /* ignore list allocated before the error: must not leak (ASan) */
    bad(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"ignore\":[\"lm_head\"],\"config_groups\":{\"g\":"
                  "{\"weights\":7}}}"),
        "'quantization_config.config_groups.g.weights': expected an object");
    bad(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"ignore\":[\"lm_head\"],\"config_groups\":{\"g\":"
                  "{\"weights\":{\"num_bits\":\"8\"}}}}"),
        "'quantization_config.config_groups.g.weights.num_bits'");
    bad(quant_cfg("{\"quant_method\":\"compressed-tensors\",\"config_groups\":{\"g\":{\"targets\":[]}}}"),
        "config_groups.g.weights': missing");
}

static void test_malformed(void) {
    bad("{\"model_type\":", "not valid JSON");
    bad("[1]", "not a JSON object");
    bad("{\"hidden_size\":4}", "field 'model_type': missing");
    bad("{\"model_type\":7}", "field 'model_type': expected a string, got an integer");
    bad("{\"model_type\":\"mistral\"}",
        "unknown model type 'mistral' (supported: llama, qwen2, qwen3, qwen3_5_text, qwen3_5, qwen3_next)");
    bad("{\"model_type\":\"llama\",\"model_type\":\"qwen2\"}", "not valid JSON: duplicate");
    /* required sizes */
    bad("{\"model_type\":\"llama\",\"intermediate_size\":8,\"num_hidden_layers\":1,\"num_attention_heads\":1,"
        "\"vocab_size\":1}",
        "field 'hidden_size': missing");
    bad("{\"model_type\":\"llama\",\"hidden_size\":null}", "field 'hidden_size': is null");
    const char *sizes[][2] = {
        {"\"hidden_size\":\"2048\"", "'hidden_size': expected an integer, got a string"},
        {"\"hidden_size\":0", "'hidden_size': 0 is out of range"},
        {"\"intermediate_size\":-5", "'intermediate_size': -5 is out of range"},
        {"\"num_hidden_layers\":513", "'num_hidden_layers': 513 is out of range [1, 512]"},
        {"\"vocab_size\":1.5", "'vocab_size': expected an integer, got 1.5"},
        {"\"num_key_value_heads\":5", "'num_key_value_heads': 5 does not divide num_attention_heads (32)"},
        {"\"num_attention_heads\":30", "'num_attention_heads': 30 does not divide hidden_size (2048)"},
        {"\"head_dim\":0", "'head_dim': 0 is out of range"},
        {"\"head_dim\":\"64\"", "'head_dim': expected an integer"},
        {"\"max_position_embeddings\":0", "'max_position_embeddings'"},
        {"\"rms_norm_eps\":\"1e-5\"", "'rms_norm_eps': expected a number, got a string"},
        {"\"rms_norm_eps\":0", "'rms_norm_eps': 0 is out of range"},
        {"\"rope_theta\":-1", "'rope_theta': -1 is out of range"},
        {"\"partial_rotary_factor\":0", "'partial_rotary_factor': 0 is out of range"},
        {"\"partial_rotary_factor\":1.5", "'partial_rotary_factor': 1.5 is out of range"},
        {"\"partial_rotary_factor\":0.3", "'partial_rotary_factor': 0.3 x head_dim 64 is not a positive even"},
        {"\"eos_token_id\":\"</s>\"", "'eos_token_id': expected an integer, got a string"},
        {"\"eos_token_id\":[1,-2]", "'eos_token_id': -2 is out of range"},
        {"\"eos_token_id\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", "'eos_token_id': 17 ids"},
        {"\"bos_token_id\":[1]", "'bos_token_id': expected an integer, got an array"},
        {"\"tie_word_embeddings\":\"yes\"", "'tie_word_embeddings': expected true or false, got a string"},
        {"\"attention_bias\":1", "'attention_bias': expected true or false"},
        {"\"torch_dtype\":16", "'torch_dtype': expected a string"},
        {"\"dtype\":\"a-very-long-dtype-name\"", "'dtype': value is too long"},
        {"\"hidden_act\":\"gelu\"", "'hidden_act': 'gelu' is not supported"},
        {"\"use_sliding_window\":true", "'use_sliding_window': sliding-window attention is not supported"},
        {"\"rope_scaling\":[1]", "'rope_scaling': expected an object, got an array"},
        {"\"rope_parameters\":\"llama3\"", "'rope_parameters': expected an object, got a string"},
        {"\"rope_scaling\":{\"rope_type\":\"llama3\",\"low_freq_factor\":1,\"high_freq_factor\":4,"
         "\"original_max_position_embeddings\":8192}",
         "'rope_scaling.factor': missing"},
        {"\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,\"high_freq_factor\":4}",
         "'rope_parameters.original_max_position_embeddings': missing"},
        {"\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":4,\"high_freq_factor\":1,"
         "\"original_max_position_embeddings\":8192}",
         "'rope_parameters.high_freq_factor': must exceed low_freq_factor"},
        {"\"rope_parameters\":{\"rope_theta\":\"big\"}", "'rope_parameters.rope_theta': expected a number"},
        {"\"layer_types\":[\"full_attention\"]", "'layer_types': has 1 entries but num_hidden_layers is 16"},
        {"\"layer_types\":\"full_attention\"", "'layer_types': expected a list of strings"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char frag[1024];
        snprintf(frag, sizeof frag, "{%s}", sizes[i][0]);
        bad_with("{" LLAMA_BASE "}", frag, sizes[i][1]);
    }
    /* dense models refuse linear attention layers */
    bad("{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":2,\"vocab_size\":10,\"layer_types\":[\"full_attention\",\"linear_attention\"]}",
        "'layer_types': entry 1 'linear_attention' is not supported for llama");
    bad("{\"model_type\":\"qwen3\",\"hidden_size\":64,\"intermediate_size\":64,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":2,\"vocab_size\":10,\"layer_types\":[\"full_attention\",\"sliding_attention\"]}",
        "entry 1 'sliding_attention' is not supported");
    /* hybrid */
    bad("{\"model_type\":\"qwen3_5\"}", "field 'text_config': missing (required for qwen3_5)");
    bad("{\"model_type\":\"qwen3_5\",\"text_config\":[]}", "field 'text_config': expected an object");
    bad("{\"model_type\":\"qwen3_5\",\"text_config\":{\"hidden_size\":64}}", "field 'text_config.intermediate_size': missing");
    bad_with("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT "}", "{\"linear_num_value_heads\":24}",
        "'linear_num_value_heads': 24 is not a multiple of linear_num_key_heads (16)");
    bad_with("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT "}", "{\"linear_conv_kernel_dim\":0}", "'linear_conv_kernel_dim'");
    bad("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"full_attention_interval\":0}", "'full_attention_interval'");
    bad("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"attn_output_gate\":\"on\"}", "'attn_output_gate'");
    bad("{\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"layer_types\":[1,2,3,4,5,6,7,8]}",
        "'layer_types': entry 0 is an integer");
    bad("{\"model_type\":\"qwen3_next\"," HYB_TEXT ",\"num_experts\":4,\"num_experts_per_tok\":8}",
        "'num_experts_per_tok': 8 exceeds num_experts (4)");
    bad("{\"model_type\":\"qwen3_next\"," HYB_TEXT ",\"mlp_only_layers\":[9]}", "'mlp_only_layers': 9 is out of range");
}

/* Random valid configs: what goes in comes out. */
static void test_random(void) {
    for (int it = 0; it < 200; it++) {
        int hyb = it % 2;
        int kv = 1 + (int)(tu_rand_u64(&g_rng) % 8), grp = 1 + (int)(tu_rand_u64(&g_rng) % 4);
        int heads = kv * grp, hd = 16 * (1 + (int)(tu_rand_u64(&g_rng) % 16));
        int layers = 1 + (int)(tu_rand_u64(&g_rng) % 64), inter = 1 + (int)(tu_rand_u64(&g_rng) % 100000);
        int vocab = 1 + (int)(tu_rand_u64(&g_rng) % 300000), interval = 1 + (int)(tu_rand_u64(&g_rng) % 6);
        int n_eos = (int)(tu_rand_u64(&g_rng) % 5), eos[4];
        double theta = 1000.0 * (1 + (double)(tu_rand_u64(&g_rng) % 100000));
        json_t *o = json_pack("{ss si si si si si si si sf}", "model_type", hyb ? "qwen3_next" : "qwen3", "hidden_size",
                              heads * hd, "intermediate_size", inter, "num_hidden_layers", layers,
                              "num_attention_heads", heads, "num_key_value_heads", kv, "head_dim", hd, "vocab_size",
                              vocab, "rope_theta", theta);
        json_t *ea = json_array();
        for (int k = 0; k < n_eos; k++) {
            eos[k] = (int)(tu_rand_u64(&g_rng) % (uint64_t)vocab);
            json_array_append_new(ea, json_integer(eos[k]));
        }
        json_object_set_new(o, "eos_token_id", ea);
        if (hyb) json_object_set_new(o, "full_attention_interval", json_integer(interval));
        char *s = json_dumps(o, 0);
        hf_config c;
        int rc = cfg_parse(s, strlen(s), "rand.json", &c);
        CHECKF(rc == 0, "random config refused: %s", dl_errmsg());
        if (!rc) {
            int good = c.hidden == heads * hd && c.n_heads == heads && c.n_kv_heads == kv && c.head_dim == hd &&
                       c.n_layers == layers && c.intermediate == inter && c.vocab == vocab &&
                       c.rope_theta == theta && c.n_eos == n_eos;
            for (int k = 0; k < n_eos; k++) good &= c.eos_ids[k] == eos[k];
            for (int i = 0; i < layers; i++)
                good &= c.layer_types[i] ==
                        (hyb && (i + 1) % interval ? LAYER_LINEAR_ATTN : LAYER_FULL_ATTN);
            CHECKF(good, "random config %d mismatch: %s", it, s);
            cfg_free(&c);
        }
        free(s);
        json_decref(o);
    }
}

static void test_files(void) {
    char dir[] = "/tmp/dotlm_cfg_XXXXXX";
    if (!mkdtemp(dir)) return;
    char p[256], g[256];
    snprintf(p, sizeof p, "%s/config.json", dir);
    snprintf(g, sizeof g, "%s/generation_config.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{" LLAMA_BASE ",\"quantization_config\":{\"quant_method\":\"fp8\",\"weight_block_size\":[128,128],"
          "\"modules_to_not_convert\":[\"lm_head\"]}}",
          f);
    fclose(f);
    hf_config c;
    CHECKF(cfg_load(p, &c) == 0, "cfg_load: %s", dl_errmsg());
    CHECK(c.hidden == 2048 && c.quant.kind == QCFG_FP8_BLOCK && c.quant.n_ignore == 1);
    cfg_free(&c);
    cfg_free(&c); /* idempotent */
    dl_err_clear();
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope.json", dir);
    CHECK(cfg_load(missing, &c) == -1 && strstr(dl_errmsg(), missing) && strstr(dl_errmsg(), "cannot open"));
    f = fopen(p, "w");
    fputs("{\"model_type\": \"llama\", \"hidden_size\": true}", f);
    fclose(f);
    CHECK(cfg_load(p, &c) == -1 && strstr(dl_errmsg(), p) && strstr(dl_errmsg(), "'hidden_size'"));

    /* generation_config.json */
    hf_genconfig gc;
    CHECK(gencfg_load(g, &gc) == 0 && gc.present == 0 && gc.temperature == 1.0f && gc.n_eos == 0);
    f = fopen(g, "w");
    fputs("{\"bos_token_id\":151643,\"do_sample\":true,\"eos_token_id\":[151645,151643],\"pad_token_id\":151643,"
          "\"temperature\":0.7,\"top_k\":20,\"top_p\":0.8,\"repetition_penalty\":1.05,\"min_p\":0.0,"
          "\"transformers_version\":\"4.51.0\"}",
          f);
    fclose(f);
    CHECKF(gencfg_load(g, &gc) == 0, "gencfg_load: %s", dl_errmsg());
    CHECK(gc.present == 1 && gc.do_sample == 1 && gc.temperature == 0.7f && gc.top_k == 20 && gc.top_p == 0.8f);
    CHECK(gc.repetition_penalty == 1.05f && gc.min_p == 0.0f && gc.n_eos == 2 && gc.eos_ids[1] == 151643 &&
          gc.bos_id == 151643);
    const char *gbad[][2] = {{"{\"temperature\":\"hot\"}", "'temperature': expected a number"},
                             {"{\"top_p\":1.5}", "'top_p': 1.5 is out of range"},
                             {"{\"top_k\":-1}", "'top_k': -1 is out of range"},
                             {"{\"do_sample\":1}", "'do_sample': expected true or false"},
                             {"{\"eos_token_id\":\"x\"}", "'eos_token_id': expected an integer"},
                             {"[]", "not a JSON object"},
                             {"{", "not valid JSON"}};
    for (size_t i = 0; i < sizeof gbad / sizeof gbad[0]; i++) {
        dl_err_clear();
        int rc = gencfg_parse(gbad[i][0], strlen(gbad[i][0]), "gen.json", &gc);
        CHECKF(rc == -1 && strstr(dl_errmsg(), "gen.json: ") && strstr(dl_errmsg(), gbad[i][1]) && !gc.present,
               "gencfg '%s': '%s'", gbad[i][0], dl_errmsg());
    }
    f = fopen(g, "w");
    fputs("{\"top_k\": \"many\"}", f);
    fclose(f);
    CHECK(gencfg_load(g, &gc) == -1 && strstr(dl_errmsg(), g));
    unlink(p);
    unlink(g);
    rmdir(dir);
}

/* Truncations and byte flips of a valid config: parse or refuse, never crash. */
static void test_mutations(void) {
    const char *base = "{\"model_type\":\"qwen3_5\",\"tie_word_embeddings\":true,\"text_config\":{"
                       "\"model_type\":\"qwen3_5_text\"," HYB_TEXT ",\"eos_token_id\":[1,2]},"
                       "\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":\"float-quantized\","
                       "\"ignore\":[\"lm_head\"],\"config_groups\":{\"g\":{\"weights\":{\"num_bits\":8,\"type\":\"float\","
                       "\"strategy\":\"channel\"}}}}}";
    size_t n = strlen(base);
    char *buf = malloc(n + 1);
    int refused = 0;
    for (int it = 0; it < 500; it++) {
        memcpy(buf, base, n + 1);
        size_t len = it % 2 ? tu_rand_u64(&g_rng) % n : n;
        int flips = it % 2 ? 0 : 1 + (int)(tu_rand_u64(&g_rng) % 3);
        for (int k = 0; k < flips; k++) {
            static const char alphabet[] = "{}[],:\"0123456789-.e truefalsnul";
            buf[tu_rand_u64(&g_rng) % n] = alphabet[tu_rand_u64(&g_rng) % (sizeof alphabet - 1)];
        }
        hf_config c;
        dl_err_clear();
        if (cfg_parse(buf, len, "mut.json", &c)) {
            refused++;
            CHECK(strstr(dl_errmsg(), "mut.json: ") == dl_errmsg() && !strchr(dl_errmsg(), '\n'));
        } else {
            cfg_free(&c);
        }
    }
    CHECK(refused > 0);
    free(buf);
}

int main(void) {
    g_rng = tu_seed();
    test_llama();
    test_qwen_dense();
    test_hybrid();
    test_quant();
    test_malformed();
    test_random();
    test_files();
    test_mutations();
    return TEST_END();
}
