#!/usr/bin/env python3
"""dotlm serve end to end: the real server on a tiny random Qwen3-shaped
model (real Qwen3 tokenizer and chat template), driven with the official
openai client and with raw HTTP for malformed input."""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srv_util import Server, Tally, demo_model  # noqa: E402

try:
    import openai
except ImportError:
    if os.environ.get("CI"):
        print("openai is not installed (CI requires it)\n0 passed, 1 failed")
        sys.exit(1)
    print("SKIP: openai is not installed\n0 passed, 0 failed")
    sys.exit(0)

KEY = "sk-test-123"
T = Tally()
ctx = {}


def raw(method, path, body=None, headers=None, key=KEY):
    c = http.client.HTTPConnection("127.0.0.1", ctx["srv"].port, timeout=60)
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def is_error_shape(data):
    try:
        j = json.loads(data)
    except ValueError:
        return False
    e = j.get("error") if isinstance(j, dict) else None
    return isinstance(e, dict) and isinstance(e.get("message"), str) and e["message"] \
        and "type" in e and "param" in e and "code" in e


def metrics(port=None):
    if port:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/metrics")
        data = c.getresponse().read()
        c.close()
    else:
        st, data = raw("GET", "/metrics")
    out = {}
    for line in data.decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def test_basics():
    st, data = raw("GET", "/health", key=None)
    T.check(st == 200 and json.loads(data)["status"] == "ok", "/health")
    models = ctx["cli"].models.list()
    T.check([m.id for m in models.data] == ["demo"], "models.list: %r" % models)
    m = metrics()
    for k in ("dotlm_queue_length", "dotlm_running_sequences", "dotlm_kv_blocks_total",
              "dotlm_time_to_first_token_seconds_count", "dotlm_inter_token_latency_seconds_count"):
        T.check(k in m, "metric %s present" % k)


MSG = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]


def test_chat():
    cli = ctx["cli"]
    r = cli.chat.completions.create(model="demo", messages=MSG, max_tokens=12, temperature=0,
                                    extra_body={"ignore_eos": True})
    c = r.choices[0]
    T.check(c.finish_reason == "length", "chat finish_reason length: %r" % c.finish_reason)
    T.check(r.usage.completion_tokens == 12, "chat usage.completion_tokens %r" % r.usage)
    T.check(r.usage.total_tokens == r.usage.prompt_tokens + 12 and r.usage.prompt_tokens > 10,
            "chat usage totals")
    T.check(isinstance(c.message.content, str) and c.message.role == "assistant", "chat message")
    # streaming gives the same text (greedy), role first, usage chunk last
    chunks = list(cli.chat.completions.create(model="demo", messages=MSG, max_tokens=12, temperature=0,
                                              stream=True, stream_options={"include_usage": True},
                                              extra_body={"ignore_eos": True}))
    T.check(chunks[0].choices[0].delta.role == "assistant", "first chunk has the role")
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    text_r = "".join(ch.choices[0].delta.reasoning_content or "" for ch in chunks
                     if ch.choices and getattr(ch.choices[0].delta, "reasoning_content", None))
    full = (c.message.content or "")
    full_r = getattr(c.message, "reasoning_content", None) or ""
    T.check(text == full and text_r == full_r, "stream text == non-stream text: %r vs %r" % (text, full))
    fins = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    T.check(fins == ["length"], "one finish_reason in the stream: %r" % fins)
    T.check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 12 and
            chunks[-1].choices == [], "include_usage chunk")
    # logprobs (chat format)
    r = cli.chat.completions.create(model="demo", messages=MSG, max_tokens=6, temperature=0, logprobs=True,
                                    top_logprobs=3, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs.content
    T.check(len(lp) == 6, "chat logprobs per token: %d" % len(lp))
    ok = all(len(t.top_logprobs) == 3 and t.logprob <= 0 and abs(t.top_logprobs[0].logprob - t.logprob) < 1e-5
             and t.top_logprobs[0].token == t.token and
             t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob for t in lp)
    T.check(ok, "greedy pick is the top logprob, sorted tops")
    # max_completion_tokens is honoured too
    r = cli.chat.completions.create(model="demo", messages=MSG, max_completion_tokens=3, temperature=0,
                                    extra_body={"ignore_eos": True})
    T.check(r.usage.completion_tokens == 3, "max_completion_tokens")


def test_completions():
    cli = ctx["cli"]
    kw = dict(model="demo", prompt="The quick brown fox", max_tokens=10, temperature=0.9, seed=11,
              extra_body={"ignore_eos": True})
    a = cli.completions.create(**kw)
    b = cli.completions.create(**kw)
    T.check(a.choices[0].text == b.choices[0].text and a.choices[0].finish_reason == "length",
            "same seed, same text")
    s = "".join(ch.choices[0].text for ch in cli.completions.create(stream=True, **kw) if ch.choices)
    T.check(s == a.choices[0].text, "streamed completion equals non-streamed: %r / %r" % (s, a.choices[0].text))
    diff = sum(cli.completions.create(**dict(kw, seed=100 + i)).choices[0].text != a.choices[0].text
               for i in range(3))
    T.check(diff >= 1, "other seeds give other text")
    r = cli.completions.create(model="demo", prompt="Hello", max_tokens=5, temperature=0, logprobs=2,
                               extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    T.check(len(lp.tokens) == 5 and len(lp.token_logprobs) == 5 and len(lp.top_logprobs) == 5,
            "completion logprobs lengths")
    T.check("".join(lp.tokens) == r.choices[0].text, "logprob tokens spell the text")
    T.check(all(len(d) <= 2 and abs(max(d.values()) - v) < 1e-5 for d, v in zip(lp.top_logprobs, lp.token_logprobs)),
            "completion top_logprobs")
    T.check(lp.text_offset == sorted(lp.text_offset) and lp.text_offset[0] == 0, "text_offset")
    # token-id prompts
    r = cli.completions.create(model="demo", prompt=[9707, 1879], max_tokens=3, temperature=0,
                               extra_body={"ignore_eos": True})
    T.check(r.usage.prompt_tokens == 2 and r.usage.completion_tokens == 3, "token-id prompt")


def test_stop_strings():
    cli = ctx["cli"]
    kw = dict(model="demo", prompt="Once upon a time", max_tokens=40, temperature=1.0, seed=5,
              extra_body={"ignore_eos": True})
    base = cli.completions.create(**kw).choices[0].text
    T.check(len(base) > 20, "base text long enough: %r" % base)
    rng = random.Random(3)
    for trial in range(6):
        k = rng.randrange(1, len(base) - 4)
        L = rng.randrange(1, 5)
        stop = base[k:k + L]
        first = base.find(stop)
        r = cli.completions.create(stop=stop, **kw)
        T.check(r.choices[0].text == base[:first] and r.choices[0].finish_reason == "stop",
                "stop %r: got %r want %r" % (stop, r.choices[0].text, base[:first]))
        # streaming, with a list of stops, never emits the stop string
        s = "".join(ch.choices[0].text for ch in cli.completions.create(stream=True, **dict(kw, stop=["never-there-zzz", stop]))
                    if ch.choices)
        T.check(s == base[:first], "streamed stop %r: %r" % (stop, s))
    r = cli.completions.create(stop=["zzz-not-there"], **kw)
    T.check(r.choices[0].text == base and r.choices[0].finish_reason == "length", "stop that never matches")


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def test_tools_and_templates():
    cli = ctx["cli"]
    plain = cli.chat.completions.create(model="demo", messages=MSG, max_tokens=2, temperature=0)
    with_tools = cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=2, temperature=0)
    T.check(with_tools.usage.prompt_tokens > plain.usage.prompt_tokens + 20,
            "tool definitions rendered into the prompt (%d vs %d)" % (with_tools.usage.prompt_tokens,
                                                                      plain.usage.prompt_tokens))
    named = cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=2, temperature=0,
                                        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    # the tool, then the forced opening `<tool_call>\n{"name": "get_weather", "arguments":`
    T.check(named.usage.prompt_tokens > with_tools.usage.prompt_tokens + 8, "named tool_choice renders the tool "
            "and the call's opening (%d vs %d)" % (named.usage.prompt_tokens, with_tools.usage.prompt_tokens))
    req = cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=2, temperature=0,
                                      tool_choice="required")
    T.check(req.usage.prompt_tokens == with_tools.usage.prompt_tokens + 2,
            "required tool_choice appends <tool_call> and a newline (%d vs %d)" % (req.usage.prompt_tokens,
                                                                                 with_tools.usage.prompt_tokens))
    none = cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=2, temperature=0,
                                       tool_choice="none")
    T.check(none.usage.prompt_tokens == plain.usage.prompt_tokens, "tool_choice none drops the tools")
    try:
        cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=2,
                                    tool_choice={"type": "function", "function": {"name": "nope"}})
        T.check(False, "unknown named tool accepted")
    except openai.BadRequestError as e:
        T.check(e.status_code == 400 and "nope" in str(e), "unknown named tool -> 400")
    # a conversation with an assistant tool call and a tool result renders
    conv = MSG + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    r = cli.chat.completions.create(model="demo", messages=conv, tools=TOOLS, max_tokens=2, temperature=0)
    T.check(r.usage.prompt_tokens > with_tools.usage.prompt_tokens, "tool call history renders")
    # enable_thinking=False adds the empty think block to the prompt
    a = cli.chat.completions.create(model="demo", messages=MSG, max_tokens=2, temperature=0,
                                    extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    T.check(a.usage.prompt_tokens > plain.usage.prompt_tokens, "chat_template_kwargs reach the template")
    # streaming with tools: chunks parse, one finish_reason
    chunks = list(cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, max_tokens=8, temperature=0,
                                              stream=True, extra_body={"ignore_eos": True}))
    fins = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    T.check(len(fins) == 1 and fins[0] in ("length", "tool_calls"), "streaming with tools: %r" % fins)
    # content as a list of text parts
    r = cli.chat.completions.create(model="demo", max_tokens=2, temperature=0, messages=[
        MSG[0], {"role": "user", "content": [{"type": "text", "text": "Say something."}]}])
    T.check(r.usage.prompt_tokens == plain.usage.prompt_tokens, "content parts joined")


TOOLS2 = TOOLS + [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def stream_tools(chunks):
    """Streamed chat chunks -> (content, {index: [id, type, name, arguments]}, finish_reasons, first tool delta)."""
    content, calls, fins, first = "", {}, [], None
    for ch in chunks:
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            if tc.index not in calls:
                first = first or tc
                calls[tc.index] = [tc.id, tc.type, tc.function.name, ""]
                T.check(tc.id and tc.type == "function" and tc.function.name and tc.function.arguments == "",
                        "a call's first delta has id, type, name and empty arguments: %r" % tc)
            else:
                T.check(tc.id is None and tc.function.name is None, "later deltas carry only arguments: %r" % tc)
                calls[tc.index][3] += tc.function.arguments or ""
        if ch.choices[0].finish_reason:
            fins.append(ch.choices[0].finish_reason)
    return content, calls, fins, first


def test_tool_choice_forced():
    cli = ctx["cli"]
    kw = dict(model="demo", messages=MSG, tools=TOOLS2, tool_choice=NAMED, max_tokens=10, temperature=0,
              extra_body={"ignore_eos": True})
    full = cli.chat.completions.create(**kw)
    c = full.choices[0]
    calls = c.message.tool_calls or []
    T.check(len(calls) == 1 and calls[0].function.name == "get_weather" and calls[0].type == "function" and
            calls[0].id.startswith("call_"), "named tool_choice: a call to get_weather: %r" % c.message)
    T.check(c.finish_reason == "length" and full.usage.completion_tokens == 10,
            "a forced call cut by max_tokens ends with length: %r" % c.finish_reason)
    chunks = list(cli.chat.completions.create(stream=True, **kw))
    content, scalls, fins, first = stream_tools(chunks)
    T.check(first is not None and first.index == 0 and first.function.name == "get_weather",
            "streamed: first tool delta names the function: %r" % first)
    T.check(len(scalls) == 1 and calls and scalls[0][3] == calls[0].function.arguments,
            "streamed argument fragments add up to the non-streamed arguments: %r vs %r"
            % (scalls, calls[0].function.arguments if calls else None))
    T.check(content == (c.message.content or "") and fins == ["length"], "streamed content and finish_reason")
    # a stop sequence right after the arguments ends the turn: finish_reason tool_calls
    args = calls[0].function.arguments if calls else ""
    rest = c.message.content or ""
    stop = next((rest[:k] for k in (3, 2, 1) if rest[:k].strip() and rest[:k] not in args), None)
    if stop is None and len(args) > 1:  # no text after the call: cut inside the arguments instead
        stop = args[-1]
    T.check(stop is not None, "a stop string for the forced call (args %r, rest %r)" % (args, rest))
    if stop is None:
        return
    kw2 = dict(kw, stop=[stop])
    full2 = cli.chat.completions.create(**kw2)
    c2 = full2.choices[0]
    calls2 = c2.message.tool_calls or []
    T.check(c2.finish_reason == "tool_calls" and len(calls2) == 1 and calls2[0].function.name == "get_weather",
            "forced call ended by a stop string: finish_reason tool_calls (%r, stop %r)" % (c2, stop))
    _, scalls2, fins2, _ = stream_tools(cli.chat.completions.create(stream=True, **kw2))
    T.check(fins2 == ["tool_calls"] and len(scalls2) == 1 and calls2 and
            scalls2[0][3] == calls2[0].function.arguments and scalls2[0][2] == "get_weather",
            "streamed, stopped forced call: %r / %r" % (scalls2, calls2))
    # "required": the prompt ends with <tool_call>; the model writes the call (a random model
    # writes no valid one: then the text comes back as content, starting with the tag)
    kw3 = dict(kw, tool_choice="required")
    r = cli.chat.completions.create(**kw3)
    m = r.choices[0].message
    ok = (m.tool_calls and all(t.function.name in ("get_weather", "get_time") for t in m.tool_calls)) or \
        (not m.tool_calls and (m.content or "").startswith("<tool_call>"))
    T.check(ok, "required: a call to a listed tool, or content with the tag: %r" % m)
    content3, scalls3, fins3, _ = stream_tools(cli.chat.completions.create(stream=True, **kw3))
    T.check(content3 == (m.content or "") and len(scalls3) == len(m.tool_calls or []) and len(fins3) == 1,
            "required, streamed == non-streamed")
    # raw SSE: the first tool delta's exact shape
    st, data = raw("POST", "/v1/chat/completions", dict(kw, stream=True, max_tokens=3, ignore_eos=True))
    events = [json.loads(x[6:]) for x in data.decode().split("\n\n") if x.startswith("data: {")]
    tds = [e["choices"][0]["delta"]["tool_calls"] for e in events if e["choices"] and
           "tool_calls" in e["choices"][0]["delta"]]
    T.check(st == 200 and tds and tds[0] == [{"index": 0, "id": tds[0][0].get("id"), "type": "function",
                                              "function": {"name": "get_weather", "arguments": ""}}]
            and all(set(t[0]) == {"index", "function"} and set(t[0]["function"]) == {"arguments"} for t in tds[1:]),
            "raw first tool delta: %r" % tds[:3])


def test_tool_choice_no_format(model):
    """A template without a <tool_call> format: named/required tool_choice is refused, auto works."""
    d = model + "_notools"
    shutil.copytree(model, d, dirs_exist_ok=True)
    cfgp = os.path.join(d, "tokenizer_config.json")
    cfg = json.load(open(cfgp))
    cfg["chat_template"] = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    json.dump(cfg, open(cfgp, "w"))
    srv = Server(d, "--served-model-name", "demo")
    try:
        cli = openai.OpenAI(base_url=srv.base + "/v1", api_key="x", max_retries=0)
        for tc in (NAMED, "required"):
            try:
                cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, tool_choice=tc, max_tokens=2)
                T.check(False, "tool_choice %r accepted without a tool-call format" % (tc,))
            except openai.BadRequestError as e:
                T.check(e.status_code == 400 and "tool_choice" in str(e) and "<tool_call>" in str(e),
                        "tool_choice %r without a tool-call format -> 400: %s" % (tc, e))
        r = cli.chat.completions.create(model="demo", messages=MSG, tools=TOOLS, tool_choice="auto", max_tokens=2)
        T.check(r.choices[0].finish_reason in ("length", "stop"), "auto still works")
    finally:
        srv.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_errors_client():
    cli = ctx["cli"]

    def expect(exc, code, **kw):
        try:
            cli.chat.completions.create(**kw)
            T.check(False, "accepted: %r" % kw)
        except exc as e:
            T.check(e.status_code == code, "status %d for %r" % (e.status_code, kw))
            return e
    expect(openai.NotFoundError, 404, model="gpt-4", messages=MSG)
    e = expect(openai.BadRequestError, 400, model="demo", messages=MSG, n=2)
    T.check(e is not None and "n=1" in e.message, "n=2 message is clear")
    expect(openai.BadRequestError, 400, model="demo", messages=MSG, temperature="hot")
    expect(openai.BadRequestError, 400, model="demo", messages=MSG, temperature=5)
    expect(openai.BadRequestError, 400, model="demo", messages=MSG, max_tokens=-1)
    expect(openai.BadRequestError, 400, model="demo", messages=MSG, stop=[1, 2])
    expect(openai.BadRequestError, 400, model="demo", messages="hello")
    expect(openai.BadRequestError, 400, model="demo", messages=[])
    expect(openai.BadRequestError, 400, model="demo", messages=[{"role": "wizard", "content": "x"}])
    expect(openai.BadRequestError, 400, model="demo", messages=MSG, top_logprobs=3)
    e = expect(openai.BadRequestError, 400, model="demo",
               messages=[{"role": "user", "content": "hello " * 700}])
    T.check(e is not None and e.code == "context_length_exceeded", "prompt longer than the context")
    bad = openai.OpenAI(base_url=ctx["srv"].base + "/v1", api_key="wrong", max_retries=0)
    try:
        bad.models.list()
        T.check(False, "wrong key accepted")
    except openai.AuthenticationError as e:
        T.check(e.status_code == 401, "wrong key -> 401")


def test_errors_raw():
    for body, what in ((b"{not json", "broken JSON"), (b"", "empty body"), (b"[1,2]", "array body"),
                       (b"\xff\xfe\x00", "binary"), (b'{"messages": 5}', "wrong type"),
                       (b'{"prompt": {"a": 1}}', "prompt object")):
        for path in ("/v1/chat/completions", "/v1/completions"):
            st, data = raw("POST", path, body)
            T.check(st == 400 and is_error_shape(data), "%s on %s -> %d %r" % (what, path, st, data[:120]))
    st, data = raw("POST", "/v1/completions", {"prompt": "x"}, key=None)
    T.check(st == 401 and is_error_shape(data), "missing key -> 401")
    st, data = raw("POST", "/v1/completions", {"prompt": "x"}, headers={"Authorization": "Basic abc"})
    T.check(st == 401, "non-bearer auth -> 401")
    st, data = raw("GET", "/v1/nothing")
    T.check(st == 404 and is_error_shape(data), "unknown route -> 404")
    st, data = raw("GET", "/v1/completions")
    T.check(st == 405 and is_error_shape(data), "GET completions -> 405")
    big = json.dumps({"prompt": "a" * (1 << 20)})
    st, data = raw("POST", "/v1/completions", big)
    T.check(st == 413 and is_error_shape(data), "huge body -> 413 (%d)" % st)
    st, data = raw("POST", "/v1/completions", {"prompt": [1, 2, 99999999]})
    T.check(st == 400, "token id out of range -> 400")
    st, data = raw("POST", "/v1/completions", {"prompt": ["a", "b"]})
    T.check(st == 400 and b"one prompt" in data, "several prompts -> 400")
    # random mutations of a valid body: never a 5xx, never a crash
    rng = random.Random(1)
    good = json.dumps({"model": "demo", "messages": MSG, "max_tokens": 2, "temperature": 0,
                       "stop": ["x"], "logprobs": True, "top_logprobs": 1, "tools": TOOLS})
    statuses = {}
    for i in range(150):
        b = bytearray(good.encode())
        for _ in range(rng.randrange(1, 6)):
            op = rng.randrange(3)
            pos = rng.randrange(len(b))
            if op == 0:
                b[pos] = rng.randrange(256)
            elif op == 1:
                del b[pos:pos + rng.randrange(1, 8)]
            else:
                b[pos:pos] = rng.choice([b"{", b"}", b"[", b"]", b'"', b"null", b"-1", b"1e999", b"\\u0000", b","])
        st, data = raw("POST", "/v1/chat/completions", bytes(b))
        statuses[st] = statuses.get(st, 0) + 1
        if st >= 500:
            T.check(False, "fuzz body gave %d: %r -> %r" % (st, bytes(b), data[:200]))
            break
    T.check(ctx["srv"].alive() and set(statuses) <= {200, 400, 404}, "fuzzing: %r" % statuses)


def run_one(kw):
    cli = ctx["cli"]
    toks = []
    fin = None
    for ch in cli.completions.create(stream=True, **kw):
        if ch.choices:
            if ch.choices[0].logprobs and ch.choices[0].logprobs.tokens:
                toks.extend(ch.choices[0].logprobs.tokens)
            fin = ch.choices[0].finish_reason or fin
    return toks, fin


def test_concurrency():
    rng = random.Random(7)
    reqs = []
    for i in range(32):
        kw = dict(model="demo", prompt="Request %d: %s" % (i, " ".join(rng.choice(["alpha", "beta", "gamma", "delta"])
                                                                    for _ in range(rng.randrange(1, 40)))),
                  max_tokens=rng.randrange(4, 24), logprobs=1, extra_body={"ignore_eos": True})
        if i % 2:
            kw.update(temperature=rng.choice([0.5, 1.0, 1.3]), seed=rng.randrange(1 << 30),
                      presence_penalty=rng.choice([0, 0.5]), frequency_penalty=rng.choice([0, 0.3]))
            if i % 8 == 1:  # truncation sorts the whole vocabulary: keep these short
                kw.update(top_p=0.9, max_tokens=4)
                kw["extra_body"] = dict(kw["extra_body"], top_k=20, min_p=0.05)
        else:
            kw.update(temperature=0)
        reqs.append(kw)
    out = [None] * 32
    errs = []

    def work(i):
        try:
            out[i] = run_one(reqs[i])
        except Exception as e:  # noqa
            errs.append(repr(e))
    th = [threading.Thread(target=work, args=(i,)) for i in range(32)]
    t0 = time.time()
    for t in th:
        t.start()
    for t in th:
        t.join(120)
    T.check(not errs and all(o is not None for o in out), "32 concurrent streams complete: %r" % errs[:3])
    T.check(all(o and len(o[0]) == reqs[i]["max_tokens"] and o[1] == "length" for i, o in enumerate(out)),
            "each stream has its max_tokens tokens")
    print("    32 concurrent streams in %.1fs" % (time.time() - t0))
    mism = []
    for i in range(32):  # alone on an idle server: greedy and seeded requests give the same tokens
        alone = run_one(reqs[i])
        if out[i] is None or alone[0] != out[i][0]:
            mism.append(i)
    T.check(not mism, "batched tokens equal tokens run alone (mismatch: %r)" % mism)
    m = metrics()
    T.check(m.get("dotlm_running_sequences") == 0 and m.get("dotlm_kv_blocks_used") == 0,
            "everything freed after the burst")


def test_prefix_cache():
    cli = ctx["cli"]
    long_prompt = "shared system preamble " * 30
    a = cli.completions.create(model="demo", prompt=long_prompt + "first", max_tokens=4, temperature=0,
                               extra_body={"ignore_eos": True})
    b = cli.completions.create(model="demo", prompt=long_prompt + "first", max_tokens=4, temperature=0,
                               extra_body={"ignore_eos": True})
    c = cli.completions.create(model="demo", prompt=long_prompt + "second", max_tokens=4, temperature=0,
                               extra_body={"ignore_eos": True})
    cached_b = b.usage.prompt_tokens_details.cached_tokens
    cached_c = c.usage.prompt_tokens_details.cached_tokens
    T.check(cached_b > 0 and cached_b % 16 == 0 and cached_b < b.usage.prompt_tokens,
            "identical prompt reuses blocks (%d of %d)" % (cached_b, b.usage.prompt_tokens))
    T.check(cached_c > 0, "shared prefix reuses blocks (%d)" % cached_c)
    T.check(a.choices[0].text == b.choices[0].text, "cached prefix gives the same greedy text")


def test_disconnect():
    s = socket.create_connection(("127.0.0.1", ctx["srv"].port))
    body = json.dumps({"model": "demo", "prompt": "go", "max_tokens": 3000, "stream": True, "ignore_eos": True})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (KEY, len(body), body)).encode())
    got = b""
    while got.count(b"data:") < 3:
        got += s.recv(4096)
    m = metrics()
    T.check(m.get("dotlm_running_sequences") == 1 and m.get("dotlm_kv_blocks_used", 0) > 0, "stream running")
    s.close()
    t0 = time.time()
    while time.time() - t0 < 5:
        m = metrics()
        if m.get("dotlm_running_sequences") == 0:
            break
        time.sleep(0.05)
    T.check(m.get("dotlm_running_sequences") == 0 and m.get("dotlm_kv_blocks_used") == 0,
            "disconnect frees the sequence (%.2fs)" % (time.time() - t0))
    # a non-streaming client that goes away is noticed while it waits
    s = socket.create_connection(("127.0.0.1", ctx["srv"].port))
    body = json.dumps({"model": "demo", "messages": MSG, "max_tokens": 3000, "ignore_eos": True})
    s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (KEY, len(body), body)).encode())
    t0 = time.time()
    while time.time() - t0 < 10 and metrics().get("dotlm_running_sequences") != 1:
        time.sleep(0.02)
    s.close()
    t0 = time.time()
    while time.time() - t0 < 5:
        m = metrics()
        if m.get("dotlm_running_sequences") == 0:
            break
        time.sleep(0.05)
    T.check(m.get("dotlm_running_sequences") == 0 and m.get("dotlm_kv_blocks_used") == 0,
            "non-streaming disconnect frees the sequence (%.2fs)" % (time.time() - t0))


def test_metrics_after():
    m = metrics()
    T.check(any(k.startswith("dotlm_kernel_dispatch_total") and v > 0 for k, v in m.items()),
            "kernel dispatch counters in /metrics")
    T.check(m.get('dotlm_requests_total{code="200"}', 0) > 50 and m.get('dotlm_requests_total{code="400"}', 0) > 10
            and m.get('dotlm_requests_total{code="401"}', 0) >= 2, "requests by status")
    T.check(m.get("dotlm_time_to_first_token_seconds_count", 0) > 50 and
            m.get("dotlm_inter_token_latency_seconds_count", 0) > 500, "TTFT / ITL histograms filled")
    T.check(m.get("dotlm_generation_tokens_total", 0) > 500 and m.get("dotlm_prompt_tokens_total", 0) > 500,
            "token counters")
    T.check(m.get("dotlm_prefix_cache_block_hits_total", 0) > 0, "prefix cache hits counted")


def test_queue_full(model):
    srv = Server(model, "--max-seqs", "1", "--max-queue", "1", "--served-model-name", "demo")
    try:
        cli = openai.OpenAI(base_url=srv.base + "/v1", api_key="x", max_retries=0)
        codes = []

        def work():
            try:
                cli.completions.create(model="demo", prompt="hi", max_tokens=200, temperature=0,
                                       extra_body={"ignore_eos": True})
                codes.append(200)
            except openai.APIStatusError as e:
                codes.append(e.status_code)
        # One request runs first; only then do five arrive together, so the
        # one-slot queue is empty when they race for it (two arriving before
        # the scheduler drains the first would make both contend for the slot).
        first = threading.Thread(target=work)
        first.start()
        t0 = time.time()
        while time.time() - t0 < 30 and metrics(srv.port).get("dotlm_running_sequences") != 1:
            time.sleep(0.01)
        th = [threading.Thread(target=work) for _ in range(5)]
        for t in th:
            t.start()
        for t in th + [first]:
            t.join(60)
        T.check(codes.count(200) >= 2 and 429 in codes and set(codes) <= {200, 429},
                "bounded queue answers 429: %r" % codes)
    finally:
        srv.stop()


def test_shutdown(model):
    srv = Server(model, "--served-model-name", "demo", "--shutdown-grace", "20")
    cli = openai.OpenAI(base_url=srv.base + "/v1", api_key="x", max_retries=0)
    res = {}

    def work():
        try:
            res["text"] = [ch for ch in cli.completions.create(model="demo", prompt="hi", max_tokens=150, stream=True,
                                                                 temperature=0, extra_body={"ignore_eos": True})]
        except Exception as e:  # noqa
            res["err"] = repr(e)
    t = threading.Thread(target=work)
    t.start()
    t0 = time.time()
    while time.time() - t0 < 30 and metrics(srv.port).get("dotlm_running_sequences") != 1:
        time.sleep(0.02)
    rc = srv.stop(signal.SIGTERM)
    t.join(30)
    fins = [c.choices[0].finish_reason for c in res.get("text", []) if c.choices and c.choices[0].finish_reason]
    T.check(rc == 0 and fins == ["length"], "SIGTERM finishes in-flight streams then exits 0 (rc %r, %r, %r)"
            % (rc, fins, res.get("err")))


def main():
    model = demo_model()
    srv = ctx["srv"] = Server(model, "--api-key", KEY, "--served-model-name", "demo", "--ctx", "512",
                              "--max-body", "1000000")
    ctx["cli"] = openai.OpenAI(base_url=srv.base + "/v1", api_key=KEY, max_retries=0, timeout=120)
    try:
        for fn in (test_basics, test_chat, test_completions, test_stop_strings, test_tools_and_templates,
                   test_tool_choice_forced, test_errors_client, test_errors_raw, test_concurrency, test_prefix_cache, test_disconnect, test_metrics_after):
            T.run(fn)
        T.check(srv.alive(), "server survived everything")
    finally:
        rc = srv.stop()
        T.check(rc == 0, "clean exit on SIGTERM (rc %r)" % rc)
    T.run(test_tool_choice_no_format, model)
    T.run(test_queue_full, model)
    T.run(test_shutdown, model)
    shutil.rmtree(model, ignore_errors=True)
    T.finish()


if __name__ == "__main__":
    main()
