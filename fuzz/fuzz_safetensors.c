/* libFuzzer target: the safetensors header parser on arbitrary file images.
 * Every accepted tensor must lie inside the input; its bytes are read so that
 * ASan catches any pointer the validator let through. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_set *s = st_open_mem(data, size, "fuzz.safetensors");
    if (!s) return 0;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < st_count(s); i++) {
        const st_tensor *t = st_at(s, i);
        const uint8_t *p = t->data;
        if (p < data || p + t->nbytes > data + size) __builtin_trap();
        if (st_find(s, t->name) != t) __builtin_trap();
        if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
    }
    (void)st_total_bytes(s);
    (void)sink;
    st_close(s);
    return 0;
}
