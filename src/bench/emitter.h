/* emitter — a built-in OpenAI-style SSE server on 127.0.0.1 that streams as fast
 * as the socket takes it. It exists to measure the client, not a model: every
 * response is prebuilt once and written with as few syscalls as possible, so the
 * client is the bottleneck. One epoll thread; HTTP/1.1 keep-alive.
 * Listens on loopback only; struct emitter is opaque. */
#ifndef SIXI_BENCH_EMITTER_H
#define SIXI_BENCH_EMITTER_H
#include <stddef.h>
#include <stdint.h>

struct emitter;

/* events: token events per response; tokens_per_event: tokens each event stands for
 * (usage.completion_tokens = events x tokens_per_event). port 0 picks a free port. */
struct emitter *emitter_start(int port, int64_t events, int64_t tokens_per_event, char *err, size_t errlen);
int emitter_port(const struct emitter *e);
uint64_t emitter_requests(const struct emitter *e);
void emitter_stop(struct emitter *e);
#endif
