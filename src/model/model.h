/* A loaded model: config, mapped checkpoint, weights bound to tensors (in
 * their stored formats), and the backend they live on. The forward pass of
 * each architecture family is written against the backend op table. */
#pragma once
#include <stddef.h>

#include "backend/backend.h"
#include "io/hfconfig.h"
#include "io/safetensors.h"
#include "quant/weight.h"

typedef enum {
    FP8_POLICY_WEIGHT_ONLY = 0, /* activations stay fp32: default (see README) */
    FP8_POLICY_DECLARED = 1,    /* quantize activations as the config declares */
} model_fp8_policy;

typedef struct {
    model_fp8_policy fp8_policy;
    int quiet;            /* no progress line */
} model_opts;

/* One decoder layer. Matrices are [out, in] as nn.Linear stores them. */
typedef struct {
    dl_weight attn_norm;  /* [hidden] */
    dl_weight q, k, v, o; /* q [n_heads*hd, hidden] (x2 with output gate), k/v [n_kv*hd, hidden], o [hidden, n_heads*hd] */
    dl_weight q_norm, k_norm; /* [hd] (qwen3, qwen3.5); dtype DT_COUNT when absent */
    dl_weight ffn_norm;   /* [hidden] */
    dl_weight gate, up;   /* [inter, hidden] */
    dl_weight down;       /* [hidden, inter] */
    int kv_index;         /* index of this layer's KV in the cache, -1 if none */
    struct hybrid_layer_s *hyb; /* Gated DeltaNet weights (linear-attention layers), else NULL */
} model_layer;

typedef struct dl_model {
    hf_config cfg;
    hf_genconfig gen;
    char *dir;
    st_set *st;
    dl_backend *be;
    model_opts opts;
    dl_weight embed;      /* [vocab, hidden] */
    dl_weight final_norm; /* [hidden] */
    dl_weight lm_head;    /* [vocab, hidden]; aliases embed data when tied */
    model_layer *layers;  /* [n_layers] */
    int n_kv_layers;
    int n_lin_layers;     /* Gated DeltaNet layers (hybrid models) */
    dl_rope rope;
    size_t weight_bytes;  /* bytes of all bound weights as stored */
    int n_quant;          /* matrices stored quantized */
    char fmt_desc[96];    /* "bf16", "fp8 block 128x128 (weight-only)", ... */
} dl_model;

/* Load MODEL_DIR on backend `be`: config.json, generation_config.json,
 * safetensors; bind and validate every tensor (presence, dtype, shape,
 * quantization scheme); upload to the backend. NULL + dl_errmsg naming the
 * file/tensor on any problem. */
dl_model *model_load(const char *dir, dl_backend *be, const model_opts *opts);
void model_free(dl_model *m);

/* Scratch for forward passes of up to max_tok tokens, and the per-sequence
 * recurrent state of hybrid models for max_seqs sequence slots. */
typedef struct {
    const dl_model *m;
    int max_tok, max_seqs;
    float *x, *xn, *q, *k, *v, *att, *gate, *up, *last, *logits; /* backend buffers */
    float *qg; /* [max_tok, n_heads*head_dim] attention output gate (gated attention only) */
    void *hyb; /* hybrid-model scratch and per-slot states (model/hybrid.h); NULL for dense */
    float *pending; /* residual delta not yet added to x (inside a forward; NULL between) */
} model_ws;

/* Allocate buffers for up to max_tok tokens per forward and max_seqs slots.
 * A slot's recurrent state (hybrid models) is reset whenever a forward
 * feeds that slot a token at position 0. 0 or -1. */
int model_ws_init(model_ws *ws, const dl_model *m, int max_tok, int max_seqs);
void model_ws_free(model_ws *ws);

/* Run one forward pass over batch b (tokens of several sequences; their
 * K/V is written into kv, then each token attends causally to its own
 * sequence). Rows listed in logit_rows (n_logits of them, indices into the
 * batch) get next-token logits copied to logits_host[n_logits, vocab]
 * (vocab = lm_head rows). Token ids must be < vocab; positions must be
 * reserved in kv. Returns 0 or -1. */
int model_forward(model_ws *ws, const dl_batch *b, dl_kvcache *kv, const int32_t *logit_rows,
                  int n_logits, float *logits_host);

/* Bind checkpoint tensors into a dl_weight with full validation (used by
 * the per-family binders): a float vector of length n, or a matrix
 * `base`.weight [n, k] in any supported format with its scales and an
 * optional (or required) `base`.bias. 0 or -1 naming the tensor. */
int model_bind_vec(dl_model *m, dl_weight *w, const char *name, int64_t n);
int model_bind_mat(dl_model *m, dl_weight *w, const char *base, int64_t n, int64_t k,
                   int want_bias);

/* Within a forward (model/ only): ys[i] = x ws[i]^T for weights sharing x, in
 * one backend call when it has matmul_n; and xn = rmsnorm(x) after adding the
 * residual delta a previous block left in ws->pending (fused when the
 * backend has add_rmsnorm). */
void model_mm_n(dl_backend *be, float *const *ys, const float *x, const dl_weight *const *w, int n,
                int M);
void model_norm_in(model_ws *ws, const dl_weight *w, int T, int zc);

/* Logit width (rows of lm_head). */
int model_vocab(const dl_model *m);
