/* libFuzzer target: config.json and generation_config.json parsing on
 * arbitrary bytes. Accepted configs must satisfy the invariants the model
 * code relies on (positive sizes, heads dividing, layer count in range). */
#include <stddef.h>
#include <stdint.h>

#include "io/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hf_config c;
    if (cfg_parse((const char *)data, size, "fuzz.json", &c) == 0) {
        if (c.n_layers < 1 || c.n_layers > CFG_MAX_LAYERS || c.hidden < 1 || c.n_heads < 1 ||
            c.n_kv_heads < 1 || c.n_heads % c.n_kv_heads || c.head_dim < 1 || c.vocab < 1 ||
            c.n_eos < 0 || c.n_eos > CFG_MAX_EOS || c.quant.n_ignore < 0)
            __builtin_trap();
        for (int i = 0; i < c.quant.n_ignore; i++)
            if (!c.quant.ignore[i]) __builtin_trap();
        cfg_free(&c);
    }
    hf_genconfig g;
    (void)gencfg_parse((const char *)data, size, "fuzz_gen.json", &g);
    return 0;
}
