#!/usr/bin/env python3
"""Write a randomly initialised checkpoint of a given shape and weight format
for benchmarks (real HF layout; no tokenizer). Weights are random but well
scaled (no zeros, no NaN/Inf; each linear ~ 1/sqrt(K)) so activations stay
finite through many layers. Needs numpy.

  python3 tools/make_bench_model.py OUT --preset qwen3-8b --format fp8-block
  python3 tools/make_bench_model.py OUT --preset qwen2.5-0.5b --format int8
  python3 tools/make_bench_model.py OUT --preset qwen3.5-27b --format fp8-block

formats: bf16, fp8-block (e4m3, 128x128 block scales), fp8-channel, int8 (W8A8)
"""
import argparse
import json
import os
import struct

import numpy as np

PRESETS = {
    "qwen2.5-0.5b": dict(model_type="qwen3", hidden=896, inter=4864, layers=24, heads=14, kv=2,
                         head_dim=64, vocab=151936, tie=True),
    "qwen3-8b": dict(model_type="qwen3", hidden=4096, inter=12288, layers=36, heads=32, kv=8,
                     head_dim=128, vocab=151936, tie=False),
    "qwen3-14b": dict(model_type="qwen3", hidden=5120, inter=17408, layers=40, heads=40, kv=8,
                      head_dim=128, vocab=151936, tie=False),
    "llama3-8b": dict(model_type="llama", hidden=4096, inter=14336, layers=32, heads=32, kv=8,
                      head_dim=128, vocab=128256, tie=False),
    "qwen3.5-27b": dict(model_type="qwen3_5_text", hidden=5120, inter=17408, layers=64, heads=24,
                        kv=4, head_dim=256, vocab=248320, tie=False, lin_k_heads=16,
                        lin_v_heads=48, lin_dim=128, interval=4),
    "tiny": dict(model_type="qwen3", hidden=256, inter=768, layers=4, heads=4, kv=2, head_dim=64,
                 vocab=4096, tie=True),
}


class Writer:
    """Streams tensors into one safetensors file (header written first)."""

    def __init__(self):
        self.entries = []  # (name, dtype, shape, nbytes, generator)

    def add(self, name, dtype, shape, nbytes, gen):
        self.entries.append((name, dtype, shape, nbytes, gen))

    def write(self, path):
        hdr, off = {"__metadata__": {"format": "pt"}}, 0
        for name, dt, shape, nb, _ in self.entries:
            hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
            off += nb
        hb = json.dumps(hdr, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(hb)))
            f.write(hb)
            for name, _, _, nb, gen in self.entries:
                data = gen()
                assert len(data) == nb, name
                f.write(data)
        return off


def rng_bytes(rng, n):
    return rng.integers(0, 256, n, dtype=np.uint8)


def bf16_values(rng, n, exp_center):
    """random bf16 with exponent in [center-2, center+1], random sign/mantissa"""
    lo = rng_bytes(rng, n)
    hi = rng_bytes(rng, n)
    e = (exp_center - 2 + (hi & 3)).astype(np.uint16)  # 8-bit exponent
    sign = (hi & 0x80).astype(np.uint16) << 8
    u = sign | (e << 7) | (lo & 0x7F).astype(np.uint16)
    return u.astype("<u2").tobytes()


def e4m3_codes(rng, n):
    """e4m3 codes with exponent field 5..8 (|v| in [0.25, 4)), random sign and mantissa."""
    b = rng_bytes(rng, n)
    exp = 5 + ((b >> 3) & 3)
    return ((b & 0x87) | (exp << 3)).astype(np.uint8).tobytes()


def int8_codes(rng, n):
    b = rng.integers(-127, 128, n, dtype=np.int8)
    return b.tobytes()


POOL_ELEMS = 1 << 26  # values drawn once per kind; big tensors are windows into them


class Pools:
    """Random values are drawn once per (kind, parameter) into a 64 Mi-element
    pool; a large tensor is a window of the pool at a random offset (wrapping).
    Benchmarks only need well-scaled, non-zero, non-repeating-per-row data at
    distinct addresses; this writes tens of GiB at memory speed instead of
    drawing every value."""

    def __init__(self, rng):
        self.rng, self.pools = rng, {}

    def take(self, key, make, n, esize):
        if n <= POOL_ELEMS // 4:
            return make(n)
        if key not in self.pools:
            pb = make(POOL_ELEMS)
            self.pools[key] = pb + pb  # doubled, so any window of <= POOL_ELEMS elements is contiguous
        pb = self.pools[key]
        out, left = bytearray(), n
        while left:
            c = min(left, POOL_ELEMS)
            o = int(self.rng.integers(0, POOL_ELEMS)) * esize
            out += pb[o:o + c * esize]
            left -= c
        return bytes(out)


def f32(a):
    return np.asarray(a, dtype="<f4").tobytes()


def bf16_of(a):
    u = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x8000) >> 16).astype("<u2").tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--format", choices=["bf16", "fp8-block", "fp8-channel", "int8"], default="bf16")
    ap.add_argument("--layers", type=int, default=0, help="override the layer count")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    P = dict(PRESETS[a.preset])
    if a.layers:
        P["layers"] = a.layers
    rng = np.random.default_rng(a.seed)
    pools = Pools(rng)
    H, I, L = P["hidden"], P["inter"], P["layers"]
    nh, nkv, hd, V = P["heads"], P["kv"], P["head_dim"], P["vocab"]
    hybrid = P["model_type"] == "qwen3_5_text"
    w = Writer()

    def vec(name, n, center=1.0):
        w.add(name, "BF16", [n], 2 * n, lambda: bf16_of(center + 0.2 * rng.standard_normal(n)))

    def lin(name, n, k):
        # effective weight magnitude ~ 1/sqrt(k)
        if a.format == "bf16":
            ec = 127 - int(np.ceil(np.log2(np.sqrt(k))))
            w.add(name + ".weight", "BF16", [n, k], 2 * n * k, lambda: pools.take(("bf16", ec), lambda m: bf16_values(rng, m, ec), n * k, 2))
        elif a.format == "fp8-block":
            gn, gk = -(-n // 128), -(-k // 128)
            w.add(name + ".weight", "F8_E4M3", [n, k], n * k,
                  lambda: pools.take("e4m3", lambda m: e4m3_codes(rng, m), n * k, 1))
            w.add(name + ".weight_scale_inv", "F32", [gn, gk], 4 * gn * gk,
                  lambda: f32(rng.uniform(0.5, 1.0, gn * gk) / np.sqrt(k)))
        elif a.format == "fp8-channel":
            w.add(name + ".weight", "F8_E4M3", [n, k], n * k,
                  lambda: pools.take("e4m3", lambda m: e4m3_codes(rng, m), n * k, 1))
            w.add(name + ".weight_scale", "F32", [n, 1], 4 * n,
                  lambda: f32(rng.uniform(0.5, 1.0, n) / np.sqrt(k)))
        else:
            w.add(name + ".weight", "I8", [n, k], n * k, lambda: pools.take("i8", lambda m: int8_codes(rng, m), n * k, 1))
            w.add(name + ".weight_scale", "F32", [n, 1], 4 * n,
                  lambda: f32(rng.uniform(1.0, 2.0, n) / 127.0 / np.sqrt(k)))

    pre = "model."
    w.add(pre + "embed_tokens.weight", "BF16", [V, H], 2 * V * H, lambda: pools.take(("bf16", 124), lambda m: bf16_values(rng, m, 124), V * H, 2))
    for i in range(L):
        p = f"{pre}layers.{i}."
        vec(p + "input_layernorm.weight", H, 0.0 if hybrid else 1.0)
        vec(p + "post_attention_layernorm.weight", H, 0.0 if hybrid else 1.0)
        full = not hybrid or (i + 1) % P["interval"] == 0
        if full:
            lin(p + "self_attn.q_proj", nh * hd * (2 if hybrid else 1), H)
            lin(p + "self_attn.k_proj", nkv * hd, H)
            lin(p + "self_attn.v_proj", nkv * hd, H)
            lin(p + "self_attn.o_proj", H, nh * hd)
            if P["model_type"] != "llama":
                vec(p + "self_attn.q_norm.weight", hd, 0.0 if hybrid else 1.0)
                vec(p + "self_attn.k_norm.weight", hd, 0.0 if hybrid else 1.0)
        else:
            hk, hv, dk = P["lin_k_heads"], P["lin_v_heads"], P["lin_dim"]
            conv = 2 * hk * dk + hv * dk
            q = p + "linear_attn."
            lin(q + "in_proj_qkv", conv, H)
            lin(q + "in_proj_z", hv * dk, H)
            w.add(q + "in_proj_b.weight", "BF16", [hv, H], 2 * hv * H, lambda: bf16_values(rng, hv * H, 120))
            w.add(q + "in_proj_a.weight", "BF16", [hv, H], 2 * hv * H, lambda: bf16_values(rng, hv * H, 120))
            w.add(q + "conv1d.weight", "BF16", [conv, 1, 4], 8 * conv, lambda: bf16_values(rng, conv * 4, 125))
            w.add(q + "A_log", "F32", [hv], 4 * hv, lambda: f32(np.log(rng.uniform(1, 16, hv))))
            w.add(q + "dt_bias", "F32", [hv], 4 * hv, lambda: f32(0.5 * rng.standard_normal(hv)))
            vec(q + "norm.weight", dk, 1.0)
            lin(q + "out_proj", H, hv * dk)
        lin(p + "mlp.gate_proj", I, H)
        lin(p + "mlp.up_proj", I, H)
        lin(p + "mlp.down_proj", H, I)
    vec(pre + "norm.weight", H, 0.0 if hybrid else 1.0)
    if not P["tie"]:
        w.add("lm_head.weight", "BF16", [V, H], 2 * V * H, lambda: pools.take(("bf16", 122), lambda m: bf16_values(rng, m, 122), V * H, 2))
    os.makedirs(a.out, exist_ok=True)
    total = w.write(os.path.join(a.out, "model.safetensors"))
    cfg = {"architectures": ["BenchForCausalLM"], "model_type": P["model_type"], "hidden_size": H,
           "intermediate_size": I, "num_hidden_layers": L, "num_attention_heads": nh,
           "num_key_value_heads": nkv, "head_dim": hd, "vocab_size": V, "max_position_embeddings": 32768,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": P["tie"],
           "torch_dtype": "bfloat16", "eos_token_id": 2, "hidden_act": "silu"}
    if hybrid:
        cfg.update(linear_num_key_heads=P["lin_k_heads"], linear_num_value_heads=P["lin_v_heads"],
                   linear_key_head_dim=P["lin_dim"], linear_value_head_dim=P["lin_dim"],
                   linear_conv_kernel_dim=4, full_attention_interval=P["interval"],
                   partial_rotary_factor=0.25)
    if a.format == "fp8-block":
        cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}
    elif a.format in ("fp8-channel", "int8"):
        t = "float" if a.format == "fp8-channel" else "int"
        cfg["quantization_config"] = {
            "quant_method": "compressed-tensors",
            "format": "float-quantized" if t == "float" else "int-quantized",
            "config_groups": {"group_0": {"targets": ["Linear"],
                              "weights": {"num_bits": 8, "type": t, "strategy": "channel", "symmetric": True,
                                          "dynamic": False},
                              "input_activations": {"num_bits": 8, "type": t, "strategy": "token",
                                                    "symmetric": True, "dynamic": True}}},
            "ignore": ["lm_head"]}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    print(f"wrote {a.out}: {a.preset} {a.format}, {L} layers, {total / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
