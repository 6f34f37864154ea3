/* safetensors reader: round trip of random tensors through real files
 * (single, sharded with an index, directory glob), and every malformed input
 * the reader must refuse with one line naming the file and the problem. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "io/safetensors.h"
#include "testutil.h"

static char g_dir[64];
static uint64_t g_rng;

typedef struct {
    char name[64];
    dl_dtype dt;
    int ndim;
    int64_t shape[4];
    size_t nbytes;
    uint8_t *data;
} spec;

/* ---- writing ----------------------------------------------------------- */

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    if (n && fwrite(p, 1, n, f) != n) exit(2);
    fclose(f);
}

/* File image: 8-byte length, header (space padded to 8), then data. */
static uint8_t *image(const char *header, const void *data, size_t dlen, size_t *len) {
    size_t h = strlen(header), hp = (h + 7) & ~(size_t)7;
    *len = 8 + hp + dlen;
    uint8_t *b = malloc(*len);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hp >> (8 * i));
    memcpy(b + 8, header, h);
    memset(b + 8 + h, ' ', hp - h);
    if (dlen) memcpy(b + 8 + hp, data, dlen);
    return b;
}

/* Serialise specs [a, b) into one safetensors file at `path`. */
static void write_st(const char *path, spec *s, int a, int b, int with_meta) {
    json_t *root = json_object();
    size_t off = 0;
    for (int i = a; i < b; i++) {
        json_t *e = json_object(), *sh = json_array();
        for (int d = 0; d < s[i].ndim; d++) json_array_append_new(sh, json_integer(s[i].shape[d]));
        json_object_set_new(e, "dtype", json_string(dt_name(s[i].dt)));
        json_object_set_new(e, "shape", sh);
        json_object_set_new(e, "data_offsets", json_pack("[II]", (json_int_t)off, (json_int_t)(off + s[i].nbytes)));
        json_object_set_new(root, s[i].name, e);
        off += s[i].nbytes;
    }
    if (with_meta) json_object_set_new(root, "__metadata__", json_pack("{ss}", "format", "pt"));
    char *hdr = json_dumps(root, JSON_COMPACT);
    uint8_t *data = malloc(off ? off : 1);
    off = 0;
    for (int i = a; i < b; i++) {
        memcpy(data + off, s[i].data, s[i].nbytes);
        off += s[i].nbytes;
    }
    size_t len;
    uint8_t *img = image(hdr, data, off, &len);
    write_bytes(path, img, len);
    free(img);
    free(data);
    free(hdr);
    json_decref(root);
}

static void make_specs(spec *s, int n) {
    static const dl_dtype dts[] = {DT_F32, DT_F16, DT_BF16, DT_F8E4M3, DT_F8E5M2, DT_I8,
                                   DT_I32, DT_I64, DT_U8,   DT_F64,    DT_BOOL};
    for (int i = 0; i < n; i++) {
        snprintf(s[i].name, sizeof s[i].name, "model.layers.%d.w%u.weight", i, (unsigned)(tu_rand_u64(&g_rng) % 1000));
        s[i].dt = dts[tu_rand_u64(&g_rng) % (sizeof dts / sizeof dts[0])];
        s[i].ndim = (int)(tu_rand_u64(&g_rng) % 5);
        size_t el = 1;
        for (int d = 0; d < s[i].ndim; d++) {
            s[i].shape[d] = (int64_t)(tu_rand_u64(&g_rng) % 7); /* zero dims included */
            el *= (size_t)s[i].shape[d];
        }
        s[i].nbytes = el * dt_size(s[i].dt);
        s[i].data = malloc(s[i].nbytes + 1);
        for (size_t k = 0; k < s[i].nbytes; k++) s[i].data[k] = (uint8_t)tu_rand_u64(&g_rng);
    }
}

static void free_specs(spec *s, int n) {
    for (int i = 0; i < n; i++) free(s[i].data);
}

static char *path_in(const char *sub, const char *name) {
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s%s%s/%s", g_dir, sub[0] ? "/" : "", sub, name);
    return p;
}

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (!lstat(p, &sb) && S_ISDIR(sb.st_mode)) rm_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static char *fresh_dir(const char *sub) {
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, sub);
    rm_tree(p);
    mkdir(p, 0700);
    return p;
}

/* ---- checks ------------------------------------------------------------ */

static void check_set(const st_set *st, spec *s, int n, const char *what) {
    CHECKF(st != NULL, "%s: open failed: %s", what, dl_errmsg());
    if (!st) return;
    CHECKF(st_count(st) == (size_t)n, "%s: %zu tensors, want %d", what, st_count(st), n);
    size_t total = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const st_tensor *t = st_find(st, s[i].name);
        total += s[i].nbytes;
        if (!t) {
            bad++;
            continue;
        }
        int ok = t->dtype == s[i].dt && t->ndim == s[i].ndim && t->nbytes == s[i].nbytes &&
                 !strcmp(t->name, s[i].name) && (!t->nbytes || !memcmp(t->data, s[i].data, t->nbytes));
        for (int d = 0; d < s[i].ndim; d++) ok &= t->shape[d] == s[i].shape[d];
        if (!ok) bad++;
    }
    CHECKF(bad == 0, "%s: %d tensors differ", what, bad);
    CHECK(st_total_bytes(st) == total);
    CHECK(st_find(st, "no.such.tensor") == NULL);
    CHECK(st_at(st, st_count(st)) == NULL);
}

static int has(const char *msg, const char *needle) { return strstr(msg, needle) != NULL; }

/* The message names `label`, contains `want`, and is a single line. */
static void check_msg(const char *label, const char *want, const char *ctx) {
    const char *m = dl_errmsg();
    CHECKF(has(m, label) && has(m, want) && !strchr(m, '\n'), "%s: message '%s' lacks '%s' / '%s'", ctx, m,
           label, want);
}

/* A header + data image that must be refused, both from memory and from a
 * real file; the message must name the source and contain `want`. */
static void expect_bad_img(const uint8_t *img, size_t len, const char *want, const char *ctx) {
    dl_err_clear();
    st_set *s = st_open_mem(img, len, "mem.safetensors");
    CHECKF(s == NULL, "%s: accepted from memory", ctx);
    st_close(s);
    check_msg("mem.safetensors", want, ctx);
    char *p = path_in("", "bad.safetensors");
    write_bytes(p, img, len);
    dl_err_clear();
    s = st_open_file(p);
    CHECKF(s == NULL, "%s: accepted from a file", ctx);
    st_close(s);
    check_msg(p, want, ctx);
}

static void expect_bad(const char *header, size_t dlen, const char *want) {
    uint8_t *data = calloc(1, dlen + 1);
    size_t len;
    uint8_t *img = image(header, data, dlen, &len);
    expect_bad_img(img, len, want, header);
    free(img);
    free(data);
}

/* ---- tests ------------------------------------------------------------- */

static void test_roundtrip(void) {
    int n = 5 + (int)(tu_rand_u64(&g_rng) % 20);
    spec s[32];
    make_specs(s, n);
    char *dir = fresh_dir("single");
    char p[600];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_st(p, s, 0, n, 1);
    st_set *st = st_open_file(p);
    check_set(st, s, n, "st_open_file");
    if (st) {
        CHECK(st_file_count(st) == 1);
        CHECK(!strcmp(st_file_name(st, 0), p));
        CHECK(!strcmp(st_file_name(st, 7), "?"));
    }
    st_close(st);
    st = st_open_dir(dir);
    check_set(st, s, n, "st_open_dir single");
    st_close(st);
    /* the same image from memory */
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)sz);
    CHECK(fread(buf, 1, (size_t)sz, f) == (size_t)sz);
    fclose(f);
    st = st_open_mem(buf, (size_t)sz, "mem");
    check_set(st, s, n, "st_open_mem");
    st_close(st);
    /* Random byte corruption: either accepted or refused with a message;
     * never a crash or an out-of-bounds read (ASan build). */
    int refused = 0;
    for (int it = 0; it < 300; it++) {
        uint8_t *m = malloc((size_t)sz);
        memcpy(m, buf, (size_t)sz);
        int flips = 1 + (int)(tu_rand_u64(&g_rng) % 4);
        for (int k = 0; k < flips; k++) m[tu_rand_u64(&g_rng) % (size_t)sz] ^= (uint8_t)(1u << (tu_rand_u64(&g_rng) % 8));
        size_t len = (size_t)sz - (it % 3 == 0 ? tu_rand_u64(&g_rng) % (size_t)sz : 0);
        dl_err_clear();
        st_set *x = st_open_mem(m, len, "fuzz");
        if (!x) {
            refused++;
            CHECKF(dl_errmsg()[0] != 0 && !strchr(dl_errmsg(), '\n'), "corruption %d: bad message '%s'", it,
                   dl_errmsg());
        } else {
            for (size_t i = 0; i < st_count(x); i++) {
                const st_tensor *t = st_at(x, i);
                CHECK((const uint8_t *)t->data >= m && (const uint8_t *)t->data + t->nbytes <= m + len);
            }
        }
        st_close(x);
        free(m);
    }
    CHECK(refused > 0);
    free(buf);
    free_specs(s, n);
}

/* Thousands of names: every one is found through the hash. */
static void test_many(void) {
    enum { N = 3000 };
    json_t *root = json_object();
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", i);
        json_object_set_new(root, name, json_pack("{ss s[i] s[ii]}", "dtype", "U8", "shape", 1, "data_offsets", i, i + 1));
    }
    char *hdr = json_dumps(root, JSON_COMPACT);
    uint8_t data[N];
    for (int i = 0; i < N; i++) data[i] = (uint8_t)tu_rand_u64(&g_rng);
    size_t len;
    uint8_t *img = image(hdr, data, N, &len);
    st_set *st = st_open_mem(img, len, "many");
    CHECKF(st != NULL, "many: %s", dl_errmsg());
    int bad = 0;
    for (int i = 0; st && i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", i);
        const st_tensor *t = st_find(st, name);
        if (!t || *(const uint8_t *)t->data != data[i]) bad++;
    }
    CHECK(bad == 0);
    st_close(st);
    free(img);
    free(hdr);
    json_decref(root);
}

static void write_index(const char *dir, spec *s, int n, const int *shard_of, const char *const *shards) {
    json_t *wm = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(wm, s[i].name, json_string(shards[shard_of[i]]));
    json_t *root = json_pack("{s{si}so}", "metadata", "total_size", 0, "weight_map", wm);
    char p[600];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    json_dump_file(root, p, JSON_INDENT(2));
    json_decref(root);
}

static void test_sharded(void) {
    int n = 12;
    spec s[12];
    make_specs(s, n);
    const char *shards[3] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                             "model-00003-of-00003.safetensors"};
    int shard_of[12], cut[4] = {0, 4, 9, 12};
    char *dir = fresh_dir("sharded");
    char dcopy[512], p[600];
    snprintf(dcopy, sizeof dcopy, "%s", dir);
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", dcopy, shards[k]);
        write_st(p, s, cut[k], cut[k + 1], k == 1);
        for (int i = cut[k]; i < cut[k + 1]; i++) shard_of[i] = k;
    }
    write_index(dcopy, s, n, shard_of, shards);
    st_set *st = st_open_dir(dcopy);
    check_set(st, s, n, "sharded index");
    if (st) {
        CHECK(st_file_count(st) == 3);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            const st_tensor *t = st_find(st, s[i].name);
            if (!t || !strstr(st_file_name(st, t->file), shards[shard_of[i]])) bad++;
        }
        CHECK(bad == 0);
    }
    st_close(st);

    /* glob fallback: no index, no model.safetensors -> every shard, sorted */
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dcopy);
    unlink(p);
    st = st_open_dir(dcopy);
    check_set(st, s, n, "glob");
    if (st) {
        CHECK(st_file_count(st) == 3);
        CHECK(strstr(st_file_name(st, 0), shards[0]) && strstr(st_file_name(st, 2), shards[2]));
    }
    st_close(st);

    /* duplicates across shards are refused */
    snprintf(p, sizeof p, "%s/zzz-extra.safetensors", dcopy);
    write_st(p, s, 2, 3, 0);
    dl_err_clear();
    st = st_open_dir(dcopy);
    CHECK(st == NULL);
    st_close(st);
    check_msg(s[2].name, "also appears in", "duplicate across shards");
    unlink(p);

    /* index naming a shard that does not exist */
    int so2[12];
    const char *shards2[4] = {shards[0], shards[1], shards[2], "model-00004-of-00003.safetensors"};
    memcpy(so2, shard_of, sizeof so2);
    so2[5] = 3;
    write_index(dcopy, s, n, so2, shards2);
    dl_err_clear();
    st = st_open_dir(dcopy);
    CHECK(st == NULL);
    st_close(st);
    check_msg("model.safetensors.index.json", "shard 'model-00004-of-00003.safetensors' does not exist", "missing shard");

    /* index naming a tensor absent from its shard */
    {
        spec extra[13];
        memcpy(extra, s, sizeof s);
        extra[12] = s[0];
        snprintf(extra[12].name, sizeof extra[12].name, "lm_head.weight");
        int so3[13];
        memcpy(so3, shard_of, sizeof shard_of);
        so3[12] = 2;
        write_index(dcopy, extra, 13, so3, shards);
        dl_err_clear();
        st = st_open_dir(dcopy);
        CHECK(st == NULL);
        st_close(st);
        check_msg("index.json", "tensor 'lm_head.weight' is mapped to 'model-00003-of-00003.safetensors', which has no such tensor",
                  "absent tensor");
    }

    /* index mapping a tensor to the wrong (existing) shard */
    memcpy(so2, shard_of, sizeof so2);
    so2[0] = 2;
    write_index(dcopy, s, n, so2, shards);
    dl_err_clear();
    st = st_open_dir(dcopy);
    CHECK(st == NULL);
    st_close(st);
    check_msg("index.json", "lives in", "wrong shard");

    /* path components in shard names are refused */
    const char *shards4[3] = {"../evil.safetensors", shards[1], shards[2]};
    write_index(dcopy, s, n, shard_of, shards4);
    dl_err_clear();
    st = st_open_dir(dcopy);
    CHECK(st == NULL);
    st_close(st);
    check_msg("index.json", "not a plain file name", "path in shard name");

    /* malformed index files */
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dcopy);
    const char *bad_idx[][2] = {{"{\"weight_map\": ", "not valid JSON"},
                                {"[1,2]", "not a JSON object"},
                                {"{\"metadata\": {}}", "missing 'weight_map'"},
                                {"{\"weight_map\": []}", "malformed 'weight_map'"},
                                {"{\"weight_map\": {}}", "'weight_map' is empty"},
                                {"{\"weight_map\": {\"a\": 3}}", "entry for 'a' is not a file name"}};
    for (size_t k = 0; k < sizeof bad_idx / sizeof bad_idx[0]; k++) {
        write_bytes(p, bad_idx[k][0], strlen(bad_idx[k][0]));
        dl_err_clear();
        st = st_open_dir(dcopy);
        CHECKF(st == NULL, "index '%s' accepted", bad_idx[k][0]);
        st_close(st);
        check_msg("index.json", bad_idx[k][1], bad_idx[k][0]);
    }

    /* a corrupt shard named by a good index: the shard's path is in the message */
    write_index(dcopy, s, n, shard_of, shards);
    snprintf(p, sizeof p, "%s/%s", dcopy, shards[1]);
    write_bytes(p, "\x08\0\0\0\0\0\0\0[]      ", 16);
    dl_err_clear();
    st = st_open_dir(dcopy);
    CHECK(st == NULL);
    st_close(st);
    check_msg(shards[1], "expected a JSON object", "corrupt shard");

    /* empty and missing directories */
    char *empty = fresh_dir("empty");
    dl_err_clear();
    st = st_open_dir(empty);
    CHECK(st == NULL);
    check_msg(empty, "no model.safetensors.index.json", "empty dir");
    dl_err_clear();
    st = st_open_dir("/nonexistent/dotlm/dir");
    CHECK(st == NULL);
    check_msg("/nonexistent/dotlm/dir", "cannot open directory", "missing dir");
    dl_err_clear();
    st = st_open_file("/nonexistent/x.safetensors");
    CHECK(st == NULL);
    check_msg("/nonexistent/x.safetensors", "cannot open", "missing file");
    free_specs(s, n);
}

static void test_bad_inputs(void) {
    /* too short, length past EOF, empty header */
    uint8_t tiny[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    expect_bad_img(tiny, 0, "0 bytes, shorter than the 8-byte header length", "empty file");
    expect_bad_img(tiny, 5, "5 bytes, shorter than the 8-byte header length", "5-byte file");
    uint8_t past[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_bad_img(past, 16, "header length 200 runs past the end of the file (16 bytes)", "length past EOF");
    uint8_t huge[12] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    expect_bad_img(huge, 12, "runs past the end of the file", "length 2^64-1");
    uint8_t zero[8] = {0};
    expect_bad_img(zero, 8, "header is empty", "zero header");

    /* header JSON */
    expect_bad("{\"a\": {", 0, "header is not valid JSON");
    expect_bad("[]", 0, "header is an array, expected a JSON object");
    expect_bad("\"x\"", 0, "header is not valid JSON"); /* jansson wants an object or array */
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, "names a tensor twice");
    expect_bad("{\"__metadata__\": [1]}", 0, "'__metadata__' is an array");
    expect_bad("{\"__metadata__\": {\"format\": 1}}", 0, "'__metadata__' entry 'format' is an integer");
    expect_bad("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "empty name");

    /* entries */
    expect_bad("{\"x.weight\": 3}", 0, "tensor 'x.weight': entry is an integer, expected an object");
    expect_bad("{\"x.weight\": {\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'x.weight': missing field 'dtype'");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'x.weight': missing field 'shape'");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'x.weight': missing field 'data_offsets'");
    expect_bad("{\"x.weight\": {\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "'dtype' is an integer");
    expect_bad("{\"x.weight\": {\"dtype\":\"Q4_K\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'Q4_K'");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4,
               "unexpected field 'extra'");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4, "'shape' is an integer");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1,\"2\"],\"data_offsets\":[0,8]}}", 8,
               "shape[1] is a string");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "shape[0] is a real");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[2,-2],\"data_offsets\":[0,16]}}", 16,
               "shape[1] is negative (-2)");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               "9 dimensions");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4,
               "element count overflows");
    expect_bad("{\"x.weight\": {\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,4]}}", 4,
               "element count overflows");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", 4,
               "'data_offsets' must be [begin, end]");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
               "'data_offsets' must be [begin, end]");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}", 4,
               "'data_offsets' must hold two integers");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "negative");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "end before they begin");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[0,4096]}}", 2048,
               "tensor 'x.weight': data_offsets [0, 4096] run past the end of the data section (2048 bytes)");
    expect_bad("{\"x.weight\": {\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8,
               "hold 8 bytes but F32 shape needs 16");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               12, "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    expect_bad("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}",
               8, "overlap");
    /* control characters in names stay out of the one-line message */
    expect_bad("{\"a\\nb\": 1}", 0, "tensor 'a?b'");

    /* accepted edge cases: zero-size tensors may share an offset; scalar */
    const char *ok = "{\"__metadata__\":{\"format\":\"pt\"},"
                     "\"e1\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
                     "\"e2\":{\"dtype\":\"BF16\",\"shape\":[5,0],\"data_offsets\":[4,4]},"
                     "\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    int32_t v = 123456;
    size_t len;
    uint8_t *img = image(ok, &v, 4, &len);
    st_set *st = st_open_mem(img, len, "ok");
    CHECKF(st != NULL, "edge cases refused: %s", dl_errmsg());
    if (st) {
        const st_tensor *t = st_find(st, "s");
        int32_t got = 0;
        if (t) memcpy(&got, t->data, 4);
        CHECK(t && t->ndim == 0 && t->nbytes == 4 && got == v);
        CHECK(st_count(st) == 3 && st_total_bytes(st) == 4);
    }
    st_close(st);
    free(img);
}

int main(void) {
    g_rng = tu_seed();
    snprintf(g_dir, sizeof g_dir, "/tmp/dotlm_st_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_roundtrip();
    test_many();
    test_sharded();
    test_bad_inputs();
    rm_tree(g_dir);
    return TEST_END();
}
