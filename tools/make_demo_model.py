#!/usr/bin/env python3
"""Write a small random Qwen3-architecture checkpoint (real HF layout: config.json,
generation_config.json, model.safetensors in bf16) with the real Qwen3 tokenizer,
so `dotlm run` can be tried without downloading anything. Standard library only.

The weights are random, so the text is gibberish: this demonstrates the pipeline
(tokenizer, chat template, loading, forward, sampling, streaming), not a model.

usage: python3 tools/make_demo_model.py OUT_DIR [--layers N] [--hidden H] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bf16_random(n, rng, scale_exp):
    """n random bf16 values (little-endian bytes): random sign and mantissa,
    exponent in [scale_exp-3, scale_exp] (so magnitudes ~2^(scale_exp-3)..2^(scale_exp+1))."""
    lo = rng.randbytes(n)
    hi = rng.randbytes(n)
    # high byte: sign bit + top 7 exponent bits; exponent = 2*(hi7) + lowbit(lo)
    table = bytes(((b & 0x80) | (((scale_exp >> 1) - (b & 1)) & 0x7f)) for b in range(256))
    hi = hi.translate(table)
    out = bytearray(2 * n)
    out[0::2] = lo
    out[1::2] = hi
    return bytes(out)


def bf16_const_noise(n, rng, center):
    """values near `center` (1.0 for norms): center +- a few percent."""
    vals = []
    for _ in range(n):
        v = center + rng.uniform(-0.2, 0.2)
        b = struct.unpack("<I", struct.pack("<f", v))[0]
        vals.append(struct.pack("<H", (b + 0x8000) >> 16))
    return b"".join(vals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--inter", type=int, default=0, help="intermediate size (default 3 x hidden)")
    ap.add_argument("--preset", choices=["0.5b"], help="0.5b: Qwen2.5-0.5B-like shapes "
                    "(hidden 896, 24 layers, 14/2 heads, inter 4864)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    if a.preset == "0.5b":
        a.hidden, a.layers, a.heads, a.kv_heads, a.head_dim, a.inter = 896, 24, 14, 2, 64, 4864
    rng = random.Random(a.seed)
    H, L = a.hidden, a.layers
    heads, kv, hd = a.heads, a.kv_heads, a.head_dim
    inter = a.inter or H * 3
    vocab = 151936
    cfg = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": H,
        "intermediate_size": inter, "num_hidden_layers": L, "num_attention_heads": heads,
        "num_key_value_heads": kv, "head_dim": hd, "vocab_size": vocab, "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645,
        "hidden_act": "silu", "attention_bias": False,
    }
    tensors = []  # (name, shape, bytes)
    def mat(name, n, k, exp=120):
        tensors.append((name, [n, k], bf16_random(n * k, rng, exp)))
    def vec(name, n):
        tensors.append((name, [n], bf16_const_noise(n, rng, 1.0)))
    mat("model.embed_tokens.weight", vocab, H, 124)
    for i in range(L):
        p = f"model.layers.{i}."
        vec(p + "input_layernorm.weight", H)
        vec(p + "post_attention_layernorm.weight", H)
        mat(p + "self_attn.q_proj.weight", heads * hd, H)
        mat(p + "self_attn.k_proj.weight", kv * hd, H)
        mat(p + "self_attn.v_proj.weight", kv * hd, H)
        mat(p + "self_attn.o_proj.weight", H, heads * hd)
        vec(p + "self_attn.q_norm.weight", hd)
        vec(p + "self_attn.k_norm.weight", hd)
        mat(p + "mlp.gate_proj.weight", inter, H)
        mat(p + "mlp.up_proj.weight", inter, H)
        mat(p + "mlp.down_proj.weight", H, inter)
    vec("model.norm.weight", H)
    # untied: with tied random embeddings the model just copies its last input token
    mat("lm_head.weight", vocab, H, 124)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, data in tensors:
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for _, _, data in tensors:
            f.write(data)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": True,
                   "temperature": 0.7, "top_p": 0.8, "top_k": 20}, f, indent=1)
    tok = os.path.join(ROOT, "assets", "tokenizers", "qwen3")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, fn), os.path.join(a.out, fn))
    print(f"wrote {a.out}: qwen3-shaped, {L} layers, hidden {H}, {off / 2**20:.1f} MiB bf16, random weights")


if __name__ == "__main__":
    main()
