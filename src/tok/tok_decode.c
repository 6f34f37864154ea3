/* Decoding ids back to text (HF ByteLevel decoder + from_utf8_lossy) and the
 * streaming decoder that holds back an unfinished UTF-8 character. */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "tok/tok_impl.h"

/* Append the bytes of token id: each character mapped back through the
 * byte-level table; a token with any character outside the table is taken
 * as its raw UTF-8 (what HF's ByteLevel decoder does). */
static int token_bytes(const tok_tokenizer *t, int32_t id, tok_buf *out) {
    const char *p = t->piece[id];
    size_t n = t->piece_len[id], start = out->n;
    if (!t->dec_bytelevel) return tok_buf_put(out, p, n);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)tok_utf8_next((const unsigned char *)p + i, n - i, &cp);
        int b = tok_cp_byte(cp);
        if (b < 0) {
            out->n = start;
            return tok_buf_put(out, p, n);
        }
        unsigned char c = (unsigned char)b;
        if (tok_buf_put(out, &c, 1) < 0) return -1;
    }
    return 0;
}

static int keep(const tok_tokenizer *t, int32_t id, int skip_special) {
    if (id < 0 || id >= t->nids || !t->piece[id]) return 0; /* unknown ids are dropped, as in HF */
    return !(skip_special && t->added_kind[id] == 2);
}

char *tok_decode_len(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special, size_t *out_len) {
    tok_buf raw = {0}, out = {0};
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (!keep(t, ids[i], skip_special)) continue;
        if (!t->dec_bytelevel && !first && tok_buf_put(&raw, " ", 1) < 0) goto fail;
        first = 0;
        if (token_bytes(t, ids[i], &raw) < 0) goto fail;
    }
    if (tok_utf8_lossy(&out, (const unsigned char *)raw.p, raw.n) < 0) goto fail;
    tok_buf_free(&raw);
    if (!out.p && tok_buf_put(&out, "", 0) < 0) goto fail;
    if (out_len) *out_len = out.n;
    return out.p;
fail:
    tok_buf_free(&raw);
    tok_buf_free(&out);
    return NULL;
}

char *tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special) {
    return tok_decode_len(t, ids, n, skip_special, NULL);
}

void tok_stream_init(tok_stream *s, const tok_tokenizer *t, int skip_special) {
    memset(s, 0, sizeof *s);
    s->t = t;
    s->skip_special = skip_special;
}

/* Copy buf to out (cap incl. NUL); -1 when it does not fit. */
static int emit(const tok_buf *b, char *out, size_t cap) {
    if (b->n + 1 > cap) return dl_err("tokenizer: stream output buffer too small (%zu < %zu)", cap, b->n + 1);
    if (b->n) memcpy(out, b->p, b->n);
    out[b->n] = 0;
    return (int)b->n;
}

int tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap) {
    const tok_tokenizer *t = s->t;
    if (!keep(t, id, s->skip_special)) {
        if (cap) out[0] = 0;
        return cap ? 0 : -1;
    }
    tok_buf raw = {0}, txt = {0};
    int rc = -1;
    if (tok_buf_put(&raw, s->pend, (size_t)s->npend) < 0 || token_bytes(t, id, &raw) < 0) goto done;
    int tail = tok_utf8_pending_tail((const unsigned char *)raw.p, raw.n);
    size_t body = raw.n - (size_t)tail;
    if (tok_utf8_lossy(&txt, (const unsigned char *)raw.p, body) < 0) goto done;
    if (!txt.p && tok_buf_put(&txt, "", 0) < 0) goto done;
    rc = emit(&txt, out, cap);
    if (rc >= 0) {
        memcpy(s->pend, raw.p + body, (size_t)tail);
        s->npend = tail;
    }
done:
    tok_buf_free(&raw);
    tok_buf_free(&txt);
    return rc;
}

int tok_stream_flush(tok_stream *s, char *out, size_t cap) {
    tok_buf txt = {0};
    int rc = -1;
    if (tok_utf8_lossy(&txt, s->pend, (size_t)s->npend) < 0) goto done;
    if (!txt.p && tok_buf_put(&txt, "", 0) < 0) goto done;
    rc = emit(&txt, out, cap);
    if (rc >= 0) s->npend = 0;
done:
    tok_buf_free(&txt);
    return rc;
}
