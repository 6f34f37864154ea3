/* tmpl_render_chat: build the render context transformers'
 * apply_chat_template uses from an OpenAI-style request and a
 * tokenizer_config.json, then render its chat_template. */
#include <string.h>
#include "core/err.h"
#include "tmpl/tmpl.h"

/* special token value: string, or {"content": string}; NULL otherwise */
static json_t *token_str(json_t *v) {
    if (json_is_string(v)) return v;
    if (json_is_object(v) && json_is_string(json_object_get(v, "content"))) return json_object_get(v, "content");
    return NULL;
}

char *tmpl_render_chat(json_t *cfg, json_t *req) {
    if (!json_is_object(cfg) || !json_is_object(req)) { dl_err("template: config and request must be JSON objects"); return NULL; }
    json_t *tools = json_object_get(req, "tools");
    /* like transformers: tools given (even an empty list) unless absent/null */
    int has_tools = tools && !json_is_null(tools);
    json_t *ct = json_object_get(cfg, "chat_template");
    const char *src = NULL;
    if (json_is_string(ct)) src = json_string_value(ct);
    else if (json_is_array(ct)) {
        const char *def = NULL, *tool = NULL;
        size_t i;
        json_t *e;
        json_array_foreach(ct, i, e) {
            const char *nm = json_string_value(json_object_get(e, "name"));
            const char *tp = json_string_value(json_object_get(e, "template"));
            if (!nm || !tp) continue;
            if (!strcmp(nm, "default")) def = tp;
            if (!strcmp(nm, "tool_use")) tool = tp;
        }
        src = (has_tools && tool) ? tool : def;
    }
    if (!src) { dl_err("template: tokenizer_config.json has no usable chat_template"); return NULL; }
    json_t *msgs = json_object_get(req, "messages");
    if (!json_is_array(msgs)) { dl_err("template: request has no 'messages' array"); return NULL; }

    json_t *ctx = json_object();
    const char *toks[] = {"bos_token", "eos_token", "pad_token", "unk_token", NULL};
    for (int i = 0; toks[i]; i++) {
        json_t *v = token_str(json_object_get(cfg, toks[i]));
        if (v) json_object_set(ctx, toks[i], v);
    }
    json_object_set(ctx, "messages", msgs);
    json_object_set(ctx, "tools", has_tools ? tools : json_null());
    json_object_set_new(ctx, "documents", json_null());
    json_t *agp = json_object_get(req, "add_generation_prompt");
    json_object_set_new(ctx, "add_generation_prompt", json_boolean(agp ? json_is_true(agp) : 1));
    json_t *kw = json_object_get(req, "chat_template_kwargs");
    if (json_is_object(kw)) json_object_update(ctx, kw);

    char *out = NULL;
    tmpl *t = tmpl_parse(src, strlen(src));
    if (t) out = tmpl_render(t, ctx);
    tmpl_free(t);
    json_decref(ctx);
    return out;
}
