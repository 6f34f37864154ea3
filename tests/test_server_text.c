/* Server text handling: the stop-string matcher and the tool-call /
 * reasoning parser against simple whole-text references on random inputs
 * fed in random splits, and SSE framing of streamed chat chunks. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_int.h"
#include "server/srv_stop.h"
#include "server/srv_toolparse.h"
#include "srv_acc.h"
#include "testutil.h"

static uint64_t rng;
static int rnd(int n) { return (int)(tu_rand_u64(&rng) % (uint64_t)n); }

static void rand_str(char *out, int n, const char *alpha) {
    int k = (int)strlen(alpha);
    for (int i = 0; i < n; i++) out[i] = alpha[rnd(k)];
    out[n] = 0;
}

/* ---- stop strings: output = text up to the first occurrence of any stop ---- */
static void test_stop(void) {
    int bad = 0;
    for (int it = 0; it < 3000; it++) {
        char text[200], stops[4][8];
        const char *sp[4];
        int n = rnd(120), ns = rnd(4);
        rand_str(text, n, "abc\n");
        for (int i = 0; i < ns; i++) {
            rand_str(stops[i], 1 + rnd(5), "abc\n");
            sp[i] = stops[i];
        }
        /* reference */
        int cut = n; /* start of the stop match that ends first (char by char) */
        for (int end = 1; end <= n && cut == n; end++)
            for (int i = 0; i < ns; i++) {
                int L = (int)strlen(sp[i]);
                if (L <= end && !memcmp(text + end - L, sp[i], (size_t)L) && end - L < cut) cut = end - L;
            }
        srv_stop st;
        srv_buf out = {0};
        srv_stop_init(&st, sp, ns);
        int hit = 0, pos = 0;
        while (pos < n && !hit) {
            int c = 1 + rnd(6);
            if (pos + c > n) c = n - pos;
            size_t before = out.n;
            hit = srv_stop_feed(&st, text + pos, (size_t)c, &out);
            /* nothing emitted may later turn out to be part of a stop string */
            if (out.n > (size_t)cut || (out.n > before && memcmp(out.p, text, out.n))) bad++;
            pos += c;
        }
        if (!hit) srv_stop_flush(&st, &out);
        int ok = out.n == (size_t)cut && (!cut || !memcmp(out.p, text, (size_t)cut)) && hit == (cut < n);
        if (!ok && bad < 5) {
            fprintf(stderr, "stop case: got %zu want %d hit %d; text:", out.n, cut, hit);
            for (int i = 0; i < n; i++) fputc(text[i] == '\n' ? 'N' : text[i], stderr);
            fprintf(stderr, "\nstops:");
            for (int i = 0; i < ns; i++) {
                fputc(' ', stderr);
                for (const char *q = sp[i]; *q; q++) fputc(*q == '\n' ? 'N' : *q, stderr);
            }
            fputc('\n', stderr);
        }
        bad += !ok;
        sb_free(&out);
        srv_stop_free(&st);
    }
    CHECKF(bad == 0, "%d stop-matcher mismatches", bad);
    /* a stop string spanning three feeds */
    srv_stop st;
    srv_buf out = {0};
    const char *s1[] = {"END!"};
    srv_stop_init(&st, s1, 1);
    CHECK(srv_stop_feed(&st, "hello E", 7, &out) == 0 && out.n == 6);
    CHECK(srv_stop_feed(&st, "N", 1, &out) == 0 && out.n == 6);
    CHECK(srv_stop_feed(&st, "D!tail", 6, &out) == 1 && out.n == 6 && !strcmp(out.p, "hello "));
    CHECK(srv_stop_feed(&st, "more", 4, &out) == 1 && out.n == 6);
    sb_free(&out);
    srv_stop_free(&st);
}

/* ---- tool calls and reasoning ---- */
static int has_tag(const char *s) {
    return strstr(s, "<think>") || strstr(s, "</think>") || strstr(s, "<tool_call>") || strstr(s, "</tool_call>");
}

static void test_toolparse(void) {
    int bad = 0;
    for (int it = 0; it < 2000; it++) {
        srv_buf text = {0};
        acc want = {0};
        int reasoning = rnd(2);
        int nseg = rnd(6);
        char seg[64];
        if (reasoning && rnd(2)) { /* a think block first */
            rand_str(seg, rnd(20), "xy <>/\n");
            if (has_tag(seg)) seg[0] = 0;
            sb_printf(&text, "<think>%s</think>", seg);
            sb_adds(&want.reasoning, seg);
        }
        int after_block = reasoning && text.n;
        for (int k = 0; k < nseg; k++) {
            int kind = rnd(3);
            if (kind == 0) { /* content starting with a non-space when it follows a block */
                rand_str(seg, 1 + rnd(20), "ab <>/{}\n");
                if (has_tag(seg) || strstr(seg, "<t")) continue;
                if (after_block) seg[0] = 'q';
                sb_adds(&text, seg);
                sb_adds(&want.content, seg);
                after_block = 0;
            } else if (kind == 1) { /* well-formed call, with whitespace around the JSON */
                int x = rnd(1000);
                char s[12];
                rand_str(s, rnd(8), "klm");
                sb_printf(&text, "<tool_call>\n{\"name\": \"fn_%d\", \"arguments\": {\"x\": %d, \"s\": \"%s\"}}\n</tool_call>%s",
                          x, x, s, rnd(2) ? "\n" : "");
                sb_printf(&want.names, "fn_%d;", x);
                sb_printf(&want.args, "|{\"x\": %d, \"s\": \"%s\"}", x, s);
                want.ncalls++;
                after_block = 1;
            } else { /* malformed: returned verbatim as content */
                const char *bodies[] = {"{\"name\": 5}", "{broken", "[]", "{\"arguments\": {}}", ""};
                const char *b = bodies[rnd(5)];
                sb_printf(&text, "<tool_call>%s</tool_call>", b);
                sb_printf(&want.content, "<tool_call>%s</tool_call>", b);
                after_block = 0;
            }
        }
        srv_parser p;
        srv_parse_out o = {0};
        acc got = {0};
        srv_parser_init(&p, reasoning, 1, 0);
        for (size_t pos = 0; pos < text.n;) {
            size_t c = 1 + (size_t)rnd(9);
            if (pos + c > text.n) c = text.n - pos;
            srv_parser_feed(&p, text.p + pos, c, &o);
            take(&got, &o);
            pos += c;
        }
        srv_parser_finish(&p, &o);
        take(&got, &o);
#define SAME(f) (got.f.n == want.f.n && (!want.f.n || !memcmp(got.f.p, want.f.p, want.f.n)))
        int ok = SAME(content) && SAME(reasoning) && SAME(names) && SAME(args) && got.ncalls == want.ncalls &&
                 !got.bad_index && !got.broken;
        if (!ok && bad < 5)
            fprintf(stderr, "parser case:\n%s\n-- content got '%s' want '%s'; calls %d/%d args '%s'/'%s'\n",
                    text.p ? text.p : "", got.content.p ? got.content.p : "", want.content.p ? want.content.p : "",
                    got.ncalls, want.ncalls, got.args.p ? got.args.p : "", want.args.p ? want.args.p : "");
        bad += !ok;
        srv_parser_free(&p);
        srv_parse_out_free(&o);
        acc_free(&got);
        acc_free(&want);
        sb_free(&text);
    }
    CHECKF(bad == 0, "%d tool/reasoning parser mismatches", bad);

    /* prompt already opened <think>; unterminated call at the end is content */
    srv_parser p;
    srv_parse_out o = {0};
    acc a = {0};
    srv_parser_init(&p, 1, 1, 1);
    const char *t = "plan it</think>\n\nAnswer <tool_call>{\"name\": \"f\"";
    srv_parser_feed(&p, t, strlen(t), &o);
    srv_parser_finish(&p, &o);
    take(&a, &o);
    CHECK(a.reasoning.p && !strcmp(a.reasoning.p, "plan it"));
    CHECK(a.content.p && !strcmp(a.content.p, "Answer <tool_call>{\"name\": \"f\""));
    CHECK(a.ncalls == 0);
    acc_free(&a);
    srv_parser_free(&p);
    srv_parse_out_free(&o);
    /* tools off: tags are plain content */
    srv_parser_init(&p, 0, 0, 0);
    t = "<tool_call>{\"name\": \"f\"}</tool_call><think>x</think>";
    srv_parser_feed(&p, t, strlen(t), &o);
    srv_parser_finish(&p, &o);
    CHECK(o.content.p && !strcmp(o.content.p, t) && o.n_tools == 0);
    srv_parser_free(&p);
    srv_parse_out_free(&o);
    /* string arguments and "parameters" are accepted */
    char *name, *args;
    CHECK(!srv_parse_tool_json("{\"name\":\"g\",\"arguments\":\"{\\\"a\\\":1}\"}", 36, &name, &args) &&
          !strcmp(name, "g") && !strcmp(args, "{\"a\":1}"));
    free(name), free(args);
    const char *pj = " {\"name\": \"h\", \"parameters\": {\"b\": [1, 2]}} ";
    CHECK(!srv_parse_tool_json(pj, strlen(pj), &name, &args) && !strcmp(args, "{\"b\":[1,2]}"));
    free(name), free(args);
    CHECK(srv_parse_tool_json("{\"name\": \"\"}", 12, &name, &args) == -1);
    CHECK(srv_parse_tool_json("{\"name\": \"a\"} trailing", 22, &name, &args) == -1);
}

/* ---- SSE framing of chat chunks ---- */
static void test_sse(void) {
    srv_server s;
    memset(&s, 0, sizeof s);
    s.o.served_name = "m";
    for (int it = 0; it < 200; it++) {
        oai_job job;
        memset(&job, 0, sizeof job);
        job.chat = 1;
        job.tools = 1;
        job.include_usage = rnd(2);
        strcpy(job.id, "chatcmpl-x");
        job.r = srv_req_new();
        srv_req *r = job.r;
        r->n_prompt = 5;
        oai_out o;
        oai_out_init(&o, &job);
        srv_buf full = {0}, sse = {0};
        char piece[16];
        int ncall = rnd(2);
        const char *call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"a\\nb\"}}</tool_call>";
        for (int k = 0; k < 10; k++) {
            rand_str(piece, rnd(6), "ab \n\"\\");
            sb_adds(&full, piece);
            sb_adds(&r->text, piece);
            r->n_gen++;
            if (ncall && k == 5) sb_adds(&r->text, call);
            oai_stream_chunks(&s, &o, &sse);
        }
        r->finish = FIN_STOP;
        oai_stream_chunks(&s, &o, &sse);
        /* every event is "data: <json>\n\n", the last is [DONE] */
        int ok = 1, nfin = 0, usage = 0;
        srv_buf content = {0}, args = {0};
        const char *p = sse.p;
        while (ok && *p) {
            if (strncmp(p, "data: ", 6)) {
                ok = 0;
                break;
            }
            const char *e = strstr(p, "\n\n");
            if (!e) {
                ok = 0;
                break;
            }
            if (!strncmp(p + 6, "[DONE]", 6)) {
                ok = e[2] == 0 && e - p == 12;
                p = e + 2;
                break;
            }
            json_t *j = json_loadb(p + 6, (size_t)(e - p - 6), 0, NULL);
            if (!j) {
                ok = 0;
                break;
            }
            json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
            if (json_object_get(j, "usage")) usage++;
            if (ch) {
                json_t *d = json_object_get(ch, "delta");
                json_t *c = json_object_get(d, "content");
                if (json_is_string(c)) sb_adds(&content, json_string_value(c));
                json_t *tc = json_array_get(json_object_get(d, "tool_calls"), 0);
                json_t *a = json_object_get(json_object_get(tc, "function"), "arguments");
                if (json_is_string(a)) sb_adds(&args, json_string_value(a));
                json_t *f = json_object_get(ch, "finish_reason");
                if (json_is_string(f)) {
                    nfin++;
                    ok &= !strcmp(json_string_value(f), ncall ? "tool_calls" : "stop");
                }
            }
            ok &= !strcmp(json_string_value(json_object_get(j, "object")), "chat.completion.chunk");
            json_decref(j);
            p = e + 2;
        }
        ok &= *p == 0 && nfin == 1 && usage == job.include_usage;
        /* content deltas rebuild the text minus the call (whitespace after a call is dropped) */
        ok &= content.n <= full.n && args.n == (ncall ? strlen("{\"q\": \"a\\nb\"}") : 0);
        if (!ncall) ok &= content.n == full.n && (!full.n || !memcmp(content.p, full.p, full.n));
        if (!ok) {
            CHECKF(0, "SSE framing broken:\n%s", sse.p);
            it = 1 << 20;
        }
        sb_free(&content);
        sb_free(&args);
        sb_free(&full);
        sb_free(&sse);
        oai_out_free(&o);
        srv_req_unref(r);
    }
    CHECK(1);
}

/* Tool calls through the SSE layer: the call's first delta goes out as soon
 * as its name is known (before </tool_call>), the arguments follow in several
 * fragments, and they add up to the non-streamed message's arguments. Auto
 * mode and a forced named call. */
static void sse_calls(const srv_buf *sse, srv_buf *args, int *nhead, int *nfrag, int *head_ok, srv_buf *fin) {
    for (const char *p = sse->p ? sse->p : ""; *p;) {
        const char *e = strstr(p, "\n\n");
        if (!e) break;
        json_t *j = json_loadb(p + 6, (size_t)(e - p - 6), 0, NULL);
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        json_t *tc = json_array_get(json_object_get(json_object_get(ch, "delta"), "tool_calls"), 0);
        json_t *f = json_object_get(tc, "function");
        if (json_object_get(tc, "id")) {
            (*nhead)++;
            *head_ok &= !strcmp(json_string_value(json_object_get(tc, "type")), "function") &&
                        !strcmp(json_string_value(json_object_get(f, "name")), "get_weather") &&
                        !strcmp(json_string_value(json_object_get(f, "arguments")), "") &&
                        json_integer_value(json_object_get(tc, "index")) == 0;
        } else if (tc) {
            (*nfrag)++;
            sb_adds(args, json_string_value(json_object_get(f, "arguments")));
        }
        json_t *fr = json_object_get(ch, "finish_reason");
        if (json_is_string(fr)) sb_adds(fin, json_string_value(fr));
        json_decref(j);
        p = e + 2;
    }
}

static void test_sse_tool_stream(void) {
    srv_server s;
    memset(&s, 0, sizeof s);
    s.o.served_name = "m";
    static const char *pieces[2][8] = {
        {"I will check.\n<tool_call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"ci", "ty\": \"Os",
         "lo\", \"when\": [\"to", "day\"]}", "}\n</tool", "_call>", NULL},
        {" {\"ci", "ty\": \"Os", "lo\", \"when\": [\"to", "day\"]}", "}\n", NULL},
    };
    for (int forced = 0; forced < 2; forced++) {
        oai_job job;
        memset(&job, 0, sizeof job);
        job.chat = 1;
        job.tools = 1;
        job.force = forced ? OAI_FORCE_NAMED : OAI_FORCE_NONE;
        job.force_name = forced ? strdup("get_weather") : NULL;
        strcpy(job.id, "chatcmpl-x");
        job.r = srv_req_new();
        srv_req *r = job.r;
        oai_out o;
        CHECK(oai_out_init(&o, &job) == 0);
        srv_buf sse = {0}, args = {0}, fin = {0};
        int nhead = 0, nfrag = 0, head_ok = 1, head_early = 0;
        for (int k = 0; pieces[forced][k]; k++) {
            sb_adds(&r->text, pieces[forced][k]);
            r->n_gen++;
            oai_stream_chunks(&s, &o, &sse);
            if (k == 2) { /* the call is open and named, its block not closed */
                sse_calls(&sse, &args, &nhead, &nfrag, &head_ok, &fin);
                head_early = nhead == 1 && nfrag >= 1;
            }
        }
        r->finish = FIN_STOP;
        oai_stream_chunks(&s, &o, &sse);
        oai_out_free(&o);
        nhead = nfrag = 0;
        sb_reset(&args);
        sse_calls(&sse, &args, &nhead, &nfrag, &head_ok, &fin);
        CHECKF(head_early && head_ok && nhead == 1 && nfrag >= 4 && !strcmp(fin.p, "tool_calls"),
               "forced %d: head early %d ok %d, %d heads, %d fragments, finish %s", forced, head_early, head_ok,
               nhead, nfrag, fin.p);
        /* the non-streamed message of the same text */
        CHECK(oai_out_init(&o, &job) == 0);
        char *full = oai_full_response(&s, &o);
        oai_out_free(&o);
        json_t *j = json_loads(full, 0, NULL);
        json_t *msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
        json_t *call = json_array_get(json_object_get(msg, "tool_calls"), 0);
        const char *fa = json_string_value(json_object_get(json_object_get(call, "function"), "arguments"));
        CHECKF(fa && args.p && !strcmp(fa, args.p) && !strcmp(fa, "{\"city\": \"Oslo\", \"when\": [\"today\"]}"),
               "streamed arguments '%s' == non-streamed '%s'", args.p ? args.p : "", fa ? fa : "");
        json_t *content = json_object_get(msg, "content");
        CHECK(forced ? json_is_null(content) : !strcmp(json_string_value(content), "I will check.\n"));
        json_decref(j);
        free(full);
        sb_free(&sse);
        sb_free(&args);
        sb_free(&fin);
        oai_job_free(&job);
    }
}

int main(void) {
    rng = tu_seed();
    test_stop();
    test_toolparse();
    test_sse();
    test_sse_tool_stream();
    return TEST_END();
}
