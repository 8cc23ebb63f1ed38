/* tokenizer — text to token ids and back, as llama.cpp does it for the vocabularies
 * local models ship: byte-level BPE (tokenizer.ggml.model = "gpt2") with the
 * pre-tokenizer splits "default", "gpt2", "qwen2"/"qwen35", "llama3", "gpt-4o" (o200k) and
 * "deepseek-v3",
 * and SentencePiece-style
 * ("llama") with byte fallback. Special and added tokens (token types from
 * tokenizer.ggml.token_type) are matched before splitting. Loads from GGUF metadata or
 * from a Hugging Face tokenizer.json.
 *
 * Normalization: a tokenizer.json's "normalizer" (NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 * Replace, Prepend, Sequence) is applied as Hugging Face's tokenizers library applies it, to
 * the text between added tokens (tokenizer_norm.h); an unsupported type fails the load.
 * A GGUF vocabulary keeps llama.cpp's behaviour: no normalizer at all (GGUF has no key for
 * one), so its ids for text that is not already normalized can differ from the
 * tokenizer.json it was converted from (test_tokenizer shows it for NFC).
 *
 * Ownership: struct tokenizer is opaque and immutable after loading, so one tokenizer
 * may serve many threads. Arguments are borrowed; arrays and strings returned through
 * out-parameters are the caller's to free(); pointers returned directly (tok_piece)
 * live as long as the tokenizer. Errors: int functions return 0 or a negative errno;
 * loaders return NULL and write "WHERE: what is wrong" into err. */
#ifndef SIXI_MODEL_TOKENIZER_H
#define SIXI_MODEL_TOKENIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gguf;
struct gguf_writer;
struct tokenizer;

/* Token types, numbered as in tokenizer.ggml.token_type. */
enum tok_type {
	TOK_TYPE_UNDEFINED = 0, TOK_TYPE_NORMAL = 1, TOK_TYPE_UNKNOWN = 2, TOK_TYPE_CONTROL = 3,
	TOK_TYPE_USER_DEFINED = 4, TOK_TYPE_UNUSED = 5, TOK_TYPE_BYTE = 6,
};

enum tok_model { TOK_MODEL_BPE, TOK_MODEL_SPM };
enum tok_pre { TOK_PRE_NONE, TOK_PRE_DEFAULT, TOK_PRE_GPT2, TOK_PRE_QWEN2, TOK_PRE_QWEN35, TOK_PRE_LLAMA3,
	       TOK_PRE_GPT4O, TOK_PRE_DEEPSEEK3 };

/* From the tokenizer.ggml.* keys of a GGUF (the gguf may be closed afterwards). */
struct tokenizer *tok_load_gguf(const struct gguf *g, char *err, size_t errlen);
/* From a Hugging Face tokenizer.json (byte-level BPE); BOS/EOS and add_bos_token come from a
 * tokenizer_config.json in the same directory when there is one. */
struct tokenizer *tok_load_hf_json(const char *path, char *err, size_t errlen);
void tok_destroy(struct tokenizer *t);

/* Encodes text[0..n) (UTF-8). add_special: add BOS/EOS as the metadata says (and, for
 * SentencePiece, nothing else changes). parse_special: control tokens written in the
 * text (e.g. "<|im_start|>") become their ids; user-defined tokens always do.
 * *ids is malloc'd (never NULL on success). Returns -EILSEQ for invalid UTF-8 (see
 * tok_utf8_error_offset), -ENOENT when a piece has no token (incomplete vocabulary). */
__attribute__((warn_unused_result))
int tok_encode(const struct tokenizer *t, const char *text, size_t n, bool add_special, bool parse_special,
	       int32_t **ids, size_t *n_ids);
/* Byte offset of the first invalid UTF-8 sequence in text[0..n), or n when it is valid. */
size_t tok_utf8_error_offset(const char *text, size_t n);

/* Decodes ids into *text (malloc'd, NUL-terminated, *len bytes excluding the terminator).
 * Control tokens are written only when special is true. The leading space a
 * SentencePiece vocabulary adds is removed from the first token, as llama.cpp does.
 * The bytes are returned as the tokens give them (possibly invalid UTF-8 when ids end
 * inside a character); use struct tok_stream for streaming. -EINVAL for an id out of range. */
__attribute__((warn_unused_result))
int tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n, bool special, char **text, size_t *len);

/* Streaming decoder: feed ids one at a time; only complete UTF-8 characters come out,
 * incomplete trailing bytes are held until the next id. Invalid sequences come out as
 * U+FFFD. Embedded by callers; fields are read only through the API. */
struct tok_stream {
	const struct tokenizer *t;
	unsigned char pending[4]; /* bytes of an incomplete character */
	unsigned n_pending;       /* 0..3 */
	bool first;               /* next token is the first (SentencePiece space strip) */
	bool special;             /* write control tokens */
};
void tok_stream_init(struct tok_stream *s, const struct tokenizer *t, bool special);
/* Writes the text id completes into out (cap bytes; tok_max_piece_bytes(t) + 8 is always
 * enough) and returns the byte count, or -ENOSPC / -EINVAL. Output is not NUL-terminated. */
__attribute__((warn_unused_result))
int tok_stream_feed(struct tok_stream *s, int32_t id, char *out, size_t cap);
/* Emits held bytes of an unfinished character as U+FFFD (cap >= 4); returns the byte count. */
int tok_stream_flush(struct tok_stream *s, char *out, size_t cap);

size_t tok_vocab_size(const struct tokenizer *t);
enum tok_model tok_model_kind(const struct tokenizer *t);
enum tok_pre tok_pre_kind(const struct tokenizer *t);
/* Special ids, -1 when the vocabulary has none. */
int32_t tok_bos(const struct tokenizer *t);
int32_t tok_eos(const struct tokenizer *t);
int32_t tok_eot(const struct tokenizer *t);
bool tok_add_bos(const struct tokenizer *t);
bool tok_add_eos(const struct tokenizer *t);
/* End of generation: EOS, EOT, EOM, or a control token spelled like a turn end (<|im_end|>, ...). */
bool tok_is_eog(const struct tokenizer *t, int32_t id);
/* The token's text as stored in the vocabulary (byte-level form for BPE), or NULL. */
const char *tok_piece(const struct tokenizer *t, int32_t id);
enum tok_type tok_token_type(const struct tokenizer *t, int32_t id);
/* Id of the token whose vocabulary text is exactly s, or -1. */
int32_t tok_find(const struct tokenizer *t, const char *s);
/* Longest decoded piece in bytes. */
size_t tok_max_piece_bytes(const struct tokenizer *t);

/* Pre-tokenizer split alone (for tests and tools): piece boundaries of text[0..n) as
 * byte end offsets into *ends (malloc'd). -EILSEQ for invalid UTF-8. */
__attribute__((warn_unused_result))
int tok_pre_split(enum tok_pre pre, const char *text, size_t n, size_t **ends, size_t *n_pieces);

/* GPT-2's byte alphabet: the code point byte b is written as in byte-level BPE token texts. */
uint32_t tok_byte_char(unsigned char b);

/* ---- the project's own tiny vocabulary (tokenizer_train.c) ---- */

/* Learns a byte-level BPE from corpus[0..n): 256 byte tokens, then merges of the most
 * frequent adjacent pair (ties: the pair whose merged text sorts first by bytes, then
 * by left token) over words split by the qwen2 pre-tokenizer, until vocab_size minus
 * the three ChatML specials (<|endoftext|>, <|im_start|>, <|im_end|>) is reached or no
 * pair occurs twice. Writes tokenizer.ggml.{model=gpt2, pre=qwen2, tokens, token_type,
 * merges, bos/eos/eot/padding ids, add_bos_token=false} into w. Deterministic. */
__attribute__((warn_unused_result))
int tok_train_tiny_bpe(const char *corpus, size_t n, size_t vocab_size, struct gguf_writer *w, char *err,
		       size_t errlen);
/* The English prose the project ships to train its tiny vocabulary (NUL-terminated). */
extern const char tok_tiny_corpus[];
/* tok_train_tiny_bpe over tok_tiny_corpus with 512 tokens: the embedded default model's vocabulary. */
__attribute__((warn_unused_result))
int tok_write_tiny_vocab(struct gguf_writer *w, char *err, size_t errlen);
/* The same vocabulary padded to n_total tokens (512..2^24) with tokens "<|unused_N|>" after the
 * specials (no merge makes them): a random model of a real model's vocabulary size, for
 * benchmarks whose lm_head must have the real width. pad_type TOK_TYPE_UNUSED: they decode to
 * nothing, as a real file's padding does; TOK_TYPE_NORMAL: to their names, so that a random
 * model that samples them still streams text (a client's first-token time needs text). */
__attribute__((warn_unused_result))
int tok_write_tiny_vocab_padded(struct gguf_writer *w, size_t n_total, int pad_type, char *err, size_t errlen);
#endif
