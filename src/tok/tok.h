/* Byte-level BPE tokenizer read from a Hugging Face tokenizer.json
 * (Qwen2/Qwen3, Llama 3 and compatible). Reproduces HF `tokenizers` ids. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct tok_tokenizer tok_tokenizer;

/* Load dir/tokenizer.json (and dir/tokenizer_config.json when present for
 * bos/eos/chat-template names). NULL + dl_errmsg() on failure. */
tok_tokenizer *tok_load(const char *dir);
void tok_free(tok_tokenizer *t);

/* Encode UTF-8 text (invalid UTF-8 is an error). Added/special tokens in the text are matched (as HF does
 * with add_special_tokens=False: no BOS is prepended). Returns the number of
 * ids written into a malloc'd *ids (caller frees), or -1. */
int tok_encode(const tok_tokenizer *t, const char *text, size_t len, int32_t **ids);
/* Vocabulary size (max id + 1 over vocab and added tokens). */
int tok_vocab_size(const tok_tokenizer *t);
/* The raw token string (byte-level alphabet for normal tokens, content for
 * added tokens); NULL if out of range. */
const char *tok_piece(const tok_tokenizer *t, int32_t id);
/* Id of an exact token string (vocab or added), -1 if absent. */
int32_t tok_find(const tok_tokenizer *t, const char *piece);
/* 1 if id is an added token marked special. */
int tok_is_special(const tok_tokenizer *t, int32_t id);

/* From tokenizer_config.json (NULL / -1 when absent): bos/eos token strings
 * and ids, and the chat template source (the "default" one when a list). */
int32_t tok_bos_id(const tok_tokenizer *t);
int32_t tok_eos_id(const tok_tokenizer *t);
const char *tok_bos_str(const tok_tokenizer *t);
const char *tok_eos_str(const tok_tokenizer *t);
const char *tok_chat_template(const tok_tokenizer *t);

/* Decode ids to UTF-8 (skip_special: drop special tokens; unknown ids are
 * dropped as HF does). Returns malloc'd
 * NUL-terminated string. Invalid UTF-8 is replaced by U+FFFD as HF does. */
char *tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special);
/* Same, and *out_len receives the byte length (the text may contain NULs). */
char *tok_decode_len(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special, size_t *out_len);

/* Streaming decoder: feed ids one at a time and get the text that is complete.
 * Bytes of an incomplete UTF-8 sequence are held until the next token. */
typedef struct {
    const tok_tokenizer *t;
    unsigned char pend[8];
    int npend;
    int skip_special;
} tok_stream;
void tok_stream_init(tok_stream *s, const tok_tokenizer *t, int skip_special);
/* Append the newly completed text for `id` to out (cap bytes incl NUL);
 * returns bytes written (excluding NUL) or -1 if cap too small. */
int tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap);
/* Flush held bytes (as U+FFFD) at end of stream. */
int tok_stream_flush(tok_stream *s, char *out, size_t cap);
