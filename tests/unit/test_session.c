/* Unit tests for src/session: fingerprint comparison (with the form of older runs),
 * host facts, and readiness and the fingerprint against a port that refuses
 * connections (a bound socket that never listens), stored in a real database. */
#include "test.h"
#include "core/hash.h"
#include "session/session.h"
#include "store/store.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

static int dummy_body(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len)
{
	(*(int *)ud)++;
	char buf[128];
	int n = snprintf(buf, sizeof buf, "{\"prompt\":\"%s %lld\",\"max_tokens\":%lld}", phase, (long long)seq,
			 (long long)max_tokens);
	*body = strdup(buf);
	*len = (size_t)n;
	return *body ? 0 : -ENOMEM;
}

static int bad_body(void *ud, const char *phase, int64_t seq, int64_t max_tokens, char **body, size_t *len)
{
	(void)ud, (void)phase, (void)seq, (void)max_tokens, (void)body, (void)len;
	return -EINVAL;
}

static void test_same(void)
{
	const char *now = "{\"/v1/models\":{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"max_model_len\":4096},"
			  "{\"id\":\"n\"}]},\"/props\":{\"total_slots\":4}}";
	CHECK(session_fingerprint_same(now, now));
	CHECK(!session_fingerprint_same("{\"/v1/models\":{}}", now));
	/* runs recorded before the session module stored only the model list */
	CHECK(session_fingerprint_same("[{\"id\":\"m\",\"max_model_len\":4096},{\"id\":\"n\"}]", now));
	CHECK(!session_fingerprint_same("[{\"id\":\"m\",\"max_model_len\":8192},{\"id\":\"n\"}]", now));
	CHECK(!session_fingerprint_same("[{\"id\":\"m\"}]", now));
	CHECK(!session_fingerprint_same(NULL, now));
}

/* Replicas: host fields may differ, model fields may not; the differing field is named. */
static void test_model_diff(void)
{
	const char *a = "{\"/v1/models\":{\"data\":[{\"id\":\"m\",\"context_length\":4096}]},"
			"\"/props\":{\"total_slots\":4,\"model_path\":\"/a/m.gguf\",\"chat_template\":\"t\"}}";
	const char *b = "{\"/v1/models\":{\"data\":[{\"id\":\"m\",\"context_length\":4096}]},"
			"\"/props\":{\"total_slots\":8,\"model_path\":\"/b/m.gguf\",\"chat_template\":\"t\"}}";
	const char *c = "{\"/v1/models\":{\"data\":[{\"id\":\"m\",\"context_length\":8192}]},"
			"\"/props\":{\"chat_template\":\"t\"}}";
	const char *d = "{\"/v1/models\":{\"data\":[{\"id\":\"m\",\"context_length\":4096}]},"
			"\"/props\":{\"chat_template\":\"t\",\"n_vocab\":5}}";
	char f[256];
	CHECK_EQ_INT(session_fingerprint_model_diff(a, a, f, sizeof f), 0);
	CHECK_EQ_INT(session_fingerprint_model_diff(a, b, f, sizeof f), 0);
	CHECK_EQ_STR(f, "");
	CHECK_EQ_INT(session_fingerprint_model_diff(a, c, f, sizeof f), 1);
	CHECK_EQ_STR(f, "/v1/models.data[0].context_length");
	CHECK_EQ_INT(session_fingerprint_model_diff(a, d, f, sizeof f), 1);
	CHECK_EQ_STR(f, "/props.n_vocab");
	CHECK_EQ_INT(session_fingerprint_model_diff(d, a, f, sizeof f), 1);
	CHECK_EQ_STR(f, "/props.n_vocab");
	CHECK_EQ_INT(session_fingerprint_model_diff("[1]", a, f, sizeof f), -EINVAL);
	CHECK_EQ_INT(session_fingerprint_model_diff(a, NULL, f, sizeof f), -EINVAL);
	CHECK(strstr(f, "second") != NULL);
}

/* A loopback port that refuses connections: bound, never listening. */
static int closed_port(int *fd)
{
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof a;
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(*fd, (struct sockaddr *)&a, &n))
		return -1;
	return ntohs(a.sin_port);
}

static long long count(const char *db, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	long long v = -1;
	if (sqlite3_open(db, &h) == SQLITE_OK && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(h);
	return v;
}

int main(void)
{
	test_same();
	test_model_diff();

	errno = 0;
	CHECK(session_create(&(struct session_opts){ .url = NULL, .body = dummy_body }) == NULL && errno == EINVAL);

	int fd, calls = 0;
	int port = closed_port(&fd);
	if (!CHECK(port > 0))
		return test_done();
	char url[64], dir[512], db[600], err[1024] = "";
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/sixi-test-session-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	if (!CHECK(mkdtemp(dir) != NULL))
		return test_done();
	snprintf(db, sizeof db, "%s/s.db", dir);
	struct session *s = session_create(&(struct session_opts){ .url = url, .api = OPENAI_COMPLETIONS, .stream = true,
								   .tag = "t", .body = dummy_body, .ud = &calls });
	struct store *st = store_open(db, err, sizeof err);
	if (!CHECK(s && st))
		return test_done();
	CHECK_EQ_STR(session_fingerprint_json(s), "");
	CHECK_EQ_STR(session_fingerprint_hash(s), "");

	/* host facts: the machine, the other-servers check, the caller's extras */
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "grader_python", "x");
	char warn[512] = "?";
	char *facts = session_host_facts(s, extra, warn, sizeof warn);
	cJSON *f = facts ? cJSON_Parse(facts) : NULL;
	CHECK(cJSON_IsString(cJSON_GetObjectItem(f, "hostname")));
	CHECK(cJSON_GetObjectItem(f, "cpus") && cJSON_GetObjectItem(f, "cpus")->valuedouble >= 1);
	CHECK(cJSON_GetObjectItem(f, "memory_bytes") && cJSON_GetObjectItem(f, "memory_bytes")->valuedouble > 0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "memory"), "checked")));
	CHECK_EQ_STR(cJSON_GetObjectItem(f, "grader_python") ? cJSON_GetObjectItem(f, "grader_python")->valuestring : "",
		     "x");
	CHECK(strcmp(warn, "?") != 0);
	cJSON_Delete(f);
	cJSON_Delete(extra);

	struct store_run r = { .kind = "bench", .workload = "sweep", .protocol_json = "{}", .host_facts = facts };
	int64_t run = 0;
	CHECK(store_run_begin(st, &r, &run) == 0);
	free(facts);
	CHECK(session_attach(s, st, run, err, sizeof err) == 0);

	/* readiness: every attempt is a real generation, stored; the deadline ends it */
	struct session_ready rd = { .deadline_ms = 1, .max_tokens = 4, .hint = "do this" };
	CHECK_EQ_INT(session_wait_ready(s, &rd, err, sizeof err), -ETIMEDOUT);
	CHECK(strstr(err, "is not ready") && strstr(err, url + 7) && strstr(err, "connect") && strstr(err, "do this"));
	CHECK(calls >= 1);
	CHECK_EQ_INT(count(db, "SELECT count(*) FROM bench_requests WHERE phase = 'ready' AND error = 'connect'"
			       " AND tag = 't' AND requested_tokens = 4 AND fingerprint_hash IS NULL"), calls);

	/* no /v1/models: -EPROTO naming it; the fingerprint is what answered (nothing), kept by the run */
	bool changed = true;
	CHECK_EQ_INT(session_fingerprint(s, &changed, err, sizeof err), -EPROTO);
	CHECK(!changed && strstr(err, "/v1/models"));
	CHECK_EQ_STR(session_fingerprint_json(s), "{}");
	char hex[65];
	sha256_hex("{}", 2, hex);
	CHECK_EQ_STR(session_fingerprint_hash(s), hex);
	CHECK_EQ_INT(count(db, "SELECT fingerprint = '{}' FROM runs"), 1);

	/* warm-up: a failed request is stored and logged, not fatal; rows carry the hash */
	int before = calls;
	CHECK_EQ_INT(session_warmup(s, 2, 8, 1000), 0);
	CHECK_EQ_INT(calls - before, 2);
	CHECK_EQ_INT(count(db, "SELECT count(*) FROM bench_requests WHERE phase = 'warmup' AND seq IN (0, 1)"
			       " AND requested_tokens = 8 AND length(fingerprint_hash) = 64"), 2);

	CHECK_EQ_INT(session_store_errors(s), 0);
	session_destroy(s);

	/* a body that cannot be made: said at once, nothing sent or stored */
	s = session_create(&(struct session_opts){ .url = url, .body = bad_body });
	CHECK_EQ_INT(session_wait_ready(s, &rd, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "cannot send the readiness request") != NULL);
	CHECK_EQ_INT(session_warmup(s, 1, 8, 1000), -EINVAL);
	session_destroy(s);
	store_close(st);
	close(fd);
	unlink(db);
	char side[640];
	snprintf(side, sizeof side, "%s-wal", db);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", db);
	unlink(side);
	rmdir(dir);
	return test_done();
}
