#include "model/rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

int rope_init(dl_rope *r, const hf_config *c) {
    memset(r, 0, sizeof *r);
    int rot = (int)((float)c->head_dim * c->partial_rotary);
    rot &= ~1;
    if (rot <= 0 || rot > c->head_dim)
        return dl_err("config: partial_rotary_factor %g gives %d rotary dims for head_dim %d",
                      c->partial_rotary, rot, c->head_dim);
    r->rot = rot;
    r->inv_freq = malloc((size_t)(rot / 2) * sizeof(float));
    if (!r->inv_freq) return dl_err("out of memory");
    float base = (float)c->rope_theta;
    for (int i = 0; i < rot / 2; i++) {
        /* torch: base ** (arange(0, rot, 2).float() / rot), in float32 */
        float e = (float)(2 * i) / (float)rot;
        r->inv_freq[i] = 1.0f / powf(base, e);
    }
    const char *t = c->rope_type;
    if (!t[0] || !strcmp(t, "default")) return 0;
    if (!strcmp(t, "linear")) {
        for (int i = 0; i < rot / 2; i++) r->inv_freq[i] /= (float)c->rope_factor;
        return 0;
    }
    if (!strcmp(t, "llama3")) {
        float factor = (float)c->rope_factor, lo = (float)c->rope_low_freq,
              hi = (float)c->rope_high_freq, old = (float)c->rope_orig_max_pos;
        float lo_wl = old / lo, hi_wl = old / hi;
        for (int i = 0; i < rot / 2; i++) {
            float f = r->inv_freq[i];
            float wl = 2.0f * (float)M_PI / f;
            float g = wl > lo_wl ? f / factor : f;
            float smooth = (old / wl - lo) / (hi - lo);
            float smoothed = (1.0f - smooth) * g / factor + smooth * g;
            int medium = !(wl < hi_wl) && !(wl > lo_wl);
            r->inv_freq[i] = medium ? smoothed : g;
        }
        return 0;
    }
    rope_free(r);
    return dl_err("config: rope scaling type '%s' is not supported (supported: default, linear, "
                  "llama3)",
                  t);
}

void rope_free(dl_rope *r) {
    free(r->inv_freq);
    r->inv_freq = NULL;
}
