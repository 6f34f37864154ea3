#!/usr/bin/env python3
"""End-to-end check of `dotlm logits` / `dotlm run` against transformers.

Every fixtures/NAME/ holds a tiny random checkpoint generated with
transformers (tools/gen_fixtures.py, run on the GPU test machine) with its
reference logits and 16 greedy ids. For each fixture this test requires:
  - max |logit - ref| <= tol (2e-3 for float and weight-only FP8 paths,
    2e-2 for declared activation quantization and W8A8 INT8);
  - the 16 greedy ids identical to transformers' (weight-only / float);
  - with every fast kernel switched off (DOTLM_DISABLE='*avx2*,*vnni*'), the reference
    kernels run (visible in --stats) and the logits still match;
  - --stats shows a fast kernel ran for quantized layers.
Env: DOTLM_BIN (path of dotlm), DOTLM_BACKEND (default cpu).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from tcheck import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("DOTLM_BIN", os.path.join(ROOT, "build", "dotlm"))
BACKEND = os.environ.get("DOTLM_BACKEND", "cpu")
FAST_OFF = "*avx2*,*avx512*,*vnni*,*neon*"
GPU = BACKEND != "cpu"
# On a GPU the asserted runs use an fp32 KV cache (the CPU's), so the check
# measures the kernels; the default fp16 cache is run too and reported.
KV = ["--kv-dtype", "f32"] if GPU else []

skipped = 0


check = Checks()


def run(args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([BIN] + args, capture_output=True, text=True, env=e)


def stats_counts(stderr):
    out = {}
    for line in stderr.splitlines():
        p = line.split()
        if len(p) == 3 and p[1].isdigit() and p[2] in ("enabled", "disabled"):
            out[p[0]] = int(p[1])
    return out


def logits_of(d, prompt, extra=(), env=None):
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "l.npy")
        r = run(["logits", d, "--tokens", ",".join(map(str, prompt)), "--out", out,
                 "--backend", BACKEND, "--stats"] + KV + list(extra), env)
        if r.returncode != 0:
            return None, r
        return np.load(out), r


def greedy_of(d, prompt, extra=()):
    r = run(["run", d, "--tokens", ",".join(map(str, prompt)), "-n", "16", "--temp", "0",
             "--print-ids", "--ignore-eos", "--backend", BACKEND] + KV + list(extra))
    if r.returncode != 0:
        return None, r
    return [int(x) for x in r.stdout.strip().splitlines()[-1].split()], r


def main():
    global skipped
    fx = os.path.join(ROOT, "fixtures")
    names = sorted(n for n in os.listdir(fx) if os.path.exists(os.path.join(fx, n, "ref.json")))
    for name in names:
        d = os.path.join(fx, name)
        ref = json.load(open(os.path.join(d, "ref.json")))
        cfg = json.load(open(os.path.join(d, "config.json")))
        prompt = ref["prompt"]
        scheme = ref.get("scheme")
        policies = []
        if scheme in ("fp8_block", "fp8_channel"):
            policies = [("weight-only", "ref_logits.npy", ref["tol"], ref["greedy"]),
                        ("declared", "ref_logits_declared.npy", ref["tol_declared"], None)]
        elif scheme == "int8":
            policies = [(None, "ref_logits_declared.npy", ref["tol_declared"], None)]
        else:
            policies = [(None, "ref_logits.npy", ref["tol"], ref["greedy"])]
        for pol, ref_file, tol, greedy in policies:
            tol = max(tol, 2e-2) if GPU else tol
            extra = ["--fp8-activations", pol] if pol else []
            want = np.load(os.path.join(d, ref_file))
            got, r = logits_of(d, prompt, extra)
            label = f"{name}[{pol or 'default'}]"
            if got is None and "not run by this build" in r.stderr + r.stdout:
                print(f"SKIP {label}: {r.stderr.strip().splitlines()[-1]}")
                skipped += 1
                break
            check(got is not None, f"{label}: dotlm logits failed: {r.stderr.strip()[-500:]}")
            if got is None:
                continue
            check(got.shape == want.shape, f"{label}: shape {got.shape} vs {want.shape}")
            if got.shape != want.shape:
                continue
            err = float(np.abs(got - want).max())
            print(f"{label}: max |d| = {err:.2e} (tol {tol:g})")
            # A dynamic-activation-quantization reference is only defined to
            # within the tolerance when transformers' own fp32 and fp64
            # evaluations agree (no activation within rounding noise of a
            # quantization tie); the generator records that conditioning.
            cond = ref.get("declared_fp32_vs_fp64", 0.0) if ref_file.endswith("declared.npy") else 0.0
            if cond > 1e-3:
                print(f"NOTE {label}: reference ill-conditioned (transformers' declared logits move by "
                      f"{cond:.2e} in fp64 or under a 2e-7 input perturbation); reported, not asserted")
            else:
                check(err <= tol, f"{label}: max |logit - ref| = {err:.3e} > {tol}")
            if GPU:  # the default (fp16) KV cache: reported
                g16, _ = logits_of(d, prompt, list(extra) + ["--kv-dtype", "f16"])
                if g16 is not None and g16.shape == want.shape:
                    print(f"NOTE {label}[f16 KV]: max |d| = {float(np.abs(g16 - want).max()):.2e}")
            # the prompt in forwards of 5 tokens (--prefill-chunk): the CPU's dense
            # forward is batch-invariant (same bits); linear-attention layers sum
            # their chunked recurrence in chunk order; GPUs take other kernels for
            # batches of <= 8 tokens (GEMV, split attention: other roundings), and
            # where activations are quantized per token (declared fp8, int8) a
            # rounding of 1e-7 can move a code across a tie, as the f16 KV cache
            # does above: there the figure is reported, not asserted
            lt = cfg.get("layer_types") or cfg.get("text_config", {}).get("layer_types") or []
            aq = pol == "declared" or scheme == "int8"
            g5, r5 = logits_of(d, prompt, list(extra) + ["--prefill-chunk", "5"])
            check(g5 is not None and g5.shape == want.shape,
                  f"{label}[chunks of 5]: dotlm logits failed: {r5.stderr.strip()[-300:]}")
            if g5 is not None and g5.shape == want.shape:
                e5 = float(np.abs(g5 - want).max())
                print(f"{label}[chunks of 5]: max |d| = {e5:.2e}")
                if GPU and aq and e5 > tol:
                    print(f"NOTE {label}[chunks of 5]: activation codes moved (GPU, quantized activations)")
                elif cond <= 1e-3:
                    check(e5 <= tol, f"{label}[chunks of 5]: max |logit - ref| = {e5:.3e} > {tol}")
                if not GPU and "linear_attention" not in lt:
                    check(np.array_equal(g5, got), f"{label}: logits differ between one forward and chunks of 5")
            counts = stats_counts(r.stderr)
            if scheme and not GPU:
                fast = [k for k, v in counts.items() if v > 0 and "qmm" in k and not k.endswith(".ref")]
                check(fast, f"{label}: --stats shows no fast quantized kernel ran: {counts}")
            # reference path: all fast kernels off
            if not GPU:
                got2, r2 = logits_of(d, prompt, extra, {"DOTLM_DISABLE": FAST_OFF})
                check(got2 is not None, f"{label}: reference run failed: {r2.stderr[-300:]}")
                if got2 is not None:
                    c2 = stats_counts(r2.stderr)
                    ran_fast = [k for k, v in c2.items() if v > 0 and not k.endswith(".ref")
                                and any(s in k for s in ("avx2", "avx512", "vnni", "neon"))]
                    check(not ran_fast, f"{label}: fast kernels ran although disabled: {ran_fast}")
                    check(any(k.endswith(".ref") and v > 0 for k, v in c2.items()),
                          f"{label}: no reference kernel counted with fast paths off")
                    err2 = float(np.abs(got2 - want).max())
                    if cond <= 1e-3:
                        check(err2 <= tol, f"{label}: reference path max |d| {err2:.3e} > {tol}")
            if greedy is not None:
                ids, r3 = greedy_of(d, prompt, extra)
                check(ids == greedy, f"{label}: greedy ids {ids} != transformers {greedy} {r3.stderr[-300:] if ids is None else ''}")
            # longer prompts (>= 300 tokens) for float / weight-only: in the
            # default prefill chunk (one forward on GPUs, 256 tokens on the
            # CPU) and in forwards of 128 tokens (--prefill-chunk)
            if pol in (None, "weight-only") and scheme != "int8":
                for case in ref.get("extra_cases", []):
                    w2 = np.load(os.path.join(d, case["logits"]))
                    for ch in ([], ["--prefill-chunk", "128"]):
                        g2, r4 = logits_of(d, case["prompt"], list(extra) + ch)
                        lab2 = f"{label}[{len(case['prompt'])} tokens{', chunks of 128' if ch else ''}]"
                        check(g2 is not None and g2.shape == w2.shape,
                              f"{lab2}: dotlm logits failed or wrong shape: {r4.stderr[-300:]}")
                        if g2 is not None and g2.shape == w2.shape:
                            e2 = float(np.abs(g2 - w2).max())
                            print(f"{lab2}: max |d| = {e2:.2e} (tol {tol:g})")
                            check(e2 <= tol, f"{lab2}: max |logit - ref| = {e2:.3e} > {tol}")
                    ids2, _ = greedy_of(d, case["prompt"], extra)
                    check(ids2 == case["greedy"], f"{lab2}: greedy ids {ids2} != transformers {case['greedy']}")
    print(f"test_fixtures: {check.passed} passed, {check.failed} failed, {skipped} skipped")
    return 1 if check.failed or check.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
