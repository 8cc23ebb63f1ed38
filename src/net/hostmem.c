/* hostmem — see hostmem.h. Linux only (/proc); elsewhere every read fails and
 * the check records what it could not read.
 * Workload: one pass over the process table per run (a few hundred processes,
 * each a readlink and two small reads; descriptors are listed only for
 * processes that are known servers, until the server under test is found). */
#include "net/hostmem.h"
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

/* ---- what a process is ---- */

/* Executables that are LLM servers (basename of /proc/PID/exe). */
static const char *const server_exes[] = {
	"sixi-server", "llama-server", "ollama", "koboldcpp", "llamafile", "tritonserver", "trtllm-serve",
	"mistralrs-server", "text-generation-launcher", "text-generation-server", "local-ai", "LocalAI",
	"vllm", "sglang", "lmdeploy", "mlc_llm", "aphrodite",
};

/* Python modules that are servers (`python -m MODULE`, MODULE or a submodule of it). */
static const char *const server_modules[] = {
	"vllm.entrypoints", "sglang.launch_server", "llama_cpp.server", "lmdeploy", "mlc_llm",
	"aphrodite.endpoints", "text_generation_server",
};

/* Entry scripts run by an interpreter (`vllm serve`: exe python3, argv[1] the script), and
 * the subcommand that makes them a server (NULL: any). */
static const struct {
	const char *script, *subcommand;
} server_scripts[] = {
	{ "vllm", "serve" },       { "sglang", NULL },       { "lmdeploy", "serve" },
	{ "mlc_llm", "serve" },    { "aphrodite", "run" },   { "text-generation-server", "serve" },
	{ "trtllm-serve", NULL },
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* python, python3, python3.11 */
static bool is_python(const char *exe)
{
	if (strncmp(exe, "python", 6) != 0)
		return false;
	for (const char *p = exe + 6; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return false;
	return true;
}

static bool module_is(const char *mod, const char *want)
{
	size_t n = strlen(want);
	return strncmp(mod, want, n) == 0 && (mod[n] == 0 || mod[n] == '.');
}

/* Python's own options that take a value as the next argument. */
static bool py_option_takes_value(const char *a)
{
	return strcmp(a, "-X") == 0 || strcmp(a, "-W") == 0 || strcmp(a, "--check-hash-based-pycs") == 0;
}

static const char *python_server(const char *const *argv, int argc)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-m") == 0 || (strncmp(a, "-m", 2) == 0 && a[2])) {
			const char *mod = a[2] ? a + 2 : i + 1 < argc ? argv[i + 1] : "";
			for (size_t k = 0; k < sizeof server_modules / sizeof server_modules[0]; k++)
				if (module_is(mod, server_modules[k]))
					return server_modules[k];
			return NULL;
		}
		if (strcmp(a, "-c") == 0 || strncmp(a, "-c", 2) == 0 || strcmp(a, "-") == 0)
			return NULL; /* a program given inline or on stdin */
		if (a[0] == '-') {
			if (py_option_takes_value(a))
				i++;
			continue;
		}
		const char *script = base_name(a), *sub = i + 1 < argc ? argv[i + 1] : "";
		for (size_t k = 0; k < sizeof server_scripts / sizeof server_scripts[0]; k++)
			if (strcmp(script, server_scripts[k].script) == 0 &&
			    (!server_scripts[k].subcommand || strcmp(sub, server_scripts[k].subcommand) == 0))
				return server_scripts[k].script;
		return NULL;
	}
	return NULL;
}

const char *hostmem_server_kind(const char *exe, const char *const *argv, int argc)
{
	if (!exe || !exe[0])
		return NULL;
	if (is_python(exe))
		return python_server(argv, argc);
	for (size_t k = 0; k < sizeof server_exes / sizeof server_exes[0]; k++)
		/* a comm is the executable's name cut to 15 bytes */
		if (strcmp(exe, server_exes[k]) == 0 || (strlen(exe) == 15 && strncmp(exe, server_exes[k], 15) == 0))
			return server_exes[k];
	return NULL;
}

/* ---- reading the process table ---- */

/* Reads a small file whole; returns its length or -1. out is NUL-terminated. */
static long read_small(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(out, 1, cap - 1, f);
	fclose(f);
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

/* The machine's listening TCP sockets: inode -> port. */
struct listeners {
	struct {
		unsigned long inode;
		int port;
	} *v;
	size_t n, cap;
};

static int listeners_read(struct listeners *l, const char *root)
{
	static const char *const tabs[] = { "net/tcp", "net/tcp6" };
	for (int t = 0; t < 2; t++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", root, tabs[t]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		char line[512];
		if (!fgets(line, sizeof line, f)) { /* header */
			fclose(f);
			continue;
		}
		while (fgets(line, sizeof line, f)) {
			char local[128], remote[128];
			unsigned st;
			unsigned long inode;
			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, " %*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) != 4)
				continue;
			char *c = strrchr(local, ':');
			if (st != 0x0A || !c)
				continue;
			if (l->n == l->cap) {
				size_t cap = l->cap ? 2 * l->cap : 64;
				void *v = realloc(l->v, cap * sizeof l->v[0]);
				if (!v) {
					fclose(f);
					return -ENOMEM;
				}
				l->v = v;
				l->cap = cap;
			}
			l->v[l->n].inode = inode;
			l->v[l->n].port = (int)strtol(c + 1, NULL, 16);
			l->n++;
		}
		fclose(f);
	}
	return 0;
}

/* The TCP ports process pid listens on, into ports[0..cap); returns how many (the
 * distinct ports), or -1 when its descriptors cannot be listed. */
static int process_ports(const char *root, const char *pid, const struct listeners *l, int *ports, int cap)
{
	char dir[4400];
	snprintf(dir, sizeof dir, "%s/%s/fd", root, pid);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[4700], target[64];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		ssize_t len = readlink(p, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		unsigned long ino;
		if (sscanf(target, "socket:[%lu]", &ino) != 1)
			continue;
		for (size_t k = 0; k < l->n; k++) {
			if (l->v[k].inode != ino)
				continue;
			bool seen = false;
			for (int j = 0; j < n; j++)
				seen |= ports[j] == l->v[k].port;
			if (!seen && n < cap)
				ports[n++] = l->v[k].port;
		}
	}
	closedir(d);
	return n;
}

/* The basename of pid's executable, else its comm; false when neither can be read. */
static bool process_exe(const char *root, const char *pid, char *out, size_t cap)
{
	char p[4300], target[4096];
	snprintf(p, sizeof p, "%s/%s/exe", root, pid);
	ssize_t len = readlink(p, target, sizeof target - 1);
	if (len > 0) {
		target[len] = 0;
		char *del = strstr(target, " (deleted)"); /* replaced on disk since it started */
		if (del && del[10] == 0)
			*del = 0;
		const char *b = base_name(target);
		size_t n = strlen(b);
		if (n >= cap)
			return false;
		memcpy(out, b, n + 1);
		return n > 0;
	}
	snprintf(p, sizeof p, "%s/%s/comm", root, pid);
	if (read_small(p, out, cap) <= 0)
		return false;
	out[strcspn(out, "\n")] = 0;
	return out[0] != 0;
}

static void human(double bytes, char *out, size_t n)
{
	if (bytes >= 1e9)
		snprintf(out, n, "%.1f GB", bytes / 1e9);
	else
		snprintf(out, n, "%.0f MB", bytes / 1e6);
}

/* ---- the check ---- */

#define MAX_ARGS 64
#define MAX_PORTS 16

int hostmem_check(const char *endpoint, char **json, char *warn, size_t warnlen)
{
	return hostmem_check_at("/proc", endpoint, json, warn, warnlen);
}

int hostmem_check_at(const char *root, const char *endpoint, char **json, char *warn, size_t warnlen)
{
	*json = NULL;
	warn[0] = 0;
	int rc = 0;
	struct listeners lis = { 0 };
	struct buf names;
	buf_init(&names);
	DIR *d = NULL;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	char host[256], path[4300];
	int port = 0;
	if (!endpoint || !url_host_port(endpoint, host, sizeof host, &port) || !host_is_local(host)) {
		cJSON_AddFalseToObject(o, "checked");
		cJSON_AddStringToObject(o, "reason", "the endpoint is not on this machine");
		goto done;
	}
	char text[4096];
	snprintf(path, sizeof path, "%s/meminfo", root);
	if (read_small(path, text, sizeof text) < 0) {
		cJSON_AddFalseToObject(o, "checked");
		cJSON_AddStringToObject(o, "reason", "meminfo cannot be read (is /proc mounted?)");
		goto done;
	}
	cJSON_AddTrueToObject(o, "checked");
	double total = (double)meminfo_kb(text, "MemTotal") * 1024, avail = (double)meminfo_kb(text, "MemAvailable") * 1024;
	cJSON_AddNumberToObject(o, "total_bytes", total);
	cJSON_AddNumberToObject(o, "available_bytes", avail);
	if ((rc = listeners_read(&lis, root)) != 0)
		goto done;
	bool target_listens = false;
	for (size_t k = 0; k < lis.n; k++)
		target_listens |= lis.v[k].port == port;
	bool live = strcmp(root, "/proc") == 0;
	long self = live ? (long)getpid() : -1, parent = live ? (long)getppid() : -1;
	if (live && target_listens) {
		/* an endpoint in this very process (sixi-bench's built-in emitter) has no server
		 * under test whose memory other processes could take */
		char me[32];
		int myports[MAX_PORTS];
		snprintf(me, sizeof me, "%ld", self);
		int n = process_ports(root, me, &lis, myports, MAX_PORTS);
		for (int j = 0; j < n; j++)
			if (myports[j] == port) {
				cJSON_DeleteItemFromObject(o, "checked");
				cJSON_AddFalseToObject(o, "checked");
				cJSON_AddStringToObject(o, "reason", "the endpoint is served by this process");
				goto done;
			}
	}
	long page = sysconf(_SC_PAGESIZE);
	long target = -1;
	cJSON *others = cJSON_AddArrayToObject(o, "other_servers");
	int n_others = 0;
	double held = 0;
	d = opendir(root);
	struct dirent *e;
	while (d && others && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		long pid = strtol(e->d_name, NULL, 10);
		if (pid == self || pid == parent)
			continue;
		char exe[256], cmd[4096];
		snprintf(path, sizeof path, "%s/%s/cmdline", root, e->d_name);
		long clen = read_small(path, cmd, sizeof cmd);
		if (clen <= 0 || !process_exe(root, e->d_name, exe, sizeof exe))
			continue; /* gone, or a kernel thread (no command line) */
		const char *argv[MAX_ARGS];
		int argc = 0;
		for (long i = 0; i < clen && argc < MAX_ARGS; i += (long)strlen(cmd + i) + 1)
			argv[argc++] = cmd + i;
		const char *kind = hostmem_server_kind(exe, argv, argc);
		if (!kind && (target >= 0 || !target_listens))
			continue;
		int ports[MAX_PORTS];
		int np = process_ports(root, e->d_name, &lis, ports, MAX_PORTS);
		bool is_target = false;
		for (int j = 0; j < np; j++)
			is_target |= ports[j] == port;
		if (is_target) { /* the server under test, or a process sharing its socket */
			if (target < 0)
				target = pid;
			continue;
		}
		if (!kind || np == 0)
			continue; /* not a server, or one that listens on nothing */
		long long pages = 0;
		char statm[128];
		snprintf(path, sizeof path, "%s/%s/statm", root, e->d_name);
		if (read_small(path, statm, sizeof statm) > 0)
			(void)sscanf(statm, "%*s %lld", &pages);
		double rss = (double)pages * (double)page;
		cJSON *x = cJSON_CreateObject();
		cJSON *xp = x ? cJSON_AddArrayToObject(x, "ports") : NULL;
		if (!xp || !cJSON_AddItemToArray(others, x)) {
			cJSON_Delete(x);
			rc = -ENOMEM;
			goto done;
		}
		cJSON_AddNumberToObject(x, "pid", (double)pid);
		cJSON_AddStringToObject(x, "name", kind);
		cJSON_AddNumberToObject(x, "rss_bytes", rss);
		for (int j = 0; j < np; j++)
			cJSON_AddItemToArray(xp, cJSON_CreateNumber(ports[j]));
		char h[32], where[32] = "";
		human(rss, h, sizeof h);
		if (np > 0)
			snprintf(where, sizeof where, ", port %d", ports[0]);
		if (n_others < 4 &&
		    buf_printf(&names, "%s%s (pid %ld%s, %s resident)", n_others ? ", " : "", kind, pid, where, h) != 0) {
			rc = -ENOMEM;
			goto done;
		}
		n_others++;
		held += rss;
	}
	if (!others) {
		rc = -ENOMEM;
		goto done;
	}
	if (target >= 0)
		cJSON_AddNumberToObject(o, "target_pid", (double)target);
	else
		cJSON_AddNullToObject(o, "target_pid");
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
done:
	if (d)
		closedir(d);
	buf_finish(&names);
	free(lis.v);
	if (rc == 0) {
		if (warn[0])
			cJSON_AddStringToObject(o, "warning", warn);
		else
			cJSON_AddNullToObject(o, "warning");
		*json = cJSON_PrintUnformatted(o);
		if (!*json)
			rc = -ENOMEM;
	}
	cJSON_Delete(o);
	return rc;
}
