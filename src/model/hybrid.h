/* Qwen3.5 / Qwen3-Next hybrid layers: Gated DeltaNet linear attention and
 * gated full attention. The dense forward (forward.c) calls these for the
 * layers whose layer_types entry is linear_attention, and for the output
 * gate of full-attention layers. */
#pragma once
#include "model/model.h"

/* Weights of one Gated DeltaNet layer (Qwen3.5 naming; Qwen3-Next's fused
 * in_proj_qkvz / in_proj_ba are bound as `qkvz` / `ba` instead). */
typedef struct hybrid_layer_s {
    dl_weight in_qkv;   /* [2*Hk*Dk + Hv*Dv, hidden] (qwen3_5) */
    dl_weight in_z;     /* [Hv*Dv, hidden] (qwen3_5) */
    dl_weight in_b, in_a; /* [Hv, hidden] (qwen3_5) */
    dl_weight in_qkvz;  /* [Hk*(2*Dk + 2*Dv*Hv/Hk), hidden] (qwen3_next) */
    dl_weight in_ba;    /* [Hk*2*Hv/Hk, hidden] (qwen3_next) */
    dl_weight conv;     /* [conv_dim, K] (checkpoint [conv_dim, 1, K]) */
    dl_weight A_log, dt_bias; /* [Hv] */
    dl_weight norm;     /* [Dv] gated-norm weight (plain) */
    dl_weight out;      /* [hidden, Hv*Dv] */
    int fused;          /* 1 = qwen3_next fused projections */
    int lin_index;      /* index among linear-attention layers (state slot row) */
} hybrid_layer;

/* Bind layer i's linear-attention weights (prefix `pre` = "model." or
 * "model.language_model."); allocates m->layers[i].hyb. 0 or -1 naming the tensor. */
int hybrid_bind_layer(dl_model *m, int i, const char *pre);
/* Allocate hybrid scratch and per-slot conv / recurrent states in ws->hyb. 0 or -1. */
int hybrid_ws_init(model_ws *ws);
void hybrid_ws_free(model_ws *ws);
/* x += out_proj(gated_norm(GDN(conv(in_proj(norm(x)))))) for layer L over batch of T tokens;
 * the incoming ws->pending delta is added first, the block's own delta is left in
 * ws->pending for the next norm (see model_norm_in). */
void hybrid_linear_attn(model_ws *ws, const model_layer *L, int T);
/* Upload / release every tensor of a hybrid layer. */
int hybrid_upload(dl_model *m, hybrid_layer *h);
void hybrid_release(dl_model *m, hybrid_layer *h);
