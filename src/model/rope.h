/* RoPE inverse frequencies as transformers computes them (default, linear
 * and llama3 scaling), in float32. */
#pragma once
#include "backend/backend.h"
#include "io/hfconfig.h"

/* Fill r->rot and r->inv_freq[rot/2] from the config. 0 or -1 (unsupported
 * rope_type names the type). */
int rope_init(dl_rope *r, const hf_config *c);
void rope_free(dl_rope *r);
