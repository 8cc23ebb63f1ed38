/* openai — the OpenAI-compatible wire format as a load generator and an eval
 * client need it: request bodies for /v1/completions and /v1/chat/completions,
 * and the interpretation of one streamed chunk (or a whole non-streamed body).
 *
 * Token counts come from `usage` only (DESIGN rule 1). The first token is the
 * first chunk carrying content, reasoning (`reasoning_content` or `reasoning`)
 * or a tool-call delta — never the role prelude. Arguments are borrowed;
 * returned strings are the caller's to free. */
#ifndef SIXI_NET_OPENAI_H
#define SIXI_NET_OPENAI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"

enum openai_api { OPENAI_COMPLETIONS, OPENAI_CHAT };

struct openai_request {
	enum openai_api api;
	const char *model;
	const char *prompt;          /* text prompt (completions) or user message (chat) */
	const int32_t *prompt_ids;   /* token-id prompt instead of text (completions only) */
	size_t n_prompt_ids;
	const char *messages_json;   /* chat: a full messages array, overrides prompt */
	int64_t max_tokens;          /* <= 0: not sent */
	double temperature;          /* < 0: not sent */
	double top_p;                /* < 0: not sent */
	int64_t top_k;               /* < 0: not sent */
	int64_t seed;                /* < 0: not sent */
	bool stream;
	bool include_usage;          /* stream_options.include_usage */
	bool ignore_eos;             /* sent as ignore_eos (vLLM, SGLang, llama.cpp, sixi-server) */
	const char *const *stop;     /* NULL-terminated, optional */
	const char *extra_json;      /* object merged into the body last (user overrides) */
};

/* Serialises req into out (appends). 0 or -EINVAL (bad extra_json) / -ENOMEM. */
__attribute__((warn_unused_result)) int openai_request_body(const struct openai_request *req, struct buf *out);
/* Path for the API: "/v1/completions" or "/v1/chat/completions". */
const char *openai_api_path(enum openai_api api);

/* What one chunk (streamed) or body (non-streamed) said. */
struct openai_chunk {
	bool has_token;              /* content, reasoning or tool-call delta present and non-empty */
	bool has_content;
	bool has_reasoning;
	bool has_tool_call;
	bool has_usage;
	int64_t prompt_tokens, completion_tokens, cached_tokens; /* -1 when absent */
	char finish_reason[32];      /* "" when absent */
	bool is_error;               /* {"error": ...} object */
	char error_message[256];
	const char *content;         /* unescaped text; points into the input or an internal buffer:
	                              * valid until openai_chunk_finish and while the input lives */
	size_t content_len;
	const char *reasoning;
	size_t reasoning_len;
	char *unescaped_;            /* internal: storage for unescaped strings */
};

/* Parses JSON text of one chunk. 0, or -EBADMSG when it is not a valid JSON object
 * (error_message then says why). Call openai_chunk_finish afterwards in both cases.
 * A validating scanner that allocates nothing unless a text field holds escapes:
 * this runs once per SSE event, the hottest path of the load generator. */
__attribute__((warn_unused_result)) int openai_chunk_parse(struct openai_chunk *c, const char *json, size_t n);
void openai_chunk_finish(struct openai_chunk *c);

/* The shape of a stream's chunks. A server sends the same bytes in every chunk
 * of a stream except the token text: {"id":"x","choices":[{"delta":{"content":"
 * TEXT "}}],...}. Once one chunk has been scanned in full, a later chunk whose
 * bytes before and after its text are identical to that one's, and whose text is
 * a non-empty string body without escapes or control characters, is the same
 * valid JSON document with another string in the same place: its result is the
 * kept one with the new text, found with two memcmp calls and one short scan
 * instead of a full scan. Anything else is scanned in full (and may become the
 * new shape). Zero it before a stream's first chunk; it owns no memory. */
#define OPENAI_SHAPE_BYTES 512
struct openai_shape {
	bool valid;
	bool reasoning;              /* the text that varies is reasoning, not content */
	bool has_tool_call, has_usage;
	int64_t prompt_tokens, completion_tokens, cached_tokens;
	char finish_reason[32];
	size_t n, a, b;              /* bytes kept; the text's body is bytes[a, b) */
	uint64_t shortcuts;          /* chunks taken without a full scan */
	char bytes[OPENAI_SHAPE_BYTES];
};
/* openai_chunk_parse, with the shortcut above. Same results, same contract. */
__attribute__((warn_unused_result)) int openai_chunk_parse_shaped(struct openai_shape *sh, struct openai_chunk *c,
								  const char *json, size_t n);
#endif
