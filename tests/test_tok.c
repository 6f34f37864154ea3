/* Tokenizer unit tests on the real Qwen3 and Llama 3 tokenizer.json files:
 * known ids (from HF tokenizers 0.23), lookups, round trips on random text,
 * streaming decode of split multi-byte characters, lossy UTF-8 decoding and
 * refusal of missing / corrupt / unsupported tokenizer files. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "testutil.h"
#include "tok/tok.h"

static const char *assets_dir(void) {
    static const char *cands[] = {"shared/assets/tokenizers", "/work/shared/assets/tokenizers"};
    const char *env = getenv("DOTLM_TOK_ASSETS");
    if (env) return env;
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
        struct stat st;
        if (!stat(cands[i], &st)) return cands[i];
    }
    return cands[1];
}

static tok_tokenizer *load(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", assets_dir(), name);
    tok_tokenizer *t = tok_load(p);
    CHECKF(t != NULL, "load %s: %s", p, dl_errmsg());
    return t;
}

static int ids_eq(const tok_tokenizer *t, const char *s, const int32_t *want, int nwant) {
    int32_t *ids;
    int n = tok_encode(t, s, strlen(s), &ids);
    int ok = n == nwant && !memcmp(ids, want, (size_t)n * sizeof *ids);
    if (!ok) {
        fprintf(stderr, "  encode(%s) =", s);
        for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return ok;
}

#define IDS_EQ(t, s, ...)                                                                      \
    do {                                                                                       \
        static const int32_t w_[] = {__VA_ARGS__};                                             \
        CHECKF(ids_eq(t, s, w_, (int)(sizeof w_ / sizeof *w_)), "known ids for \"%s\"", s);    \
    } while (0)

/* GPT-2 byte -> code point, written independently of the library's table. */
static unsigned byte_cp(unsigned b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) n++;
    return 256 + n;
}

static int32_t byte_token(const tok_tokenizer *t, unsigned b) {
    unsigned cp = byte_cp(b);
    char u[4] = {0};
    if (cp < 0x80) u[0] = (char)cp;
    else {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
    }
    return tok_find(t, u);
}

static size_t put_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* Random text from ranges that NFC leaves unchanged (so it round-trips on Qwen). */
static size_t rand_text(uint64_t *rng, char *out, size_t maxchars) {
    static const unsigned ranges[][2] = {{0x20, 0x7E}, {0x20, 0x7E}, {0x0A, 0x0A}, {0x4E00, 0x9FA5},
                                         {0xAC00, 0xD7A3}, {0x0410, 0x044F}, {0x1F600, 0x1F64F}, {0x3041, 0x3093},
                                         {0x0E01, 0x0E2E}, {0x00A0, 0x00FF}};
    size_t n = 0, k = 1 + tu_rand_u64(rng) % maxchars;
    for (size_t i = 0; i < k; i++) {
        const unsigned *r = ranges[tu_rand_u64(rng) % (sizeof ranges / sizeof *ranges)];
        n += put_utf8(r[0] + (unsigned)(tu_rand_u64(rng) % (r[1] - r[0] + 1)), out + n);
    }
    out[n] = 0;
    return n;
}

static void test_known(tok_tokenizer *q, tok_tokenizer *l) {
    IDS_EQ(q, "Hello world", 9707, 1879);
    IDS_EQ(q, "I'LL be there, it's 12345!", 40, 6, 4086, 387, 1052, 11, 432, 594, 220, 16, 17, 18, 19, 20, 0);
    IDS_EQ(q, "你好，世界 👍🏽", 108386, 3837, 99489, 61804, 235, 145375);
    IDS_EQ(q, "<|im_start|>user\n  hi<|im_end|>", 151644, 872, 198, 220, 15588, 151645);
    IDS_EQ(q, "e\xcc\x81 caf\xc3\xa9", 963, 51950); /* NFD e + U+0301 composes under NFC */
    IDS_EQ(q, "😀", 141334);
    IDS_EQ(l, "Hello world", 9906, 1917);
    IDS_EQ(l, "I'LL be there, it's 12345!", 40, 6, 4178, 387, 1070, 11, 433, 596, 220, 4513, 1774, 0);
    IDS_EQ(l, "你好，世界 👍🏽", 57668, 53901, 3922, 102616, 62904, 235, 9468, 237, 121);
    IDS_EQ(l, "<|begin_of_text|>x<|eot_id|>", 128000, 87, 128009);
    IDS_EQ(l, "e\xcc\x81 caf\xc3\xa9", 68, 54939, 53050); /* no normalizer */
    IDS_EQ(l, "😀", 76460, 222);
    int32_t *ids;
    CHECK(tok_encode(l, "", 0, &ids) == 0);
    free(ids);
    CHECK(tok_encode(l, "a\xff", 2, &ids) < 0 && strstr(dl_errmsg(), "UTF-8"));

    CHECK(tok_vocab_size(q) == 151669);
    CHECK(tok_vocab_size(l) == 128256);
    CHECK(tok_find(q, "<|im_start|>") == 151644 && tok_is_special(q, 151644));
    CHECK(tok_find(q, "<think>") >= 0 && !tok_is_special(q, tok_find(q, "<think>")));
    CHECK(tok_find(l, "<|eot_id|>") == 128009 && tok_is_special(l, 128009));
    CHECK(tok_find(l, "Hello") == 9906 && !tok_is_special(l, 9906));
    CHECK(tok_find(l, "no such token at all") == -1);
    CHECK(tok_piece(l, 1917) && !strcmp(tok_piece(l, 1917), "\xc4\xa0world")); /* "Ġworld" */
    CHECK(tok_piece(l, -1) == NULL && tok_piece(l, 1 << 20) == NULL);
    CHECK(tok_bos_id(l) == 128000 && tok_eos_id(l) == 128001);
    CHECK(tok_bos_id(q) == -1 && tok_eos_id(q) == 151645 && !strcmp(tok_eos_str(q), "<|im_end|>"));
    CHECK(tok_chat_template(q) != NULL && tok_chat_template(l) != NULL);
}

static void test_roundtrip(tok_tokenizer *t, const char *name, uint64_t *rng) {
    char *buf = malloc(4 * 300 + 1);
    int bad = 0;
    for (int it = 0; it < 300; it++) {
        size_t n = rand_text(rng, buf, 300);
        int32_t *ids;
        int k = tok_encode(t, buf, n, &ids);
        char *d = k >= 0 ? tok_decode(t, ids, (size_t)k, 0) : NULL;
        if (!d || strcmp(d, buf)) bad++;
        /* streaming: concatenated pieces equal the whole decode */
        tok_stream st;
        tok_stream_init(&st, t, 0);
        char *cat = calloc(1, n * 3 + 64), piece[256];
        size_t cl = 0;
        for (int i = 0; i < k; i++) {
            int w = tok_stream_push(&st, ids[i], piece, sizeof piece);
            if (w < 0) { bad++; break; }
            memcpy(cat + cl, piece, (size_t)w);
            cl += (size_t)w;
        }
        int w = tok_stream_flush(&st, piece, sizeof piece);
        if (w > 0) { memcpy(cat + cl, piece, (size_t)w); cl += (size_t)w; }
        if (!d || cl != strlen(d) || memcmp(cat, d, cl)) bad++;
        free(cat);
        free(d);
        free(ids);
    }
    CHECKF(bad == 0, "%s: %d random round trips failed", name, bad);
    free(buf);
}

/* Random ids (including special and partial-UTF-8 byte tokens): the stream
 * decoder's concatenated output must equal the one-shot decode. */
static void test_stream_random(tok_tokenizer *t, const char *name, uint64_t *rng) {
    int bad = 0, nv = tok_vocab_size(t);
    for (int it = 0; it < 300; it++) {
        int32_t ids[24];
        int n = 1 + (int)(tu_rand_u64(rng) % 24);
        for (int i = 0; i < n; i++)
            ids[i] = (tu_rand_u64(rng) & 1) ? byte_token(t, (unsigned)(tu_rand_u64(rng) % 256))
                                            : (int32_t)(tu_rand_u64(rng) % (uint64_t)nv);
        int skip = it & 1;
        size_t dl = 0; /* random byte tokens can decode to NUL */
        char *d = tok_decode_len(t, ids, (size_t)n, skip, &dl);
        tok_stream st;
        tok_stream_init(&st, t, skip);
        char cat[24 * 512], piece[512];
        size_t cl = 0;
        for (int i = 0; i < n; i++) {
            int w = tok_stream_push(&st, ids[i], piece, sizeof piece);
            if (w < 0) { bad++; break; }
            memcpy(cat + cl, piece, (size_t)w);
            cl += (size_t)w;
        }
        int w = tok_stream_flush(&st, piece, sizeof piece);
        if (w > 0) { memcpy(cat + cl, piece, (size_t)w); cl += (size_t)w; }
        if (!d || cl != dl || memcmp(cat, d, cl)) {
            if (!bad++) {
                fprintf(stderr, "  skip=%d ids:", skip);
                for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
                fprintf(stderr, "\n  stream %.*s\n  whole  %s\n", (int)cl, cat, d ? d : "(null)");
            }
        }
        free(d);
    }
    CHECKF(bad == 0, "%s: %d random stream decodes differ from tok_decode", name, bad);
}

static void test_bytes(tok_tokenizer *t) {
    /* 😀 = F0 9F 98 80 split over four byte tokens */
    tok_stream st;
    char out[64];
    tok_stream_init(&st, t, 0);
    const unsigned emoji[4] = {0xF0, 0x9F, 0x98, 0x80};
    for (int i = 0; i < 3; i++) CHECK(tok_stream_push(&st, byte_token(t, emoji[i]), out, sizeof out) == 0);
    CHECK(tok_stream_push(&st, byte_token(t, emoji[3]), out, sizeof out) == 4 && !strcmp(out, "😀"));
    /* held bytes that never complete: U+FFFD then the next char */
    CHECK(tok_stream_push(&st, byte_token(t, 0xE4), out, sizeof out) == 0);
    CHECK(tok_stream_push(&st, byte_token(t, 0xBD), out, sizeof out) == 0);
    CHECK(tok_stream_push(&st, byte_token(t, 'A'), out, sizeof out) == 4 && !strcmp(out, "\xef\xbf\xbd" "A"));
    CHECK(tok_stream_push(&st, byte_token(t, 0xF0), out, sizeof out) == 0);
    CHECK(tok_stream_flush(&st, out, sizeof out) == 3 && !strcmp(out, "\xef\xbf\xbd"));
    CHECK(tok_stream_flush(&st, out, sizeof out) == 0);
    CHECK(tok_stream_push(&st, byte_token(t, 'x'), out, 1) == -1); /* no room */
    /* special tokens: kept or skipped */
    int32_t eot = tok_find(t, "<|endoftext|>") >= 0 ? tok_find(t, "<|endoftext|>") : tok_find(t, "<|eot_id|>");
    tok_stream_init(&st, t, 1);
    CHECK(tok_stream_push(&st, eot, out, sizeof out) == 0);

    /* one-shot lossy decoding, maximal subparts as Rust's from_utf8_lossy */
    struct { unsigned b[4]; int n; const char *want; } cases[] = {
        {{0xE2, 0x82, 'A'}, 3, "\xef\xbf\xbd" "A"},
        {{0xED, 0xA0, 0x80}, 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {{0xC0, 'a'}, 2, "\xef\xbf\xbd" "a"},
        {{0xF0, 0x80, 0x80}, 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {{0xF4, 0x8F, 0xBF, 0xBF}, 4, "\xf4\x8f\xbf\xbf"},
        {{0xE4, 0xBD, 0xA0}, 3, "你"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int32_t ids[4];
        for (int i = 0; i < cases[c].n; i++) ids[i] = byte_token(t, cases[c].b[i]);
        char *d = tok_decode(t, ids, (size_t)cases[c].n, 0);
        CHECKF(d && !strcmp(d, cases[c].want), "lossy case %zu", c);
        free(d);
    }
    int32_t mixed[3] = {eot, byte_token(t, 'h'), 1 << 29}; /* unknown id dropped */
    char *d = tok_decode(t, mixed, 3, 1);
    CHECK(d && !strcmp(d, "h"));
    free(d);
    d = tok_decode(t, mixed, 2, 0);
    CHECK(d && strstr(d, "<|") == d);
    free(d);
}

static void test_long_word(tok_tokenizer *t, uint64_t *rng) {
    size_t n = 20000;
    char *w = malloc(n + 1);
    for (size_t i = 0; i < n; i++) w[i] = (char)('a' + tu_rand_u64(rng) % 26);
    w[n] = 0;
    clock_t c0 = clock();
    int32_t *ids;
    int k = tok_encode(t, w, n, &ids);
    double dt = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(k > 0 && k < (int)n);
    char *d = k > 0 ? tok_decode(t, ids, (size_t)k, 0) : NULL;
    CHECK(d && !strcmp(d, w));
    CHECKF(dt < 2.0, "20k-letter word took %.2fs", dt);
    free(d);
    free(ids);
    free(w);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int load_fails_with(const char *dir, const char *json, const char *needle) {
    char p[600];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    write_file(p, json);
    tok_tokenizer *t = tok_load(dir);
    int ok = !t && strstr(dl_errmsg(), needle) && strstr(dl_errmsg(), "tokenizer.json");
    if (!ok) fprintf(stderr, "  load error: '%s' (wanted '%s')\n", dl_errmsg(), needle);
    tok_free(t);
    return ok;
}

static void test_errors(void) {
    CHECK(tok_load("/nonexistent/dir") == NULL && strstr(dl_errmsg(), "tokenizer.json"));
    char dir[] = "/tmp/dotlm_tok_XXXXXX";
    if (!mkdtemp(dir)) { CHECK(0); return; }
    static const char good_tail[] =
        "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},"
        "\"decoder\":{\"type\":\"ByteLevel\"}}";
    char buf[1024];
    CHECK(load_fails_with(dir, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", "line"));
    CHECK(load_fails_with(dir, "{\"added_tokens\":[],\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", "model.type"));
    snprintf(buf, sizeof buf, "{\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{},\"merges\":[]},%s", good_tail);
    CHECK(load_fails_with(dir, buf, "byte_fallback"));
    snprintf(buf, sizeof buf, "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]},%s", good_tail);
    CHECK(load_fails_with(dir, buf, "merges[0]"));
    CHECK(load_fails_with(dir, "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":"
                               "{\"type\":\"Metaspace\"}}", "Metaspace"));
    CHECK(load_fails_with(dir, "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":null}",
                          "pre_tokenizer"));
    snprintf(buf, sizeof buf, "{\"normalizer\":{\"type\":\"Lowercase\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},"
             "\"merges\":[]},%s", good_tail);
    CHECK(load_fails_with(dir, buf, "Lowercase"));
    /* a tiny valid byte-level tokenizer: both merge spellings, GPT-2 regex */
    snprintf(buf, sizeof buf, "{\"added_tokens\":[{\"id\":5,\"content\":\"<s>\",\"special\":true}],"
             "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"\xc4\xa0\":3,\"\xc4\xa0" "ab\":4},"
             "\"merges\":[\"a b\",[\"\xc4\xa0\",\"ab\"]]},%s", good_tail);
    char p[600];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    write_file(p, buf);
    tok_tokenizer *t = tok_load(dir);
    CHECKF(t != NULL, "tiny tokenizer: %s", dl_errmsg());
    if (t) {
        IDS_EQ(t, "ab ab<s>ba", 2, 4, 5, 1, 0);
        CHECK(tok_vocab_size(t) == 6);
        tok_free(t);
    }
    unlink(p);
    rmdir(dir);
}

int main(void) {
    uint64_t rng = tu_seed();
    tok_tokenizer *q = load("qwen3"), *l = load("llama3");
    if (q && l) {
        test_known(q, l);
        test_roundtrip(q, "qwen3", &rng);
        test_roundtrip(l, "llama3", &rng);
        test_stream_random(q, "qwen3", &rng);
        test_stream_random(l, "llama3", &rng);
        test_bytes(q);
        test_bytes(l);
        test_long_word(l, &rng);
        test_long_word(q, &rng);
    }
    test_errors();
    tok_free(q);
    tok_free(l);
    return TEST_END();
}
