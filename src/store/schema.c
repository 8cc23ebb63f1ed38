/* schema — the results database's tables, what every column holds, and the
 * migrations that build them. This file is the one description of the format;
 * the code that reads or writes a column is in runs.c, bench.c, eval.c and kl.c.
 *
 * The current schema (version STORE_SCHEMA_VERSION), column by column:
 *
 * runs: one row per sixi-bench or sixi-eval invocation (and per sixi-eval kl run)
 *   id              run number, 1, 2, ... in the order runs began
 *   kind            'bench' or 'eval': which program wrote the run
 *   workload        what was run: sweep, prefill, agents, rate, selftest, eval, kl, ...
 *   started         wall-clock start, ISO 8601 UTC
 *   finished        wall-clock end, ISO 8601 UTC; NULL while running or after a kill
 *   protocol_json   the frozen configuration, canonical JSON (every option that shapes a number)
 *   protocol_hash   sha256 of protocol_json
 *   config_hash     sha256 of protocol_json (kept apart so that one may later leave fields out)
 *   endpoint        the server's base URL
 *   model           the model name sent in requests
 *   fingerprint     what the server said about itself (JSON); the first one taken
 *   client_version  "sixi VERSION" of the program that wrote the run
 *   host_facts      the client host at the start (JSON: CPU, memory, other servers)
 *   status          'running' until the program marks it ('done', 'failed', ...); a killed run stays 'running'
 *   summary_json    the live summary (JSON object), merged key by key as the run goes:
 *                   bench levels ($.levels[]), eval figures ($.eval), regrades, audits
 *
 * bench_requests: one row per request of a bench run, clustered on (run, id)
 *   id              row number within its run, 1, 2, ... in the order rows were written
 *   run             runs.id
 *   phase           'measure', 'warmup', 'ready' or 'alone'; only 'measure' rows are figures
 *   level           what the workload varies: concurrency, prompt tokens, agents, requests/s
 *   stream          stream index within the level
 *   seq             request number within the stream
 *   prompt_tokens   usage.prompt_tokens; NULL when the server sent no usage
 *   cached_tokens   usage's cached prompt tokens; NULL when not reported
 *   completion_tokens usage.completion_tokens; NULL when the server sent no usage
 *   requested_tokens max_tokens asked for
 *   sse_events      SSE events received
 *   content_events  SSE events that carried content
 *   t_intended      when the request was meant to be sent (rate workloads), CLOCK_MONOTONIC ns
 *   t_send          when it was sent, ns
 *   t_first_byte    first response byte, ns
 *   t_first_token   first content token, ns
 *   t_last          last content token, ns
 *   t_done          response complete, ns (all CLOCK_MONOTONIC of the client; NULL: did not happen)
 *   error           NULL on success, else the class: connect, http, stall, reset, parse,
 *                   server, usage or timeout
 *   error_detail    what went wrong, in words
 *   http_status     the response's status code; NULL when none came
 *   finish_reason   the server's finish_reason
 *   fingerprint_hash sha256 of the server fingerprint current when the request was sent
 *   tag             workload detail, e.g. 'doc' or 'followup'
 *   itl_json        gaps between token-bearing events, JSON array of ns (vLLM's per-request ITL list); NULL before any was kept
 *
 * raw_text: bytes stored once under their digest
 *   sha256          hex digest of bytes
 *   bytes           the text (replies, reasoning, per-event offsets), as sent
 *
 * eval_rows: one row per attempt at one task of an eval run
 *   id              row number (global)
 *   run             runs.id
 *   repeat_index    repeat, 0-based
 *   task_id         the task's id in its dataset
 *   attempt         attempt number, 1-based; the highest of a (run, repeat, task) is its outcome
 *   pass            1 when the grader passed the reply
 *   prompt_tokens   usage.prompt_tokens; NULL when unknown
 *   completion_tokens usage.completion_tokens; NULL when unknown
 *   seconds         wall time of the request
 *   truncated       1 when the reply hit max_tokens
 *   has_code        1 when the reply held a code block
 *   loop_pct        share of the reply that repeats itself, percent
 *   early_stop      why the reply was cut short by the client, if it was
 *   api_error       the request's error, if any
 *   failure_class   pass, truncated, loop, environment, api_error or wrong
 *   finish_reason   the server's finish_reason
 *   raw_sha256      raw_text key of the reply's content
 *   reasoning_sha256 raw_text key of the reply's reasoning, if any
 *   grader_detail   the grader's detail (JSON: answer, chunks_sha256, ...)
 *
 * kl_rows: one row per position of a sixi-eval kl run
 *   run             runs.id
 *   position        0-based index of the token whose successor is predicted
 *   token           the text's next token (the one scored)
 *   kl              KL(reference || candidate) of the full next-token distributions, nats
 *   top1_same       1 when the two most probable tokens are the same
 *   logp_ref        log-probability of token under the reference, nats
 *   logp_cand       log-probability of token under the candidate, nats
 *
 * schema_version: one row, the version of this file's format.
 *
 * Migrations are an ordered list of SQL scripts; version N's script turns a
 * version N-1 file into a version N file inside one transaction (store.c). A
 * script, once released, is never edited: a change is a new version. */
#include "store/internal.h"
#include "store/store.h"

const char *const store_migrations[] = {
	/* version 1 */
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('bench','eval')),"
	" workload TEXT,"
	" started TEXT NOT NULL,"
	" finished TEXT,"
	" protocol_json TEXT NOT NULL,"
	" protocol_hash TEXT NOT NULL,"
	" config_hash TEXT NOT NULL,"
	" endpoint TEXT,"
	" model TEXT,"
	" fingerprint TEXT,"
	" client_version TEXT NOT NULL,"
	" host_facts TEXT,"
	" status TEXT NOT NULL DEFAULT 'running',"
	" summary_json TEXT);"
	"CREATE TABLE bench_requests ("
	" id INTEGER PRIMARY KEY,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" phase TEXT NOT NULL DEFAULT 'measure',"
	" level INTEGER NOT NULL,"
	" stream INTEGER NOT NULL,"
	" seq INTEGER NOT NULL DEFAULT 0,"
	" prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER, requested_tokens INTEGER,"
	" sse_events INTEGER NOT NULL DEFAULT 0, content_events INTEGER NOT NULL DEFAULT 0,"
	" t_intended INTEGER, t_send INTEGER, t_first_byte INTEGER, t_first_token INTEGER, t_last INTEGER, t_done INTEGER,"
	" error TEXT, error_detail TEXT, http_status INTEGER, finish_reason TEXT,"
	" fingerprint_hash TEXT, tag TEXT, itl_json TEXT);"
	"CREATE INDEX bench_requests_run ON bench_requests(run, level);"
	"CREATE TABLE raw_text ("
	" sha256 TEXT PRIMARY KEY,"
	" bytes BLOB NOT NULL);"
	"CREATE TABLE eval_rows ("
	" id INTEGER PRIMARY KEY,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" repeat_index INTEGER NOT NULL,"
	" task_id TEXT NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" pass INTEGER NOT NULL CHECK (pass IN (0,1)),"
	" prompt_tokens INTEGER, completion_tokens INTEGER,"
	" seconds REAL,"
	" truncated INTEGER NOT NULL DEFAULT 0,"
	" has_code INTEGER NOT NULL DEFAULT 0,"
	" loop_pct REAL,"
	" early_stop TEXT,"
	" api_error TEXT,"
	" failure_class TEXT NOT NULL CHECK (failure_class IN ('pass','truncated','loop','environment','api_error','wrong')),"
	" finish_reason TEXT,"
	" raw_sha256 TEXT REFERENCES raw_text(sha256),"
	" reasoning_sha256 TEXT REFERENCES raw_text(sha256),"
	" grader_detail TEXT,"
	" UNIQUE (run, repeat_index, task_id, attempt));"
	"CREATE INDEX eval_rows_run ON eval_rows(run, task_id);",
	/* version 2: bench rows clustered on (run, id), one b-tree per row written
	 * instead of the table plus its (run, level) index; id is now numbered
	 * within its run (1, 2, ... in the order rows were written) */
	"CREATE TABLE bench_requests_v2 ("
	" id INTEGER NOT NULL,"
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" phase TEXT NOT NULL DEFAULT 'measure',"
	" level INTEGER NOT NULL,"
	" stream INTEGER NOT NULL,"
	" seq INTEGER NOT NULL DEFAULT 0,"
	" prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER, requested_tokens INTEGER,"
	" sse_events INTEGER NOT NULL DEFAULT 0, content_events INTEGER NOT NULL DEFAULT 0,"
	" t_intended INTEGER, t_send INTEGER, t_first_byte INTEGER, t_first_token INTEGER, t_last INTEGER, t_done INTEGER,"
	" error TEXT, error_detail TEXT, http_status INTEGER, finish_reason TEXT,"
	" fingerprint_hash TEXT, tag TEXT, itl_json TEXT,"
	" PRIMARY KEY (run, id)) WITHOUT ROWID;"
	"INSERT INTO bench_requests_v2 SELECT * FROM bench_requests;"
	"DROP TABLE bench_requests;"
	"ALTER TABLE bench_requests_v2 RENAME TO bench_requests;",
	/* version 3: per-position rows of a KL-divergence run (sixi-eval kl): the candidate's
	 * next-token distribution against the reference's at each position of a text */
	"CREATE TABLE kl_rows ("
	" run INTEGER NOT NULL REFERENCES runs(id),"
	" position INTEGER NOT NULL,"
	" token INTEGER NOT NULL,"
	" kl REAL NOT NULL,"
	" top1_same INTEGER NOT NULL CHECK (top1_same IN (0,1)),"
	" logp_ref REAL NOT NULL,"
	" logp_cand REAL NOT NULL,"
	" PRIMARY KEY (run, position)) WITHOUT ROWID;",};
const int store_n_migrations = (int)(sizeof store_migrations / sizeof store_migrations[0]);

_Static_assert(sizeof store_migrations / sizeof store_migrations[0] == STORE_SCHEMA_VERSION,
	       "STORE_SCHEMA_VERSION is the number of migrations");
