/* libFuzzer target: parse and render arbitrary template text against a
 * fixed chat-like context. Any input must yield output or a clean error
 * (never a crash, leak, hang or sanitizer report). */
#include <stdint.h>
#include <stdlib.h>
#include <jansson.h>
#include "tmpl/tmpl.h"

static const char *CTX =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"hi \\u00e9 \\ud83c\\udf89\"},"
    "{\"role\":\"assistant\",\"content\":\"<think>r</think>ok\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":[1,2.5,null,true]}}}]},"
    "{\"role\":\"tool\",\"content\":\"42\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}],"
    "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\",\"n\":3,\"x\":1.5,\"s\":\"str\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *ctx = json_loads(CTX, 0, NULL);
    if (!ctx) abort();
    tmpl *t = tmpl_parse((const char *)data, size);
    if (t) {
        char *out = tmpl_render(t, ctx);
        free(out);
        tmpl_free(t);
    }
    json_decref(ctx);
    return 0;
}
