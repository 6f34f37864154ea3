#!/usr/bin/env python3
"""Load generator for an OpenAI-compatible server (dotlm serve, vLLM, ...).

Runs closed-loop streaming /v1/completions (or /v1/chat/completions) requests
at each concurrency level and reports request throughput, output tokens/s,
time to first token and inter-token latency (mean, p50, p90, p99).
Standard library only (http.client + threads); one token per SSE chunk is
assumed for ITL, and usage from stream_options.include_usage is used for
token counts.

usage: bench/loadgen.py --url http://127.0.0.1:8000 [--concurrency 1,8,32]
                        [--requests-per-level N | --duration S] [--max-tokens 64]
                        [--prompt-words 100] [--chat] [--model NAME] [--api-key KEY]
                        [--json OUT.json] [--markdown]
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse

WORDS = ("time person year way day thing man world life hand part child eye woman place work week case "
         "point government company number group problem fact").split()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ttft, self.itl, self.e2e = [], [], []
        self.out_tokens = 0
        self.prompt_tokens = 0
        self.ok = 0
        self.failed = 0
        self.errors = {}


def one_request(a, host, port, path, body, st):
    t0 = time.perf_counter()
    try:
        c = http.client.HTTPConnection(host, port, timeout=a.timeout)
        h = {"Content-Type": "application/json"}
        if a.api_key:
            h["Authorization"] = "Bearer " + a.api_key
        c.request("POST", path, body=json.dumps(body), headers=h)
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:200]))
        first = None
        last = None
        gaps = []
        usage = None
        done = False
        buf = b""
        while not done:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                ev, buf = buf.split(b"\n\n", 1)
                if not ev.startswith(b"data: "):
                    continue
                data = ev[6:]
                if data == b"[DONE]":
                    done = True
                    break
                j = json.loads(data)
                if "error" in j:
                    raise RuntimeError("stream error: %s" % j["error"].get("message"))
                if j.get("usage"):
                    usage = j["usage"]
                ch = j.get("choices") or []
                if ch:
                    piece = ch[0].get("text") if "text" in ch[0] else (ch[0].get("delta") or {}).get("content")
                    if piece:
                        now = time.perf_counter()
                        if first is None:
                            first = now
                        else:
                            gaps.append(now - last)
                        last = now
        c.close()
        if not done:
            raise RuntimeError("stream ended without [DONE]")
        t1 = time.perf_counter()
        with st.lock:
            st.ok += 1
            if first is not None:
                st.ttft.append(first - t0)
            st.itl.extend(gaps)
            st.e2e.append(t1 - t0)
            if usage:
                st.out_tokens += usage.get("completion_tokens", 0)
                st.prompt_tokens += usage.get("prompt_tokens", 0)
    except Exception as e:  # noqa: BLE001 - every failure is counted
        with st.lock:
            st.failed += 1
            k = str(e)[:120]
            st.errors[k] = st.errors.get(k, 0) + 1


def make_body(a, rng, i):
    words = " ".join(rng.choice(WORDS) for _ in range(max(1, int(rng.gauss(a.prompt_words, a.prompt_words / 4)))))
    prompt = "Request %d. %s" % (i, words)
    body = {"model": a.model, "max_tokens": a.max_tokens, "temperature": a.temperature, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True, "seed": i}
    if a.chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def run_level(a, host, port, conc):
    st = Stats()
    rng = random.Random(conc)
    path = "/v1/chat/completions" if a.chat else "/v1/completions"
    counter = [0]
    lock = threading.Lock()
    t_end = time.perf_counter() + a.duration if a.duration else None
    total = a.requests_per_level or max(conc * 4, 8)

    def worker():
        while True:
            with lock:
                if t_end is None and counter[0] >= total:
                    return
                if t_end is not None and time.perf_counter() >= t_end:
                    return
                i = counter[0]
                counter[0] += 1
                body = make_body(a, rng, i)
            one_request(a, host, port, path, body, st)

    t0 = time.perf_counter()
    th = [threading.Thread(target=worker, daemon=True) for _ in range(conc)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "concurrency": conc, "requests": st.ok, "failed": st.failed, "wall_s": wall,
        "req_per_s": st.ok / wall, "out_tok_per_s": st.out_tokens / wall,
        "prompt_tokens": st.prompt_tokens, "out_tokens": st.out_tokens,
        "ttft_mean_ms": 1e3 * statistics.mean(st.ttft) if st.ttft else float("nan"),
        "ttft_p50_ms": 1e3 * pct(st.ttft, 50), "ttft_p90_ms": 1e3 * pct(st.ttft, 90),
        "ttft_p99_ms": 1e3 * pct(st.ttft, 99),
        "itl_mean_ms": 1e3 * statistics.mean(st.itl) if st.itl else float("nan"),
        "itl_p50_ms": 1e3 * pct(st.itl, 50), "itl_p90_ms": 1e3 * pct(st.itl, 90),
        "itl_p99_ms": 1e3 * pct(st.itl, 99),
        "e2e_p50_ms": 1e3 * pct(st.e2e, 50), "errors": st.errors,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--requests-per-level", type=int, default=0, help="default: 4 x concurrency (min 8)")
    ap.add_argument("--duration", type=float, default=0, help="seconds per level instead of a request count")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=100)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--chat", action="store_true")
    ap.add_argument("--model", default=None)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    host, port = u.hostname, u.port or 80
    if a.model is None:
        c = http.client.HTTPConnection(host, port, timeout=30)
        c.request("GET", "/v1/models", headers={"Authorization": "Bearer " + a.api_key} if a.api_key else {})
        a.model = json.loads(c.getresponse().read())["data"][0]["id"]
    results = []
    for conc in [int(x) for x in a.concurrency.split(",")]:
        r = run_level(a, host, port, conc)
        results.append(r)
        print("c=%-3d req %4d fail %d  %.2f req/s  %.1f out tok/s  TTFT p50 %.0f p90 %.0f ms  ITL mean %.1f p50 %.1f "
              "p90 %.1f p99 %.1f ms" % (conc, r["requests"], r["failed"], r["req_per_s"], r["out_tok_per_s"],
                                        r["ttft_p50_ms"], r["ttft_p90_ms"], r["itl_mean_ms"], r["itl_p50_ms"],
                                        r["itl_p90_ms"], r["itl_p99_ms"]), flush=True)
        for k, v in r["errors"].items():
            print("    %dx %s" % (v, k))
    if a.markdown:
        print("\n| concurrency | requests | failed | req/s | output tok/s | TTFT p50 / p90 (ms) | ITL mean / p50 / p99 (ms) |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            print("| %d | %d | %d | %.2f | %.1f | %.0f / %.0f | %.1f / %.1f / %.1f |" % (
                r["concurrency"], r["requests"], r["failed"], r["req_per_s"], r["out_tok_per_s"], r["ttft_p50_ms"],
                r["ttft_p90_ms"], r["itl_mean_ms"], r["itl_p50_ms"], r["itl_p99_ms"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
