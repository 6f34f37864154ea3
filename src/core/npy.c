#include "core/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape) {
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)shape[i],
                      (i + 1 < ndim) ? " " : "");
        count *= (size_t)shape[i];
    }
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    /* pad so that magic(6)+ver(2)+len(2)+header is a multiple of 64, ending in '\n' */
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    memset(hdr + n, ' ', (size_t)pad);
    n += pad;
    hdr[n++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return dl_err("%s: cannot open for writing: %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),
                             (unsigned char)(n >> 8)};
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n &&
             fwrite(data, sizeof(float), count, f) == count;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return dl_err("%s: write failed: %s", path, strerror(errno));
    return 0;
}

int npy_read_f32(const char *path, float **data, int *ndim, int64_t shape[8]) {
    FILE *f = fopen(path, "rb");
    if (!f) return dl_err("%s: cannot open: %s", path, strerror(errno));
    unsigned char pre[10];
    char hdr[4096];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        fclose(f);
        return dl_err("%s: not a version-1 .npy file", path);
    }
    size_t hl = pre[8] | (size_t)pre[9] << 8;
    if (hl >= sizeof hdr || fread(hdr, 1, hl, f) != hl) {
        fclose(f);
        return dl_err("%s: bad .npy header", path);
    }
    hdr[hl] = 0;
    if (!strstr(hdr, "'<f4'") || strstr(hdr, "'fortran_order': True")) {
        fclose(f);
        return dl_err("%s: only little-endian float32 C-order arrays are supported", path);
    }
    char *p = strstr(hdr, "'shape': (");
    if (!p) {
        fclose(f);
        return dl_err("%s: .npy header has no shape", path);
    }
    p += 10;
    *ndim = 0;
    size_t count = 1;
    while (*p && *p != ')' && *ndim < 8) {
        char *e;
        long long v = strtoll(p, &e, 10);
        if (e == p) break;
        shape[(*ndim)++] = v;
        count *= (size_t)v;
        p = e;
        while (*p == ',' || *p == ' ') p++;
    }
    *data = malloc(count * sizeof(float) + 1);
    if (!*data || fread(*data, sizeof(float), count, f) != count) {
        free(*data);
        *data = NULL;
        fclose(f);
        return dl_err("%s: truncated .npy data", path);
    }
    fclose(f);
    return 0;
}
