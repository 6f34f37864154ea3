"""dotlm tokenizer vs Hugging Face `tokenizers` on the Qwen3 and Llama 3
tokenizers: encode ids must be identical on a >1000-string corpus, decode
must match HF decode (corpus ids and random id sequences, which split UTF-8
characters), malformed input must fail with the line number, and ~1 MB of
text must tokenize quickly."""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tok_corpus  # noqa: E402

from tcheck import Checks

ASSETS = "/work/shared/assets/tokenizers"
if not os.path.isdir(ASSETS):
    ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets", "tokenizers")

check = Checks()


def run_dotlm(args, stdin_text):
    bin_ = os.environ.get("DOTLM_BIN", "build/dotlm")
    return subprocess.run([bin_] + args, input=stdin_text.encode("utf-8"), capture_output=True)


def compare_encode(name, d, hf, corpus):
    inp = "".join(json.dumps(s, ensure_ascii=(i % 2 == 0)) + "\n" for i, s in enumerate(corpus))
    t0 = time.time()
    r = run_dotlm(["tokenize", d], inp)
    dt = time.time() - t0
    check(r.returncode == 0, f"{name}: tokenize exit {r.returncode}: {r.stderr.decode()[:300]}")
    lines = r.stdout.decode().split("\n")[:-1]
    check(len(lines) == len(corpus), f"{name}: {len(lines)} output lines for {len(corpus)} inputs")
    ok = bad = 0
    for s, line in zip(corpus, lines):
        ours = [int(x) for x in line.split()]
        ref = hf.encode(s, add_special_tokens=False).ids
        if ours == ref:
            ok += 1
        else:
            bad += 1
            if bad <= 5:
                print(f"  {name} mismatch on {s[:80]!r}\n    ours {ours[:30]}\n    hf   {ref[:30]}")
    check(bad == 0, f"{name}: {bad} encode mismatches")
    print(f"{name}: encode {ok}/{len(corpus)} identical ({dt:.2f}s)")


def compare_decode(name, d, hf, id_lists, skip_special):
    inp = "".join(" ".join(map(str, ids)) + "\n" for ids in id_lists)
    r = run_dotlm(["tokenize", d, "--decode"] + (["--skip-special"] if skip_special else []), inp)
    check(r.returncode == 0, f"{name}: decode exit {r.returncode}: {r.stderr.decode()[:300]}")
    lines = r.stdout.decode().split("\n")[:-1]
    check(len(lines) == len(id_lists), f"{name}: {len(lines)} decode lines for {len(id_lists)} inputs")
    bad = 0
    for ids, line in zip(id_lists, lines):
        ref = hf.decode(ids, skip_special_tokens=skip_special)
        ours = json.loads(line)
        if ours != ref:
            bad += 1
            if bad <= 5:
                print(f"  {name} decode mismatch for {ids[:20]}\n    ours {ours[:80]!r}\n    hf   {ref[:80]!r}")
    check(bad == 0, f"{name}: {bad} decode mismatches (skip_special={skip_special})")
    print(f"{name}: decode {len(id_lists) - bad}/{len(id_lists)} identical (skip_special={skip_special})")


def variants(base):
    """Modified copies of a real tokenizer.json exercising the options the two
    shipped tokenizers do not use: added-token flags, other Split behaviours,
    invert, ByteLevel's own regex and prefix space, other normal forms."""
    nid = base["model"]["vocab"].__len__() + len(base["added_tokens"]) + 10
    out = {}
    j = json.loads(json.dumps(base))
    for k, (content, flags) in enumerate([("<mask>", {"lstrip": True}), ("[R]", {"rstrip": True}),
                                          ("word", {"single_word": True}), ("Ünï", {"normalized": True}),
                                          ("cafe\u0301", {"normalized": True}), ("<ab>", {"lstrip": True, "rstrip": True})]):
        tok = {"id": nid + k, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
               "normalized": False, "special": k % 2 == 0}
        tok.update(flags)
        j["added_tokens"].append(tok)
    out["added_flags"] = j
    pat = base["pre_tokenizer"]["pretokenizers"][0]["pattern"]
    for beh in ["Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for inv in [False, True]:
            j = json.loads(json.dumps(base))
            j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": r"\s+|\d"}, "behavior": beh, "invert": inv},
                {"type": "Split", "pattern": pat, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
            out[f"split_{beh}_{inv}"] = j
    j = json.loads(json.dumps(base))
    j["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    out["bytelevel_regex_prefix"] = j
    j = json.loads(json.dumps(base))
    j["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Split", "pattern": {"String": "o"},
                                                   "behavior": "Isolated", "invert": False})
    out["split_string"] = j
    for nf in ["NFD", "NFKC", "NFKD"]:
        j = json.loads(json.dumps(base))
        j["normalizer"] = {"type": "Sequence", "normalizers": [{"type": nf}]}
        out["norm_" + nf] = j
    return out


def check_variants(Tokenizer, corpus):
    base = json.load(open(os.path.join(ASSETS, "qwen3", "tokenizer.json"), encoding="utf-8"))
    extra = ["<mask> x <mask>y  <mask>", "a [R]  b [R]\n\nc", "word words sword word_ word. aword word",
             "Ünï Ünï ÜnÏ", "cafe\u0301 café cafe", "x <ab> y  <ab>  z<ab> <ab>z"]
    sub = corpus[:250] + extra
    with tempfile.TemporaryDirectory() as tmp:
        for name, j in variants(base).items():
            d = os.path.join(tmp, name)
            os.mkdir(d)
            with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(j, f)
            hf = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
            r = run_dotlm(["tokenize", d], "".join(json.dumps(s) + "\n" for s in sub))
            lines = r.stdout.decode().split("\n")[:-1]
            bad = [s for s, line in zip(sub, lines) if [int(x) for x in line.split()] != hf.encode(s, add_special_tokens=False).ids]
            check(r.returncode == 0 and len(lines) == len(sub) and not bad,
                  f"variant {name}: rc {r.returncode} {r.stderr.decode()[:200]} {len(bad)} mismatches {bad[:2]!r}")
            if name == "added_flags":  # decode around added tokens with non-ASCII content
                rng = random.Random(7)
                added = [hf.token_to_id(t["content"]) for t in j["added_tokens"][-6:]]
                lists = [[rng.choice(added) if rng.random() < 0.3 else rng.randrange(256)
                          for _ in range(rng.randint(1, 10))] for _ in range(300)]
                compare_decode(name, d, hf, lists, False)
                compare_decode(name, d, hf, lists, True)
    print(f"variants: {len(variants(base))} modified tokenizers checked")


def main():
    try:
        from tokenizers import Tokenizer
    except ImportError:
        if os.environ.get("CI"):
            print("FAIL: python package 'tokenizers' is required in CI")
            print("0 passed, 1 failed")
            return 1
        print("SKIP: python package 'tokenizers' not installed")
        print("0 passed, 0 failed")
        return 0

    corpus = tok_corpus.build()
    print(f"corpus: {len(corpus)} strings, {sum(len(s) for s in corpus)} chars")
    rng = random.Random(99)
    for name in ["qwen3", "llama3"]:
        d = os.path.join(ASSETS, name)
        hf = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        compare_encode(name, d, hf, corpus)

        # decode: the corpus' own ids, and random id sequences (which split
        # multi-byte characters across tokens and mix in special tokens)
        nv = hf.get_vocab_size(with_added_tokens=True)
        id_lists = [hf.encode(s, add_special_tokens=False).ids for s in corpus[:600]]
        for _ in range(400):
            id_lists.append([rng.randrange(nv) for _ in range(rng.randint(0, 12))])
        for _ in range(200):  # byte-level tokens only: many partial UTF-8 sequences
            id_lists.append([rng.randrange(256) for _ in range(rng.randint(1, 8))])
        compare_decode(name, d, hf, id_lists, False)
        compare_decode(name, d, hf, id_lists[::3], True)

        # malformed input names the line
        r = run_dotlm(["tokenize", d], '"ok"\n"also ok"\nnot json\n')
        check(r.returncode != 0 and b"line 3" in r.stderr, f"{name}: malformed line -> {r.returncode} {r.stderr!r}")
        r = run_dotlm(["tokenize", d], '"ok"\n42\n')
        check(r.returncode != 0 and b"line 2" in r.stderr, f"{name}: non-string line -> {r.returncode} {r.stderr!r}")
        r = run_dotlm(["tokenize", d], '"lone \\ud800 surrogate"\n')
        check(r.returncode != 0 and b"line 1" in r.stderr, f"{name}: lone surrogate -> {r.returncode} {r.stderr!r}")

        # performance: ~1 MB of mixed text in one line and in many lines (the
        # time of a one-line run, mostly loading tokenizer.json, is subtracted)
        t0 = time.time()
        run_dotlm(["tokenize", d], '"x"\n')
        base = time.time() - t0
        big = "".join(rng.choice(corpus[60:1000]) + " " for _ in range(12000))[: 1 << 20]
        t0 = time.time()
        r = run_dotlm(["tokenize", d], json.dumps(big) + "\n")
        dt1 = max(0.0, time.time() - t0 - base)
        ours = [int(x) for x in r.stdout.decode().split()]
        check(r.returncode == 0 and ours == hf.encode(big, add_special_tokens=False).ids,
              f"{name}: 1 MB single-line text differs from HF")
        chunks = [big[i:i + 200] for i in range(0, len(big), 200)]
        t0 = time.time()
        r = run_dotlm(["tokenize", d], "".join(json.dumps(c) + "\n" for c in chunks))
        dt2 = max(0.0, time.time() - t0 - base)
        check(r.returncode == 0, f"{name}: chunked 1 MB failed")
        check(dt1 < 5 and dt2 < 5, f"{name}: 1 MB took {dt1:.2f}s / {dt2:.2f}s (limit 5s)")
        print(f"{name}: 1 MB of text: {dt1:.2f}s as one line, {dt2:.2f}s as {len(chunks)} lines"
              f" (+{base:.2f}s loading)")

    check_variants(Tokenizer, corpus)

    r = run_dotlm(["tokenize", "--help"], "")
    check(r.returncode == 0 and b"usage" in r.stdout, "tokenize --help")
    with tempfile.TemporaryDirectory() as tmp:
        r = run_dotlm(["tokenize", tmp], '"x"\n')
        check(r.returncode != 0 and b"tokenizer.json" in r.stderr, f"missing tokenizer.json -> {r.stderr!r}")

    print(f"{check.passed} passed, {check.failed} failed")
    return 0 if check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
