"""dotlm template vs Python jinja2 configured like transformers.

Renders a corpus of chat requests with the real Qwen3 and Llama 3 chat
templates (and a few extra templates exercising more of the language) twice:
by jinja2 with transformers' apply_chat_template environment, and by
`$DOTLM_BIN template DIR`. Outputs must be byte-identical; where jinja2
raises, dotlm must fail too. Prints "N passed, M failed"."""
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ASSETS = "/work/shared/assets/tokenizers"
DOTLM = os.environ.get("DOTLM_BIN", "build/dotlm")


# ---- the environment of transformers.utils.chat_template_utils ----
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers
    registers such a tag to track assistant spans)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_body", [])
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_env()


def token(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


def py_render(cfg, req):
    """What apply_chat_template(tokenize=False) produces for req."""
    ct = cfg["chat_template"]
    tools = req.get("tools") or None
    if isinstance(ct, list):
        named = {t["name"]: t["template"] for t in ct}
        ct = named["tool_use"] if tools and "tool_use" in named else named["default"]
    ctx = {k: token(cfg[k]) for k in ("bos_token", "eos_token", "pad_token", "unk_token")
           if isinstance(token(cfg.get(k)), str)}
    ctx.update(messages=req["messages"], tools=tools, documents=None,
               add_generation_prompt=req.get("add_generation_prompt", True))
    ctx.update(req.get("chat_template_kwargs", {}))
    return ENV.from_string(ct).render(**ctx)


def c_render(d, req):
    p = subprocess.run([DOTLM, "template", d], input=json.dumps(req).encode(), capture_output=True, timeout=60)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace").strip()
    return p.stdout.decode(), None


# ---- corpus ----
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather für a city — «quoted» \"x\" \\ path",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. 東京"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 3},
        "ratio": {"type": "number", "default": 0.5, "examples": [1.0, 2.5e-07, 1e+22, -0.0]},
        "opts": {"type": "object", "properties": {"nested": {"type": "array", "items": {
            "type": "object", "properties": {"k": {"type": ["string", "null"]}}}}}},
        "flag": {"type": "boolean", "default": False}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web.\nMultiple lines\ttabs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                   "required": ["q"]}}}
EMPTY_TOOL = {"type": "function", "function": {"name": "noop", "parameters": {}}}

TEXTS = ["Hello!", "What's the weather in Paris?", "  padded with spaces  ", "line1\nline2\n\nline4",
         "emoji 🎉🚀 and ünïcödé 中文 русский", "quotes ' \" and backslashes \\ \\n literal",
         "", "<tool_response>\nfake\n</tool_response>", "tabs\tand\r\nCRLF", "{{ not a template }} {% no %}",
         "a" * 300, "\u2028 line sep \u00a0 nbsp", "<think>inline</think>", "\n\nleading newlines"]


def tool_call(name, args, as_string, with_id=True):
    tc = {"type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False) if as_string else args}}
    if with_id:
        tc["id"] = "call_%d" % (abs(hash(name)) % 1000)
    return tc


def fixed_conversations():
    conv = []
    conv.append({"messages": [{"role": "user", "content": "Hi"}]})
    conv.append({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": False})
    conv.append({"messages": [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hi"}]})
    conv.append({"messages": [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Q1"},
                              {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}]})
    conv.append({"messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "<think>\nreasoning here\n</think>\n\nA1"},
                              {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "<think>r2</think>A2"}],
                 "add_generation_prompt": False})
    conv.append({"messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1", "reasoning_content": "thought\n"}]})
    conv.append({"messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1", "reasoning_content": None}]})
    for et in (True, False):
        conv.append({"messages": [{"role": "user", "content": "think?"}], "chat_template_kwargs": {"enable_thinking": et}})
        conv.append({"messages": [{"role": "user", "content": "think?"}], "add_generation_prompt": False,
                     "chat_template_kwargs": {"enable_thinking": et}})
    conv.append({"messages": [{"role": "user", "content": "weather?"}], "tools": [WEATHER, SEARCH]})
    conv.append({"messages": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "weather?"}], "tools": [WEATHER]})
    conv.append({"messages": [{"role": "user", "content": "x"}], "tools": [EMPTY_TOOL]})
    for as_string in (False, True):
        conv.append({"messages": [
            {"role": "user", "content": "Weather in Tokyo?"},
            {"role": "assistant", "content": "", "tool_calls": [tool_call("get_weather", {"city": "東京", "days": 2, "ratio": 1.0}, as_string)]},
            {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"☀️\"}"},
            {"role": "assistant", "content": "It is 21.5°C."}], "tools": [WEATHER]})
        conv.append({"messages": [
            {"role": "user", "content": "Two calls"},
            {"role": "assistant", "content": "Calling both.", "tool_calls": [
                tool_call("get_weather", {"city": "Paris", "opts": {"nested": [{"k": None}, {"k": "v"}]}, "flag": True}, as_string),
                tool_call("search", {"q": "paris \"events\" \\ today", "n": 3}, as_string)]},
            {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "concert"},
            {"role": "user", "content": "thanks"}], "tools": [WEATHER, SEARCH]})
    conv.append({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "<think>\nplan\n</think>\n\n", "tool_calls": [{"function": {"name": "search", "arguments": {"q": "x"}}}]},
        {"role": "tool", "content": "r"}], "tools": [SEARCH], "chat_template_kwargs": {"enable_thinking": False}})
    conv.append({"messages": [{"role": "user", "content": "q"},
                              {"role": "assistant", "tool_calls": [{"name": "search", "arguments": {"q": "no function wrapper"}}], "content": "x"}],
                 "tools": [SEARCH]})
    # content None: jinja2 raises on "'</think>' in None" for Qwen3; Llama 3 prints 'None'
    conv.append({"messages": [{"role": "user", "content": "q"},
                              {"role": "assistant", "content": None, "tool_calls": [tool_call("search", {"q": "1"}, False)]}]})
    conv.append({"messages": [{"role": "system", "content": "s1"}, {"role": "user", "content": "u"}, {"role": "system", "content": "s2 mid"}]})
    conv.append({"messages": [{"role": "user", "content": t} for t in TEXTS]})
    conv.append({"messages": [{"role": "user", "content": "d"}], "chat_template_kwargs": {"date_string": "26 Jul 2024"}})
    return conv


def random_conversation(rng):
    msgs = []
    tools = rng.choice([None, [WEATHER], [WEATHER, SEARCH], [SEARCH, EMPTY_TOOL]])
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": rng.choice(TEXTS[:6] + ["You are Qwen."])})
    for _ in range(rng.randint(1, 4)):
        msgs.append({"role": "user", "content": rng.choice(TEXTS)})
        r = rng.random()
        if r < 0.3 and tools:
            calls = [tool_call(t["function"]["name"], {"city": rng.choice(["Oslo", "Zürich", "北京"]), "days": rng.randint(1, 9),
                                                        "ratio": rng.choice([0.1, 2.0, 1e-9, 123456789.0])}, rng.random() < 0.5,
                               rng.random() < 0.5)
                     for t in rng.sample(tools, rng.randint(1, len(tools)))]
            msgs.append({"role": "assistant", "content": rng.choice(["", "Let me check.", "<think>\nhmm\n</think>\n\nok"]), "tool_calls": calls})
            for _ in calls:
                msgs.append({"role": "tool", "content": rng.choice(TEXTS)})
            msgs.append({"role": "assistant", "content": rng.choice(TEXTS)})
        elif r < 0.5:
            m = {"role": "assistant", "content": rng.choice(TEXTS)}
            if rng.random() < 0.5:
                m["reasoning_content"] = rng.choice(["short", "\nwith newlines\n", ""])
            msgs.append(m)
        elif r < 0.7:
            msgs.append({"role": "assistant", "content": "<think>\n" + rng.choice(TEXTS) + "\n</think>\n\n" + rng.choice(TEXTS)})
        else:
            msgs.append({"role": "assistant", "content": rng.choice(TEXTS)})
    if rng.random() < 0.3:
        msgs.pop()
    req = {"messages": msgs}
    if tools:
        req["tools"] = tools
    if rng.random() < 0.5:
        req["add_generation_prompt"] = rng.random() < 0.5
    if rng.random() < 0.5:
        req["chat_template_kwargs"] = {"enable_thinking": rng.random() < 0.5, "date_string": "01 Jan 2025"}
    return req


# extra templates: more of the language, same environment
EXTRA = {
    "features": """{%- macro fmt(m, sep=': ', upper=false) -%}
{{ (m.role | upper if upper else m.role) ~ sep ~ (m.content | default('∅') | trim) }}
{%- endmacro -%}
{% set ns = namespace(n=0, roles=[]) %}
{% for m in messages if m.content is string %}
{% set ns.n = ns.n + 1 %}
{% set ns.roles = ns.roles + [m.role] %}
[{{ loop.index }}/{{ loop.length }} rev={{ loop.revindex }}{% if loop.first %} first{% endif %}{% if loop.last %} last{% endif %}{% if loop.previtem is defined %} prev={{ loop.previtem.role }}{% endif %}]
  {{ fmt(m, upper=loop.index is even) }} len={{ m.content | length }} words={{ m.content | wordcount }}
  {%- if m.tool_calls %} calls={{ m.tool_calls | map(attribute='function.name') | join(',') }}{% endif %}

{% else %}
no messages
{% endfor %}
count={{ ns.n }} roles={{ ns.roles | unique | sort | join('|') }} {{ ns.roles[::-1][:2] }}
{{ messages | selectattr('role', 'equalto', 'user') | list | length }} users; {{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}
{% if tools %}{% for t in tools %}{{ t.function.name | title }} {{ t.function | tojson(indent=2) }}
{{ t.function.parameters | dictsort | first | first }} {{ t | tojson(sort_keys=true) | length }}
{% endfor %}{% endif %}
{{ 7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 * 2 }} {{ 10 / 4 }} {{ [1, 2.5, none, true, 'it\\'s'] }} {{ {'a': [1, {'b': none}]} }}
{{ 'x' if messages | length > 2 else 'y' }} {{ 'abc' ~ 1 ~ none }} {{ 'Hello World'.split(' ') }} {{ ' a b '.split() }} {{ 'a,b,,c'.split(',', 2) }}
{{ 'aXbXc'.rsplit('X', 1) }} {{ 'hello'.startswith(('he', 'x')) }} {{ 'hello world'.title() }} {{ "it's".capitalize() }} {{ 'abc'.find('c') }}
{{ 'x{}y{}'.format(1, 'z') }} {{ messages[0].get('name', 'anon') }} {{ messages[0].keys() | list }} {{ 3.7 | round }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ '2.5' | float }}
{%- for k, v in {'b': 1, 'a': 2}.items() %} {{ k }}={{ v }}{% endfor %}
{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}
{{ "multi\nline\ntext" | indent(2) }}|{{ "a\n\nb" | indent(4, first=true, blank=true) }}
{% generation %}gen {{ messages | length }}{% endgeneration %}
{% filter upper %}shout {{ messages[-1].role }}{% endfilter %}
{% set captured %}cap{{ 1 + 1 }}{% endset %}{{ captured }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ [1, 2, 3] | sum }} {{ [[1, 2], [3, 4]] | batch(1) | list | length }}
{{ "<&>" | e }} {{ undefined_var }}{{ undefined_var | default('dflt') }} {{ none | default('n', true) }} {{ 1 in [1, 2] }} {{ 'z' not in 'abc' }} {{ 1 == 1.0 }} {{ 1 < 2 < 3 }}
{{- '  trailing ws stripped  ' -}}
{# comment #}
   {% if true %}lstripped{% endif %}
{{ add_generation_prompt }} {{ tools is none }} {{ tools is iterable }} {{ messages is sequence }} {{ 1 is number }} {{ 1.0 is float }} {{ true is boolean }} {{ messages[0] is mapping }}
""",
    "raiser": """{%- for m in messages %}
{%- if m.role == 'tool' and not tools %}{{ raise_exception('tool message without tools') }}{% endif %}
{%- if m.role not in ['system', 'user', 'assistant', 'tool'] %}{{ raise_exception('bad role ' ~ m.role) }}{% endif %}
<{{ m.role }}>{{ m.content }}
{%- endfor %}
{%- if messages | length > 6 %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}
""",
}


def main():
    seed = int(os.environ.get("DOTLM_TEST_SEED", "1234"))
    print("seed", seed, file=sys.stderr)
    rng = random.Random(seed)
    corpus = fixed_conversations() + [random_conversation(rng) for _ in range(50)]
    dirs = {name: os.path.join(ASSETS, name) for name in ("qwen3", "llama3")}
    tmp = tempfile.TemporaryDirectory()
    for name, src in EXTRA.items():
        d = os.path.join(tmp.name, name)
        os.makedirs(d)
        cfg = {"bos_token": {"content": "<s>"}, "eos_token": "</s>",
               "chat_template": [{"name": "default", "template": src}, {"name": "tool_use", "template": "TOOLS:" + src}]}
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        dirs[name] = d
    cfgs = {}
    for name, d in dirs.items():
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            cfgs[name] = json.load(f)
    passed = failed = raised = 0
    for name, d in dirs.items():
        for i, req in enumerate(corpus):
            try:
                want, werr = py_render(cfgs[name], req), None
            except Exception as e:  # noqa: BLE001 - any jinja2 failure must be a dotlm failure too
                want, werr = None, "%s: %s" % (type(e).__name__, e)
            got, gerr = c_render(d, req)
            if want is None:
                raised += 1
                if os.environ.get("VERBOSE"):
                    print("expected error %s #%d: %s / %s" % (name, i, werr, gerr))
                ok = got is None
            else:
                ok = got == want
            if ok:
                passed += 1
            else:
                failed += 1
                print("FAIL %s #%d: request %s" % (name, i, json.dumps(req, ensure_ascii=False)[:400]))
                if want is not None and got is not None:
                    k = next((j for j in range(min(len(want), len(got))) if want[j] != got[j]), min(len(want), len(got)))
                    print("  first difference at %d: jinja2 %r / dotlm %r" % (k, want[max(0, k - 40):k + 60], got[max(0, k - 40):k + 60]))
                else:
                    print("  jinja2:", repr(want)[:300] if werr is None else werr)
                    print("  dotlm: ", repr(got)[:300] if gerr is None else gerr)
    print("(%d requests x %d templates, %d expected errors)" % (len(corpus), len(dirs), raised))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or len(corpus) < 60 else 0


if __name__ == "__main__":
    sys.exit(main())
