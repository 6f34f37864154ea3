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
    tools = req.get("tools")
    if isinstance(ct, list):
        named = {t["name"]: t["template"] for t in ct}
        ct = named["tool_use"] if tools is not None and "tool_use" in named else named["default"]
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
    conv.append({"messages": [{"role": "user", "content": "x"}], "tools": []})
    conv.append({"messages": [{"role": "user", "content": "x"}], "tools": None})
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
    # written here in the style of Llama 3.1's template: date handling,
    # system/user-embedded tools, one-tool-call rule, ipython results
    "llama31_like": """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = "fixed" if strftime_now("%Y") | length == 4 else "?" %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "Use the functions below.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, respond with a JSON function call.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
""",
    "raiser": """{%- for m in messages %}
{%- if m.role == 'tool' and not tools %}{{ raise_exception('tool message without tools') }}{% endif %}
{%- if m.role not in ['system', 'user', 'assistant', 'tool'] %}{{ raise_exception('bad role ' ~ m.role) }}{% endif %}
<{{ m.role }}>{{ m.content }}
{%- endfor %}
{%- if messages | length > 6 %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}
""",
}


# small templates probing one construct each (whitespace rules, literals,
# operators, filters, tests, methods, scoping, errors), rendered with SNIP_REQ
SNIPPETS = [
    "a\n  {% if true %}\n  x\n  {% endif %}\nb\n",
    "a  {% if true %}x{% endif %}  b",
    "  {{ 1 }}  \n  {# c #}  \n{% if 1 %}  y{% endif %}",
    "x {%- if 1 -%} \n y \n {%- endif -%} z",
    "x {{- ' a ' -}} \n y {#- c -#}  z",
    "{% if 1 +%}\nkeep{%+ if 1 %} nolstrip{% endif %}{% endif %}",
    "line\n    {%- for m in messages %}\n  {{ m.role }}\n{% endfor %}\nend",
    "t\r\nwo\r\n{% if 1 %}\r\nx{% endif %}\n",
    "trailing newline once\n\n",
    "{{ 'a\\tb\\x41\\u00e9\\U0001F600\\n' }}{{ \"q'\" }}{{ 'it\\'s' }}{{ 'a' 'b' }}",
    "{{ 1_000 }} {{ 1.5e3 }} {{ 2e-5 }} {{ .5 if false else 0.1 + 0.2 }} {{ 1e100 }} {{ -0.0 }} {{ 10 ** -1 }} {{ 3 * 1.0 }}",
    "{{ 7 % -3 }} {{ -7 // 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** 0.5 }} {{ 1 + true }} {{ 'ab' * 3 }} {{ [1] * 2 }}",
    "{{ [1, 2] + [3] }} {{ (1, 2) }} {{ () }} {{ {} }} {{ {'k': (1,)} }} {{ [none, true, false] }} {{ 'x' ~ [1] }}",
    "{{ \"a'b\" }} {{ [\"a'b\", 'a\"b', 'a\\\\b', '\\n\\t\\x01\\u200b', 'é中🎉'] }}",
    "{{ none }}|{{ true }}|{{ undefined_thing }}|{{ none is none }}|{{ undefined_thing is defined }}",
    "{{ 1 == 1.0 }} {{ 'a' == 'a' }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1.0} }} {{ none == false }} {{ 0 == false }} {{ 'a' != 'b' }}",
    "{{ 'b' > 'a' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2.0 }} {{ 1 < 2 > 1 }} {{ 'ab' in 'xaby' }} {{ 'k' in {'k': 1} }} {{ 3 not in [1, 2] }}",
    "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ [] or none }} {{ not [] }} {{ not 0 and 1 }} {{ '' or 0 or [] }}",
    "{{ 'yes' if messages else 'no' }} {{ 'a' if false }}| {{ 1 if 0 else 2 if 0 else 3 }}",
    "{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[99] }} {{ messages[0].nope }} {{ none.x }} {{ 'abc'[1] }} {{ 'abc'[-1] }}",
    "{{ 'héllo wörld'[::-1] }} {{ [1, 2, 3, 4, 5][1:4] }} {{ [1, 2, 3, 4][::2] }} {{ 'abcdef'[-3:] }} {{ [1, 2, 3][5:] }} {{ 'abc'[:-1] }} {{ [1,2,3][::-2] }}",
    "{% for x in [1, 2, 3] %}{{ loop.index0 }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.nextitem }}{% endfor %}",
    "{% for x in [] %}x{% else %}empty{% endfor %} {% for x in 'ab' %}{{ x }}{% endfor %} {% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}",
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }},{% endfor %} {% for k, v in {'x': 1}.items() %}{{ k }}{{ v }}{% endfor %}",
    "{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }} {% endfor %}",
    "{% for x in [1, 2] %}{% for y in [3, 4] %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{{ loop.index }}|{% endfor %}",
    "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}",
    "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
    "{% set ns = namespace(a=1, b='s') %}{% for i in [1, 2, 3] %}{% set ns.a = ns.a * i %}{% endfor %}{{ ns.a }}{{ ns.b }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = [3, 4] %}{% set c, d = t %}{{ c + d }}",
    "{% macro m(a, b='d', c=none) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(1, c=3) }}{{ m('x', b='y', c='z') }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}",
    "{% set v = 'outer' %}{% macro show() %}{{ v }}{% endmacro %}{% set v = 'later' %}{{ show() }}",
    "{% set s %}block {{ 1 + 1 }}{% endset %}[{{ s }}] {% filter upper %}up {{ 'x' }}{% endfilter %}",
    "{{ '  x  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'Hello' | upper }}{{ 'ÉCOLE' | lower }}|{{ 'hello-world foo(bar) [baz]' | title }}|{{ 'mIXed' | capitalize }}",
    "{{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }} {{ [1, 2] | join }} {{ ['a', 'b'] | join(', ') }} {{ 'abc' | join('.') }}",
    "{{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} {{ [] | first }} {{ 'abc' | first }} {{ {'x': 1} | first }} {{ [1, 2] | length }} {{ 'héllo' | length }} {{ {'a': 1} | count }}",
    "{{ undefined_thing | default('d') }} {{ none | default('d') }} {{ '' | d('e', true) }} {{ 0 | default(5, boolean=true) }} {{ 'abc' | list }} {{ {'a': 1, 'b': [2]} | items | list }}",
    "{{ 'x' | string }} {{ 1 | string }} {{ '12' | int }} {{ '0x1A' | int }} {{ '3.9' | int }} {{ 3.9 | int }} {{ 'abc' | int(7) }} {{ '1e3' | float }} {{ 'x' | float }} {{ -3 | abs }} {{ -2.5 | abs }}",
    "{{ 2.675 | round(2) }} {{ 0.5 | round }} {{ 1.5 | round }} {{ 2.4 | round(0, 'ceil') }} {{ 2.6 | round(method='floor') }} {{ 7 | round }} {{ 1234.5678 | round(-2) }}",
    "{{ [{'n': 'b', 'v': 2}, {'n': 'a', 'v': 1}] | sort(attribute='n') | map(attribute='v') | list }} {{ ['b', 'B', 'a'] | sort(case_sensitive=true) }} {{ [2, 1] | sort(true) }}",
    "{{ ['A', 'a', 'b', 'B', 'c'] | unique | list }} {{ [1, 2, 1, 3] | unique | list }} {{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) }}",
    "{{ [1, 2, 3, 4] | select('even') | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ [0, 1, '', 'x'] | select | list }} {{ [1, 2, 3] | select('gt', 1) | list }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('/') }} {{ messages | rejectattr('content') | list | length }}",
    "{{ ['a', 'b'] | map('upper') | list }} {{ [[1], [2, 3]] | map('length') | list }} {{ [{'a': {'b': 1}}] | map(attribute='a.b') | list }} {{ [{'x': 1}] | map(attribute='y', default='dd') | list }}",
    "{{ 'a\\nb' | indent }}|{{ 'a\\n\\nb\\n' | indent(2, true) }}|{{ 'x\\ny' | indent('>>') }}|{{ '<a href=\"x\">&\\'</a>' | e }}|{{ '<b>' | safe }}",
    "{{ 'one two  three' | wordcount }} {{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }} {{ [1, 2, 3] | sum }} {{ [1.5, 2] | sum }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }}",
    "{{ {'a': 1, 'b': [1, 2.0, 'ü\\n\\u0001']} | tojson }} {{ 'x\\u2028' | tojson }} {{ none | tojson }} {{ {'b': 1, 'a': {'d': [], 'c': {}}} | tojson(indent=2, sort_keys=true) }} {{ 'é' | tojson(true) }}",
    "{{ 1 is odd }} {{ 4 is divisibleby 2 }} {{ 'a' is string }} {{ 1 is string }} {{ {} is mapping }} {{ [] is mapping }} {{ 'x' is iterable }} {{ 1 is iterable }} {{ none is none }} {{ 1 is number }} {{ true is number }} {{ 1.5 is integer }} {{ 1 is integer }}",
    "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ true is boolean }} {{ 1 is sameas 1 }} {{ none is sameas none }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 1 is in [1] }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 'x' is not none }}",
    "{{ 'Hello World'.lower() }} {{ 'a,b'.split(',') }} {{ '  a  b  '.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a-b-c'.rsplit('-', 1) }} {{ 'xAx'.strip('x') }} {{ '  y'.lstrip() }} {{ 'z\\n\\n'.rstrip('\\n') }}",
    "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'hello world'.title() }} {{ \"they're bill's\".title() }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'aaa'.count('a') }} {{ '-'.join(['a', 'b']) }} {{ 'x'.replace('x', 'yy') }}",
    "{{ '{} and {}'.format('a', 1) }} {{ '{0}{0}'.format('r') }} {{ '{name}!'.format(name='n') }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '123'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'HeLLo'.upper() }}",
    "{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 2) }} {{ {'a': 1, 'b': 2}.keys() | list }} {{ {'a': 1}.values() | list }} {{ [1, 2, 1].count(1) }} {{ [1, 2].index(2) }}",
    "{{ raise_exception('custom failure') }}",
    "{% if messages | length > 1 %}{{ raise_exception('too many: ' ~ messages | length) }}{% endif %}ok",
    "{{ 1 + 'a' }}",
    "{{ undefined_thing + 1 }}",
    "{{ undefined_thing.attr }}",
    "{{ 1 / 0 }}",
    "{% for x in 5 %}{% endfor %}",
    "{{ 'a' in none }}",
    "{{ none | length }}",
    "{{ [1, 2].append(3) }}",
    "{% set x = 1 %}{% set x.y = 2 %}",
    "{% if %}",
    "{% for x in [1] %}",
    "{{ 1 + }}",
    "{% endfor %}",
    "{{ 'unterminated }}",
    "{% unknowntag %}",
    "{{ [1, 2, 3] | nosuchfilter }}",
    "{{ 1 is nosuchtest }}",
    "{{ {'a': {'b': 1}} }} {{ {'x': 1}['x'] }} {{ [[1, 2], [3]][0][1] }} {{ messages.0.role }}",
    "{{ - 3 }} {{ -(2 + 1) }} {{ not true == false }} {{ 2 * 3 + 1 }} {{ 2 + 3 * 4 ~ 5 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ (1 + 2) * 3 }}",
    "{{ messages | length - 1 }} {{ messages | length > 0 and messages[0].role == 'user' }} {{ 'x' ~ messages | length }}",
    "{%- set greeting -%}\n  Hello\n{%- endset -%}\n[{{ greeting }}]",
    "{% generation %}gen{{ 1 }}{% endgeneration %}",
    "a {% raw %}{{ not }} {% evaluated %}{% endraw %} b",
    "x\n  {% raw %}\n  {{ y }}\n  {% endraw %}\nz",
    "x {%- raw -%}  {{ y }}  {%- endraw -%}  z",
    "{% raw +%}\nk{%+ endraw %}",
    "{% raw %}open",
    "{{ strftime_now('%Y') | length }}",
    "{% set p = {'type': 'array', 'items': {'type': 'string'}} %}{{ p.items is defined }} {{ p['items'] }} {% if p.keys %}k{% endif %}{{ p.get('type') }} {{ {'a': 1}.values is defined }}",
    "{{ {'items': 1}.items | tojson }}",
    "{{ raise_exception is defined }} {{ strftime_now is callable }} {{ namespace is defined }} {{ nofn is defined }} {% set f = namespace %}{% set n = f(a=1) %}{{ n.a }} {{ range(3) | list }}",
    "{% macro f() %}x{% endmacro %}{{ f is defined }} {{ f() ~ f() }}",
    "{{ 'é' < 'z' }} {{ 'Z' < 'a' }} {{ [1, 'a'] == [1, 'a'] }} {{ 1 in [1.0] }} {{ true in [1] }}",
    "{{ 9007199254740993 }} {{ 123456789012 * 1000 }} {{ 0.1 * 3 }} {{ 1 / 3 }} {{ 2 / 3 * 3 }} {{ 100000000000000000.0 }} {{ 1234567890123456.7 }} {{ 0.0001 }} {{ 0.00001 }}",
]
SNIP_REQ = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "add_generation_prompt": False}


def run_snippets(tmpdir):
    passed = failed = 0
    d = os.path.join(tmpdir, "snip")
    os.makedirs(d)
    for i, src in enumerate(SNIPPETS):
        cfg = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": src}
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        try:
            want, werr = py_render(cfg, SNIP_REQ), None
        except Exception as e:  # noqa: BLE001
            want, werr = None, "%s: %s" % (type(e).__name__, e)
        got, gerr = c_render(d, SNIP_REQ)
        if (want is None and got is None) or (want is not None and want == got):
            passed += 1
        else:
            failed += 1
            print("FAIL snippet #%d %r" % (i, src))
            print("  jinja2:", repr(want) if werr is None else werr)
            print("  dotlm: ", repr(got) if gerr is None else gerr)
    return passed, failed


def run_cli_errors(tmpdir):
    """bad invocations: nonzero exit and exactly one line on stderr"""
    passed = failed = 0
    bad_cfg = os.path.join(tmpdir, "badcfg")
    os.makedirs(bad_cfg)
    with open(os.path.join(bad_cfg, "tokenizer_config.json"), "w") as f:
        f.write('{"chat_template": "{% if %}"}')
    cases = [(["template", "/nonexistent/dir"], b'{"messages": []}'),
             (["template", os.path.join(ASSETS, "qwen3")], b'{"messages": ['),
             (["template", os.path.join(ASSETS, "qwen3")], b'{"no_messages": 1}'),
             (["template", bad_cfg], b'{"messages": []}'),
             (["template"], b''),
             (["template", "--bogus", "x"], b'')]
    for argv, stdin in cases:
        p = subprocess.run([DOTLM] + argv, input=stdin, capture_output=True, timeout=60)
        err = p.stderr.decode(errors="replace").strip()
        ok = p.returncode != 0 and p.stdout == b"" and err and (len(err.splitlines()) == 1 or argv == ["template"])
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL cli %r: rc=%d stderr=%r" % (argv, p.returncode, err))
    p = subprocess.run([DOTLM, "template", "--help"], capture_output=True, timeout=60)
    if p.returncode == 0 and b"usage" in p.stdout:
        passed += 1
    else:
        failed += 1
        print("FAIL cli --help")
    return passed, failed


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
    sp, sf = run_snippets(tmp.name)
    cp, cf = run_cli_errors(tmp.name)
    passed += sp + cp
    failed += sf + cf
    print("(%d requests x %d templates, %d expected errors; %d snippets)" % (len(corpus), len(dirs), raised, len(SNIPPETS)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or len(corpus) < 60 else 0


if __name__ == "__main__":
    sys.exit(main())
