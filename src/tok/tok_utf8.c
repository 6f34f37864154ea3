/* UTF-8 helpers and the GPT-2 byte <-> unicode table used by byte-level BPE. */
#include <string.h>

#include "tok/tok_impl.h"

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the other
 * 68 bytes map, in byte order, to U+0100 and up. */
static uint32_t g_byte_cp[256];
static int16_t g_cp_byte[324];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_tables(void) {
    uint32_t next = 256;
    for (int i = 0; i < 324; i++) g_cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        g_byte_cp[b] = keep ? (uint32_t)b : next++;
        g_cp_byte[g_byte_cp[b]] = (int16_t)b;
    }
}

uint32_t tok_byte_cp(unsigned b) {
    pthread_once(&g_once, init_tables);
    return g_byte_cp[b & 255];
}

int tok_cp_byte(uint32_t cp) {
    pthread_once(&g_once, init_tables);
    return cp < 324 ? g_cp_byte[cp] : -1;
}

int tok_utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80 || n < 2) { *cp = c; return 1; }
    if (c < 0xE0) { *cp = ((c & 0x1F) << 6) | (s[1] & 0x3F); return 2; }
    if (c < 0xF0 || n < 4) {
        if (n < 3) { *cp = c; return 1; }
        *cp = ((c & 0x0F) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3F);
        return 3;
    }
    *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3F);
    return 4;
}

int tok_utf8_put(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | (cp >> 6)); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Classify the sequence starting at s[0] (n >= 1) following the Unicode
 * well-formedness table: returns L > 0 for a complete valid character of L
 * bytes, or -L for a maximal ill-formed subpart of L bytes; *incomplete is
 * set when that subpart is only ill-formed because the input ends. */
static int utf8_scan(const unsigned char *s, size_t n, int *incomplete) {
    unsigned c = s[0];
    *incomplete = 0;
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return -1;
    for (int k = 1; k < len; k++) {
        if ((size_t)k >= n) { *incomplete = 1; return -k; }
        unsigned b = s[k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return -k;
    }
    return len;
}

size_t tok_utf8_check(const unsigned char *s, size_t n) {
    size_t i = 0;
    int inc;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        int r = utf8_scan(s + i, n - i, &inc);
        if (r < 0) return i;
        i += (size_t)r;
    }
    return n;
}

int tok_utf8_lossy(tok_buf *out, const unsigned char *s, size_t n) {
    static const char fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    size_t i = 0, run = 0; /* run: start of the pending valid stretch */
    int inc;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        int r = utf8_scan(s + i, n - i, &inc);
        if (r > 0) { i += (size_t)r; continue; }
        if (tok_buf_put(out, s + run, i - run) < 0 || tok_buf_put(out, fffd, 3) < 0) return -1;
        i += (size_t)-r;
        run = i;
    }
    return tok_buf_put(out, s + run, n - run);
}

/* Number of trailing bytes of s that start a valid but unfinished character
 * (0..3): the streaming decoder holds them back. */
int tok_utf8_pending_tail(const unsigned char *s, size_t n) {
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned c = s[n - back];
        if (c >= 0x80 && c < 0xC0) continue; /* continuation byte: look further back */
        int inc, r = utf8_scan(s + n - back, back, &inc);
        return (r < 0 && inc) ? (int)back : 0;
    }
    return 0;
}
