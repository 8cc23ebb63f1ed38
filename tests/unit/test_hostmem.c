/* Unit tests for src/core/hostmem.c: a remote endpoint is not checked; on this
 * machine, memory totals are read and a process whose command line names an
 * LLM server (here a sleep started as "llama-server") is reported with its pid,
 * while the process listening on the endpoint's port is not. */
#include "core/hostmem.h"
#include "core/json.h"
#include "test.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static bool lists_pid(const cJSON *o, double pid)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "other_servers"))
	{
		double p = 0;
		if (json_get_double(it, "pid", &p) && p == pid)
			return true;
	}
	return false;
}

int main(void)
{
	char *js = NULL, warn[1024];
	CHECK_EQ_INT(hostmem_check("http://192.0.2.7:8080", &js, warn, sizeof warn), 0);
	cJSON *o = cJSON_Parse(js);
	CHECK(o && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "checked")) && warn[0] == 0);
	cJSON_Delete(o);
	free(js);
	if (access("/proc/meminfo", R_OK) != 0)
		return test_skip("/proc is not mounted here");

	/* a stand-in for a stale server: its command line says llama-server */
	pid_t stale = fork();
	if (stale == 0) {
		execl("/bin/sleep", "llama-server", "30", (char *)NULL);
		_exit(127);
	}
	CHECK(stale > 0);
	for (int i = 0; i < 500; i++) { /* until it has exec'd (5 s at most) */
		char p[64], cmd[64] = "";
		snprintf(p, sizeof p, "/proc/%d/cmdline", (int)stale);
		FILE *f = fopen(p, "r");
		size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
		if (f)
			fclose(f);
		cmd[n] = 0;
		if (strcmp(cmd, "llama-server") == 0)
			break;
		usleep(10000);
	}
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof a) == 0 && listen(ls, 1) == 0 &&
	      getsockname(ls, (struct sockaddr *)&a, &al) == 0);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
	CHECK_EQ_INT(hostmem_check(url, &js, warn, sizeof warn), 0);
	o = cJSON_Parse(js);
	double total = 0, avail = -1;
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "checked")));
	CHECK(json_get_double(o, "total_bytes", &total) && json_get_double(o, "available_bytes", &avail));
	CHECK(total > 0 && avail >= 0 && avail <= total);
	CHECK(lists_pid(o, (double)stale));
	CHECK(!lists_pid(o, (double)getpid()));
	char want[64];
	snprintf(want, sizeof want, "llama-server (pid %d", (int)stale);
	CHECK(strstr(warn, want) != NULL);
	cJSON_Delete(o);
	free(js);
	close(ls);
	kill(stale, SIGKILL);
	waitpid(stale, NULL, 0);
	return test_done();
}
