#!/usr/bin/env python3
"""Hybrid models (Gated DeltaNet): the chunked prefill equals the recurrence.

For each hybrid fixture, `dotlm logits` on a long prompt (random ids, longer
than the engine's 256-token forward, so the conv / recurrent state carries
from one forward to the next) is run twice: with the chunked gated delta
rule (default) and with DOTLM_DISABLE=cpu.gdn.chunked (token-by-token
recurrence). Requires:
  - max |d| between the two <= 1e-4;
  - --stats shows cpu.gdn.chunked ran in the first run and not the second,
    where cpu.gdn.recurrent.ref ran instead;
  - the rows of the fixture's own prompt (a prefix of the long prompt) match
    transformers' reference logits within the fixture tolerance.
Env: DOTLM_BIN (path of dotlm).
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
FIXTURES = ["qwen3_5_text_bf16", "qwen3_next_bf16"]
N_TOKENS = 420

check = Checks()


def stats_counts(stderr):
    out = {}
    for line in stderr.splitlines():
        p = line.split()
        if len(p) == 3 and p[1].isdigit() and p[2] in ("enabled", "disabled"):
            out[p[0]] = int(p[1])
    return out


def logits(d, prompt, env_extra):
    env = dict(os.environ)
    env.pop("DOTLM_DISABLE", None)
    env.update(env_extra)
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "l.npy")
        r = subprocess.run([BIN, "logits", d, "--tokens", ",".join(map(str, prompt)), "--out", out,
                            "--backend", "cpu", "--stats"], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return None, r
        return np.load(out), r


def main():
    rng = np.random.default_rng(int(os.environ.get("DOTLM_TEST_SEED", "1234")) % (2**32))
    for name in FIXTURES:
        d = os.path.join(ROOT, "fixtures", name)
        if not os.path.isdir(d):
            check(False, f"{name}: fixture missing")
            continue
        ref = json.load(open(os.path.join(d, "ref.json")))
        cfg = json.load(open(os.path.join(d, "config.json")))
        vocab = cfg["vocab_size"]
        prompt = list(ref["prompt"]) + [int(x) for x in rng.integers(0, vocab, N_TOKENS - len(ref["prompt"]))]
        a, ra = logits(d, prompt, {})
        check(a is not None, f"{name}: chunked run failed: {ra.stderr.strip()[-500:]}")
        b, rb = logits(d, prompt, {"DOTLM_DISABLE": "cpu.gdn.chunked"})
        check(b is not None, f"{name}: recurrent run failed: {rb.stderr.strip()[-500:]}")
        if a is None or b is None:
            continue
        check(a.shape == (N_TOKENS, vocab) and b.shape == a.shape, f"{name}: shapes {a.shape} {b.shape}")
        err = float(np.abs(a - b).max())
        print(f"{name}: {N_TOKENS} tokens, chunked vs recurrent max |d| = {err:.2e}")
        check(err <= 1e-4, f"{name}: chunked vs recurrent max |d| = {err:.3e} > 1e-4")
        ca, cb = stats_counts(ra.stderr), stats_counts(rb.stderr)
        check(ca.get("cpu.gdn.chunked", 0) > 0, f"{name}: chunked run did not use cpu.gdn.chunked: {ca}")
        check(cb.get("cpu.gdn.chunked", 0) == 0 and cb.get("cpu.gdn.recurrent.ref", 0) > 0,
              f"{name}: disabled run still used cpu.gdn.chunked: {cb}")
        want = np.load(os.path.join(d, "ref_logits.npy"))
        n = want.shape[0]
        e2 = float(np.abs(a[:n] - want).max())
        check(e2 <= ref["tol"], f"{name}: prefix rows vs transformers max |d| = {e2:.3e} > {ref['tol']}")
    print(f"test_hybrid_chunks: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
