/* Unit tests of the template interpreter: each construct, whitespace
 * control, errors, raise_exception, runaway limits, and seeded random
 * property checks (tojson round-trips through jansson, Python int division
 * identities, string lengths). */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "core/err.h"
#include "testutil.h"
#include "tmpl/tmpl.h"

/* render src with ctx given as JSON text (NULL = {}); NULL on any error */
static char *render(const char *src, const char *ctxjson) {
    json_t *ctx = ctxjson ? json_loads(ctxjson, 0, NULL) : json_object();
    if (!ctx) return NULL;
    tmpl *t = tmpl_parse(src, strlen(src));
    char *out = t ? tmpl_render(t, ctx) : NULL;
    tmpl_free(t);
    json_decref(ctx);
    return out;
}

#define EXPECT(src, ctx, want)                                                               \
    do {                                                                                     \
        char *got_ = render(src, ctx);                                                       \
        CHECKF(got_ && !strcmp(got_, want), "%s\n  want [%s]\n  got  [%s] %s", src, want,    \
               got_ ? got_ : "(null)", got_ ? "" : dl_errmsg());                             \
        free(got_);                                                                          \
    } while (0)

#define EXPECT_ERR(src, ctx, sub)                                                            \
    do {                                                                                     \
        char *got_ = render(src, ctx);                                                       \
        CHECKF(!got_ && strstr(dl_errmsg(), sub), "%s\n  want error with [%s]\n  got [%s] / [%s]", src, sub, \
               got_ ? got_ : "(null)", dl_errmsg());                                         \
        free(got_);                                                                          \
    } while (0)

static void test_whitespace(void) {
    EXPECT("a\n  {% if true %}\n  x\n  {% endif %}\nb", NULL, "a\n  x\nb");
    EXPECT("a  {% if true %}x{% endif %}  b", NULL, "a  x  b");
    EXPECT("x {%- if 1 -%} \n y \n {%- endif -%} z", NULL, "xyz");
    EXPECT("x {{- ' a ' -}} \n y", NULL, "x a y");
    EXPECT("{{ 1 }}\n{{ 2 }}", NULL, "1\n2");             /* no trim after }} */
    EXPECT("{% if 1 %}\nA{% endif %}\n", NULL, "A");     /* trim_blocks; one trailing \n dropped */
    EXPECT("x\n\n", NULL, "x\n");
    EXPECT("  {# c #}\nz", NULL, "z");
    EXPECT("{% if 1 +%}\nkeep{% endif %}", NULL, "\nkeep");
    EXPECT("  {%+ if 1 %}k{% endif %}", NULL, "  k");
    EXPECT("a\r\nb{% if 1 %}\r\nc{% endif %}", NULL, "a\nbc");
    EXPECT("x {#- c -#}  y", NULL, "xy");
    EXPECT("a {% raw %}{{ x }}{% if %}{% endraw %}\nb", NULL, "a {{ x }}{% if %}b");
    EXPECT_ERR("{% raw %}never closed", NULL, "endraw");
}

static void test_values(void) {
    EXPECT("{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 2e-5 }} {{ 1e100 }} {{ 0.1 + 0.2 }}", NULL, "1 1.0 1500.0 2e-05 1e+100 0.30000000000000004");
    EXPECT("{{ true }} {{ none }} {{ [1, 'a', none, false] }} {{ {'k': \"it's\"} }}", NULL, "True None [1, 'a', None, False] {'k': \"it's\"}");
    EXPECT("{{ (1, 2) }}{{ (1,) }}", NULL, "(1, 2)(1,)");
    EXPECT("{{ 'a\\tb\\u00e9\\x41' }}", NULL, "a\tb\xc3\xa9" "A");
    EXPECT("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 'a' ~ 1 ~ none }}", NULL, "3 -4 2 3.5 1024 abab a1None");
    EXPECT("{{ 1 == 1.0 }} {{ [1] == [1.0] }} {{ 'a' < 'b' }} {{ 1 < 2 < 3 }} {{ 'b' in 'abc' }} {{ 3 not in [1] }}", NULL, "True True True True True True");
    EXPECT("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not [] }} {{ 'a' if false else 'b' }}|{{ 'a' if false }}|", NULL, "x y True b||");
    EXPECT("{{ m.a }}{{ m['b'] }}{{ m.zz }}{{ l[-1] }}{{ l[9] }}{{ l[::-1] }}{{ s[1:] }}", "{\"m\":{\"a\":1,\"b\":2},\"l\":[1,2],\"s\":\"h\\u00e9llo\"}", "122[2, 1]\xc3\xa9llo");
}

static void test_statements(void) {
    EXPECT("{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", "{\"l\":[5,6]}",
           "102TrueFalse2;211FalseTrue2;");
    EXPECT("{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }},{% endfor %}", "{\"l\":[1,2,3]}", "-2,1-3,2-,");
    EXPECT("{% for x in [] %}a{% else %}empty{% endfor %}", NULL, "empty");
    EXPECT("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\":{\"b\":1,\"a\":2}}", "b=1;a=2;");
    EXPECT("{% for x in range(10) if x is even %}{{ x }}{% endfor %}", NULL, "02468");
    EXPECT("{% for i in range(9) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", NULL, "013");
    EXPECT("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}", NULL, "231");
    EXPECT("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", NULL, "6");
    EXPECT("{% if 0 %}a{% elif 1 %}b{% else %}c{% endif %}", NULL, "b");
    EXPECT("{% macro m(a, b='d') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}", NULL, "1d1243");
    EXPECT("{% set s %}x{{ 1 }}{% endset %}[{{ s }}]{% filter upper %}ab{% endfilter %}", NULL, "[x1]AB");
    EXPECT("{% generation %}g{% endgeneration %}", NULL, "g");
    EXPECT("{% set a, b = 1, 2 %}{{ a + b }}", NULL, "3");
}

static void test_filters_methods(void) {
    EXPECT("{{ ' x ' | trim }}|{{ 'ab' | upper }}|{{ 'hi there' | title }}|{{ 'aXa' | replace('a', 'b') }}", NULL, "x|AB|Hi There|bXb");
    EXPECT("{{ [1, 2] | length }} {{ 'h\xc3\xa9' | length }} {{ [3, 1, 2] | sort | join(',') }} {{ [1, 2] | first }}{{ [1, 2] | last }}", NULL, "2 2 1,2,3 12");
    EXPECT("{{ x | default('d') }} {{ '' | default('e', true) }} {{ '5' | int + 1 }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.5 | round }}", NULL, "d e 6 2.5 3 2.0");
    EXPECT("{{ l | selectattr('a') | map(attribute='b') | list }} {{ l | rejectattr('a') | list | length }}", "{\"l\":[{\"a\":1,\"b\":2},{\"a\":0,\"b\":3}]}", "[2] 1");
    EXPECT("{{ {'b': 1, 'a': [1.0, 'é\"\\n']} | tojson }}", NULL, "{\"b\": 1, \"a\": [1.0, \"\xc3\xa9\\\"\\n\"]}");
    EXPECT("{{ {'a': [1]} | tojson(indent=2) }}", NULL, "{\n  \"a\": [\n    1\n  ]\n}");
    EXPECT("{{ 'a,b'.split(',') }} {{ ' x '.strip() }} {{ 'abc'.startswith('a') }} {{ 'a-b'.replace('-', '+') }} {{ 'x{}'.format(1) }}", NULL, "['a', 'b'] x True a+b x1");
    EXPECT("{{ d.get('a') }} {{ d.get('z', 0) }} {{ d.keys() | list }} {{ d.values() | list }}", "{\"d\":{\"a\":1}}", "1 0 ['a'] [1]");
    EXPECT("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ 1 is number }} {{ 1 is odd }} {{ true is boolean }}", NULL,
           "False True True True True True True");
    EXPECT("{{ 'a\\nb' | indent(2) }}", NULL, "a\n  b");
}

static void test_errors(void) {
    EXPECT_ERR("{{ raise_exception('nope: ' ~ 42) }}", NULL, "nope: 42");
    EXPECT_ERR("{% if %}", NULL, "template:1:");
    EXPECT_ERR("line\n{% for x in l %}", NULL, "template:2:");
    EXPECT_ERR("{{ 1 + }}", NULL, "unexpected");
    EXPECT_ERR("{{ 'open }}", NULL, "unterminated string");
    EXPECT_ERR("{# open", NULL, "unterminated comment");
    EXPECT_ERR("{% include 'x' %}", NULL, "unsupported");
    EXPECT_ERR("{{ 1 + 'a' }}", NULL, "unsupported operand");
    EXPECT_ERR("{{ u + 1 }}", NULL, "undefined");
    EXPECT_ERR("{{ u.attr }}", NULL, "'u' is undefined");
    EXPECT_ERR("{{ 1 / 0 }}", NULL, "division by zero");
    EXPECT_ERR("{{ 'a' in none }}", NULL, "not iterable");
    EXPECT_ERR("{{ [1].append(2) }}", NULL, "unsafe");
    EXPECT_ERR("{{ x | nosuch }}", NULL, "no filter");
    EXPECT_ERR("{{ 1 is nosuch }}", NULL, "no test");
    EXPECT_ERR("{% set x = 1 %}{% set x.y = 2 %}", NULL, "non-namespace");
    EXPECT_ERR("{{ 9223372036854775807 + 1 }}", NULL, "overflow");
    EXPECT_ERR("{{ ns }}", "[1]", "context must be a JSON object");
}

static void test_limits(void) {
    EXPECT_ERR("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}", NULL, "iteration limit");
    EXPECT_ERR("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", NULL, "recursion");
    EXPECT_ERR("{{ 'x' * 1000000000 }}", NULL, "too large");
    EXPECT_ERR("{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", NULL, "too large");
    EXPECT_ERR("{{ range(100000000) | length }}", NULL, "too large");
    /* deep nesting must be a parse error, not a stack overflow */
    size_t n = 100000;
    char *deep = malloc(2 * n + 16);
    strcpy(deep, "{{ ");
    for (size_t i = 0; i < n; i++) strcat(deep + 3 + i - (i ? 0 : 0), "("), deep[3 + i + 1] = 0;
    char *p = deep + strlen(deep);
    *p++ = '1';
    for (size_t i = 0; i < n; i++) *p++ = ')';
    strcpy(p, " }}");
    EXPECT_ERR(deep, NULL, "nested too deeply");
    strcpy(deep, "");
    for (size_t i = 0; i < 5000; i++) strcat(deep, "{% if 1 %}");
    EXPECT_ERR(deep, NULL, "nested too deeply");
    free(deep);
}

/* seeded random strings: tojson must round-trip through jansson, length
 * must count code points, and Python floor-division identities hold */
static void test_random(void) {
    uint64_t s = tu_seed();
    static const char *pieces[] = {"a", "Z", " ", "\n", "\t", "\"", "'", "\\", "\x01", "\x1f", "\xc3\xa9", "\xe4\xb8\xad",
                                   "\xf0\x9f\x8e\x89", "\xe2\x80\xa8", "{", "}", "%", "#", "<|im_end|>", "\x7f"};
    static const int cps[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 1};
    int ok_json = 1, ok_len = 1, ok_div = 1;
    for (int it = 0; it < 200; it++) {
        char str[512] = "";
        int ncp = 0, np = (int)(tu_rand_u64(&s) % 20);
        for (int k = 0; k < np; k++) {
            int i = (int)(tu_rand_u64(&s) % (sizeof pieces / sizeof *pieces));
            strcat(str, pieces[i]);
            ncp += cps[i];
        }
        json_t *ctx = json_pack("{s:s}", "s", str);
        const char *src = "{{ s | tojson }}|{{ s | length }}";
        tmpl *t = tmpl_parse(src, strlen(src));
        char *out = t ? tmpl_render(t, ctx) : NULL;
        if (!out) { ok_json = 0; } else {
            char *bar = strrchr(out, '|');
            *bar = 0;
            json_t *back = json_loads(out, JSON_DECODE_ANY, NULL);
            if (!back || !json_is_string(back) || strcmp(json_string_value(back), str)) ok_json = 0;
            if (atoi(bar + 1) != ncp) ok_len = 0;
            json_decref(back);
        }
        free(out);
        tmpl_free(t);
        json_decref(ctx);

        long long a = (long long)(tu_rand_u64(&s) % 2001) - 1000, b = (long long)(tu_rand_u64(&s) % 41) - 20;
        if (!b) b = 7;
        json_t *c2 = json_pack("{s:I,s:I}", "a", (json_int_t)a, "b", (json_int_t)b);
        const char *src2 = "{{ (a // b) * b + a % b == a }} {{ (a % b == 0) or ((a % b > 0) == (b > 0)) }}";
        t = tmpl_parse(src2, strlen(src2));
        out = t ? tmpl_render(t, c2) : NULL;
        if (!out || strcmp(out, "True True")) ok_div = 0;
        free(out);
        tmpl_free(t);
        json_decref(c2);
    }
    CHECK(ok_json);
    CHECK(ok_len);
    CHECK(ok_div);
}

static void test_chat(void) {
    json_t *cfg = json_pack("{s:[{s:s,s:s},{s:s,s:s}],s:{s:s},s:s}", "chat_template", "name", "default", "template",
                            "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}{% if add_generation_prompt %}A:{% endif %}{{ extra }}",
                            "name", "tool_use", "template", "T{{ tools | length }}", "bos_token", "content", "<s>", "eos_token", "</s>");
    json_t *req = json_loads("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"chat_template_kwargs\":{\"extra\":\"!\"}}", 0, NULL);
    char *out = tmpl_render_chat(cfg, req);
    CHECKF(out && !strcmp(out, "<s>user:hi;A:!"), "got %s", out ? out : dl_errmsg());
    free(out);
    json_object_set_new(req, "add_generation_prompt", json_false());
    json_object_set_new(req, "tools", json_loads("[{\"type\":\"function\"}]", 0, NULL));
    out = tmpl_render_chat(cfg, req);
    CHECKF(out && !strcmp(out, "T1"), "got %s", out ? out : dl_errmsg());
    free(out);
    json_object_del(cfg, "chat_template");
    CHECK(tmpl_render_chat(cfg, req) == NULL);
    json_decref(cfg);
    json_decref(req);
}

int main(void) {
    test_whitespace();
    test_values();
    test_statements();
    test_filters_methods();
    test_errors();
    test_limits();
    test_random();
    test_chat();
    return TEST_END();
}
