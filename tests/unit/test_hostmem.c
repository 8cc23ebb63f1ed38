/* Unit tests for src/net/hostmem.c.
 * 1. What a process is, by executable and arguments (hostmem_server_kind).
 * 2. A fixture process table (a /proc-shaped tree built here: exe links, comm,
 *    cmdline, fd links to sockets, net/tcp{,6}): servers by executable, by
 *    interpreter module and entry script, by comm when exe cannot be read; builds,
 *    greps, tails, editors and servers that listen on nothing are not servers; the
 *    processes listening on the endpoint's port (a wrapper too) are the target.
 * 3. This machine's /proc: a copy of sleep named llama-server that holds a
 *    listening socket is named with its pid and port, and is the target when the
 *    endpoint is its port; sleep started with argv[0] "llama-server" is not; an
 *    endpoint in this process or on another machine is not checked. */
#include "net/hostmem.h"
#include "core/json.h"
#include "test.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool lists_pid(const cJSON *o, double pid, const char **name)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "other_servers"))
	{
		double p = 0;
		if (json_get_double(it, "pid", &p) && p == pid) {
			if (name)
				*name = json_get_str(it, "name");
			return true;
		}
	}
	return false;
}

static int n_others(const cJSON *o)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "other_servers"));
}

/* ---- 1. classification ---- */

static const char *kind(const char *exe, const char *args)
{
	static char buf[512];
	const char *argv[16];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", args);
	for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
		argv[argc++] = t;
	return hostmem_server_kind(exe, argv, argc);
}

static void test_kind(void)
{
	CHECK_EQ_STR(kind("llama-server", "./llama-server -m model.gguf --port 8080"), "llama-server");
	CHECK_EQ_STR(kind("sixi-server", "sixi-server --model m.gguf"), "sixi-server");
	CHECK_EQ_STR(kind("ollama", "ollama serve"), "ollama");
	CHECK_EQ_STR(kind("python3", "python3 -m vllm.entrypoints.openai.api_server --model x"), "vllm.entrypoints");
	CHECK_EQ_STR(kind("python3.11", "python3 -u -X dev -m sglang.launch_server --port 30000"),
		     "sglang.launch_server");
	CHECK_EQ_STR(kind("python", "python -mvllm.entrypoints.api_server"), "vllm.entrypoints");
	CHECK_EQ_STR(kind("python3", "/usr/bin/python3 /usr/local/bin/vllm serve Qwen/Qwen3-8B"), "vllm");
	CHECK_EQ_STR(kind("python3", "python3 -m llama_cpp.server --model m.gguf"), "llama_cpp.server");
	CHECK_EQ_STR(kind("text-generation", "text-generation-launcher --model-id x"), "text-generation-launcher");
	/* words in arguments are not an executable */
	CHECK(kind("cmake", "cmake --build build --target llama-server") == NULL);
	CHECK(kind("make", "make -j16 llama-server") == NULL);
	CHECK(kind("grep", "grep llama-server") == NULL);
	CHECK(kind("tail", "tail -f llama-server.log") == NULL);
	CHECK(kind("vim", "vim tools/server/llama-server.cpp") == NULL);
	CHECK(kind("sleep", "llama-server 30") == NULL);
	CHECK(kind("python3", "python3 -m pip install vllm") == NULL);
	CHECK(kind("python3", "python3 -m vllm_tests.entrypoints") == NULL);
	CHECK(kind("python3", "python3 /usr/local/bin/vllm bench serve") == NULL);
	CHECK(kind("python3", "python3 -c import vllm.entrypoints vllm serve") == NULL);
	CHECK(kind("python3", "python3 check_vllm.py vllm serve") == NULL);
	CHECK(kind("python3-config", "python3-config -m vllm.entrypoints") == NULL);
	CHECK(kind("", "x") == NULL);
}

/* ---- 2. a fixture process table ---- */

static char root[256];

static void put(const char *rel, const char *data, size_t len)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", root, rel);
	FILE *f = fopen(p, "wb");
	if (!CHECK(f != NULL))
		return;
	CHECK(fwrite(data, 1, len, f) == len);
	fclose(f);
}

/* One process: args separated by '|' become the NUL-separated cmdline; exe NULL leaves the
 * link out (not readable); sockets lists the socket inodes it holds (0-terminated). */
static void proc(int pid, const char *exe, const char *comm, const char *args, const unsigned long *sockets)
{
	char p[512], rel[64];
	snprintf(p, sizeof p, "%s/%d", root, pid);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof p, "%s/%d/fd", root, pid);
	CHECK(mkdir(p, 0755) == 0);
	if (exe) {
		snprintf(p, sizeof p, "%s/%d/exe", root, pid);
		CHECK(symlink(exe, p) == 0);
	}
	char cmd[512];
	size_t n = strlen(args);
	memcpy(cmd, args, n + 1);
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '|')
			cmd[i] = 0;
	snprintf(rel, sizeof rel, "%d/cmdline", pid);
	put(rel, cmd, n + 1);
	char c[64];
	int cl = snprintf(c, sizeof c, "%s\n", comm);
	snprintf(rel, sizeof rel, "%d/comm", pid);
	put(rel, c, (size_t)cl);
	snprintf(rel, sizeof rel, "%d/statm", pid);
	put(rel, "5000 2500 100 1 0 200 0\n", 24);
	snprintf(p, sizeof p, "%s/%d/fd/0", root, pid);
	CHECK(symlink("/dev/null", p) == 0);
	for (int i = 0; sockets && sockets[i]; i++) {
		char t[64];
		snprintf(t, sizeof t, "socket:[%lu]", sockets[i]);
		snprintf(p, sizeof p, "%s/%d/fd/%d", root, pid, 3 + i);
		CHECK(symlink(t, p) == 0);
	}
}

static void test_fixture(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof root, "%s/sixi-proc-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!CHECK(mkdtemp(root) != NULL))
		return;
	char p[512];
	snprintf(p, sizeof p, "%s/net", root);
	CHECK(mkdir(p, 0755) == 0);
	const char *mem = "MemTotal:       16000000 kB\nMemFree:  1000000 kB\nMemAvailable:   12000000 kB\n";
	put("meminfo", mem, strlen(mem));
	/* listening sockets (st 0A) by inode: 8081 -> 9001, 8000 -> 9002, 8001 -> 9003 (tcp6), 30000 -> 9004,
	 * the endpoint's port 9000 -> 9005 and 9006 (v4 and v6), 11434 -> 9007, 8082 -> 9008, 3000 -> 9009;
	 * one established connection (st 01) on 8083 -> 9010 */
	const char *tcp =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9001 1\n"
		"   1: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9002 1\n"
		"   2: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9004 1\n"
		"   3: 0100007F:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9005 1\n"
		"   4: 0100007F:2CAA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9007 1\n"
		"   5: 0100007F:1F92 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9008 1\n"
		"   6: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9009 1\n"
		"   7: 0100007F:1F93 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0        0 9010 1\n";
	put("net/tcp", tcp, strlen(tcp));
	const char *tcp6 =
		"  sl  local_address                         remote_address                        st tx_queue "
		"rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 00000000000000000000000001000000:1F41 00000000000000000000000000000000:0000 0A 00000000:00000000 "
		"00:00000000 00000000     0        0 9003 1\n"
		"   1: 00000000000000000000000001000000:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 "
		"00:00000000 00000000     0        0 9006 1\n";
	put("net/tcp6", tcp6, strlen(tcp6));

	static const unsigned long s8081[] = { 9001, 0 }, s8000[] = { 9002, 0 }, s8001[] = { 9003, 0 },
				   s30000[] = { 9004, 0 }, s9000[] = { 9005, 9006, 0 }, s11434[] = { 9007, 0 },
				   s8082[] = { 9008, 0 }, s3000[] = { 9009, 0 }, s_conn[] = { 9010, 0 };
	proc(101, "/opt/llama.cpp/build/bin/llama-server", "llama-server", "./llama-server|-m|m.gguf|--port|8081", s8081);
	proc(102, "/usr/bin/cmake", "cmake", "cmake|--build|build|--target|llama-server", NULL);
	proc(103, "/usr/bin/make", "make", "make|-j16|llama-server", NULL);
	proc(104, "/usr/bin/grep", "grep", "grep|llama-server", NULL);
	proc(105, "/usr/bin/tail", "tail", "tail|-f|llama-server.log", NULL);
	proc(106, "/usr/bin/vim.basic", "vim", "vim|tools/server/llama-server.cpp", NULL);
	proc(107, "/usr/bin/python3.11", "python3", "python3|-m|vllm.entrypoints.openai.api_server|--port|8000", s8000);
	proc(108, "/usr/bin/python3.11", "vllm", "/usr/bin/python3|/usr/local/bin/vllm|serve|Qwen/Qwen3-8B", s8001);
	proc(109, "/usr/bin/python3.11", "python3", "python3|-u|-m|sglang.launch_server|--port|30000", s30000);
	proc(110, "/srv/sixi/build/src/sixi-server", "sixi-server", "sixi-server|--port|9000", s9000);
	proc(111, "/opt/llama.cpp/build/bin/llama-server", "llama-server", "llama-server|--help", NULL);
	proc(112, NULL, "ollama", "/usr/local/bin/ollama|serve", s11434);
	proc(113, "/usr/bin/python3.11", "python3", "python3|check_vllm.py|vllm|serve", s3000);
	proc(114, "/usr/libexec/valgrind/memcheck-amd64-linux", "memcheck-amd64-",
	     "valgrind|--quiet|/srv/sixi/build/src/sixi-server|--port|9000", s9000);
	proc(115, "/opt/llama/llama-server (deleted)", "llama-server", "llama-server|--port|8082", s8082);
	proc(116, "/usr/bin/curl", "curl", "curl|http://127.0.0.1:8083/v1/models", s_conn);
	proc(117, NULL, "text-generation", "text-generation-launcher|--model-id|x", s8082);
	snprintf(p, sizeof p, "%s/self", root); /* not a process directory */
	CHECK(mkdir(p, 0755) == 0);

	char *js = NULL, warn[2048];
	CHECK_EQ_INT(hostmem_check_at(root, "http://127.0.0.1:9000/v1", &js, warn, sizeof warn), 0);
	cJSON *o = js ? cJSON_Parse(js) : NULL;
	if (!CHECK(o != NULL))
		return;
	printf("fixture: %s\n", js);
	double total = 0, avail = 0, target = 0;
	CHECK(json_get_double(o, "total_bytes", &total) && total == 16000000.0 * 1024);
	CHECK(json_get_double(o, "available_bytes", &avail) && avail == 12000000.0 * 1024);
	CHECK(json_get_double(o, "target_pid", &target) && (target == 110 || target == 114));
	const char *name = NULL;
	CHECK(lists_pid(o, 101, &name) && name && strcmp(name, "llama-server") == 0);
	CHECK(lists_pid(o, 107, &name) && name && strcmp(name, "vllm.entrypoints") == 0);
	CHECK(lists_pid(o, 108, &name) && name && strcmp(name, "vllm") == 0);
	CHECK(lists_pid(o, 109, &name) && name && strcmp(name, "sglang.launch_server") == 0);
	CHECK(lists_pid(o, 112, &name) && name && strcmp(name, "ollama") == 0); /* by comm */
	CHECK(lists_pid(o, 115, &name) && name && strcmp(name, "llama-server") == 0);
	CHECK(lists_pid(o, 117, &name) && name && strcmp(name, "text-generation-launcher") == 0);
	for (int pid = 102; pid <= 106; pid++)
		CHECK(!lists_pid(o, pid, NULL)); /* builds, grep, tail, an editor */
	CHECK(!lists_pid(o, 110, NULL) && !lists_pid(o, 114, NULL)); /* the server under test and its wrapper */
	CHECK(!lists_pid(o, 111, NULL));                             /* listens on nothing */
	CHECK(!lists_pid(o, 113, NULL) && !lists_pid(o, 116, NULL));
	CHECK_EQ_INT(n_others(o), 7);
	/* the ports each one listens on */
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "other_servers"))
	{
		double pid = 0, port = 0;
		json_get_double(it, "pid", &pid);
		const cJSON *ports = cJSON_GetObjectItemCaseSensitive(it, "ports");
		CHECK(cJSON_GetArraySize(ports) == 1);
		port = cJSON_GetArrayItem(ports, 0) ? cJSON_GetArrayItem(ports, 0)->valuedouble : 0;
		if (pid == 101)
			CHECK(port == 8081);
		if (pid == 108)
			CHECK(port == 8001); /* from tcp6 */
	}
	CHECK(strstr(warn, "7 other LLM server processes") != NULL);
	CHECK(strstr(warn, "(pid 1") != NULL && strstr(warn, ", ...") != NULL); /* four named, then ... */
	CHECK(strstr(warn, "pid 110") == NULL && strstr(warn, "pid 114") == NULL);
	cJSON_Delete(o);
	free(js);

	/* The same table for an endpoint on another port: sixi-server is then another server;
	 * the valgrind wrapper still is not (its executable is not a server). */
	CHECK_EQ_INT(hostmem_check_at(root, "http://localhost:8083", &js, warn, sizeof warn), 0);
	o = js ? cJSON_Parse(js) : NULL;
	CHECK(o && lists_pid(o, 110, NULL) && !lists_pid(o, 114, NULL) && !lists_pid(o, 116, NULL));
	CHECK(o && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "target_pid"))); /* 8083 is not listened on */
	cJSON_Delete(o);
	free(js);

	/* a table without meminfo is recorded as not checked, with the reason */
	snprintf(p, sizeof p, "%s/meminfo", root);
	CHECK(unlink(p) == 0);
	CHECK_EQ_INT(hostmem_check_at(root, "http://127.0.0.1:9000", &js, warn, sizeof warn), 0);
	o = js ? cJSON_Parse(js) : NULL;
	CHECK(o && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "checked")) && warn[0] == 0);
	cJSON_Delete(o);
	free(js);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

/* ---- 3. this machine ---- */

/* Waits (5 s at most) until pid has exec'd: its cmdline starts with want. */
static void wait_exec(pid_t pid, const char *want)
{
	for (int i = 0; i < 500; i++) {
		char p[64], cmd[256] = "";
		snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
		FILE *f = fopen(p, "r");
		size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
		if (f)
			fclose(f);
		cmd[n] = 0;
		if (strcmp(cmd, want) == 0)
			return;
		usleep(10000);
	}
}

static int copy_file(const char *from, const char *to)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 755 '%s'", from, to, to);
	return system(cmd);
}

/* A loopback listening socket (inherited across exec: no SOCK_CLOEXEC); its port in *port. */
static int listen_any(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* Starts exe as argv0 with argument "30", holding a listening socket when port is set. */
static pid_t spawn(const char *exe, const char *argv0, int *port)
{
	int fd = port ? listen_any(port) : -1;
	if (port && !CHECK(fd >= 0))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		execl(exe, argv0, "30", (char *)NULL);
		_exit(127);
	}
	if (fd >= 0)
		close(fd);
	CHECK(pid > 0);
	if (pid > 0)
		wait_exec(pid, argv0);
	return pid;
}

static cJSON *check_url(int port, char *warn, size_t warnlen)
{
	char url[64], *js = NULL;
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	CHECK_EQ_INT(hostmem_check(url, &js, warn, warnlen), 0);
	cJSON *o = js ? cJSON_Parse(js) : NULL;
	CHECK(o != NULL);
	free(js);
	return o;
}

static void test_live(void)
{
	char *js = NULL, warn[1024];
	CHECK_EQ_INT(hostmem_check("http://192.0.2.7:8080", &js, warn, sizeof warn), 0);
	cJSON *o = cJSON_Parse(js);
	CHECK(o && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "checked")) && warn[0] == 0);
	cJSON_Delete(o);
	free(js);
	if (access("/proc/meminfo", R_OK) != 0) {
		printf("/proc is not mounted here: the live part is left out\n");
		return;
	}
	const char *sleep_bin = access("/bin/sleep", X_OK) == 0 ? "/bin/sleep" : "/usr/bin/sleep";
	char dir[256], exe[300], target_exe[300];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/sixi-hostmem-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(exe, sizeof exe, "%s/llama-server", dir);
	snprintf(target_exe, sizeof target_exe, "%s/model-under-test", dir);
	CHECK_EQ_INT(copy_file(sleep_bin, exe), 0);
	CHECK_EQ_INT(copy_file(sleep_bin, target_exe), 0);

	/* a server stand-in: its executable is named llama-server and it listens; the endpoint is
	 * another listening process; and the old false positive: sleep with argv[0] llama-server */
	int server_port = 0, target_port = 0;
	pid_t server = spawn(exe, "llama-server", &server_port);
	pid_t target = spawn(target_exe, "model-under-test", &target_port);
	pid_t named = spawn(sleep_bin, "llama-server", NULL);

	o = check_url(target_port, warn, sizeof warn);
	double total = 0, avail = -1, tpid = 0;
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "checked")));
	CHECK(json_get_double(o, "total_bytes", &total) && json_get_double(o, "available_bytes", &avail));
	CHECK(total > 0 && avail >= 0 && avail <= total);
	CHECK(json_get_double(o, "target_pid", &tpid) && tpid == (double)target);
	const char *name = NULL;
	CHECK(lists_pid(o, (double)server, &name) && name && strcmp(name, "llama-server") == 0);
	CHECK(!lists_pid(o, (double)named, NULL) && !lists_pid(o, (double)target, NULL));
	char want[96];
	snprintf(want, sizeof want, "llama-server (pid %d, port %d", (int)server, server_port);
	CHECK(strstr(warn, want) != NULL);
	cJSON_Delete(o);

	/* the stand-in as the endpoint: it is the server under test, not another one */
	o = check_url(server_port, warn, sizeof warn);
	CHECK(o && json_get_double(o, "target_pid", &tpid) && tpid == (double)server);
	CHECK(o && !lists_pid(o, (double)server, NULL));
	cJSON_Delete(o);

	/* an endpoint in this process (sixi-bench's built-in emitter): nothing to check */
	int self_port = 0, self_fd = listen_any(&self_port);
	CHECK(self_fd >= 0);
	o = check_url(self_port, warn, sizeof warn);
	const char *reason = o ? json_get_str(o, "reason") : NULL;
	CHECK(o && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "checked")) && warn[0] == 0);
	CHECK(reason && strstr(reason, "served by this process") != NULL);
	cJSON_Delete(o);
	close(self_fd);

	pid_t all[] = { server, target, named };
	for (int i = 0; i < 3; i++)
		if (all[i] > 0) {
			kill(all[i], SIGKILL);
			waitpid(all[i], NULL, 0);
		}
	CHECK(unlink(exe) == 0 && unlink(target_exe) == 0 && rmdir(dir) == 0);
}

int main(void)
{
	test_kind();
	test_fixture();
	test_live();
	return test_done();
}
