/* Paged KV pool: slot and block accounting, reserve failure leaves state intact. */
#include "backend/backend.h"
#include "core/err.h"
#include "engine/kvcache.h"
#include "testutil.h"

int main(void) {
    dl_backend *be = be_create("cpu", 1);
    CHECK(be != NULL);
    kv_pool p;
    CHECK(kv_create(&p, be, 2, 2, 8, 4, 10, 3, 24, DT_F32) == 0);
    CHECK(p.kv.max_blocks_per_seq == 6);
    int a = kv_slot_alloc(&p), b = kv_slot_alloc(&p), c = kv_slot_alloc(&p);
    CHECK(a == 0 && b == 1 && c == 2);
    CHECK(kv_slot_alloc(&p) == -1);
    CHECK(kv_reserve(&p, a, 9) == 0); /* 3 blocks */
    CHECK(p.n_free == 7);
    CHECK(kv_reserve(&p, a, 5) == 0); /* shrinking asks for nothing */
    CHECK(p.n_free == 7);
    CHECK(kv_reserve(&p, b, 24) == 0); /* 6 blocks */
    CHECK(p.n_free == 1);
    CHECK(kv_reserve(&p, c, 8) == -1); /* needs 2, 1 free: refused, nothing taken */
    CHECK(p.n_free == 1);
    CHECK(p.kv.block_table[2 * 6] == -1);
    CHECK(kv_reserve(&p, c, 25) == -1); /* beyond max ctx */
    /* blocks of different slots are distinct */
    int used[10] = {0}, dup = 0;
    for (int s = 0; s < 2; s++)
        for (int j = 0; j < 6; j++) {
            int blk = p.kv.block_table[s * 6 + j];
            if (blk >= 0) dup |= used[blk]++;
        }
    CHECK(!dup);
    kv_slot_free(&p, b);
    CHECK(p.n_free == 7);
    CHECK(kv_reserve(&p, c, 8) == 0);
    CHECK(kv_slot_alloc(&p) == 1);
    kv_destroy(&p);
    be_destroy(be);
    return TEST_END();
}
