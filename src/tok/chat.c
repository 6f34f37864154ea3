#include "tok/chat.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "tmpl/tmpl.h"

static json_t *load_tokcfg(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) dl_err("%s: %s (line %d)", path, je.text, je.line);
    return j;
}

static const char *template_text(json_t *cfg) {
    json_t *t = json_object_get(cfg, "chat_template");
    if (json_is_string(t)) return json_string_value(t);
    if (json_is_array(t)) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) {
            json_t *n = json_object_get(e, "name");
            if (json_is_string(n) && !strcmp(json_string_value(n), "default"))
                return json_string_value(json_object_get(e, "template"));
        }
    }
    return NULL;
}

chat_style chat_detect(const char *dir) {
    json_t *cfg = load_tokcfg(dir);
    chat_style st = CHAT_NONE;
    const char *t = cfg ? template_text(cfg) : NULL;
    if (t && strstr(t, "<|im_start|>")) st = CHAT_CHATML;
    else if (t && strstr(t, "<|start_header_id|>")) st = CHAT_LLAMA3;
    json_decref(cfg);
    return st;
}

/* Growable string. */
typedef struct {
    char *s;
    size_t n, cap;
} sbuf;

static int sb_add(sbuf *b, const char *s) {
    size_t l = strlen(s);
    if (b->n + l + 1 > b->cap) {
        size_t c = (b->cap + l + 1) * 2;
        char *p = realloc(b->s, c);
        if (!p) return -1;
        b->s = p;
        b->cap = c;
    }
    memcpy(b->s + b->n, s, l + 1);
    b->n += l;
    return 0;
}

char *chat_render_builtin(chat_style st, const chat_msg *msgs, int n) {
    sbuf b = {0};
    int bad = sb_add(&b, "");
    if (st == CHAT_LLAMA3) bad |= sb_add(&b, "<|begin_of_text|>");
    for (int i = 0; i < n; i++) {
        if (st == CHAT_CHATML) {
            bad |= sb_add(&b, "<|im_start|>") | sb_add(&b, msgs[i].role) | sb_add(&b, "\n") |
                   sb_add(&b, msgs[i].content) | sb_add(&b, "<|im_end|>\n");
        } else {
            bad |= sb_add(&b, "<|start_header_id|>") | sb_add(&b, msgs[i].role) |
                   sb_add(&b, "<|end_header_id|>\n\n") | sb_add(&b, msgs[i].content) |
                   sb_add(&b, "<|eot_id|>");
        }
    }
    if (st == CHAT_CHATML) bad |= sb_add(&b, "<|im_start|>assistant\n");
    else bad |= sb_add(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    if (bad) {
        free(b.s);
        return dl_err("out of memory"), NULL;
    }
    return b.s;
}

char *chat_render(const char *dir, const chat_msg *msgs, int n) {
    json_t *cfg = load_tokcfg(dir);
    if (!cfg) return NULL;
    char *out = NULL;
    if (template_text(cfg)) {
        json_t *req = json_object(), *arr = json_array();
        for (int i = 0; i < n; i++) {
            json_t *m = json_object();
            json_object_set_new(m, "role", json_string(msgs[i].role));
            json_object_set_new(m, "content", json_string(msgs[i].content));
            json_array_append_new(arr, m);
        }
        json_object_set_new(req, "messages", arr);
        json_object_set_new(req, "add_generation_prompt", json_true());
        out = tmpl_render_chat(cfg, req);
        json_decref(req);
        if (!out) LOGW("chat template did not render (%s); using the built-in layout", dl_errmsg());
    }
    if (!out) {
        chat_style st = chat_detect(dir);
        if (st == CHAT_NONE) {
            json_decref(cfg);
            return dl_err("%s/tokenizer_config.json has no usable chat_template; run without "
                          "--chat",
                          dir),
                   NULL;
        }
        out = chat_render_builtin(st, msgs, n);
    }
    json_decref(cfg);
    return out;
}

int chat_stop_ids(const tok_tokenizer *t, int32_t *out, int cap) {
    static const char *names[] = {"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<|end_of_text|>",
                                  "<|eom_id|>"};
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names && n < cap; i++) {
        int32_t id = tok_find(t, names[i]);
        if (id >= 0) out[n++] = id;
    }
    return n;
}
