/* session — how sixi-bench and sixi-eval greet an OpenAI-compatible endpoint, the one
 * place that does it: readiness by real generation under a deadline, warm-up
 * requests, the server's fingerprint and the host facts with the check for other
 * servers holding memory on this machine. One server gets one fingerprint (the same
 * JSON, the same hash) whichever program asks.
 *
 * Every request sent here is stored as a bench_requests row (phase "ready",
 * "warmup", or the caller's) once the session is attached to a run, with the
 * fingerprint hash once one was taken. Readiness is a generation that returns
 * tokens: /health and /v1/models answer while a server is still loading or wedged.
 * Not here: the measured load (bench/runner), the tasks of an eval and its health
 * probes during a run (eval/run).
 *
 * One thread uses a session at a time. Arguments are borrowed; struct session is
 * opaque and freed by session_destroy(); returned strings are the session's unless
 * noted. */
#ifndef SIXI_SESSION_SESSION_H
#define SIXI_SESSION_SESSION_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/openai.h"
#include "net/stream.h"

struct store;

struct session_opts {
	const char *url;              /* base URL without a trailing '/', e.g. http://127.0.0.1:8080 (copied) */
	enum openai_api api;          /* where generations go */
	bool stream;                  /* the bodies ask for stream: true */
	int64_t connect_timeout_ms;   /* <= 0: 10000 */
	int64_t stall_timeout_ms;     /* <= 0: only the request's own timeout */
	const char *tag;              /* stored with every row; NULL: none (copied) */
	/* Makes the body of request `seq` of `phase` ("ready" or "warmup") asking for
	 * max_tokens tokens: the caller's prompt, sampling and template. *body is
	 * malloc'd and freed by the session. 0 or -errno. */
	int (*body)(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len);
	void *ud;
};

/* NULL with errno ENOMEM (or EINVAL: no url or body). */
struct session *session_create(const struct session_opts *o);
void session_destroy(struct session *s);

/* From now on the session's requests are stored as rows of run `run_id` in st (which
 * must outlive the session), and the run keeps the session's first fingerprint
 * (store_run_keep_fingerprint: a run that has one keeps it). 0, or -errno with err. */
__attribute__((warn_unused_result)) int session_attach(struct session *s, struct store *st, int64_t run_id,
						       char *err, size_t errlen);

/* Rows of the session's requests that could not be stored (the first is logged):
 * non-zero means the run's rows are incomplete. */
int session_store_errors(const struct session *s);

/* ---- readiness and warm-up ---- */

struct session_ready {
	int64_t deadline_ms;          /* from now; at least one attempt is made */
	int64_t max_tokens;           /* asked of each attempt */
	int64_t attempt_timeout_ms;   /* cap on one attempt (<= 0: none); never past the deadline */
	const char *hint;             /* what the user should do, ends the error message */
};
/* Sends generations (phase "ready", seq 0, 1, ...) until one returns tokens, 500 ms
 * apart, or the deadline passes: then -ETIMEDOUT and err names the URL, the deadline
 * and the last answer. A request that returned no tokens without an error is stored
 * with error "usage". -errno when a request could not be made. */
__attribute__((warn_unused_result)) int session_wait_ready(struct session *s, const struct session_ready *r,
							   char *err, size_t errlen);
/* `count` generations of max_tokens (phase "warmup"), each within timeout_ms; a
 * failed one is logged and stored, not fatal. 0, or -errno when one could not be made. */
__attribute__((warn_unused_result)) int session_warmup(struct session *s, int64_t count, int64_t max_tokens,
						       int64_t timeout_ms);
/* One request with the caller's body, stored as a row of `phase` (requested_tokens =
 * max_tokens), waited for up to timeout_ms. The outcome is in *out (text kept): 0,
 * then the caller calls oai_stream_finish(out); or -errno when it could not start
 * (nothing to finish). */
__attribute__((warn_unused_result)) int session_request(struct session *s, const char *phase, int64_t seq,
							const char *body, size_t len, int64_t max_tokens,
							int64_t timeout_ms, struct oai_stream *out);

/* ---- the fingerprint ---- */

/* Takes the fingerprint now: what /v1/models, /props and /get_server_info answer
 * (each 200 and JSON, without the volatile "created" fields), one JSON object keyed
 * by path, and its sha256. *changed (may be NULL) says whether it differs from the
 * first one this session took. 0; -EPROTO with err when /v1/models did not answer
 * (the fingerprint is still taken from what answered); -ENOMEM (the previous one is
 * kept); -EIO with err when the attached run could not keep it. */
__attribute__((warn_unused_result)) int session_fingerprint(struct session *s, bool *changed, char *err,
							    size_t errlen);
/* The first fingerprint taken (the run's), "" before any. */
const char *session_fingerprint_json(const struct session *s);
/* sha256 hex of the latest fingerprint, "" before any. */
const char *session_fingerprint_hash(const struct session *s);
/* Whether a stored fingerprint names the same server as `now` (a fingerprint of
 * this module). A stored JSON array is the form of runs recorded before this
 * module: a list of {id, max_model_len} from /v1/models, compared as such. */
bool session_fingerprint_same(const char *stored, const char *now);
/* Whether two fingerprints (of this module) name the same model, for replicas of one
 * model behind one condition: every field is compared except those that describe the
 * host rather than the model ("created", "model_path", "total_slots", "hostname",
 * "pid", "port", "uptime", "start_time"). 0 when the same; 1 when a field differs,
 * its path (e.g. "/v1/models.data[0].context_length") in field; -EINVAL when either
 * is not a JSON object (field says which); -ENOMEM. */
int session_fingerprint_model_diff(const char *a, const char *b, char *field, size_t fieldlen);

/* ---- host facts ---- */

/* The host facts stored with a run: hostname, kernel, machine, cpus, memory_bytes and
 * "memory" (net/hostmem: other servers holding memory, for a local endpoint), then
 * the items of `extra` (may be NULL), copied. memwarn receives the other-servers
 * warning or "". Caller frees; NULL when out of memory. */
char *session_host_facts(const struct session *s, const cJSON *extra, char *memwarn, size_t memwarnlen);
#endif
