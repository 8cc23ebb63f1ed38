/* session — see session.h.
 *
 * Each request gets its own http_client and blocks until done: greeting requests
 * are few (a readiness poll every 500 ms, a couple of warm-ups) and never measured,
 * so nothing here is on a hot path. */
#include "session/session.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "net/hostmem.h"
#include "net/http.h"
#include "store/store.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Time between readiness attempts. */
#define READY_RETRY_NS 500000000LL

struct session {
	struct session_opts o;
	char *url;                 /* base */
	char *tag;
	char url_api[1200];        /* base + the API's path */
	struct store *store;       /* NULL until attached */
	int64_t run_id;
	char *first_json;          /* the first fingerprint taken, NULL before */
	char hash[65];             /* sha256 of the latest, "" before */
	char first_hash[65];
	int store_errors;          /* rows that could not be stored */
};

struct session *session_create(const struct session_opts *o)
{
	if (!o || !o->url || !o->body) {
		errno = EINVAL;
		return NULL;
	}
	struct session *s = calloc(1, sizeof *s);
	if (!s)
		goto oom;
	s->o = *o;
	s->url = strdup(o->url);
	s->tag = o->tag ? strdup(o->tag) : NULL;
	if (!s->url || (o->tag && !s->tag))
		goto oom;
	snprintf(s->url_api, sizeof s->url_api, "%s%s", s->url, openai_api_path(o->api));
	s->o.url = s->url;
	s->o.tag = s->tag;
	return s;
oom:
	session_destroy(s);
	errno = ENOMEM;
	return NULL;
}

void session_destroy(struct session *s)
{
	if (!s)
		return;
	free(s->url);
	free(s->tag);
	free(s->first_json);
	free(s);
}

static int keep_in_run(struct session *s, char *err, size_t errlen)
{
	if (!s->store || !s->first_json)
		return 0;
	int rc = store_run_keep_fingerprint(s->store, s->run_id, s->first_json);
	if (rc)
		err_set(err, errlen, "cannot record the server's fingerprint with run %lld: %s", (long long)s->run_id,
			rc == -ENOENT ? "no such run" : store_errmsg(s->store));
	return rc;
}

int session_attach(struct session *s, struct store *st, int64_t run_id, char *err, size_t errlen)
{
	s->store = st;
	s->run_id = run_id;
	return keep_in_run(s, err, errlen);
}

int session_store_errors(const struct session *s)
{
	return s->store_errors;
}

/* ---- requests ---- */

static void on_done(struct oai_stream *st, void *ud)
{
	(void)st;
	*(bool *)ud = true;
}

static void store_row(struct session *s, const char *phase, int64_t seq, int64_t requested,
		      const struct oai_stream *r, bool empty_is_error)
{
	if (!s->store)
		return;
	bool generated = r->completion_tokens > 0 || r->token_events > 0 || r->content.len > 0 || r->reasoning.len > 0;
	const char *error = r->error;
	const char *detail = r->error ? r->error_detail : NULL;
	if (!error && empty_is_error && !generated) {
		error = "usage";
		detail = "no tokens generated";
	}
	struct store_bench_row row = {
		.run_id = s->run_id,
		.phase = phase,
		.level = 0,
		.stream = -1, /* not a stream of the load */
		.seq = seq,
		.prompt_tokens = r->prompt_tokens,
		.cached_tokens = r->cached_tokens,
		.completion_tokens = r->completion_tokens,
		.requested_tokens = requested,
		.sse_events = r->sse_events,
		.content_events = r->token_events,
		.t_send = r->t_send,
		.t_first_byte = r->t_first_byte,
		.t_first_token = r->t_first_token,
		.t_last = r->t_last_token,
		.t_done = r->t_done,
		.error = error,
		.error_detail = detail,
		.http_status = r->http_status,
		.finish_reason = r->finish_reason[0] ? r->finish_reason : NULL,
		.fingerprint_hash = s->hash[0] ? s->hash : NULL,
		.tag = s->tag,
	};
	if (store_bench_insert(s->store, &row) != 0 && s->store_errors++ == 0)
		log_error("could not store a %s request: %s", phase, store_errmsg(s->store));
}

static int send_one(struct session *s, const char *body, size_t len, int64_t timeout_ms, struct oai_stream *out)
{
	memset(out, 0, sizeof *out);
	struct http_client *c = http_client_create();
	if (!c)
		return -ENOMEM;
	if (timeout_ms < 1000)
		timeout_ms = 1000;
	int64_t stall = s->o.stall_timeout_ms > 0 && s->o.stall_timeout_ms < timeout_ms ? s->o.stall_timeout_ms
											  : timeout_ms;
	bool done = false;
	struct oai_stream_opts so = {
		.url = s->url_api,
		.body = body,
		.body_len = len,
		.stream = s->o.stream,
		.keep_text = true,
		.connect_timeout_ms = s->o.connect_timeout_ms > 0 ? s->o.connect_timeout_ms : 10000,
		.first_byte_timeout_ms = timeout_ms,
		.stall_timeout_ms = stall,
		.total_timeout_ms = timeout_ms,
		.on_done = on_done,
		.ud = &done,
	};
	int rc = oai_stream_start(c, out, &so);
	if (rc == 0)
		while (!done)
			http_client_run(c, 50000000LL);
	else
		oai_stream_finish(out); /* whatever the start had set up */
	http_client_destroy(c);
	return rc;
}

int session_request(struct session *s, const char *phase, int64_t seq, const char *body, size_t len,
		    int64_t max_tokens, int64_t timeout_ms, struct oai_stream *out)
{
	int rc = send_one(s, body, len, timeout_ms, out);
	if (rc == 0)
		store_row(s, phase, seq, max_tokens, out, false);
	return rc;
}

/* A generation of the caller's body for (phase, seq): 0 with *generated and the
 * outcome in *out (to be finished), or -errno. */
static int greet(struct session *s, const char *phase, int64_t seq, int64_t max_tokens, int64_t timeout_ms,
		 struct oai_stream *out, bool *generated)
{
	memset(out, 0, sizeof *out); /* finished by the caller whatever happens */
	char *body = NULL;
	size_t len = 0;
	int rc = s->o.body(s->o.ud, phase, seq, max_tokens, &body, &len);
	if (rc) {
		free(body);
		return rc;
	}
	rc = send_one(s, body, len, timeout_ms, out);
	free(body);
	if (rc)
		return rc;
	store_row(s, phase, seq, max_tokens, out, true);
	*generated = !out->error &&
		     (out->completion_tokens > 0 || out->token_events > 0 || out->content.len > 0 || out->reasoning.len > 0);
	return 0;
}

int session_wait_ready(struct session *s, const struct session_ready *r, char *err, size_t errlen)
{
	int64_t deadline = clock_now_ns() + r->deadline_ms * 1000000LL;
	char last[300] = "no answer yet";
	for (int64_t attempt = 0;; attempt++) {
		/* an attempt never outlives the deadline: a server that takes the request
		 * and hangs must not hold the caller for a whole request timeout */
		int64_t left_ms = (deadline - clock_now_ns()) / 1000000LL;
		int64_t t = r->attempt_timeout_ms > 0 && r->attempt_timeout_ms < left_ms ? r->attempt_timeout_ms : left_ms;
		struct oai_stream o;
		bool ok = false;
		int rc = greet(s, "ready", attempt, r->max_tokens, t, &o, &ok);
		if (rc) {
			oai_stream_finish(&o);
			err_set(err, errlen, "cannot send the readiness request to %s: %s", s->url_api, strerror(-rc));
			return rc;
		}
		if (o.error)
			snprintf(last, sizeof last, "%s: %.200s", o.error, o.error_detail);
		else if (!ok)
			snprintf(last, sizeof last, "a generation returned no tokens");
		oai_stream_finish(&o);
		if (ok)
			return 0;
		if (clock_now_ns() >= deadline) {
			err_set(err, errlen,
				"%s is not ready: it never returned tokens within %g s (last attempt: %s); a server can "
				"answer /health and /v1/models while its generation is still loading or wedged: %s",
				s->url_api, (double)r->deadline_ms / 1000.0, last, r->hint ? r->hint : "check it");
			return -ETIMEDOUT;
		}
		log_info("waiting for %s to generate (%s)", s->url_api, last);
		clock_sleep_ns(READY_RETRY_NS);
	}
}

int session_warmup(struct session *s, int64_t count, int64_t max_tokens, int64_t timeout_ms)
{
	for (int64_t i = 0; i < count; i++) {
		struct oai_stream o;
		bool ok = false;
		int rc = greet(s, "warmup", i, max_tokens, timeout_ms, &o, &ok);
		if (rc == 0 && !ok)
			log_warn("warm-up request %lld failed: %s: %s", (long long)i + 1, o.error ? o.error : "usage",
				 o.error ? o.error_detail : "no tokens generated");
		oai_stream_finish(&o);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the fingerprint ---- */

static const char *const fp_paths[] = { "/v1/models", "/props", "/get_server_info" };

int session_fingerprint(struct session *s, bool *changed, char *err, size_t errlen)
{
	if (changed)
		*changed = false;
	cJSON *fp = cJSON_CreateObject();
	if (!fp)
		return -ENOMEM;
	char models_err[1600] = "";
	for (size_t i = 0; i < sizeof fp_paths / sizeof fp_paths[0]; i++) {
		char url[1300], ferr[256] = "";
		snprintf(url, sizeof url, "%s%s", s->url, fp_paths[i]);
		struct buf out;
		buf_init(&out);
		int status = 0;
		cJSON *j = NULL;
		if (http_fetch(url, NULL, 5000, &out, &status, ferr, sizeof ferr) == 0 && status == 200 && out.len)
			j = cJSON_ParseWithLength(out.data, out.len);
		if (i == 0 && !j)
			snprintf(models_err, sizeof models_err, "%s: %s", url,
				 ferr[0] ? ferr : status != 200 ? "the server did not answer 200" : "the answer is not JSON");
		buf_finish(&out);
		if (!j)
			continue;
		/* volatile fields would make every fingerprint unique */
		cJSON_DeleteItemFromObject(j, "created");
		cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "data")) cJSON_DeleteItemFromObject(it, "created");
		cJSON_AddItemToObject(fp, fp_paths[i], j);
	}
	char *text = cJSON_PrintUnformatted(fp);
	cJSON_Delete(fp);
	if (!text) {
		/* keep the fingerprint taken before (or none), never guess one */
		log_warn("out of memory while taking the server's fingerprint");
		return -ENOMEM;
	}
	sha256_hex(text, strlen(text), s->hash);
	int rc = 0;
	if (!s->first_json) {
		s->first_json = text;
		memcpy(s->first_hash, s->hash, sizeof s->hash);
		rc = keep_in_run(s, err, errlen);
		if (rc)
			rc = -EIO;
	} else {
		if (changed)
			*changed = strcmp(s->first_hash, s->hash) != 0;
		free(text);
	}
	if (rc == 0 && models_err[0]) {
		err_set(err, errlen, "%s", models_err);
		rc = -EPROTO;
	}
	return rc;
}

const char *session_fingerprint_json(const struct session *s)
{
	return s->first_json ? s->first_json : "";
}

const char *session_fingerprint_hash(const struct session *s)
{
	return s->hash;
}

/* The fingerprint's model list in the form runs stored before this module. Caller frees. */
static char *legacy_models(const char *now)
{
	cJSON *root = cJSON_Parse(now);
	cJSON *out = cJSON_CreateArray();
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(cJSON_GetObjectItem(root, "/v1/models"), "data"))
	{
		cJSON *e = cJSON_CreateObject();
		const char *id = json_get_str(m, "id");
		cJSON_AddStringToObject(e, "id", id ? id : "");
		int64_t len;
		if (json_get_i64(m, "max_model_len", &len))
			cJSON_AddNumberToObject(e, "max_model_len", (double)len);
		cJSON_AddItemToArray(out, e);
	}
	cJSON_Delete(root);
	char *s = cJSON_PrintUnformatted(out);
	cJSON_Delete(out);
	return s;
}

bool session_fingerprint_same(const char *stored, const char *now)
{
	if (!stored || !now)
		return false;
	if (stored[0] != '[')
		return strcmp(stored, now) == 0;
	char *legacy = legacy_models(now);
	bool same = legacy && strcmp(stored, legacy) == 0;
	free(legacy);
	return same;
}

static bool fp_host_key(const char *k)
{
	static const char *const host[] = { "created", "model_path", "total_slots", "hostname",
					    "pid",     "port",	     "uptime",	    "start_time" };
	for (size_t i = 0; k && i < sizeof host / sizeof host[0]; i++)
		if (strcmp(k, host[i]) == 0)
			return true;
	return false;
}

/* 1 with the path of the first differing field, 0 when equal. */
static int fp_diff(const cJSON *a, const cJSON *b, const char *path, char *field, size_t fieldlen)
{
	char sub[512];
	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, a)
		{
			if (fp_host_key(it->string))
				continue;
			snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", it->string);
			int rc = fp_diff(it, cJSON_GetObjectItemCaseSensitive(b, it->string), sub, field, fieldlen);
			if (rc)
				return rc;
		}
		cJSON_ArrayForEach(it, b)
		{
			if (fp_host_key(it->string) || cJSON_GetObjectItemCaseSensitive(a, it->string))
				continue;
			snprintf(field, fieldlen, "%s%s%s", path, path[0] ? "." : "", it->string);
			return 1;
		}
		return 0;
	}
	if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
		int n = cJSON_GetArraySize(a);
		if (n != cJSON_GetArraySize(b)) {
			snprintf(field, fieldlen, "%s (length)", path);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			snprintf(sub, sizeof sub, "%s[%d]", path, i);
			int rc = fp_diff(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i), sub, field, fieldlen);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (!a || !b || !cJSON_Compare(a, b, true)) {
		snprintf(field, fieldlen, "%s", path[0] ? path : "(whole)");
		return 1;
	}
	return 0;
}

int session_fingerprint_model_diff(const char *a, const char *b, char *field, size_t fieldlen)
{
	if (field && fieldlen)
		field[0] = 0;
	char scratch[8];
	if (!field || !fieldlen) {
		field = scratch;
		fieldlen = sizeof scratch;
	}
	cJSON *ja = a ? cJSON_Parse(a) : NULL, *jb = b ? cJSON_Parse(b) : NULL;
	int rc;
	if (!cJSON_IsObject(ja) || !cJSON_IsObject(jb)) {
		snprintf(field, fieldlen, "%s", !cJSON_IsObject(ja) ? "first fingerprint: not a JSON object"
								    : "second fingerprint: not a JSON object");
		rc = -EINVAL;
	} else {
		rc = fp_diff(ja, jb, "", field, fieldlen);
	}
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	return rc;
}

/* ---- host facts ---- */

char *session_host_facts(const struct session *s, const cJSON *extra, char *memwarn, size_t memwarnlen)
{
	if (memwarn && memwarnlen)
		memwarn[0] = 0;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	struct utsname u;
	if (uname(&u) == 0) {
		cJSON_AddStringToObject(o, "hostname", u.nodename);
		cJSON_AddStringToObject(o, "kernel", u.release);
		cJSON_AddStringToObject(o, "machine", u.machine);
	}
	cJSON_AddNumberToObject(o, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddNumberToObject(o, "memory_bytes", (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE));
	/* other servers holding memory on this machine (a local endpoint only) */
	char *mem = NULL, warn[1024] = "";
	if (hostmem_check(s->url, &mem, warn, sizeof warn) == 0) {
		cJSON *m = cJSON_Parse(mem);
		if (m)
			cJSON_AddItemToObject(o, "memory", m);
	}
	free(mem);
	if (memwarn && memwarnlen)
		snprintf(memwarn, memwarnlen, "%s", warn);
	const cJSON *it;
	cJSON_ArrayForEach(it, extra)
		if (it->string)
			cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, true));
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}
