/* Model loading: bind checkpoint tensors to dl_weight descriptors, decide
 * each matrix's storage format from what is stored (cross-checked with the
 * config's quantization_config), validate shapes, and upload. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/log.h"
#include "model/hybrid.h"
#include "model/model.h"
#include "model/rope.h"

/* Name of `base` + `suffix` under the model's tensor prefix. */
static void tname(char *out, size_t cap, const char *base, const char *suffix) {
    snprintf(out, cap, "%s%s", base, suffix);
}

static int module_ignored(const hf_config *c, const char *base) {
    for (int i = 0; i < c->quant.n_ignore; i++) {
        const char *pat = c->quant.ignore[i];
        if (!strncmp(pat, "re:", 3)) continue; /* regex entries: handled as not matching */
        size_t lp = strlen(pat), lb = strlen(base);
        /* entries name modules either fully ("model.layers.0.mlp.down_proj") or by suffix ("lm_head") */
        if (lb >= lp && !strcmp(base + lb - lp, pat) && (lb == lp || base[lb - lp - 1] == '.'))
            return 1;
    }
    return 0;
}

static int is_float_dtype(dl_dtype t) { return t == DT_F32 || t == DT_F16 || t == DT_BF16; }

/* Bind a 1-D tensor `name` of length n (float dtypes). */
static int bind_vec(dl_model *m, dl_weight *w, const char *name, int64_t n) {
    const st_tensor *t = st_find(m->st, name);
    if (!t) return dl_err("%s: tensor '%s' is missing from the checkpoint", m->dir, name);
    if (t->ndim != 1 || t->shape[0] != n)
        return dl_err("%s: tensor '%s' has %d dims (first %lld), expected shape [%lld]", m->dir,
                      name, t->ndim, (long long)(t->ndim ? t->shape[0] : 0), (long long)n);
    if (!is_float_dtype(t->dtype))
        return dl_err("%s: tensor '%s' has dtype %s; norms must be F32, F16 or BF16", m->dir, name,
                      dt_name(t->dtype));
    memset(w, 0, sizeof *w);
    w->name = t->name;
    w->dtype = t->dtype;
    w->n = n;
    w->k = 1;
    w->ld = 1;
    w->data = t->data;
    m->weight_bytes += t->nbytes;
    return 0;
}

static int64_t numel(const st_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static const char *k_unsupported_suffix[] = {".qweight", ".qzeros", ".g_idx", ".weight_packed",
                                             ".weight_zero_point", ".scales", ".weight_g_idx",
                                             ".SCB", ".absmax"};

/* Bind matrix `base`.weight of shape [n, k], with its scales and optional bias. */
static int bind_mat(dl_model *m, dl_weight *w, const char *base, int64_t n, int64_t k,
                    int want_bias) {
    char nm[512];
    const hf_config *c = &m->cfg;
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < sizeof k_unsupported_suffix / sizeof *k_unsupported_suffix; i++) {
        tname(nm, sizeof nm, base, k_unsupported_suffix[i]);
        if (st_find(m->st, nm))
            return dl_err("%s: tensor '%s' belongs to a quantization scheme dotlm does not run "
                          "(GPTQ/AWQ/packed int4, zero points or bitsandbytes); use a BF16, "
                          "FP8 or W8A8-INT8 checkpoint",
                          m->dir, nm);
    }
    tname(nm, sizeof nm, base, ".weight");
    const st_tensor *t = st_find(m->st, nm);
    if (!t) return dl_err("%s: tensor '%s' is missing from the checkpoint", m->dir, nm);
    if (t->ndim != 2 || t->shape[0] != n || t->shape[1] != k)
        return dl_err("%s: tensor '%s' has shape [%lld%s%lld], expected [%lld, %lld]", m->dir, nm,
                      (long long)(t->ndim > 0 ? t->shape[0] : 0), t->ndim > 1 ? ", " : "",
                      (long long)(t->ndim > 1 ? t->shape[1] : 0), (long long)n, (long long)k);
    w->name = t->name;
    w->dtype = t->dtype;
    w->n = n;
    w->k = k;
    w->ld = k;
    w->data = t->data;
    m->weight_bytes += t->nbytes;

    tname(nm, sizeof nm, base, ".weight_scale_inv");
    const st_tensor *sinv = st_find(m->st, nm);
    tname(nm, sizeof nm, base, ".weight_scale");
    const st_tensor *sc = st_find(m->st, nm);
    tname(nm, sizeof nm, base, ".input_scale");
    const st_tensor *isc = st_find(m->st, nm);
    int quant = t->dtype == DT_F8E4M3 || t->dtype == DT_F8E5M2 || t->dtype == DT_I8;

    if (!quant) {
        if (!is_float_dtype(t->dtype))
            return dl_err("%s: tensor '%s.weight' has dtype %s, which dotlm cannot run as a "
                          "linear weight",
                          m->dir, base, dt_name(t->dtype));
        if (sinv || sc)
            return dl_err("%s: tensor '%s.weight' is %s but has a scale tensor next to it; the "
                          "checkpoint is inconsistent",
                          m->dir, base, dt_name(t->dtype));
    } else {
        const st_tensor *s = sinv ? sinv : sc;
        if (!s)
            return dl_err("%s: tensor '%s.weight' is %s but has no weight_scale or "
                          "weight_scale_inv next to it",
                          m->dir, base, dt_name(t->dtype));
        if (sinv && sc)
            return dl_err("%s: '%s' has both weight_scale and weight_scale_inv", m->dir, base);
        if (s->dtype != DT_F32 && s->dtype != DT_BF16 && s->dtype != DT_F16)
            return dl_err("%s: scale of '%s' has dtype %s; expected F32 or BF16", m->dir, base,
                          dt_name(s->dtype));
        if (module_ignored(c, base))
            return dl_err("%s: '%s' is listed as not quantized in quantization_config but is "
                          "stored as %s",
                          m->dir, base, dt_name(t->dtype));
        w->scale_dtype = s->dtype;
        w->scale = s->data;
        m->weight_bytes += s->nbytes;
        if (sinv) {
            /* Block-scaled FP8 (Qwen/DeepSeek "fp8" method). */
            if (t->dtype == DT_I8)
                return dl_err("%s: '%s' is int8 with weight_scale_inv; int8 block scaling is "
                              "not a supported scheme",
                              m->dir, base);
            if (c->quant.kind != QCFG_FP8_BLOCK)
                return dl_err("%s: '%s' stores block scales (weight_scale_inv) but config.json's "
                              "quantization_config is not quant_method \"fp8\" with "
                              "weight_block_size",
                              m->dir, base);
            int bn = c->quant.block_n > 0 ? c->quant.block_n : 128;
            int bk = c->quant.block_k > 0 ? c->quant.block_k : 128;
            int64_t gn = (n + bn - 1) / bn, gk = (k + bk - 1) / bk;
            if (s->ndim != 2 || s->shape[0] != gn || s->shape[1] != gk)
                return dl_err("%s: '%s.weight_scale_inv' has %d dims [%lld, %lld], expected "
                              "[%lld, %lld] for block size %dx%d",
                              m->dir, base, s->ndim, (long long)(s->ndim > 0 ? s->shape[0] : 0),
                              (long long)(s->ndim > 1 ? s->shape[1] : 0), (long long)gn,
                              (long long)gk, bn, bk);
            w->scale_kind = WS_BLOCK;
            w->bn = bn;
            w->bk = bk;
            w->actq = m->opts.fp8_policy == FP8_POLICY_DECLARED ? ACT_FP8_GROUP : ACT_NATIVE;
        } else {
            int64_t ns = numel(s);
            if (ns == n && n != 1) w->scale_kind = WS_CHANNEL;
            else if (ns == 1) w->scale_kind = n == 1 ? WS_CHANNEL : WS_TENSOR;
            else
                return dl_err("%s: '%s.weight_scale' has %lld elements; expected %lld (per "
                              "channel) or 1 (per tensor)",
                              m->dir, base, (long long)ns, (long long)n);
            if (t->dtype == DT_I8) {
                if (c->quant.kind != QCFG_CT_INT8)
                    return dl_err("%s: '%s' is int8 but config.json does not declare "
                                  "compressed-tensors int-quantized (W8A8)",
                                  m->dir, base);
                if (isc)
                    return dl_err("%s: '%s' has a static input_scale; only dynamic per-token "
                                  "int8 activations are supported",
                                  m->dir, base);
                w->actq = ACT_INT8_TOKEN;
            } else {
                if (c->quant.kind != QCFG_CT_FP8)
                    return dl_err("%s: '%s' stores an fp8 weight with weight_scale but config.json "
                                  "does not declare compressed-tensors float-quantized",
                                  m->dir, base);
                if (m->opts.fp8_policy == FP8_POLICY_DECLARED) {
                    if (isc) {
                        if (numel(isc) != 1 || (isc->dtype != DT_F32 && isc->dtype != DT_BF16))
                            return dl_err("%s: '%s.input_scale' must be one F32/BF16 value",
                                          m->dir, base);
                        w->actq = ACT_FP8_STATIC;
                        w->act_scale = isc->dtype == DT_F32
                                           ? *(const float *)isc->data
                                           : bf16_to_f32(*(const uint16_t *)isc->data);
                    } else {
                        w->actq = ACT_FP8_TOKEN;
                    }
                } else {
                    w->actq = ACT_NATIVE;
                }
            }
        }
        m->n_quant++;
    }
    tname(nm, sizeof nm, base, ".bias");
    const st_tensor *b = st_find(m->st, nm);
    if (want_bias && !b) return dl_err("%s: tensor '%s' is missing from the checkpoint", m->dir, nm);
    if (b) {
        if (b->ndim != 1 || b->shape[0] != n)
            return dl_err("%s: tensor '%s' has the wrong shape; expected [%lld]", m->dir, nm,
                          (long long)n);
        if (!is_float_dtype(b->dtype))
            return dl_err("%s: tensor '%s' has dtype %s; expected a float type", m->dir, nm,
                          dt_name(b->dtype));
        w->bias = b->data;
        w->bias_dtype = b->dtype;
        m->weight_bytes += b->nbytes;
    }
    return 0;
}

static int bind_layer(dl_model *m, int i, const char *pre) {
    const hf_config *c = &m->cfg;
    model_layer *L = &m->layers[i];
    char b[256];
    int H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
    int qmul = (c->arch == ARCH_QWEN3_5 || c->arch == ARCH_QWEN3_NEXT) && c->attn_output_gate ? 2 : 1;
#define B(fmt) (snprintf(b, sizeof b, "%slayers.%d." fmt, pre, i), b)
    if (bind_vec(m, &L->attn_norm, B("input_layernorm.weight"), H)) return -1;
    if (bind_vec(m, &L->ffn_norm, B("post_attention_layernorm.weight"), H)) return -1;
    L->kv_index = -1;
    L->q_norm.dtype = L->k_norm.dtype = DT_COUNT;
    if (c->layer_types[i] == LAYER_LINEAR_ATTN) {
        if (hybrid_bind_layer(m, i, pre)) return -1;
        m->n_lin_layers++;
        goto mlp;
    }
    int bias = c->attn_bias;
    if (bind_mat(m, &L->q, B("self_attn.q_proj"), (int64_t)nh * hd * qmul, H, bias)) return -1;
    if (bind_mat(m, &L->k, B("self_attn.k_proj"), (int64_t)nkv * hd, H, bias)) return -1;
    if (bind_mat(m, &L->v, B("self_attn.v_proj"), (int64_t)nkv * hd, H, bias)) return -1;
    if (bind_mat(m, &L->o, B("self_attn.o_proj"), H, (int64_t)nh * hd, 0)) return -1;
    if (c->arch != ARCH_LLAMA && c->arch != ARCH_QWEN2) {
        if (bind_vec(m, &L->q_norm, B("self_attn.q_norm.weight"), hd)) return -1;
        if (bind_vec(m, &L->k_norm, B("self_attn.k_norm.weight"), hd)) return -1;
    }
    L->kv_index = m->n_kv_layers++;
mlp:
    if (bind_mat(m, &L->gate, B("mlp.gate_proj"), c->intermediate, H, c->mlp_bias)) return -1;
    if (bind_mat(m, &L->up, B("mlp.up_proj"), c->intermediate, H, c->mlp_bias)) return -1;
    if (bind_mat(m, &L->down, B("mlp.down_proj"), H, c->intermediate, c->mlp_bias)) return -1;
#undef B
    return 0;
}

static void describe_format(dl_model *m) {
    const dl_weight *w = &m->layers[0].gate; /* every layer has an MLP */
    const char *pol = m->opts.fp8_policy == FP8_POLICY_DECLARED ? "declared activations"
                                                                 : "weight-only";
    switch (w->dtype) {
    case DT_F8E4M3:
    case DT_F8E5M2:
        if (w->scale_kind == WS_BLOCK)
            snprintf(m->fmt_desc, sizeof m->fmt_desc, "fp8 %s block %dx%d (%s)",
                     w->dtype == DT_F8E4M3 ? "e4m3" : "e5m2", w->bn, w->bk, pol);
        else
            snprintf(m->fmt_desc, sizeof m->fmt_desc, "fp8 %s per-%s (%s)",
                     w->dtype == DT_F8E4M3 ? "e4m3" : "e5m2",
                     w->scale_kind == WS_CHANNEL ? "channel" : "tensor", pol);
        break;
    case DT_I8: snprintf(m->fmt_desc, sizeof m->fmt_desc, "int8 W8A8 (per-channel, per-token)"); break;
    default: snprintf(m->fmt_desc, sizeof m->fmt_desc, "%s", dt_name(w->dtype)); break;
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int upload_all(dl_model *m) {
    dl_backend *be = m->be;
    if (be->upload(be, &m->embed) || be->upload(be, &m->final_norm)) return -1;
    if (m->lm_head.data != m->embed.data) {
        if (be->upload(be, &m->lm_head)) return -1;
    } else {
        m->lm_head.dev = m->embed.dev; /* tied: one device copy serves both */
    }
    for (int i = 0; i < m->cfg.n_layers; i++) {
        model_layer *L = &m->layers[i];
        dl_weight *ws[] = {&L->attn_norm, &L->q, &L->k, &L->v, &L->o, &L->q_norm,
                           &L->k_norm, &L->ffn_norm, &L->gate, &L->up, &L->down};
        for (size_t j = 0; j < sizeof ws / sizeof *ws; j++)
            if (ws[j]->dtype != DT_COUNT && ws[j]->data && be->upload(be, ws[j]))
                return dl_err_prefix("uploading '%s'", ws[j]->name);
        if (L->hyb && hybrid_upload(m, L->hyb)) return -1;
        if (!m->opts.quiet && dl_log_level() <= LOG_INFO && strcmp(be->name, "cpu"))
            fprintf(stderr, "\rdotlm: uploading layer %d/%d", i + 1, m->cfg.n_layers);
    }
    if (!m->opts.quiet && dl_log_level() <= LOG_INFO && strcmp(be->name, "cpu"))
        fputc('\n', stderr);
    return 0;
}

dl_model *model_load(const char *dir, dl_backend *be, const model_opts *opts) {
    double t0 = now_s();
    dl_model *m = calloc(1, sizeof *m);
    if (!m) return dl_err("out of memory"), NULL;
    m->be = be;
    if (opts) m->opts = *opts;
    m->dir = strdup(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (cfg_load(path, &m->cfg)) goto fail_nocfg;
    hf_config *c = &m->cfg;
    if (c->quant.kind == QCFG_OTHER) {
        dl_err("%s: %s; dotlm runs fp8 (block-scaled), compressed-tensors float-quantized FP8 "
               "and int-quantized W8A8 checkpoints",
               path, c->quant.detail);
        goto fail;
    }
    for (int i = 0; i < c->n_layers; i++)
        if (c->layer_moe[i]) {
            dl_err("%s: layer %d uses a sparse mixture-of-experts MLP (num_experts %d); this "
                   "build runs dense MLPs only",
                   path, i, c->n_experts);
            goto fail;
        }
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (gencfg_load(path, &m->gen)) goto fail;
    if (!m->opts.quiet)
        LOGI("loading %s (%s, %d layers, hidden %d, vocab %d) on %s", dir, c->model_type,
             c->n_layers, c->hidden, c->vocab, be->name);
    m->st = st_open_dir(dir);
    if (!m->st) goto fail;
    const char *pre = c->text_prefix ? "model.language_model." : "model.";
    {
        size_t skipped = 0;
        for (size_t i = 0; i < st_count(m->st); i++) {
            const char *tn = st_at(m->st, i)->name;
            if (!strncmp(tn, "model.visual.", 13) || !strncmp(tn, "mtp.", 4)) skipped++;
        }
        if (skipped && !m->opts.quiet)
            LOGI("skipping %zu tensors of the vision tower (model.visual.*) and multi-token "
                 "prediction head (mtp.*): text generation does not use them",
                 skipped);
    }
    char nm[256];
    snprintf(nm, sizeof nm, "%sembed_tokens.weight", pre);
    const st_tensor *emb = st_find(m->st, nm);
    if (!emb) {
        dl_err("%s: tensor '%s' is missing from the checkpoint", dir, nm);
        goto fail;
    }
    if (emb->ndim != 2 || emb->shape[1] != c->hidden || emb->shape[0] < 1 ||
        !is_float_dtype(emb->dtype)) {
        dl_err("%s: tensor '%s' must be a float [vocab, %d] matrix", dir, nm, c->hidden);
        goto fail;
    }
    if (emb->shape[0] != c->vocab) {
        dl_err("%s: '%s' has %lld rows but config.json says vocab_size %d", dir, nm,
               (long long)emb->shape[0], c->vocab);
        goto fail;
    }
    if (bind_mat(m, &m->embed, (snprintf(nm, sizeof nm, "%sembed_tokens", pre), nm), c->vocab,
                 c->hidden, 0))
        goto fail;
    if (bind_vec(m, &m->final_norm, (snprintf(nm, sizeof nm, "%snorm.weight", pre), nm),
                 c->hidden))
        goto fail;
    if (st_find(m->st, "lm_head.weight")) {
        if (bind_mat(m, &m->lm_head, "lm_head", c->vocab, c->hidden, 0)) goto fail;
        if (!is_float_dtype(m->lm_head.dtype)) {
            dl_err("%s: lm_head.weight is %s; dotlm expects lm_head unquantized", dir,
                   dt_name(m->lm_head.dtype));
            goto fail;
        }
    } else if (c->tie_embeddings) {
        m->lm_head = m->embed;
    } else {
        dl_err("%s: tensor 'lm_head.weight' is missing and tie_word_embeddings is false", dir);
        goto fail;
    }
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) {
        dl_err("out of memory");
        goto fail;
    }
    m->n_quant = 0;
    for (int i = 0; i < c->n_layers; i++)
        if (bind_layer(m, i, pre)) goto fail;
    if (rope_init(&m->rope, c)) goto fail;
    describe_format(m);
    if (upload_all(m)) goto fail;
    if (!m->opts.quiet)
        LOGI("loaded %s: %s, %.1f MiB of weights in %.2f s", c->model_type, m->fmt_desc,
             (double)m->weight_bytes / (1 << 20), now_s() - t0);
    return m;
fail:
    model_free(m);
    return NULL;
fail_nocfg:
    free(m->dir);
    free(m);
    return NULL;
}

void model_free(dl_model *m) {
    if (!m) return;
    if (m->be && m->layers) {
        /* a tied lm_head shares the embedding's device copy: release it once
         * (decided before release() clears embed.dev) */
        if (m->lm_head.dev && m->lm_head.dev == m->embed.dev) m->lm_head.dev = NULL;
        dl_weight *top[] = {&m->embed, &m->final_norm, &m->lm_head};
        for (int j = 0; j < 3; j++)
            if (top[j]->dev) m->be->release(m->be, top[j]);
        for (int i = 0; i < m->cfg.n_layers; i++) {
            model_layer *L = &m->layers[i];
            dl_weight *ws[] = {&L->attn_norm, &L->q, &L->k, &L->v, &L->o, &L->q_norm,
                               &L->k_norm, &L->ffn_norm, &L->gate, &L->up, &L->down};
            for (size_t j = 0; j < sizeof ws / sizeof *ws; j++)
                if (ws[j]->dev) m->be->release(m->be, ws[j]);
            if (L->hyb) hybrid_release(m, L->hyb);
        }
    }
    for (int i = 0; m->layers && i < m->cfg.n_layers; i++) free(m->layers[i].hyb);
    free(m->layers);
    rope_free(&m->rope);
    st_close(m->st);
    cfg_free(&m->cfg);
    free(m->dir);
    free(m);
}

int model_vocab(const dl_model *m) { return (int)m->lm_head.n; }

/* Exported binders for the hybrid layers (model/hybrid.c). */
int model_bind_vec(dl_model *m, dl_weight *w, const char *name, int64_t n) {
    return bind_vec(m, w, name, n);
}

int model_bind_mat(dl_model *m, dl_weight *w, const char *base, int64_t n, int64_t k,
                   int want_bias) {
    return bind_mat(m, w, base, n, k, want_bias);
}
