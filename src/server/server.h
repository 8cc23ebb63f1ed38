/* server — the OpenAI-compatible API over the scheduler: /v1/completions,
 * /v1/chat/completions (streaming or not), /v1/models, /health, /metrics.
 * Wires http.h, sched.h and an engine together. Arguments are borrowed; the
 * engine must outlive the server. */
#ifndef SIXI_SERVER_SERVER_H
#define SIXI_SERVER_SERVER_H
#include "server/http.h"
#include "server/scheduler.h"

struct engine;
struct server;

struct server_config {
	struct http_config http;
	struct sched_config sched;
	int64_t shutdown_drain_ns; /* how long in-flight output may take to drain at shutdown */
	const char *chat_template_path; /* .jinja or tokenizer_config.json overriding the model's; NULL */
};
void server_config_default(struct server_config *c);

/* Binds, starts the scheduler and submits a warm-up generation; /health says
 * ready once that generation has produced a token. NULL with err set. */
struct server *server_create(struct engine *e, const struct server_config *c, char *err, size_t errlen);
int server_port(const struct server *s);
/* Serves until stop_fd (e.g. a signalfd for SIGINT/SIGTERM) is readable, then
 * ends in-flight streams with an error event and returns. 0 or -errno. */
__attribute__((warn_unused_result)) int server_run(struct server *s, int stop_fd);
void server_destroy(struct server *s);
#endif
