/* Chat prompts for `dotlm run --chat`: renders a plain conversation with the
 * model's own chat template (tokenizer_config.json's chat_template through
 * the Jinja interpreter); when a template cannot be rendered, the built-in
 * ChatML (Qwen) or Llama 3 layout detected from the template is used. */
#pragma once
#include <stdint.h>

#include "tok/tok.h"

typedef struct {
    const char *role;    /* "system", "user", "assistant" */
    const char *content;
} chat_msg;

typedef enum { CHAT_NONE = 0, CHAT_CHATML, CHAT_LLAMA3 } chat_style;

/* Style detected from DIR/tokenizer_config.json's chat_template (CHAT_NONE if absent). */
chat_style chat_detect(const char *dir);
/* Render msgs (with the generation prompt appended). malloc'd string, or NULL + dl_errmsg. */
char *chat_render(const char *dir, const chat_msg *msgs, int n);
/* Built-in rendering for a style (no template needed). */
char *chat_render_builtin(chat_style st, const chat_msg *msgs, int n);
/* Append the template's end-of-turn token ids (<|im_end|>, <|eot_id|>, <|endoftext|>,
 * <|end_of_text|>, <|eom_id|>) that exist in t to out; returns count written. */
int chat_stop_ids(const tok_tokenizer *t, int32_t *out, int cap);
