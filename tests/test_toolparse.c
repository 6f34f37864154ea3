/* Incremental tool-call parser (srv_toolparse.c): streamed arguments.
 * Random outputs mixing content, think blocks, streamed calls with nested
 * arguments (strings holding brackets, quotes, '<'), calls that close whole,
 * malformed blocks and a call cut off at the end are fed whole, byte by
 * byte and in random splits: every split must give the same deltas, and
 * they must match what the text says (arguments verbatim). Then the
 * individual contracts: when the first delta and each fragment come out,
 * what is held back, forced openings (named / "required"), and calls that
 * turn malformed after fragments were sent. */
#include <stdlib.h>
#include <string.h>

#include "server/srv_toolparse.h"
#include "srv_acc.h"
#include "testutil.h"

static uint64_t rng;
static int rnd(int n) { return (int)(tu_rand_u64(&rng) % (uint64_t)n); }

static int buf_eq(const srv_buf *a, const srv_buf *b) {
    return a->n == b->n && (!a->n || !memcmp(a->p, b->p, a->n));
}

static int acc_eq(const acc *a, const acc *b) {
    return buf_eq(&a->content, &b->content) && buf_eq(&a->reasoning, &b->reasoning) &&
           buf_eq(&a->names, &b->names) && buf_eq(&a->args, &b->args) && a->ncalls == b->ncalls &&
           a->broken == b->broken && !a->bad_index && !b->bad_index;
}

static const char *str(const srv_buf *b) { return b->p ? b->p : ""; }

/* Parse text fed in pieces of 1..maxc bytes (0 = all at once). */
static void run(const char *text, size_t n, int reasoning, int force, const char *fname, json_t *names,
                int maxc, acc *out) {
    srv_parser p;
    srv_parse_out o = {0};
    srv_parser_init(&p, reasoning, 1, 0);
    p.names = names;
    if (force) srv_parser_force(&p, fname, &o);
    take(out, &o);
    for (size_t pos = 0; pos < n;) {
        size_t c = maxc ? 1 + (size_t)rnd(maxc) : n;
        if (pos + c > n) c = n - pos;
        srv_parser_feed(&p, text + pos, c, &o);
        take(out, &o);
        pos += c;
    }
    srv_parser_finish(&p, &o);
    take(out, &o);
    srv_parser_free(&p);
    srv_parse_out_free(&o);
}

/* A random JSON value; strings hold brackets, escaped quotes and '<'. */
static void rand_json(srv_buf *b, int depth) {
    int k = depth > 2 ? 2 + rnd(2) : rnd(4);
    if (k == 0) {
        sb_adds(b, "{");
        int m = rnd(3);
        for (int i = 0; i < m; i++) {
            sb_printf(b, "%s\"k%d\":%s", i ? ", " : "", i, rnd(2) ? " " : "");
            rand_json(b, depth + 1);
        }
        sb_adds(b, "}");
    } else if (k == 1) {
        sb_adds(b, "[");
        int m = rnd(3);
        for (int i = 0; i < m; i++) {
            if (i) sb_adds(b, ",");
            rand_json(b, depth + 1);
        }
        sb_adds(b, "]");
    } else if (k == 2) {
        static const char *parts[] = {"a", "}", "{", "]", "[", "\\\"", "\\\\", "<", "</", "<b>", " ", "\\n", "é"};
        sb_adds(b, "\"");
        int m = rnd(6);
        for (int i = 0; i < m; i++) sb_adds(b, parts[rnd(13)]);
        sb_adds(b, "\"");
    } else {
        static const char *lits[] = {"1", "-2.5e3", "true", "null"};
        sb_adds(b, lits[rnd(4)]);
    }
}

static void test_random(void) {
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        srv_buf text = {0};
        acc want = {0};
        int reasoning = rnd(2);
        if (reasoning && rnd(2)) {
            sb_adds(&text, "<think>plan {\"name\"</think>");
            sb_adds(&want.reasoning, "plan {\"name\"");
        }
        int after_block = text.n > 0, nseg = rnd(6);
        for (int k = 0; k < nseg; k++) {
            int kind = rnd(5);
            if (kind == 0) { /* content (after a block it must not start with whitespace) */
                static const char alpha[] = "ab {}\"\n:";
                char seg[24];
                int m = 1 + rnd(20);
                for (int i = 0; i < m; i++) seg[i] = alpha[rnd((int)sizeof alpha - 1)];
                seg[m] = 0;
                if (after_block) seg[0] = 'q';
                sb_adds(&text, seg);
                sb_adds(&want.content, seg);
                after_block = 0;
            } else if (kind == 1) { /* streamed call: arguments verbatim */
                srv_buf args = {0};
                sb_adds(&args, "{");
                int m = rnd(3);
                for (int i = 0; i < m; i++) {
                    sb_printf(&args, "%s\"p%d\": ", i ? ", " : "", i);
                    rand_json(&args, 1);
                }
                sb_adds(&args, "}");
                const char *ws[] = {"", " ", "\n", "  \n"};
                sb_printf(&text, "<tool_call>%s{\"name\":%s\"fn_%d\",%s\"%s\":%s%s%s}%s</tool_call>%s", ws[rnd(4)],
                          ws[rnd(4)], k, ws[rnd(4)], rnd(4) ? "arguments" : "parameters", ws[rnd(4)], str(&args),
                          ws[rnd(4)], ws[rnd(4)], ws[rnd(4)]);
                sb_printf(&want.names, "fn_%d;", k);
                sb_printf(&want.args, "|%s", str(&args));
                want.ncalls++;
                sb_free(&args);
                after_block = 1;
            } else if (kind == 2) { /* whole: string arguments, or "name" last */
                if (rnd(2)) {
                    sb_printf(&text, "<tool_call>{\"name\": \"s_%d\", \"arguments\": \"{\\\"v\\\": [1]}\"}</tool_call>", k);
                    sb_printf(&want.args, "|{\"v\": [1]}");
                } else {
                    sb_printf(&text, "<tool_call>{\"arguments\": {\"v\": 2}, \"name\": \"s_%d\"}</tool_call>", k);
                    sb_printf(&want.args, "|{\"v\":2}");
                }
                sb_printf(&want.names, "s_%d;", k);
                want.ncalls++;
                after_block = 1;
            } else if (kind == 3) { /* malformed before streaming: verbatim content */
                const char *bodies[] = {"{\"name\": 5}", "{broken", "[]", "{\"arguments\": {}}", "",
                                        "{\"name\": \"\", \"arguments\": {}}", "{\"name\": \"x\", \"arguments\": 7}"};
                const char *b = bodies[rnd(7)];
                sb_printf(&text, "<tool_call>%s</tool_call>", b);
                sb_printf(&want.content, "<tool_call>%s</tool_call>", b);
                after_block = 0;
            } else if (k == nseg - 1) { /* cut off inside the arguments: kept as sent, broken */
                sb_printf(&text, "<tool_call>{\"name\": \"cut\", \"arguments\": {\"a\": \"x<");
                sb_adds(&want.names, "cut;");
                sb_adds(&want.args, "|{\"a\": \"x<");
                want.ncalls++;
                want.broken++;
            }
        }
        acc whole = {0}, bytes = {0}, split = {0};
        run(text.p ? text.p : "", text.n, reasoning, 0, NULL, NULL, 0, &whole);
        run(text.p ? text.p : "", text.n, reasoning, 0, NULL, NULL, 1, &bytes);
        run(text.p ? text.p : "", text.n, reasoning, 0, NULL, NULL, 9, &split);
        int ok = acc_eq(&whole, &want) && acc_eq(&bytes, &want) && acc_eq(&split, &want);
        if (!ok && bad < 3)
            fprintf(stderr, "case:\n%s\n-- content '%s' / '%s'\n-- names '%s' / '%s'\n-- args '%s' / '%s' / bytes '%s'\n"
                            "-- broken %d / %d\n",
                    str(&text), str(&whole.content), str(&want.content), str(&whole.names), str(&want.names),
                    str(&whole.args), str(&want.args), str(&bytes.args), whole.broken, want.broken);
        bad += !ok;
        acc_free(&whole);
        acc_free(&bytes);
        acc_free(&split);
        acc_free(&want);
        sb_free(&text);
    }
    CHECKF(bad == 0, "%d random parser cases differ from the reference or across splits", bad);
}

/* Feed one piece; the deltas it produced. */
static void feed(srv_parser *p, srv_parse_out *o, const char *s) {
    srv_parse_out_reset(o);
    srv_parser_feed(p, s, strlen(s), o);
}

static int delta_is(const srv_parse_out *o, int i, int index, const char *name, const char *args) {
    if (i >= o->n_tools) return 0;
    const srv_tool_delta *t = &o->tools[i];
    return t->index == index && (name ? t->name && !strcmp(t->name, name) : !t->name) &&
           !strcmp(str(&t->args), args);
}

static void test_incremental(void) {
    srv_parser p;
    srv_parse_out o = {0};
    srv_parser_init(&p, 0, 1, 0);
    feed(&p, &o, "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"argum");
    CHECK(!strcmp(str(&o.content), "Sure.\n") && o.n_tools == 0);
    feed(&p, &o, "ents\": ");
    CHECK(o.n_tools == 0); /* the value has not started: could still be a string */
    feed(&p, &o, "{\"city\": \"Pa");
    CHECK(o.n_tools == 2 && delta_is(&o, 0, 0, "get_weather", "") && delta_is(&o, 1, 0, NULL, "{\"city\": \"Pa"));
    feed(&p, &o, "ris <");
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, "ris ")); /* '<' could start </tool_call> */
    feed(&p, &o, "b>\", \"n\": [1, {\"x\": \"}\"}]");
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, "<b>\", \"n\": [1, {\"x\": \"}\"}]"));
    feed(&p, &o, "}");
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, "}")); /* closes the arguments */
    feed(&p, &o, "}\n</tool");
    CHECK(o.n_tools == 0 && !o.content.n); /* the object's brace is not an argument */
    feed(&p, &o, "_call>\n\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>");
    CHECK(o.n_tools == 2 && delta_is(&o, 0, 1, "b", "") && delta_is(&o, 1, 1, NULL, "{}") && !o.content.n &&
          !o.n_broken);
    feed(&p, &o, "\nDone");
    CHECK(!strcmp(str(&o.content), "Done"));
    srv_parse_out_reset(&o);
    srv_parser_finish(&p, &o);
    CHECK(!o.n_tools && !o.content.n);
    srv_parser_free(&p);

    /* </tool_call> inside the arguments (even in a string) ends the call: kept as sent, broken */
    srv_parser_init(&p, 0, 1, 0);
    feed(&p, &o, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x</tool_call> after");
    CHECK(o.n_tools == 2 && delta_is(&o, 1, 0, NULL, "{\"a\": \"x") && o.n_broken == 1 &&
          !strcmp(str(&o.content), "after"));
    srv_parser_free(&p);

    /* text after the arguments that is not '}' or </tool_call> ends the call and is content */
    srv_parser_init(&p, 0, 1, 0);
    feed(&p, &o, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": 2}</tool_call>");
    CHECK(o.n_tools == 2 && delta_is(&o, 1, 0, NULL, "{\"a\": 1}") && !o.n_broken &&
          !strcmp(str(&o.content), ", \"id\": 2}</tool_call>"));
    srv_parser_free(&p);

    /* a call without </tool_call> followed by another call */
    srv_parser_init(&p, 0, 1, 0);
    feed(&p, &o, "<tool_call>{\"name\": \"f\", \"arguments\": {}}\n<tool_call>{\"name\": \"g\", \"arguments\": {\"z\": 0}}");
    srv_parser_finish(&p, &o);
    CHECK(o.n_tools == 4 && delta_is(&o, 2, 1, "g", "") && delta_is(&o, 3, 1, NULL, "{\"z\": 0}") && !o.content.n);
    srv_parser_free(&p);

    /* cut off right before the end tag: the partial tag is dropped, the call is complete */
    srv_parser_init(&p, 0, 1, 0);
    feed(&p, &o, "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": 1}}\n</tool_");
    srv_parser_finish(&p, &o);
    CHECK(o.n_tools == 2 && delta_is(&o, 1, 0, NULL, "{\"q\": 1}") && !o.n_broken && !o.content.n);
    srv_parser_free(&p);
    srv_parse_out_free(&o);
}

static void test_forced(void) {
    srv_parser p;
    srv_parse_out o = {0};
    /* named: the first delta before any text; the text continues the arguments */
    srv_parser_init(&p, 1, 1, 0);
    CHECK(srv_parser_force(&p, "get_weather", &o) == 0);
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, "get_weather", ""));
    feed(&p, &o, " {\"city\":");
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, "{\"city\":")); /* leading space is not an argument */
    feed(&p, &o, " \"Oslo\"}}\n");
    srv_parser_finish(&p, &o);
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, " \"Oslo\"}") && !o.n_broken && !o.content.n);
    srv_parser_free(&p);
    /* named, generation ends at once: arguments "{}" */
    srv_parser_init(&p, 0, 1, 0);
    srv_parse_out_reset(&o);
    srv_parser_force(&p, "f", &o);
    srv_parser_finish(&p, &o);
    CHECK(o.n_tools == 2 && delta_is(&o, 1, 0, NULL, "{}") && !o.n_broken);
    srv_parser_free(&p);
    /* named, the model writes junk: the call keeps what was generated, broken */
    srv_parser_init(&p, 0, 1, 0);
    srv_parse_out_reset(&o);
    srv_parser_force(&p, "f", &o);
    feed(&p, &o, "hello world");
    srv_parser_finish(&p, &o);
    CHECK(o.n_tools == 1 && delta_is(&o, 0, 0, NULL, "hello") && o.n_broken == 1 &&
          !strcmp(str(&o.content), "world"));
    srv_parser_free(&p);
    /* required: the model picks the name; only the given names make a call */
    json_t *names = json_pack("[s, s]", "f", "g");
    const char *good = "{\"name\": \"g\", \"arguments\": {\"x\": 1}}\n</tool_call>";
    const char *other = "{\"name\": \"h\", \"arguments\": {\"x\": 1}}\n</tool_call>";
    const char *whole_other = "{\"arguments\": {}, \"name\": \"h\"}</tool_call>";
    acc a = {0};
    run(good, strlen(good), 0, 1, NULL, names, 3, &a);
    CHECK(a.ncalls == 1 && !strcmp(str(&a.names), "g;") && !strcmp(str(&a.args), "|{\"x\": 1}") && !a.content.n);
    acc_free(&a);
    memset(&a, 0, sizeof a);
    run(other, strlen(other), 0, 1, NULL, names, 3, &a);
    CHECK(a.ncalls == 0 && !strcmp(str(&a.content), "<tool_call>{\"name\": \"h\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
    acc_free(&a);
    memset(&a, 0, sizeof a);
    run(whole_other, strlen(whole_other), 0, 1, NULL, names, 0, &a);
    CHECK(a.ncalls == 0 && a.content.n > 20);
    acc_free(&a);
    memset(&a, 0, sizeof a);
    run("garbage", 7, 0, 1, NULL, names, 2, &a); /* never a call: content, with the forced tag */
    CHECK(a.ncalls == 0 && !strcmp(str(&a.content), "<tool_call>garbage"));
    acc_free(&a);
    json_decref(names);
    srv_parse_out_free(&o);
}

int main(void) {
    rng = tu_seed();
    test_random();
    test_incremental();
    test_forced();
    return TEST_END();
}
