/* generation_config.json -> hf_genconfig (default sampling and extra eos ids).
 * Fields left out take transformers' GenerationConfig defaults. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "io/cfg_json.h"

static void gencfg_defaults(hf_genconfig *g) {
    memset(g, 0, sizeof *g);
    g->temperature = 1.0f;
    g->top_p = 1.0f;
    g->top_k = 50;
    g->min_p = 0.0f;
    g->repetition_penalty = 1.0f;
    g->bos_id = -1;
}

int gencfg_parse(const char *json, size_t len, const char *label, hf_genconfig *out) {
    gencfg_defaults(out);
    if (!label) label = "generation_config.json";
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) return dl_err("%s: not valid JSON: %s (line %d, column %d)", label, je.text, je.line, je.column);
    cj_ctx c = {label, ""};
    int rc = -1;
    double t, p, mp, rp;
    if (!json_is_object(o)) {
        dl_err("%s: not a JSON object", label);
        goto out;
    }
    if (cj_bool(&c, o, "do_sample", 0, &out->do_sample) || cj_num(&c, o, "temperature", 0, 1.0, -1e-300, 1e6, &t) ||
        cj_num(&c, o, "top_p", 0, 1.0, -1e-300, 1.0, &p) || cj_num(&c, o, "min_p", 0, 0.0, -1e-300, 1.0, &mp) ||
        cj_num(&c, o, "repetition_penalty", 0, 1.0, 0, 1e6, &rp) ||
        cj_int(&c, o, "top_k", 0, 50, 0, 1 << 30, &out->top_k) ||
        cj_int(&c, o, "bos_token_id", 0, -1, 0, 0x7fffffff, &out->bos_id))
        goto out;
    out->temperature = (float)t, out->top_p = (float)p, out->min_p = (float)mp, out->repetition_penalty = (float)rp;
    const json_t *v = json_object_get(o, "eos_token_id");
    if (json_is_array(v)) {
        if (json_array_size(v) > CFG_MAX_EOS) {
            cj_err(&c, "eos_token_id", "%zu ids (at most %d supported)", json_array_size(v), CFG_MAX_EOS);
            goto out;
        }
        for (size_t i = 0; i < json_array_size(v); i++)
            if (cj_int_value(&c, "eos_token_id", json_array_get(v, i), 0, 0x7fffffff, &out->eos_ids[i])) goto out;
        out->n_eos = (int)json_array_size(v);
    } else if (v && !json_is_null(v)) {
        if (cj_int_value(&c, "eos_token_id", v, 0, 0x7fffffff, &out->eos_ids[0])) goto out;
        out->n_eos = 1;
    }
    out->present = 1;
    rc = 0;
out:
    json_decref(o);
    if (rc) gencfg_defaults(out);
    return rc;
}

int gencfg_load(const char *path, hf_genconfig *out) {
    gencfg_defaults(out);
    json_error_t je;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        return dl_err("%s: cannot open: %s", path, strerror(errno));
    }
    json_t *o = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!o) return dl_err("%s: not valid JSON: %s (line %d, column %d)", path, je.text, je.line, je.column);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) return dl_err("%s: out of memory", path);
    int rc = gencfg_parse(s, strlen(s), path, out);
    free(s);
    return rc;
}
