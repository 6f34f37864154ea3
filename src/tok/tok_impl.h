/* Private to src/tok: the tokenizer's internal structures shared by the
 * loader, the pre-tokenizer, the BPE model and the decoder. */
#pragma once
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok/tok.h"

/* ---- growable buffers ---- */
typedef struct {
    char *p;
    size_t n, cap;
} tok_buf;
int tok_buf_put(tok_buf *b, const void *data, size_t n);
void tok_buf_free(tok_buf *b);

typedef struct {
    int32_t *p;
    size_t n, cap;
} tok_ids;
int tok_ids_push(tok_ids *v, int32_t id);

/* ---- string -> id hash map (open addressing; keys are borrowed) ---- */
typedef struct {
    const char *k;
    uint32_t klen;
    int32_t v;
} tok_smap_ent;
typedef struct {
    tok_smap_ent *e; /* [cap], k == NULL means empty */
    size_t cap, n;
} tok_smap;
int tok_smap_init(tok_smap *m, size_t expect);
void tok_smap_free(tok_smap *m);
/* Insert or overwrite. key must outlive the map. */
int tok_smap_put(tok_smap *m, const char *k, uint32_t klen, int32_t v);
/* Value for key, or -1. */
int32_t tok_smap_get(const tok_smap *m, const char *k, size_t klen);

/* ---- (id, id) -> (rank, new id) map for BPE merges ---- */
typedef struct {
    uint64_t key; /* UINT64_MAX = empty */
    int32_t rank, new_id;
} tok_pmap_ent;
typedef struct {
    tok_pmap_ent *e;
    size_t cap, n;
} tok_pmap;
int tok_pmap_init(tok_pmap *m, size_t expect);
void tok_pmap_free(tok_pmap *m);
int tok_pmap_put(tok_pmap *m, int32_t a, int32_t b, int32_t rank, int32_t new_id);
/* Entry for pair (a, b), or NULL. */
const tok_pmap_ent *tok_pmap_get(const tok_pmap *m, int32_t a, int32_t b);

/* ---- GPT-2 byte <-> unicode table ---- */
/* Code point that byte b maps to (all < 324). */
uint32_t tok_byte_cp(unsigned b);
/* Byte for code point cp, or -1 when cp is not in the table. */
int tok_cp_byte(uint32_t cp);
/* Decode one UTF-8 code point at s (valid UTF-8 assumed); returns its length. */
int tok_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
int tok_utf8_put(uint32_t cp, char *out);
/* Offset of the first invalid byte of s, or n when s is valid UTF-8. */
size_t tok_utf8_check(const unsigned char *s, size_t n);
/* Append s to out, replacing every maximal ill-formed subsequence by U+FFFD
 * (the same as Rust's String::from_utf8_lossy). */
int tok_utf8_lossy(tok_buf *out, const unsigned char *s, size_t n);

/* ---- pipeline pieces ---- */
enum { TOK_NORM_NFC, TOK_NORM_NFD, TOK_NORM_NFKC, TOK_NORM_NFKD };
enum { TOK_SPLIT_REMOVED, TOK_SPLIT_ISOLATED, TOK_SPLIT_PREV, TOK_SPLIT_NEXT, TOK_SPLIT_CONTIG };
enum { TOK_PRE_SPLIT, TOK_PRE_BYTELEVEL };

typedef struct {
    int kind;             /* TOK_PRE_* */
    pcre2_code *re;       /* Split (a String pattern is compiled as a literal) */
    int behavior, invert; /* Split */
    int add_prefix_space, use_regex; /* ByteLevel (use_regex uses the GPT-2 pattern in re) */
} tok_pretok;

typedef struct {
    char *orig;    /* owned: content as written in tokenizer.json */
    char *content; /* what is matched: orig, or its normalized form (owned) */
    uint32_t len;  /* of content */
    uint32_t orig_len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
} tok_added;

#define TOK_CACHE_SLOTS 8192
#define TOK_CACHE_KEY 46
#define TOK_CACHE_IDS 10
typedef struct {
    uint8_t klen, nids; /* klen == 0: empty */
    char key[TOK_CACHE_KEY];
    int32_t ids[TOK_CACHE_IDS];
} tok_cache_ent;

struct tok_tokenizer {
    char *path; /* tokenizer.json path, for messages */
    int nids;   /* allocated size of the id tables */
    int vsize;  /* max id + 1 over vocab and added tokens */
    char **piece;         /* [nids] token string by id (NULL for holes) */
    uint32_t *piece_len;  /* [nids] */
    uint8_t *added_kind;  /* [nids] 0 normal, 1 added, 2 added+special, 3 special
                           * that HF's skip_special keeps (normalized text differs) */
    char *arena;          /* vocab strings storage */
    tok_smap vocab;       /* model vocab */
    tok_smap added_map;   /* added token content -> id */
    tok_pmap merges;
    int32_t byte_id[256]; /* id of the single byte-level char for each byte, -1 if absent */
    int ignore_merges, fuse_unk;
    int32_t unk_id;

    tok_added *added; /* [nadded], sorted by content length descending */
    int nadded;
    int any_normalized_added;

    int norm[8], nnorm; /* TOK_NORM_* sequence */
    tok_pretok pre[8];
    int npre;
    int dec_bytelevel; /* 1: ByteLevel decoder, 0: no decoder (join by " ") */

    pthread_mutex_t cache_mu;
    tok_cache_ent *cache; /* [TOK_CACHE_SLOTS] */

    int32_t bos_id, eos_id;
    char *bos_str, *eos_str, *chat_template;
};

/* Parse tokenizer.json (already loaded root) into t. */
struct json_t;
/* Normalize text with t's normalizer; *out malloc'd (caller frees). */
int tok_normalize(const tok_tokenizer *t, const char *s, size_t n, char **out, size_t *outn);
/* Run the pre-tokenizers over one segment and BPE every word into ids. */
int tok_encode_segment(const tok_tokenizer *t, const char *s, size_t n, tok_ids *ids);
/* BPE one pre-tokenized word (in the model's alphabet) into ids. */
int tok_bpe_word(const tok_tokenizer *t, const char *w, size_t n, tok_ids *ids);
/* Compile a regex pattern as HF's Split does (Oniguruma-like \s). */
pcre2_code *tok_re_compile(const char *pattern, int literal, char *err, size_t errcap);
/* Trailing bytes of s forming a valid but unfinished UTF-8 character (0..3). */
int tok_utf8_pending_tail(const unsigned char *s, size_t n);

/* tok_unidata.c (generated): PCRE2 class items to add to \p{L} / \p{N} / \d so
 * they match Oniguruma's, and the sorted code points HF's normalizer leaves
 * alone (unknown to its Unicode 9 tables). */
extern const char tok_unidata_L_extra[];
extern const char tok_unidata_N_extra[];
extern const char tok_unidata_Nd_extra[]; /* for \d */
extern const uint32_t tok_unidata_norm_inert[];
extern const int tok_unidata_norm_inert_n;
