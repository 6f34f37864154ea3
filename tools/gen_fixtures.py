#!/usr/bin/env python3
"""Generate tiny random Hugging Face checkpoints plus transformers reference
outputs, as dotlm's test fixtures.

Run on the GPU test machine (it has torch + transformers); the reference is
computed on its CPU in float32 with eager attention (no TF32, no fused
kernels), so it is the plain transformers math. For each fixture:

  fixtures/NAME/config.json, generation_config.json, model.safetensors[...]
  fixtures/NAME/ref_logits.npy   float32 [T, vocab]: next-token logits
  fixtures/NAME/ref.json         prompt ids, 16 greedy ids, tolerances, meta

Norm weights are random (not ones); linear weights are scaled so the logits
are peaked (greedy decisions are not near-ties). Quantized fixtures store
real FP8 / INT8 tensors with scales; their references run the same HF model
with dequantized weights (weight-only) and, for declared activation schemes,
with the activation quantization emulated by forward pre-hooks.

usage: python3 tools/gen_fixtures.py OUT_DIR [--only NAME,...] [--seed S]
"""
import argparse
import json
import os
import shutil
import sys
import traceback

import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

from safetensors.torch import save_file  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

PROMPT_LEN = 40
GREEDY = 16


def randomize(model, gen, wscale=1.0):
    """Fill every parameter with fresh random values; norms around 1 (not ones)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            elif "A_log" in name:
                p.copy_(torch.log(torch.empty(p.shape).uniform_(1, 16, generator=gen)))
            elif "dt_bias" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            elif p.ndim == 1:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "conv1d" in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p.shape[-1]
                p.copy_(wscale * torch.randn(p.shape, generator=gen) / (fan_in ** 0.5))
        # zero-centred norms (qwen3.5/next) multiply by (1 + w): keep w small around 0
        if getattr(model.config, "model_type", "") in ("qwen3_5_text", "qwen3_next", "qwen3_5"):
            for name, p in model.named_parameters():
                if p.ndim == 1 and "norm" in name and "linear_attn.norm" not in name:
                    p.sub_(1.0)


def round_to(model, dtype):
    """Round weights to the storage dtype (then back to fp32 for the reference)."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).to(torch.float32))


def ref_outputs(model, prompt):
    with torch.no_grad():
        ids = torch.tensor([prompt])
        logits = model(ids).logits[0].float().numpy()
        out = model.generate(ids, max_new_tokens=GREEDY, do_sample=False, min_new_tokens=GREEDY,
                             pad_token_id=0, eos_token_id=None)
        greedy = out[0, len(prompt):].tolist()
    return logits, greedy


def save_ref(d, prompt, logits, greedy, extra):
    np.save(os.path.join(d, "ref_logits.npy"), logits.astype(np.float32))
    meta = {"prompt": prompt, "greedy": greedy, "transformers": transformers.__version__,
            "torch": torch.__version__}
    meta.update(extra)
    with open(os.path.join(d, "ref.json"), "w") as f:
        json.dump(meta, f, indent=1)


def make_model(model_type, kw, seed, wscale=1.0):
    cfg = AutoConfig.for_model(model_type, **kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen, wscale)
    return model


LONG_LEN = 320


def long_case(d, model, vocab, seed, suffix="long"):
    """A second, >= 300-token prompt (exercises chunked prefill and state carry-over)."""
    rng = np.random.default_rng(seed + 1000)
    prompt = rng.integers(0, vocab, LONG_LEN).tolist()
    logits, greedy = ref_outputs(model, prompt)
    fn = f"ref_logits_{suffix}.npy"
    np.save(os.path.join(d, fn), logits.astype(np.float32))
    return {"prompt": prompt, "greedy": greedy, "logits": fn}


def dense_fixture(out, name, model_type, kw, dtype, seed, shard=None, long=False):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = make_model(model_type, kw, seed)
    round_to(model, dtype)
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, kw["vocab_size"], PROMPT_LEN).tolist()
    logits, greedy = ref_outputs(model, prompt)
    extra = {"tol": 2e-3, "dtype": str(dtype)}
    if long:
        extra["extra_cases"] = [long_case(d, model, kw["vocab_size"], seed)]
    model.to(dtype).save_pretrained(d, max_shard_size=shard) if shard else model.to(dtype).save_pretrained(d)
    save_ref(d, prompt, logits, greedy, extra)
    print(f"{name}: logits std {logits.std():.3f}, greedy {greedy}")


# ---------------------------------------------------------------- quantized
E4M3_MAX = 448.0


def q_fp8(x, fmt="e4m3"):
    t = torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2
    mx = E4M3_MAX if fmt == "e4m3" else 57344.0
    return x.clamp(-mx, mx).to(t)


def quant_block(w, bn, bk, fmt, scale_dtype):
    N, K = w.shape
    gn, gk = -(-N // bn), -(-K // bk)
    mx = E4M3_MAX if fmt == "e4m3" else 57344.0
    s = torch.zeros(gn, gk)
    for i in range(gn):
        for j in range(gk):
            blk = w[i * bn:(i + 1) * bn, j * bk:(j + 1) * bk]
            s[i, j] = blk.abs().max().clamp(min=1e-12) / mx
    s = s.to(scale_dtype).float()
    sfull = s.repeat_interleave(bn, 0)[:N].repeat_interleave(bk, 1)[:, :K]
    q = q_fp8(w / sfull, fmt)
    deq = q.float() * sfull
    return q, s.to(scale_dtype), deq


def quant_channel_fp8(w):
    s = (w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / E4M3_MAX)
    q = q_fp8(w / s)
    return q, s, q.float() * s


def quant_channel_int8(w):
    s = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
    q = torch.round(w / s).clamp(-127, 127).to(torch.int8)
    return q, s, q.float() * s


def act_fp8_group(x, group):
    """Per token, per K group fp8 e4m3 quant-dequant (declared scheme of fp8 block)."""
    shp = x.shape
    K = shp[-1]
    x2 = x.reshape(-1, K)
    out = torch.empty_like(x2)
    for g0 in range(0, K, group):
        blk = x2[:, g0:g0 + group]
        s = blk.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / E4M3_MAX
        out[:, g0:g0 + group] = q_fp8(blk / s).float() * s
    return out.reshape(shp)


def act_fp8_token(x):
    s = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / E4M3_MAX
    return q_fp8(x / s).float() * s


def act_int8_token(x):
    s = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / 127.0
    return torch.round(x / s).clamp(-127, 127) * s


LINEAR_KEYS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
               "in_proj_qkv", "in_proj_z", "out_proj")


def quantized_fixture(out, name, kw, scheme, seed, model_type="qwen3", scale_dtype=torch.float32,
                      fmt="e4m3", long=False):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model = make_model(model_type, kw, seed)
    round_to(model, torch.bfloat16)
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    tensors = {}
    deq_sd = {}
    for k, v in sd.items():
        mod = k.rsplit(".", 1)[0]
        if k.endswith(".weight") and v.ndim == 2 and any(s in mod for s in LINEAR_KEYS) and "layers." in k:
            if scheme == "fp8_block":
                q, s, deq = quant_block(v, 128, 128, fmt, scale_dtype)
                tensors[k] = q
                tensors[mod + ".weight_scale_inv"] = s
            elif scheme == "fp8_channel":
                q, s, deq = quant_channel_fp8(v)
                tensors[k] = q
                tensors[mod + ".weight_scale"] = s.to(torch.bfloat16) if scale_dtype == torch.bfloat16 else s
                deq = q.float() * tensors[mod + ".weight_scale"].float()
            elif scheme == "int8":
                q, s, deq = quant_channel_int8(v)
                tensors[k] = q
                tensors[mod + ".weight_scale"] = s
            deq_sd[k] = deq
        else:
            tensors[k] = v.to(torch.bfloat16)
    if kw.get("tie_word_embeddings"):
        tensors.pop("lm_head.weight", None)
    model.load_state_dict({**sd, **deq_sd})
    hooks = []

    def declared(on):
        """Emulate the declared activation quantization on every quantized linear."""
        for h in hooks:
            h.remove()
        hooks.clear()
        if not on:
            return
        for mname, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and mname + ".weight" in deq_sd:
                if scheme == "fp8_block":
                    fn = lambda m, a: (act_fp8_group(a[0], 128),)
                elif scheme == "fp8_channel":
                    fn = lambda m, a: (act_fp8_token(a[0]),)
                else:
                    fn = lambda m, a: (act_int8_token(a[0]),)
                hooks.append(mod.register_forward_pre_hook(fn))

    # Declared (dynamic activation quantization) references are only well
    # defined where no activation sits within rounding noise of a quantization
    # tie: one fp8/int8 code flip moves a logit by ~0.1 in these tiny models.
    # Pick the first prompt whose declared logits agree between float32 and
    # float64 evaluation of the same model (its conditioning is recorded).
    rng = np.random.default_rng(seed)
    for tries in range(1, 41):
        prompt = rng.integers(0, kw["vocab_size"], PROMPT_LEN).tolist()
        declared(True)
        logits_dec, greedy_dec = ref_outputs(model, prompt)
        model.double()
        with torch.no_grad():
            l64 = model(torch.tensor([prompt])).logits[0].double().numpy()
        model.float()
        # ... and that a relative 2e-7 perturbation of the embeddings (a few
        # float32 roundings) moves no code: another engine's order likely won't either.
        emb = model.get_input_embeddings().weight
        saved = emb.detach().clone()
        with torch.no_grad():
            g = torch.Generator().manual_seed(seed + tries)
            emb.mul_(1.0 + 2e-7 * torch.randn(emb.shape, generator=g))
            lp = model(torch.tensor([prompt])).logits[0].float().numpy()
            emb.copy_(saved)
        cond = max(float(np.abs(l64 - logits_dec).max()), float(np.abs(lp - logits_dec).max()))
        if cond < 1e-3:
            break
    declared(False)
    logits_wo, greedy_wo = ref_outputs(model, prompt)
    extra_cases = [long_case(d, model, kw["vocab_size"], seed)] if long else []
    cfg = model.config.to_dict()
    for k in ("_attn_implementation", "_name_or_path"):
        cfg.pop(k, None)
    cfg["torch_dtype"] = "bfloat16"
    if scheme == "fp8_block":
        cfg["quantization_config"] = {"quant_method": "fp8", "fmt": fmt, "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}
    elif scheme == "fp8_channel":
        cfg["quantization_config"] = {
            "quant_method": "compressed-tensors", "format": "float-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"],
                              "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                          "symmetric": True, "dynamic": False},
                              "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                    "symmetric": True, "dynamic": True}}},
            "ignore": ["lm_head"]}
    else:
        cfg["quantization_config"] = {
            "quant_method": "compressed-tensors", "format": "int-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"],
                              "weights": {"num_bits": 8, "type": "int", "strategy": "channel",
                                          "symmetric": True, "dynamic": False},
                              "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                                                    "symmetric": True, "dynamic": True}}},
            "ignore": ["lm_head"]}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(d, "model.safetensors"),
              metadata={"format": "pt"})
    np.save(os.path.join(d, "ref_logits_declared.npy"), logits_dec.astype(np.float32))
    save_ref(d, prompt, logits_wo, greedy_wo,
             {"tol": 2e-3, "tol_declared": 2e-2, "greedy_declared": greedy_dec, "scheme": scheme,
              "declared_fp32_vs_fp64": cond, "prompt_tries": tries, "extra_cases": extra_cases})
    print(f"{name}: prompt try {tries}, declared fp32-vs-fp64 {cond:.2e}, logits std {logits_wo.std():.3f}, wo-vs-declared max diff "
          f"{np.abs(logits_wo - logits_dec).max():.4f}, greedy {greedy_wo}")


def multimodal_fixture(out, name, text_kw, dtype, seed):
    """A qwen3_5 (image-text) checkpoint: the language model nested under
    text_config with tensors under model.language_model., plus a (tiny) vision
    tower that text-only generation must skip. Reference: the same model's
    logits on a text-only prompt."""
    from transformers.models.qwen3_5 import configuration_qwen3_5 as cq
    from transformers import AutoModelForImageTextToText
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    vis = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
               out_hidden_size=text_kw["hidden_size"], patch_size=16)
    cfg = cq.Qwen3_5Config(text_config=dict(text_kw), vision_config=vis)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(cfg, attn_implementation="eager").float().eval()
    cfg.model_type = "qwen3_5"
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen)  # config.model_type qwen3_5: norms zero-centred there
    round_to(model, dtype)
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, text_kw["vocab_size"], PROMPT_LEN).tolist()
    logits, greedy = ref_outputs(model, prompt)
    model.to(dtype).save_pretrained(d)
    save_ref(d, prompt, logits, greedy, {"tol": 2e-3, "dtype": str(dtype)})
    print(f"{name}: logits std {logits.std():.3f}, greedy {greedy}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    os.makedirs(a.out, exist_ok=True)
    s = a.seed
    base = dict(vocab_size=512, hidden_size=128, intermediate_size=320, num_hidden_layers=3,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                rms_norm_eps=1e-6)
    jobs = {
        "llama_tied_f16": lambda: dense_fixture(a.out, "llama_tied_f16", "llama", dict(
            base, tie_word_embeddings=True, rope_theta=500000.0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
            bos_token_id=1, eos_token_id=[2, 3]), torch.float16, s),
        "qwen2_f32_sharded": lambda: dense_fixture(a.out, "qwen2_f32_sharded", "qwen2", dict(
            base, tie_word_embeddings=False, rope_theta=1000000.0, num_key_value_heads=1,
            eos_token_id=2), torch.float32, s + 1, shard="400KB"),
        "qwen3_bf16": lambda: dense_fixture(a.out, "qwen3_bf16", "qwen3", dict(
            base, head_dim=48, tie_word_embeddings=False, rope_theta=1000000.0,
            eos_token_id=2), torch.bfloat16, s + 2),
        "qwen3_fp8_block": lambda: quantized_fixture(a.out, "qwen3_fp8_block", dict(
            base, hidden_size=256, intermediate_size=640, head_dim=64, num_hidden_layers=2,
            eos_token_id=2), "fp8_block", s + 3),
        "qwen3_fp8_block_bf16scale": lambda: quantized_fixture(a.out, "qwen3_fp8_block_bf16scale", dict(
            base, hidden_size=320, intermediate_size=700, head_dim=64, num_hidden_layers=2,
            eos_token_id=2), "fp8_block", s + 4, scale_dtype=torch.bfloat16),
        "qwen3_fp8_channel": lambda: quantized_fixture(a.out, "qwen3_fp8_channel", dict(
            base, head_dim=32, eos_token_id=2), "fp8_channel", s + 5),
        "qwen3_int8": lambda: quantized_fixture(a.out, "qwen3_int8", dict(
            base, head_dim=32, eos_token_id=2), "int8", s + 6),
        "qwen3_5_text_bf16": lambda: dense_fixture(a.out, "qwen3_5_text_bf16", "qwen3_5_text", dict(
            base, head_dim=32, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
            full_attention_interval=2, partial_rotary_factor=0.25, tie_word_embeddings=False,
            eos_token_id=2), torch.bfloat16, s + 7, long=True),
        "qwen3_5_text_fp8_block": lambda: quantized_fixture(a.out, "qwen3_5_text_fp8_block", dict(
            base, hidden_size=256, intermediate_size=512, head_dim=64, num_hidden_layers=4,
            linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64,
            linear_value_head_dim=64, linear_conv_kernel_dim=4, full_attention_interval=2,
            partial_rotary_factor=0.25, tie_word_embeddings=False, eos_token_id=2),
            "fp8_block", s + 9, model_type="qwen3_5_text", long=True),
        "qwen3_5_text_int8": lambda: quantized_fixture(a.out, "qwen3_5_text_int8", dict(
            base, head_dim=32, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
            full_attention_interval=2, partial_rotary_factor=0.25, tie_word_embeddings=False,
            eos_token_id=2), "int8", s + 10, model_type="qwen3_5_text"),
        "qwen3_5_mm_bf16": lambda: multimodal_fixture(a.out, "qwen3_5_mm_bf16", dict(
            base, head_dim=32, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
            full_attention_interval=2, partial_rotary_factor=0.25, tie_word_embeddings=False,
            eos_token_id=2), torch.bfloat16, s + 11),
        "qwen3_next_bf16": lambda: dense_fixture(a.out, "qwen3_next_bf16", "qwen3_next", dict(
            base, head_dim=32, num_hidden_layers=4, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
            full_attention_interval=2, partial_rotary_factor=0.25, tie_word_embeddings=False,
            num_experts=0, decoder_sparse_step=1, mlp_only_layers=[0, 1, 2, 3],
            eos_token_id=2), torch.bfloat16, s + 8, long=True),
    }
    failed = 0
    for name, fn in jobs.items():
        if only and name not in only:
            continue
        try:
            fn()
        except Exception:
            failed += 1
            print(f"FIXTURE FAILED: {name}")
            traceback.print_exc()
            shutil.rmtree(os.path.join(a.out, name), ignore_errors=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; {failed} failed")


if __name__ == "__main__":
    main()
