/* Model directories: a sharded set described by model.safetensors.index.json,
 * a single model.safetensors, or (fallback) every *.safetensors file. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "io/safetensors_int.h"

static char *st_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

static int st_is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int st_strcmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Index of `name` in shards[0..n) or -1. Shard lists are short (<1000). */
static int st_shard_pos(char **shards, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(shards[i], name)) return i;
    return -1;
}

/* Open the shards named by the index at `ipath` (inside `dir`) and check that
 * every weight_map entry is in the shard it names. */
static st_set *st_open_index(const char *dir, const char *ipath) {
    json_error_t je;
    json_t *root = json_load_file(ipath, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        dl_err("%s: not valid JSON: %s (line %d)", ipath, je.text, je.line);
        return NULL;
    }
    st_set *s = NULL;
    char **shards = NULL;
    int n_shards = 0;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(root)) {
        dl_err("%s: not a JSON object", ipath);
        goto fail;
    }
    if (!json_is_object(wm)) {
        dl_err("%s: %s 'weight_map' object", ipath, wm ? "malformed" : "missing");
        goto fail;
    }
    if (json_object_size(wm) == 0) {
        dl_err("%s: 'weight_map' is empty", ipath);
        goto fail;
    }
    shards = calloc(json_object_size(wm), sizeof *shards);
    if (!shards) {
        dl_err("%s: out of memory", ipath);
        goto fail;
    }
    const char *name;
    json_t *v;
    json_object_foreach(wm, name, v) {
        if (!json_is_string(v) || !*json_string_value(v)) {
            dl_err("%s: weight_map entry for '%s' is not a file name", ipath, name);
            goto fail;
        }
        const char *f = json_string_value(v);
        if (strchr(f, '/') || !strcmp(f, "..") || !strcmp(f, ".")) {
            dl_err("%s: weight_map entry for '%s' names '%s', which is not a plain file name", ipath,
                   name, f);
            goto fail;
        }
        if (st_shard_pos(shards, n_shards, f) < 0) shards[n_shards++] = (char *)f;
    }
    qsort(shards, (size_t)n_shards, sizeof *shards, st_strcmp);
    if (!(s = st__new())) goto fail;
    for (int i = 0; i < n_shards; i++) {
        char *p = st_join(dir, shards[i]);
        if (!p) {
            dl_err("%s: out of memory", ipath);
            goto fail;
        }
        if (!st_is_file(p)) {
            dl_err("%s: shard '%s' does not exist (%s)", ipath, shards[i], p);
            free(p);
            goto fail;
        }
        int rc = st__add_file(s, p);
        free(p);
        if (rc) goto fail;
    }
    if (st__index(s)) goto fail;
    json_object_foreach(wm, name, v) {
        const char *f = json_string_value(v);
        const st_tensor *t = st_find(s, name);
        if (!t) {
            dl_err("%s: tensor '%s' is mapped to '%s', which has no such tensor", ipath, name, f);
            goto fail;
        }
        int want = st_shard_pos(shards, n_shards, f);
        if (t->file != want) {
            dl_err("%s: tensor '%s' is mapped to '%s' but lives in %s", ipath, name, f,
                   st_file_name(s, t->file));
            goto fail;
        }
    }
    free(shards);
    json_decref(root);
    return s;
fail:
    st_close(s);
    free(shards);
    json_decref(root);
    return NULL;
}

/* Every regular *.safetensors file in `dir`, sorted by name. */
static st_set *st_open_glob(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        dl_err("%s: cannot open directory: %s", dir, strerror(errno));
        return NULL;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    st_set *s = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= 12 || strcmp(de->d_name + l - 12, ".safetensors")) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) goto oom;
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) goto oom;
        n++;
    }
    closedir(d);
    d = NULL;
    if (!n) {
        dl_err("%s: no model.safetensors.index.json, model.safetensors or *.safetensors file", dir);
        goto out;
    }
    qsort(names, n, sizeof *names, st_strcmp);
    if (!(s = st__new())) goto out;
    for (size_t i = 0; i < n; i++) {
        char *p = st_join(dir, names[i]);
        if (!p) goto oom;
        int rc = st_is_file(p) ? st__add_file(s, p) : 0;
        free(p);
        if (rc) goto fail;
    }
    if (!s->n_files) {
        dl_err("%s: no regular *.safetensors file", dir);
        goto fail;
    }
    if (st__index(s)) goto fail;
    goto out;
oom:
    dl_err("%s: out of memory", dir);
fail:
    st_close(s);
    s = NULL;
out:
    if (d) closedir(d);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
}

st_set *st_open_dir(const char *dir) {
    char *p = st_join(dir, "model.safetensors.index.json");
    if (!p) {
        dl_err("%s: out of memory", dir);
        return NULL;
    }
    st_set *s;
    if (st_is_file(p)) {
        s = st_open_index(dir, p);
        free(p);
        return s;
    }
    free(p);
    if (!(p = st_join(dir, "model.safetensors"))) {
        dl_err("%s: out of memory", dir);
        return NULL;
    }
    if (st_is_file(p)) s = st_open_file(p);
    else s = st_open_glob(dir);
    free(p);
    return s;
}
