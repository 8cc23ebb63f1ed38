/* hostmem — memory hygiene of the machine before a measurement: how much memory
 * is available, and which other LLM server processes (sixi-server,
 * llama-server, vLLM, SGLang, Ollama, ...) are running and holding it. A server
 * left over from an earlier run takes memory (and often GPU memory) from the
 * server under test, so its numbers change without any setting changing.
 *
 * What it does: reads /proc/meminfo and /proc/PID/{comm,cmdline,statm}; finds
 * the server under test as the process listening on the endpoint's port (via
 * /proc/net/tcp{,6} and the processes' socket descriptors) and leaves it out.
 * What it does not do: read GPU memory, kill anything, or look at a remote
 * endpoint's machine (a non-local endpoint is recorded as not checked). */
#ifndef SIXI_CORE_HOSTMEM_H
#define SIXI_CORE_HOSTMEM_H
#include <stddef.h>

/* Checks the machine for endpoint (a base URL such as http://127.0.0.1:8080).
 * *json gets a JSON object to store with the run (caller frees):
 *   {"checked": bool, "reason": text (when not checked), "total_bytes", "available_bytes",
 *    "target_pid": N | null, "other_servers": [{"pid", "name", "rss_bytes"}], "warning": text | null}
 * warn gets one line for the user ("" when there is nothing to say).
 * Returns 0, or -ENOMEM. */
int hostmem_check(const char *endpoint, char **json, char *warn, size_t warnlen);
#endif
