/* Splits generated text into content, reasoning (<think>...</think>) and
 * tool calls (<tool_call>{"name": ..., "arguments": {...}}</tool_call>, the
 * Hermes/Qwen format), incrementally: feed text as it is generated and get
 * the deltas that are decided. Text that could still be the start of a tag
 * is held back.
 *
 * A tool call is streamed: once its body reads `{"name": "NAME",
 * "arguments": {` (or "parameters"), the call's first delta (index + name)
 * is produced and the arguments text follows as it arrives, verbatim, up to
 * the end of the arguments value (found by a string-aware bracket scanner);
 * only a partial `</tool_call>` is held back. Calls written another way
 * (arguments as a JSON string, "name" after "arguments", ...) are parsed
 * when their block closes and come out whole. A block that never reaches
 * that streamed form and is not a JSON object with a string "name" (one of
 * the allowed names, when a list is given) is returned as content,
 * verbatim.
 *
 * Once a call has been started it stays a call: when `</tool_call>` or the
 * end of the text arrives in the middle of the arguments, the call keeps the
 * arguments text produced so far and srv_parse_out.n_broken counts it (the
 * caller logs a warning); text after the arguments other than whitespace,
 * the object's `}` and `</tool_call>` closes the call and is content again.
 *
 * Feeding the same text in any split gives the same concatenated deltas, so
 * streamed argument fragments always add up to the non-streamed arguments. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "server/srv_buf.h"

/* One piece of a tool call: the first piece of each call carries its name. */
typedef struct {
    int index;     /* the call's position in the response: 0, 1, ... */
    char *name;    /* malloc'd on the call's first delta (whose args are empty), else NULL */
    srv_buf args;  /* next fragment of the arguments JSON text */
} srv_tool_delta;

/* Deltas produced by feed/finish calls (the caller consumes and resets). */
typedef struct {
    srv_buf content;
    srv_buf reasoning;
    srv_tool_delta *tools; /* in order; consecutive fragments of one call are joined */
    int n_tools, cap_tools;
    int n_broken;          /* calls closed with unfinished or invalid arguments JSON */
} srv_parse_out;

typedef struct {
    int reasoning;    /* split <think> blocks */
    int tools;        /* parse <tool_call> blocks */
    json_t *names;    /* borrowed array of allowed function names; NULL = any */
    int state;        /* SP_* in srv_toolparse.c */
    int skip_ws;      /* drop whitespace before the next content (after </think> or a call) */
    int head_no;      /* the open block cannot take the streamed form */
    srv_buf pend;     /* undecided text */
    srv_buf body;     /* tool-call body before its arguments started streaming */
    srv_buf args;     /* arguments text of the streaming call */
    int vkind;        /* arguments value: 0 not started, 1 object/array, 2 string, 3 scalar */
    int depth, in_str, esc, closed_brace;
    int n_calls;      /* calls started so far (the next index) */
} srv_parser;

/* in_reasoning: the prompt already opened a <think> block. */
void srv_parser_init(srv_parser *p, int reasoning, int tools, int in_reasoning);
void srv_parser_free(srv_parser *p);
/* The prompt ends with the opening of a call the server forced: with name,
 * `<tool_call>\n{"name": NAME, "arguments":` (the call's first delta goes to
 * o now and the generated text continues its arguments); with name NULL,
 * just `<tool_call>\n` (the model writes the body). 0 or -1 (no memory). */
int srv_parser_force(srv_parser *p, const char *name, srv_parse_out *o);
/* 0 or -1 (out of memory). */
int srv_parser_feed(srv_parser *p, const char *txt, size_t len, srv_parse_out *o);
/* End of text: flush what is held (an unterminated block that never started
 * streaming becomes content; a streaming call is closed as it is). */
int srv_parser_finish(srv_parser *p, srv_parse_out *o);
void srv_parse_out_reset(srv_parse_out *o);
void srv_parse_out_free(srv_parse_out *o);
/* Parse one whole tool-call body: 0 with malloc'd name/args, or -1 if malformed. */
int srv_parse_tool_json(const char *body, size_t len, char **name, char **args);
