/* safetensors reader: header validation, the tensor set, name lookups.
 *
 * A file is `u64 header_len (LE) | header JSON (header_len bytes) | data`.
 * The header maps tensor names to {dtype, shape, data_offsets}, offsets being
 * relative to the start of the data section. Nothing in the header is trusted:
 * every field is type-checked, sizes are computed with overflow checks and
 * compared against the data section, and tensors may not overlap. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "io/cfg_json.h"
#include "io/safetensors_int.h"

/* Copy `s` into `buf` for a message: at most ~120 bytes, control characters
 * replaced so the error stays on one line. */
static const char *st_printable(const char *s, char *buf, size_t cap) {
    size_t i = 0;
    for (; s[i] && i + 4 < cap && i < 120; i++)
        buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    if (s[i]) {
        buf[i++] = '.';
        buf[i++] = '.';
        buf[i++] = '.';
    }
    buf[i] = 0;
    return buf;
}

/* "label: tensor 'name': <fmt>"; returns -1. */
__attribute__((format(printf, 3, 4))) static int st_terr(const char *label, const char *name,
                                                         const char *fmt, ...) {
    char msg[512], nb[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dl_err("%s: tensor '%s': %s", label, st_printable(name, nb, sizeof nb), msg);
}

st_set *st__new(void) {
    st_set *s = calloc(1, sizeof *s);
    if (!s) dl_err("safetensors: out of memory");
    return s;
}

static int st_push_file(st_set *s, const char *path, void *map, size_t len) {
    if (s->n_files == s->cap_files) {
        int cap = s->cap_files ? s->cap_files * 2 : 4;
        st_file *f = realloc(s->files, (size_t)cap * sizeof *f);
        if (!f) return dl_err("%s: out of memory", path);
        s->files = f;
        s->cap_files = cap;
    }
    char *p = strdup(path);
    if (!p) return dl_err("%s: out of memory", path);
    s->files[s->n_files++] = (st_file){p, map, len};
    return s->n_files - 1;
}

static int st_push_tensor(st_set *s, const st_tensor *t, const char *label) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        st_tensor *nt = realloc(s->tensors, cap * sizeof *nt);
        if (!nt) return dl_err("%s: out of memory", label);
        s->tensors = nt;
        s->cap = cap;
    }
    s->tensors[s->n++] = *t;
    return 0;
}

/* __metadata__ must be an object whose values are all strings. */
static int st_check_metadata(const json_t *v, const char *label) {
    if (!json_is_object(v))
        return dl_err("%s: '__metadata__' is %s, expected an object of strings", label,
                      cj_kind(v));
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e) {
        if (!json_is_string(e)) {
            char kb[128];
            return dl_err("%s: '__metadata__' entry '%s' is %s, expected a string", label,
                          st_printable(k, kb, sizeof kb), cj_kind(e));
        }
    }
    return 0;
}

/* Validate one header entry and fill `t` (name not yet set). `data_len` is
 * the size of the data section, `data` its start. */
static int st_parse_entry(const char *label, const char *name, const json_t *v,
                          const uint8_t *data, size_t data_len, st_tensor *t) {
    if (!*name) return dl_err("%s: header has a tensor with an empty name", label);
    if (!json_is_object(v)) return st_terr(label, name, "entry is %s, expected an object", cj_kind(v));
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)v, k, e) {
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets")) {
            char kb[128];
            return st_terr(label, name, "unexpected field '%s'", st_printable(k, kb, sizeof kb));
        }
    }
    /* dtype */
    json_t *jd = json_object_get(v, "dtype");
    if (!jd) return st_terr(label, name, "missing field 'dtype'");
    if (!json_is_string(jd)) return st_terr(label, name, "'dtype' is %s, expected a string", cj_kind(jd));
    if (dt_parse(json_string_value(jd), &t->dtype)) {
        char db[128];
        return st_terr(label, name, "unknown dtype '%s'", st_printable(json_string_value(jd), db, sizeof db));
    }
    /* shape */
    json_t *js = json_object_get(v, "shape");
    if (!js) return st_terr(label, name, "missing field 'shape'");
    if (!json_is_array(js)) return st_terr(label, name, "'shape' is %s, expected an array", cj_kind(js));
    size_t nd = json_array_size(js);
    if (nd > ST_MAX_DIMS) return st_terr(label, name, "shape has %zu dimensions (at most %d supported)", nd, ST_MAX_DIMS);
    t->ndim = (int)nd;
    size_t elems = 1;
    int overflow = 0;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(js, i);
        if (!json_is_integer(d))
            return st_terr(label, name, "shape[%zu] is %s, expected an integer", i, cj_kind(d));
        json_int_t x = json_integer_value(d);
        if (x < 0) return st_terr(label, name, "shape[%zu] is negative (%lld)", i, (long long)x);
        t->shape[i] = (int64_t)x;
        if (x != 0 && elems > SIZE_MAX / (size_t)x) overflow = 1;
        else elems *= (size_t)x;
    }
    for (size_t i = nd; i < ST_MAX_DIMS; i++) t->shape[i] = 0;
    size_t esz = dt_size(t->dtype);
    /* A zero dimension makes the product 0 even if other dims overflowed. */
    for (size_t i = 0; i < nd; i++)
        if (t->shape[i] == 0) overflow = 0, elems = 0;
    if (overflow || elems > SIZE_MAX / esz)
        return st_terr(label, name, "shape's element count overflows");
    size_t want = elems * esz;
    /* data_offsets */
    json_t *jo = json_object_get(v, "data_offsets");
    if (!jo) return st_terr(label, name, "missing field 'data_offsets'");
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return st_terr(label, name, "'data_offsets' must be [begin, end] (got %s%s)", cj_kind(jo),
                       json_is_array(jo) ? " of the wrong length" : "");
    json_t *jb = json_array_get(jo, 0), *je = json_array_get(jo, 1);
    if (!json_is_integer(jb) || !json_is_integer(je))
        return st_terr(label, name, "'data_offsets' must hold two integers");
    json_int_t b = json_integer_value(jb), en = json_integer_value(je);
    if (b < 0 || en < 0) return st_terr(label, name, "data_offsets [%lld, %lld] are negative", (long long)b, (long long)en);
    if (en < b) return st_terr(label, name, "data_offsets [%lld, %lld] end before they begin", (long long)b, (long long)en);
    if ((unsigned long long)en > data_len)
        return st_terr(label, name, "data_offsets [%lld, %lld] run past the end of the data section (%zu bytes)",
                       (long long)b, (long long)en, data_len);
    size_t have = (size_t)(en - b);
    if (have != want)
        return st_terr(label, name, "data_offsets [%lld, %lld] hold %zu bytes but %s shape needs %zu",
                       (long long)b, (long long)en, have, dt_name(t->dtype), want);
    t->data = data + b;
    t->nbytes = have;
    return 0;
}

typedef struct {
    size_t begin, end, idx;
} st_span;

static int st_span_cmp(const void *a, const void *b) {
    const st_span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Reject overlapping byte ranges among tensors [first, s->n) of one file.
 * Zero-byte tensors occupy nothing and never overlap. */
static int st_check_overlap(st_set *s, size_t first, const uint8_t *data, const char *label) {
    size_t m = s->n - first, k = 0;
    if (m < 2) return 0;
    st_span *sp = malloc(m * sizeof *sp);
    if (!sp) return dl_err("%s: out of memory", label);
    for (size_t i = first; i < s->n; i++) {
        const st_tensor *t = &s->tensors[i];
        if (!t->nbytes) continue;
        size_t b = (size_t)((const uint8_t *)t->data - data);
        sp[k++] = (st_span){b, b + t->nbytes, i};
    }
    qsort(sp, k, sizeof *sp, st_span_cmp);
    int rc = 0;
    for (size_t i = 1; i < k; i++) {
        if (sp[i].begin < sp[i - 1].end) {
            char n1[128], n2[128];
            rc = dl_err("%s: tensors '%s' [%zu, %zu] and '%s' [%zu, %zu] overlap", label,
                        st_printable(s->tensors[sp[i - 1].idx].name, n1, sizeof n1), sp[i - 1].begin,
                        sp[i - 1].end, st_printable(s->tensors[sp[i].idx].name, n2, sizeof n2),
                        sp[i].begin, sp[i].end);
            break;
        }
    }
    free(sp);
    return rc;
}

/* Parse the image `buf` (len bytes) of shard `file` and append its tensors. */
static int st_parse(st_set *s, int file, const uint8_t *buf, size_t len, const char *label) {
    if (len < 8) return dl_err("%s: file is %zu bytes, shorter than the 8-byte header length", label, len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > len - 8)
        return dl_err("%s: header length %llu runs past the end of the file (%zu bytes)", label,
                      (unsigned long long)hlen, len);
    if (hlen == 0) return dl_err("%s: header is empty (length 0)", label);
    json_error_t je;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (json_error_code(&je) == json_error_duplicate_key)
            return dl_err("%s: header names a tensor twice (%s, at byte %d)", label, je.text, je.position);
        return dl_err("%s: header is not valid JSON: %s (at byte %d)", label, je.text, je.position);
    }
    if (!json_is_object(root)) {
        int rc = dl_err("%s: header is %s, expected a JSON object", label, cj_kind(root));
        json_decref(root);
        return rc;
    }
    const uint8_t *data = buf + 8 + hlen;
    size_t data_len = len - 8 - (size_t)hlen;
    size_t first = s->n;
    const char *name;
    json_t *v;
    int rc = 0;
    json_object_foreach(root, name, v) {
        if (!strcmp(name, "__metadata__")) {
            if ((rc = st_check_metadata(v, label))) break;
            continue;
        }
        st_tensor t = {0};
        if ((rc = st_parse_entry(label, name, v, data, data_len, &t))) break;
        t.file = file;
        t.name = strdup(name);
        if (!t.name) {
            rc = dl_err("%s: out of memory", label);
            break;
        }
        if ((rc = st_push_tensor(s, &t, label))) {
            free((char *)t.name);
            break;
        }
    }
    json_decref(root);
    if (!rc) rc = st_check_overlap(s, first, data, label);
    return rc;
}

static uint64_t st_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int st__index(st_set *s) {
    size_t ns = 16;
    while (ns < 2 * s->n) ns *= 2;
    free(s->slots);
    s->slots = calloc(ns, sizeof *s->slots);
    s->n_slots = 0;
    if (!s->slots) return dl_err("safetensors: out of memory");
    for (size_t i = 0; i < s->n; i++) {
        const st_tensor *t = &s->tensors[i];
        size_t j = (size_t)st_hash(t->name) & (ns - 1);
        for (; s->slots[j]; j = (j + 1) & (ns - 1)) {
            const st_tensor *o = &s->tensors[s->slots[j] - 1];
            if (!strcmp(o->name, t->name)) {
                char nb[128];
                free(s->slots);
                s->slots = NULL;
                return dl_err("%s: tensor '%s' also appears in %s", s->files[t->file].path,
                              st_printable(t->name, nb, sizeof nb), s->files[o->file].path);
            }
        }
        s->slots[j] = i + 1;
    }
    s->n_slots = ns;
    return 0;
}

int st__add_file(st_set *s, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return dl_err("%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return dl_err("%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return dl_err("%s: not a regular file", path);
    }
    size_t len = (size_t)sb.st_size;
    if (len < 8) {
        close(fd);
        return dl_err("%s: file is %zu bytes, shorter than the 8-byte header length", path, len);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return dl_err("%s: cannot map: %s", path, strerror(e));
    int idx = st_push_file(s, path, map, len);
    if (idx < 0) {
        munmap(map, len);
        return -1;
    }
    return st_parse(s, idx, map, len, path);
}

st_set *st_open_file(const char *path) {
    st_set *s = st__new();
    if (!s) return NULL;
    if (st__add_file(s, path) || st__index(s)) {
        st_close(s);
        return NULL;
    }
    return s;
}

st_set *st_open_mem(const void *buf, size_t len, const char *label) {
    if (!label) label = "<memory>";
    st_set *s = st__new();
    if (!s) return NULL;
    int idx = st_push_file(s, label, NULL, 0);
    if (idx < 0 || st_parse(s, idx, buf, len, label) || st__index(s)) {
        st_close(s);
        return NULL;
    }
    return s;
}

void st_close(st_set *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free((char *)s->tensors[i].name);
    for (int i = 0; i < s->n_files; i++) {
        if (s->files[i].map) munmap(s->files[i].map, s->files[i].map_len);
        free(s->files[i].path);
    }
    free(s->tensors);
    free(s->files);
    free(s->slots);
    free(s);
}

size_t st_count(const st_set *s) { return s->n; }

const st_tensor *st_at(const st_set *s, size_t i) { return i < s->n ? &s->tensors[i] : NULL; }

const st_tensor *st_find(const st_set *s, const char *name) {
    if (!s->n_slots) return NULL;
    size_t mask = s->n_slots - 1;
    for (size_t j = (size_t)st_hash(name) & mask; s->slots[j]; j = (j + 1) & mask) {
        const st_tensor *t = &s->tensors[s->slots[j] - 1];
        if (!strcmp(t->name, name)) return t;
    }
    return NULL;
}

size_t st_total_bytes(const st_set *s) {
    size_t sum = 0;
    for (size_t i = 0; i < s->n; i++) sum += s->tensors[i].nbytes;
    return sum;
}

const char *st_file_name(const st_set *s, int i) {
    return (i >= 0 && i < s->n_files) ? s->files[i].path : "?";
}

int st_file_count(const st_set *s) { return s->n_files; }
