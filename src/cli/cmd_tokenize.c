/* dotlm tokenize DIR: JSON-string lines on stdin -> space-separated ids on
 * stdout (no BOS; special tokens in the text are parsed). With --decode the
 * reverse: lines of ids -> JSON strings of the decoded text. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/err.h"
#include "tok/tok.h"

static void usage(FILE *f) {
    fprintf(f, "usage: dotlm tokenize DIR [--decode] [--skip-special] < input\n"
               "  Reads DIR/tokenizer.json. Each stdin line is a JSON string; prints one line\n"
               "  of space-separated token ids per input (no BOS is added; special tokens\n"
               "  written in the text, e.g. <|im_start|>, become their ids).\n"
               "  --decode        each stdin line is space-separated ids; prints the decoded\n"
               "                  text as a JSON string per line\n"
               "  --skip-special  with --decode: drop special tokens\n");
}

static int encode_line(const tok_tokenizer *t, const char *line, size_t n, long lineno) {
    json_error_t je;
    json_t *j = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j || !json_is_string(j)) {
        fprintf(stderr, "dotlm tokenize: line %ld: expected a JSON string%s%s\n", lineno, j ? "" : ": ",
                j ? "" : je.text);
        json_decref(j);
        return -1;
    }
    int32_t *ids;
    int k = tok_encode(t, json_string_value(j), json_string_length(j), &ids);
    json_decref(j);
    if (k < 0) {
        fprintf(stderr, "dotlm tokenize: line %ld: %s\n", lineno, dl_errmsg());
        return -1;
    }
    for (int i = 0; i < k; i++) printf(i ? " %d" : "%d", ids[i]);
    putchar('\n');
    free(ids);
    return 0;
}

static int decode_line(const tok_tokenizer *t, const char *line, long lineno, int skip_special) {
    size_t cap = strlen(line) / 2 + 1, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ' ' && *end != '\t')) {
            fprintf(stderr, "dotlm tokenize: line %ld: expected space-separated token ids\n", lineno);
            free(ids);
            return -1;
        }
        if (n == cap) { /* cannot happen: each id takes >= 2 chars incl. separator */
            free(ids);
            return -1;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    size_t len = 0;
    char *s = tok_decode_len(t, ids, n, skip_special, &len);
    free(ids);
    if (!s) {
        fprintf(stderr, "dotlm tokenize: line %ld: %s\n", lineno, dl_errmsg());
        return -1;
    }
    json_t *j = json_stringn(s, len);
    free(s);
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    json_decref(j);
    if (!out) {
        fprintf(stderr, "dotlm tokenize: line %ld: cannot encode the decoded text as JSON\n", lineno);
        return -1;
    }
    puts(out);
    free(out);
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *dir = NULL;
    int decode = 0, skip_special = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--decode")) decode = 1;
        else if (!strcmp(argv[i], "--skip-special")) skip_special = 1;
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "dotlm tokenize: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else dir = argv[i];
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    tok_tokenizer *t = tok_load(dir);
    if (!t) {
        fprintf(stderr, "dotlm tokenize: %s\n", dl_errmsg());
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (decode ? decode_line(t, line, lineno, skip_special) : encode_line(t, line, (size_t)n, lineno)) {
            rc = 1;
            break;
        }
    }
    free(line);
    tok_free(t);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
