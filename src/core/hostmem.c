/* hostmem — see hostmem.h. Linux only (/proc); elsewhere every read fails and
 * the check records what it could not read. */
#include "core/hostmem.h"
#include "core/buf.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

/* Substrings of a process's name or command line that mark an LLM server. */
static const char *const server_names[] = {
	"sixi-server", "llama-server", "vllm", "sglang", "ollama", "text-generation-launcher",
	"text-generation-server", "lmdeploy", "koboldcpp", "llamafile", "tritonserver", "trtllm-serve",
	"mistralrs-server", "tabbyAPI", "mlc_llm", "aphrodite", "exllamav2", "LocalAI", "local-ai",
};

/* Reads a small file; NUL bytes of a command line become spaces. Returns length or -1. */
static long read_small(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(out, 1, cap - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (out[i] == 0)
			out[i] = ' ';
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\n'))
		n--;
	out[n] = 0;
	return (long)n;
}

static long long meminfo_kb(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	return strtoll(p, NULL, 10);
}

/* The host and port of a base URL; false when there is none. */
static bool url_host_port(const char *url, char *host, size_t hostlen, int *port)
{
	const char *p = strstr(url, "://");
	bool https = strncmp(url, "https", 5) == 0;
	p = p ? p + 3 : url;
	const char *end = p + strcspn(p, "/?#");
	const char *colon = NULL;
	if (*p == '[') { /* [::1]:8080 */
		const char *rb = memchr(p, ']', (size_t)(end - p));
		if (!rb)
			return false;
		if ((size_t)(rb - p - 1) >= hostlen)
			return false;
		memcpy(host, p + 1, (size_t)(rb - p - 1));
		host[rb - p - 1] = 0;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		const char *he = colon ? colon : end;
		if ((size_t)(he - p) >= hostlen)
			return false;
		memcpy(host, p, (size_t)(he - p));
		host[he - p] = 0;
	}
	*port = colon ? atoi(colon + 1) : https ? 443 : 80;
	return host[0] != 0;
}

static bool host_is_local(const char *host)
{
	char me[256] = "";
	if (strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
		return true;
	return gethostname(me, sizeof me - 1) == 0 && strcasecmp(host, me) == 0;
}

/* Inodes of sockets listening on port (IPv4 and IPv6); returns how many. */
static int listen_inodes(int port, unsigned long *ino, int cap)
{
	int n = 0;
	static const char *const tabs[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	for (int t = 0; t < 2; t++) {
		FILE *f = fopen(tabs[t], "r");
		if (!f)
			continue;
		char line[512];
		if (!fgets(line, sizeof line, f)) { /* header */
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof line, f) && n < cap) {
			char local[128], remote[128];
			unsigned st;
			unsigned long inode;
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, " %*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) != 4)
				continue;
			char *c = strrchr(local, ':');
			if (st == 0x0A && c && (int)strtol(c + 1, NULL, 16) == port)
				ino[n++] = inode;
		}
		fclose(f);
	}
	return n;
}

/* Does process pid hold one of the socket inodes? */
static bool holds_socket(const char *pid, const unsigned long *ino, int n)
{
	char dir[300];
	snprintf(dir, sizeof dir, "/proc/%s/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char p[600], target[64];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		ssize_t l = readlink(p, target, sizeof target - 1);
		if (l <= 0)
			continue;
		target[l] = 0;
		unsigned long i;
		if (sscanf(target, "socket:[%lu]", &i) == 1)
			for (int k = 0; k < n && !found; k++)
				found = ino[k] == i;
	}
	closedir(d);
	return found;
}

/* The server name a process matches, or NULL. */
static const char *server_match(const char *comm, const char *cmdline)
{
	for (size_t i = 0; i < sizeof server_names / sizeof server_names[0]; i++)
		if (strstr(comm, server_names[i]) || strstr(cmdline, server_names[i]))
			return server_names[i];
	return NULL;
}

static void human(double bytes, char *out, size_t n)
{
	if (bytes >= 1e9)
		snprintf(out, n, "%.1f GB", bytes / 1e9);
	else
		snprintf(out, n, "%.0f MB", bytes / 1e6);
}

int hostmem_check(const char *endpoint, char **json, char *warn, size_t warnlen)
{
	*json = NULL;
	warn[0] = 0;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	char host[256];
	int port = 0;
	if (!endpoint || !url_host_port(endpoint, host, sizeof host, &port) || !host_is_local(host)) {
		cJSON_AddFalseToObject(o, "checked");
		cJSON_AddStringToObject(o, "reason", "the endpoint is not on this machine");
		goto done;
	}
	char text[4096];
	if (read_small("/proc/meminfo", text, sizeof text) < 0) {
		cJSON_AddFalseToObject(o, "checked");
		cJSON_AddStringToObject(o, "reason", "/proc/meminfo cannot be read");
		goto done;
	}
	cJSON_AddTrueToObject(o, "checked");
	double total = (double)meminfo_kb(text, "MemTotal") * 1024, avail = (double)meminfo_kb(text, "MemAvailable") * 1024;
	cJSON_AddNumberToObject(o, "total_bytes", total);
	cJSON_AddNumberToObject(o, "available_bytes", avail);
	unsigned long ino[16];
	int nino = listen_inodes(port, ino, 16);
	long target = -1;
	long self = (long)getpid(), parent = (long)getppid();
	long page = sysconf(_SC_PAGESIZE);
	cJSON *others = cJSON_CreateArray();
	struct buf names;
	buf_init(&names);
	int n_others = 0;
	double held = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		long pid = strtol(e->d_name, NULL, 10);
		if (pid == self || pid == parent)
			continue;
		char p[96], comm[64], cmd[2048], statm[128];
		snprintf(p, sizeof p, "/proc/%ld/comm", pid);
		if (read_small(p, comm, sizeof comm) < 0)
			continue;
		snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
		if (read_small(p, cmd, sizeof cmd) <= 0)
			continue; /* kernel threads have no command line */
		const char *name = server_match(comm, cmd);
		if (!name)
			continue;
		if (nino > 0 && target < 0 && holds_socket(e->d_name, ino, nino)) {
			target = pid;
			continue;
		}
		snprintf(p, sizeof p, "/proc/%ld/statm", pid);
		long long pages = 0;
		if (read_small(p, statm, sizeof statm) > 0)
			(void)sscanf(statm, "%*s %lld", &pages);
		double rss = (double)pages * (double)page;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "pid", (double)pid);
		cJSON_AddStringToObject(x, "name", name);
		cJSON_AddNumberToObject(x, "rss_bytes", rss);
		cJSON_AddItemToArray(others, x);
		char h[32];
		human(rss, h, sizeof h);
		if (n_others < 4 && buf_printf(&names, "%s%s (pid %ld, %s resident)", n_others ? ", " : "", name, pid, h) != 0)
			break; /* out of memory: what was found so far is reported */
		n_others++;
		held += rss;
	}
	if (d)
		closedir(d);
	if (target >= 0)
		cJSON_AddNumberToObject(o, "target_pid", (double)target);
	else
		cJSON_AddNullToObject(o, "target_pid");
	cJSON_AddItemToObject(o, "other_servers", others);
	char h1[32], h2[32];
	human(avail, h1, sizeof h1);
	human(total, h2, sizeof h2);
	size_t w = 0;
	if (n_others > 0) {
		char hh[32];
		human(held, hh, sizeof hh);
		int k = snprintf(warn, warnlen,
				 "%d other LLM server process%s on this machine hold%s %s: %s%s; memory they hold is "
				 "not available to the server under test: stop %s before measuring",
				 n_others, n_others == 1 ? "" : "es", n_others == 1 ? "s" : "", hh,
				 names.data ? names.data : "", n_others > 4 ? ", ..." : "", n_others == 1 ? "it" : "them");
		w = k > 0 ? (size_t)k : 0;
	}
	if (total > 0 && avail >= 0 && avail < 0.2 * total && w < warnlen)
		snprintf(warn + w, warnlen - w, "%sonly %s of %s memory is available", w ? "; " : "", h1, h2);
	buf_finish(&names);
done:
	if (warn[0])
		cJSON_AddStringToObject(o, "warning", warn);
	else
		cJSON_AddNullToObject(o, "warning");
	*json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return *json ? 0 : -ENOMEM;
}
