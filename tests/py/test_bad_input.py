#!/usr/bin/env python3
"""Bad checkpoints and bad arguments through the real CLI: each must give one
clear error line naming the file and the problem, a non-zero exit code, and
no crash (no signal, no sanitizer report)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from tcheck import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("DOTLM_BIN", os.path.join(ROOT, "build", "dotlm"))
SRC = os.path.join(ROOT, "fixtures", "qwen3_bf16")


check = Checks()


def dotlm(*args, stdin=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, input=stdin, timeout=120)


def expect_error(label, args, *needles, stdin=None):
    r = dotlm(*args, stdin=stdin)
    err = r.stderr
    ok = r.returncode not in (0,) and r.returncode > 0  # negative = killed by a signal
    check(ok, f"{label}: exit code {r.returncode} (want a clean non-zero exit)\n{err[-800:]}")
    check("Sanitizer" not in err and "runtime error" not in err, f"{label}: sanitizer report\n{err[-800:]}")
    lines = [l for l in err.splitlines() if "error" in l.lower() or l.startswith("dotlm")]
    for n in needles:
        check(any(n in l for l in err.splitlines()), f"{label}: no error line mentions {n!r}:\n{err[-800:]}")
    print(f"ok   {label}: {lines[-1] if lines else err.strip()[-200:]}")


def copy_model(td):
    d = os.path.join(td, "m")
    shutil.copytree(SRC, d)
    return d


def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data, pad=True):
    hb = json.dumps(header).encode()
    if pad:
        hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data)


def main():
    prompt = ["--tokens", "1,2,3"]
    with tempfile.TemporaryDirectory() as td:
        # --- safetensors corruption
        cases = []
        d = copy_model(td)
        st = os.path.join(d, "model.safetensors")
        h, data = read_st(st)
        names = [k for k in h if k != "__metadata__"]

        def variant(label, mutate, *needles):
            dd = os.path.join(td, label.replace(" ", "_"))
            shutil.copytree(d, dd)
            mutate(os.path.join(dd, "model.safetensors"))
            expect_error(label, ["logits", dd, *prompt, "--out", os.path.join(td, "x.npy")],
                         "model.safetensors", *needles)

        variant("truncated file", lambda p: open(p, "r+b").truncate(os.path.getsize(p) // 2))
        variant("file shorter than 8 bytes", lambda p: open(p, "wb").write(b"\x01\x02"))
        variant("header length past end",
                lambda p: open(p, "r+b").write(struct.pack("<Q", 1 << 40)))

        def past_end(p):
            hh = json.loads(json.dumps(h))
            hh[names[0]]["data_offsets"][1] = len(data) + 4096
            write_st(p, hh, data)
        variant("offsets past the end", past_end)

        def overlap(p):
            hh = json.loads(json.dumps(h))
            a, b = names[0], names[1]
            size_b = hh[b]["data_offsets"][1] - hh[b]["data_offsets"][0]
            hh[b]["data_offsets"] = [hh[a]["data_offsets"][0], hh[a]["data_offsets"][0] + size_b]
            write_st(p, hh, data)
        variant("overlapping tensors", overlap)

        def bad_dtype(p):
            hh = json.loads(json.dumps(h))
            hh[names[0]]["dtype"] = "Q4_K"
            write_st(p, hh, data)
        variant("unknown dtype", bad_dtype, "Q4_K")

        def bad_json(p):
            hb = b'{"a": [1, 2'
            with open(p, "wb") as f:
                f.write(struct.pack("<Q", len(hb)) + hb)
        variant("malformed header JSON", bad_json)

        def shape_mismatch(p):
            hh = json.loads(json.dumps(h))
            t = next(k for k in names if k.endswith("q_proj.weight"))
            hh[t]["shape"] = [hh[t]["shape"][0] // 2, hh[t]["shape"][1] * 2 + 2]
            write_st(p, hh, data)
        variant("shape/size mismatch", shape_mismatch)

        # --- model-level problems (valid containers)
        def tensor_variant(label, mutate_header, *needles):
            dd = os.path.join(td, label.replace(" ", "_"))
            shutil.copytree(d, dd)
            hh = json.loads(json.dumps(h))
            mutate_header(hh)
            write_st(os.path.join(dd, "model.safetensors"), hh, data)
            expect_error(label, ["logits", dd, *prompt, "--out", os.path.join(td, "x.npy")], *needles)

        t_k = next(k for k in names if k.endswith("layers.1.self_attn.k_proj.weight"))
        tensor_variant("missing tensor", lambda hh: hh.pop(t_k), t_k)

        def wrong_shape(hh):
            s = hh[t_k]["shape"]
            hh[t_k]["shape"] = [s[1], s[0]]
        tensor_variant("wrong-shaped tensor", wrong_shape, t_k)

        # --- config problems
        def cfg_variant(label, text, *needles):
            dd = os.path.join(td, label.replace(" ", "_"))
            shutil.copytree(d, dd)
            with open(os.path.join(dd, "config.json"), "w") as f:
                f.write(text)
            expect_error(label, ["logits", dd, *prompt, "--out", os.path.join(td, "x.npy")],
                         "config.json", *needles)

        cfg = json.load(open(os.path.join(d, "config.json")))
        cfg_variant("malformed config JSON", json.dumps(cfg)[:-10])
        cfg_variant("unknown architecture", json.dumps(dict(cfg, model_type="mamba")), "mamba")
        cfg_variant("wrong config type", json.dumps(dict(cfg, hidden_size="128")), "hidden_size")
        bad = dict(cfg)
        bad.pop("num_hidden_layers")
        cfg_variant("missing config field", json.dumps(bad), "num_hidden_layers")
        cfg_variant("unsupported quantization",
                    json.dumps(dict(cfg, quantization_config={"quant_method": "gptq", "bits": 4})),
                    "gptq")

        # --- sharded index naming a missing shard
        dd = os.path.join(td, "badindex")
        shutil.copytree(os.path.join(ROOT, "fixtures", "qwen2_f32_sharded"), dd)
        shards = sorted(f for f in os.listdir(dd) if f.startswith("model-0"))
        os.remove(os.path.join(dd, shards[-1]))
        expect_error("missing shard", ["logits", dd, *prompt, "--out", os.path.join(td, "x.npy")],
                     shards[-1])

        # --- runtime inputs
        expect_error("token id outside vocabulary",
                     ["logits", d, "--tokens", "1,999999", "--out", os.path.join(td, "x.npy")], "999999")
        expect_error("prompt longer than the context",
                     ["run", d, "--tokens", ",".join(["5"] * 300), "--ctx", "64", "-n", "4"], "context")
        expect_error("bad token list", ["run", d, "--tokens", "1,x,3"], "token")
        expect_error("missing model directory", ["run", os.path.join(td, "nope"), *prompt], "nope")
        expect_error("unknown option", ["run", d, *prompt, "--frobnicate"], "--frobnicate")
        expect_error("unknown backend", ["run", d, *prompt, "--backend", "tpu"], "tpu")
        expect_error("bad KV-cache type", ["run", d, *prompt, "--kv-dtype", "int4"], "--kv-dtype")
        expect_error("zero prefill chunk", ["run", d, *prompt, "--prefill-chunk", "0"], "--prefill-chunk")
        expect_error("non-numeric prefill chunk", ["logits", d, *prompt, "--prefill-chunk", "lots",
                                                   "--out", os.path.join(td, "x.npy")], "--prefill-chunk")
        expect_error("prefill chunk given to the server", ["serve", d, "--prefill-chunk", "64"],
                     "--step-tokens")
        expect_error("unwritable output", ["logits", d, *prompt, "--out", "/nonexistent/dir/x.npy"],
                     "/nonexistent/dir/x.npy")
        expect_error("bench: bad batch sizes", ["bench", "--gemv-m", "4,5,0,7"], "--gemv-m", "4,5,0,7")
        expect_error("bench: three batch sizes", ["bench", "--gemv-m", "4,5,6"], "--gemv-m")
        expect_error("tokenize: broken JSON line", ["tokenize", os.path.join(ROOT, "assets", "tokenizers", "qwen3")],
                     "line 2", stdin='"ok"\n"broken\n')
    print(f"test_bad_input: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
