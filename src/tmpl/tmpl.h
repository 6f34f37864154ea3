/* Jinja2-subset interpreter for Hugging Face chat templates.
 *
 * Renders templates the way transformers' apply_chat_template does:
 * jinja2 with trim_blocks=True, lstrip_blocks=True, loopcontrols, the
 * globals raise_exception/strftime_now/namespace/range and a tojson filter
 * equal to json.dumps(ensure_ascii=False). Values are jansson json_t.
 * Errors (parse, type, raise_exception, runaway limits) return NULL and leave
 * one message in dl_errmsg(). No global state: templates are immutable after
 * parsing and may be rendered from several threads at once. */
#pragma once
#include <stddef.h>
#include <jansson.h>

typedef struct tmpl tmpl;

/* Parse template source (len bytes, need not be NUL-terminated).
 * NULL + dl_errmsg "template:LINE:COL: ..." on a syntax error. */
tmpl *tmpl_parse(const char *src, size_t len);
/* Render with ctx (a JSON object of variables; borrowed, not modified).
 * Returns a malloc'd NUL-terminated string; NULL + dl_errmsg on error. */
char *tmpl_render(const tmpl *t, json_t *ctx);
void tmpl_free(tmpl *t);

/* Render a chat request (OpenAI body: messages, tools, add_generation_prompt
 * default true, chat_template_kwargs merged into the context) with a
 * tokenizer_config.json object: uses chat_template (string, or a list of
 * {name, template}: "tool_use" when tools are given (non-null, even an
 * empty list; passed to the template as is) and it exists, else
 * "default"), and bos_token/eos_token/pad_token/unk_token (string or
 * {content}) put into the context. malloc'd result; NULL + dl_errmsg. */
char *tmpl_render_chat(json_t *tokenizer_config, json_t *request);
