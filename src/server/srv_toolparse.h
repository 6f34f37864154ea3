/* Splits generated text into content, reasoning (<think>...</think>) and
 * tool calls (<tool_call>{"name": ..., "arguments": {...}}</tool_call>, the
 * Hermes/Qwen format), incrementally: feed text as it is generated and get
 * the deltas that are decided. Text that could still be the start of a tag
 * is held back. A tool-call block whose body is not a JSON object with a
 * string "name" is returned as content, verbatim. */
#pragma once
#include <stddef.h>

#include "server/srv_buf.h"

typedef struct {
    char *name;
    char *args; /* JSON text of the arguments object */
} srv_tool_call;

/* Deltas produced by one feed/finish call (the caller consumes and resets). */
typedef struct {
    srv_buf content;
    srv_buf reasoning;
    srv_tool_call *calls;
    int n_calls, cap_calls;
} srv_parse_out;

typedef struct {
    int reasoning;    /* split <think> blocks */
    int tools;        /* parse <tool_call> blocks */
    int state;        /* 0 content, 1 reasoning, 2 tool-call body */
    int skip_ws;      /* drop whitespace before the next content (after </think> or a call) */
    srv_buf pend;     /* undecided text */
    srv_buf body;     /* tool-call body so far */
    int n_calls;      /* tool calls parsed so far */
} srv_parser;

/* in_reasoning: the prompt already opened a <think> block. */
void srv_parser_init(srv_parser *p, int reasoning, int tools, int in_reasoning);
void srv_parser_free(srv_parser *p);
/* 0 or -1 (out of memory). */
int srv_parser_feed(srv_parser *p, const char *txt, size_t len, srv_parse_out *o);
/* End of text: flush what is held (an unterminated tool call becomes content). */
int srv_parser_finish(srv_parser *p, srv_parse_out *o);
void srv_parse_out_reset(srv_parse_out *o);
void srv_parse_out_free(srv_parse_out *o);
/* Parse one tool-call body: 0 with malloc'd name/args, or -1 if malformed. */
int srv_parse_tool_json(const char *body, size_t len, char **name, char **args);
