/* hostmem — memory hygiene of the machine before a measurement: how much memory
 * is available, and which other LLM server processes (sixi-server,
 * llama-server, vLLM, SGLang, Ollama, ...) are running and holding it. A server
 * left over from an earlier run takes memory (and often GPU memory) from the
 * server under test, so its numbers change without any setting changing.
 *
 * What a server is: a process whose *executable* is a known server (the basename
 * of /proc/PID/exe, or its comm when exe cannot be read), or an interpreter
 * (python, python3, python3.11, ...) running a known server module or entry
 * script (`python3 -m vllm.entrypoints.openai.api_server`, `vllm serve`,
 * `python -m sglang.launch_server`), and that listens on a TCP port. A word in
 * the command line is not enough: `cmake --build . --target llama-server`,
 * `grep llama-server`, `tail -f llama-server.log` and an editor are not servers,
 * and neither is a server binary that listens on nothing (`llama-server --help`,
 * one still loading its weights before it opens its port).
 * The server under test is the process listening on the endpoint's port (from
 * /proc/net/tcp{,6} and the processes' socket descriptors): it is never "another"
 * server, whatever its executable (a wrapper such as valgrind included).
 *
 * Reads PROC/meminfo, PROC/net/tcp{,6} and PROC/PID/{exe,comm,cmdline,statm,fd}
 * under a root that tests point at a fixture tree.
 * Does not: read GPU memory, kill anything, or look at a remote endpoint's
 * machine (a non-local endpoint is recorded as not checked). A process of
 * another user whose descriptors cannot be read counts as listening (it cannot
 * be shown not to). */
#ifndef SIXI_CORE_HOSTMEM_H
#define SIXI_CORE_HOSTMEM_H
#include <stddef.h>

/* Checks the machine for endpoint (a base URL such as http://127.0.0.1:8080).
 * *json gets a JSON object to store with the run (caller frees):
 *   {"checked": bool, "reason": text (when not checked), "total_bytes", "available_bytes",
 *    "target_pid": N | null, "other_servers": [{"pid", "name", "rss_bytes", "ports": [N...]}],
 *    "warning": text | null}
 * warn gets one line for the user ("" when there is nothing to say).
 * Returns 0, or -ENOMEM. */
int hostmem_check(const char *endpoint, char **json, char *warn, size_t warnlen);
/* The same over the process table at proc_root ("/proc" for this machine). The
 * calling process and its parent are left out only when proc_root is "/proc". */
int hostmem_check_at(const char *proc_root, const char *endpoint, char **json, char *warn, size_t warnlen);

/* The known server a process is, or NULL: exe is the basename of its executable
 * (or its comm, at most 15 bytes, when the executable cannot be read), argv its
 * arguments (argv[0] as the process wrote it). Whether it listens is not looked at. */
const char *hostmem_server_kind(const char *exe, const char *const *argv, int argc);
#endif
