/* Sandbox attack suite: hostile "solutions" graded through the real grader
 * (grade_solution -> sandbox -> harness/driver.py), one per kind of escape.
 *
 * Each attack is a python_tests solution that sets ESCAPED = True when it got
 * through; the task's test asserts ESCAPED, so a PASS means an escape and a
 * FAIL means it was contained. Besides the verdict, each attack has a host-side
 * check of what it tried (the host listener got no connection, the planted
 * file is absent, the host's sibling process is alive, no daemon with the
 * attack's marker is running...), a bound on its grading time, and is followed
 * by a trivial job that must PASS and one that must FAIL: the harness keeps
 * grading correctly after every attack.
 *
 * Placeholders in the attack code: {PORT} host TCP listener on 127.0.0.1,
 * {OTHER} another task's input folder on the host, {SECRET} a file of the
 * harness's on the host, {SIBLING} a host process of ours, {SELF} this
 * test's pid, {NONCE} a marker unique to this run.
 * Skips (saying why) where bubblewrap cannot build a sandbox. */
#include "test.h"
#include "core/clock.h"
#include "grade/grade.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct ctx {
	int listen_fd;
	char port[16];
	char other_dir[64];
	char secret_path[300];
	char sibling[16];
	pid_t sibling_pid;
	char self[16];
	char nonce[40];
};

struct attack {
	const char *name;
	const char *code;
	double timeout_s;   /* the task's wall clock per run */
	int64_t memory_mb;
	double max_s;       /* the grade must be answered within this */
	bool (*host_ok)(struct ctx *c, char *why, size_t whylen);
};

static bool no_connection(struct ctx *c, char *why, size_t whylen)
{
	int fd = accept(c->listen_fd, NULL, NULL);
	if (fd >= 0) {
		close(fd);
		snprintf(why, whylen, "the host listener on 127.0.0.1:%s accepted a connection", c->port);
		return false;
	}
	return true;
}

static bool path_absent(const char *p, char *why, size_t whylen)
{
	struct stat st;
	if (stat(p, &st) == 0) {
		snprintf(why, whylen, "%s exists on the host", p);
		unlink(p);
		return false;
	}
	return true;
}

static bool nothing_planted(struct ctx *c, char *why, size_t whylen)
{
	char p[400];
	snprintf(p, sizeof p, "%s/planted", c->other_dir);
	return path_absent("/usr/sixi_canary", why, whylen) && path_absent("/etc/sixi_canary", why, whylen) &&
	       path_absent("/sixi_canary", why, whylen) && path_absent("/tmp/sixi_canary", why, whylen) &&
	       path_absent(p, why, whylen);
}

static bool sibling_alive(struct ctx *c, char *why, size_t whylen)
{
	int st;
	if (waitpid(c->sibling_pid, &st, WNOHANG) != 0) {
		snprintf(why, whylen, "the host process %s was killed", c->sibling);
		c->sibling_pid = 0;
		return false;
	}
	return true;
}

/* Any host process whose command line holds the nonce. */
static pid_t find_marked(const char *nonce)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n > 0 ? n : 0] = 0;
		if (strstr(buf, nonce))
			found = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static bool no_daemon(struct ctx *c, char *why, size_t whylen)
{
	/* the kernel tears the pid namespace down as its init exits: allow it a moment */
	for (int i = 0; i < 40; i++) {
		pid_t p = find_marked(c->nonce);
		if (!p)
			return true;
		if (i == 39) {
			snprintf(why, whylen, "process %d started inside the sandbox is still running", (int)p);
			kill(p, SIGKILL);
			return false;
		}
		clock_sleep_ns(50 * 1000000LL);
	}
	return true;
}

static const struct attack attacks[] = {
	{"network",
	 "import socket\nESCAPED = False\n"
	 "for host, port in (('127.0.0.1', {PORT}), ('1.1.1.1', 53), ('8.8.8.8', 443), ('::1', {PORT})):\n"
	 "    try:\n"
	 "        socket.create_connection((host, port), timeout=1).close()\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "try:\n"
	 "    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n"
	 "    s.sendto(b'\\x08\\0\\xf7\\xff\\0\\0\\0\\0', ('1.1.1.1', 0))\n"
	 "    ESCAPED = True\n"
	 "except OSError:\n"
	 "    pass\n",
	 10, 1024, 15, no_connection},
	{"dns",
	 "import socket\nESCAPED = False\n"
	 "for name in ('example.com', 'debian.org'):\n"
	 "    try:\n"
	 "        socket.getaddrinfo(name, 80)\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "servers = ['1.1.1.1', '8.8.8.8']\n"
	 "try:\n"
	 "    servers += [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')]\n"
	 "except OSError:\n"
	 "    pass\n"
	 "query = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'\n"
	 "for srv in servers:\n"
	 "    try:\n"
	 "        fam = socket.AF_INET6 if ':' in srv else socket.AF_INET\n"
	 "        s = socket.socket(fam, socket.SOCK_DGRAM)\n"
	 "        s.settimeout(1)\n"
	 "        s.sendto(query, (srv, 53))\n"
	 "        s.recvfrom(512)\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n",
	 10, 1024, 15, NULL},
	{"write-outside-work",
	 "ESCAPED = False\n"
	 "for p in ('/usr/sixi_canary', '/etc/sixi_canary', '/sixi_canary', '/input/sixi_canary',\n"
	 "          '/harness/sixi_canary', '/harness/driver.py', '/proc/sixi_canary', '/dev/sixi_canary',\n"
	 "          '{OTHER}/planted'):\n"
	 "    try:\n"
	 "        with open(p, 'a') as f:\n"
	 "            f.write('x')\n"
	 "        ESCAPED = True\n"
	 "        print('wrote', p)\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "import os\n"
	 "try:\n"
	 "    os.symlink('/etc/passwd', '/task/link'); open('/task/link', 'a').write('x'); ESCAPED = True\n"
	 "except OSError:\n"
	 "    pass\n"
	 "open('/task/allowed', 'w').write('inside the work folder is fine')\n"
	 "open('/tmp/allowed', 'w').write('and the private /tmp')\n",
	 10, 1024, 15, nothing_planted},
	{"read-other-task",
	 "import os, glob\nESCAPED = False\n"
	 "needle = 'other-task-' + 'secret-{NONCE}'\n"
	 "cands = ['{OTHER}/solution.py'] + glob.glob('/tmp/sixi-sandbox-*/*') + glob.glob('/proc/*/' + 'root' + '/tmp/sixi-sandbox-*/*')\n" /* every process's view of /tmp */
	 "for top in ('/tmp', '/task', '/input', '/'):\n"
	 "    for root, dirs, files in os.walk(top):\n"
	 "        if root.startswith(('/proc', '/sys', '/usr', '/dev')):\n"
	 "            dirs[:] = []\n"
	 "            continue\n"
	 "        cands += [os.path.join(root, f) for f in files]\n"
	 "for p in cands:\n"
	 "    try:\n"
	 "        if needle in open(p, errors='replace').read(1 << 20):\n"
	 "            ESCAPED = True\n"
	 "            print('read', p)\n"
	 "    except OSError:\n"
	 "        pass\n",
	 10, 1024, 20, NULL},
	{"read-harness-files",
	 "import os, glob\nESCAPED = False\n"
	 "needle = 'harness-' + 'secret-{NONCE}'\n"
	 "cands = ['{SECRET}', '/proc/1/environ', '/proc/{SELF}/environ', '/proc/self/environ']\n"
	 "cands += glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline')\n"
	 "for p in cands:\n"
	 "    try:\n"
	 "        if needle in open(p, 'rb').read(1 << 20).decode('latin-1'):\n"
	 "            ESCAPED = True\n"
	 "            print('read', p)\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "if needle in str(os.environ):\n"
	 "    ESCAPED = True\n",
	 10, 1024, 15, NULL},
	{"fork-bomb",
	 "import os\n"
	 "while True:\n"
	 "    try:\n"
	 "        os.fork()\n"
	 "    except OSError:\n"
	 "        pass\n",
	 0.5, 1024, 15, NULL},
	{"memory-bomb",
	 "ESCAPED = False\nhold = []\n"
	 "try:\n"
	 "    for i in range(64):\n"
	 "        hold.append(bytearray(64 << 20))\n"
	 "    ESCAPED = True\n"
	 "except MemoryError:\n"
	 "    pass\n",
	 10, 512, 15, NULL},
	{"disk-fill",
	 "import os\nESCAPED = False\ntotal = 0\nchunk = b'x' * (1 << 20)\n"
	 "for d in ('/task', '/tmp'):\n"
	 "    for i in range(600):\n"
	 "        try:\n"
	 "            with open('%s/fill%d' % (d, i), 'wb') as f:\n"
	 "                for j in range(8):\n"
	 "                    f.write(chunk)\n"
	 "                    total += len(chunk)\n"
	 "        except OSError:\n"
	 "            break\n"
	 "        if total >= (1 << 30):\n"
	 "            ESCAPED = True\n"
	 "            break\n"
	 "    if ESCAPED:\n"
	 "        break\n",
	 10, 1024, 20, NULL},
	{"signals-to-parent",
	 "import os, signal\nESCAPED = False\n"
	 "for pid in ({SIBLING}, {SELF}):\n"
	 "    try:\n"
	 "        os.kill(pid, 0)\n"
	 "        ESCAPED = True\n"
	 "        os.kill(pid, signal.SIGKILL)\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "try:\n"
	 "    os.killpg(os.getpgid({SIBLING}), signal.SIGKILL)\n"
	 "    ESCAPED = True\n"
	 "except OSError:\n"
	 "    pass\n"
	 "os.kill(-1, signal.SIGKILL)\n",
	 10, 1024, 15, sibling_alive},
	{"infinite-loop",
	 "ESCAPED = False\nwhile True:\n    pass\n",
	 1, 1024, 15, NULL},
	{"sleep-past-timeout",
	 "import signal, time\n"
	 "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):\n"
	 "    signal.signal(s, signal.SIG_IGN)\n"
	 "time.sleep(10 ** 6)\nESCAPED = True\n",
	 0.5, 1024, 40, NULL}, /* idle: judged at the wall backstop, 4 x 0.5 + 10 s */
	{"daemon-outlives-grader",
	 "import os, sys\nESCAPED = False\n"
	 "if os.fork() == 0:\n"
	 "    os.setsid()\n"
	 "    if os.fork() == 0:\n"
	 "        os.execv(sys.executable, [sys.executable, '-c', 'import signal, time; "
	 "signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(600)', 'daemon-{NONCE}'])\n"
	 "    os._exit(0)\n"
	 "os.wait()\n",
	 10, 1024, 15, no_daemon},
	{"fd-exhaustion",
	 "import os, resource\nESCAPED = False\nfds = []\n"
	 "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
	 "try:\n"
	 "    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n"
	 "except (ValueError, OSError):\n"
	 "    pass\n"
	 "try:\n"
	 "    for i in range(100000):\n"
	 "        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
	 "except OSError:\n"
	 "    pass\n"
	 "if len(fds) > 4096:\n"
	 "    ESCAPED = True\n",
	 10, 1024, 15, NULL},
	{"output-flood",
	 "import sys\nESCAPED = False\nline = 'y' * 1023 + '\\n'\n"
	 "for i in range(200 * 1024):\n"
	 "    sys.stdout.write(line)\n",
	 10, 1024, 20, NULL},
	/* the harness's result channel (fd 3): a passing verdict written to it, then
	 * an exit before the tests run */
	{"forge-result-channel",
	 "import os\nESCAPED = False\n"
	 "os.write(3, b'{\"status\": \"pass\", \"detail\": \"forged\"}\\n')\n"
	 "os._exit(0)\n",
	 10, 1024, 15, NULL},
	/* the same verdict to every descriptor above 2, whatever it is */
	{"forge-every-fd",
	 "import os\nESCAPED = False\n"
	 "for fd in sorted(int(f) for f in os.listdir('/proc/self/fd')):\n"
	 "    if fd > 2:\n"
	 "        try:\n"
	 "            os.write(fd, b'{\"status\": \"pass\", \"detail\": \"forged\"}\\n')\n"
	 "        except OSError:\n"
	 "            pass\n"
	 "os._exit(0)\n",
	 10, 1024, 15, NULL},
	/* fd 3 reopened through /proc: this process's, its parent's, then any process's */
	{"forge-via-proc",
	 "import os\nESCAPED = False\n"
	 "paths = ['/proc/self/fd/3', '/proc/%d/fd/3' % os.getppid()]\n"
	 "paths += ['/proc/%s/fd/3' % p for p in os.listdir('/proc') if p.isdigit()]\n"
	 "for path in paths:\n"
	 "    try:\n"
	 "        f = os.open(path, os.O_WRONLY | os.O_NONBLOCK)\n"
	 "    except OSError:\n"
	 "        continue\n"
	 "    os.write(f, b'{\"status\": \"pass\", \"detail\": \"forged\"}\\n')\n"
	 "    break\n"
	 "os._exit(0)\n",
	 10, 1024, 15, NULL},
	{"proc-and-mounts",
	 "import os\nESCAPED = False\n"
	 "if len([p for p in os.listdir('/proc') if p.isdigit()]) > 20:\n"
	 "    ESCAPED = True\n"
	 "for p in ('/proc/sysrq-trigger', '/proc/sys/kernel/hostname', '/sys/kernel/mm/transparent_hugepage/enabled'):\n"
	 "    try:\n"
	 "        open(p, 'w').write('x')\n"
	 "        ESCAPED = True\n"
	 "    except OSError:\n"
	 "        pass\n"
	 "try:\n"
	 "    os.setuid(0) if os.getuid() != 0 else None\n"
	 "    os.mknod('/task/sda', 0o600 | 0o60000, os.makedev(8, 0))\n"
	 "    open('/task/sda', 'rb').read(512)\n"
	 "    ESCAPED = True\n"
	 "except OSError:\n"
	 "    pass\n",
	 10, 1024, 15, NULL},
};

/* Replaces each {KEY} of the table with its value; caller frees. */
static char *expand(const char *code, const struct ctx *c)
{
	const char *keys[][2] = {{"{PORT}", c->port},     {"{OTHER}", c->other_dir}, {"{SECRET}", c->secret_path},
				 {"{SIBLING}", c->sibling}, {"{SELF}", c->self},      {"{NONCE}", c->nonce}};
	size_t cap = strlen(code) * 4 + 4096, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *p = code; *p;) {
		bool hit = false;
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			size_t kl = strlen(keys[k][0]), vl = strlen(keys[k][1]);
			if (strncmp(p, keys[k][0], kl) == 0 && n + vl < cap) {
				memcpy(out + n, keys[k][1], vl);
				n += vl;
				p += kl;
				hit = true;
				break;
			}
		}
		if (!hit && n + 1 < cap)
			out[n++] = *p++;
		else if (!hit)
			p++;
	}
	out[n] = 0;
	return out;
}

static struct eval_task task_for(const char *id, double timeout_s, int64_t memory_mb, const char *tests)
{
	struct eval_task t = {0};
	t.id = id;
	t.prompt = "attack";
	t.grader = EVAL_GRADER_PYTHON_TESTS;
	t.language = "python";
	t.tests = tests;
	t.timeout_s = timeout_s;
	t.memory_mb = memory_mb;
	return t;
}

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct grader *g = grader_create(test_src_path("harness"), NULL);
	if (!g || grader_sandbox_problem(g)) {
		printf("%s\n", g ? grader_sandbox_problem(g) : "out of memory");
		grader_destroy(g);
		return test_skip("the sandbox is unusable here");
	}
	signal(SIGPIPE, SIG_IGN);
	struct ctx c = {0};
	snprintf(c.nonce, sizeof c.nonce, "%d-%lld", (int)getpid(), (long long)(clock_now_ns() % 1000000007));
	snprintf(c.self, sizeof c.self, "%d", (int)getpid());

	/* a host service the network attack must not reach */
	c.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	CHECK(c.listen_fd >= 0 && bind(c.listen_fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	      listen(c.listen_fd, 8) == 0 && getsockname(c.listen_fd, (struct sockaddr *)&sa, &sl) == 0);
	snprintf(c.port, sizeof c.port, "%d", ntohs(sa.sin_port));

	/* another task's input folder, named as sandbox_run names them */
	snprintf(c.other_dir, sizeof c.other_dir, "/tmp/sixi-sandbox-%d-XXXXXX", (int)getpid());
	CHECK(mkdtemp(c.other_dir) != NULL);
	chmod(c.other_dir, 0755);
	char path[400], text[200];
	snprintf(path, sizeof path, "%s/solution.py", c.other_dir);
	snprintf(text, sizeof text, "# other-task-secret-%s\n", c.nonce);
	CHECK(write_text(path, text) == 0);
	chmod(path, 0644);

	/* a file of the harness's own (the test's working folder) and its environment */
	char cwd[200];
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	snprintf(c.secret_path, sizeof c.secret_path, "%s/sandbox-attack-secret-%d", cwd, (int)getpid());
	snprintf(text, sizeof text, "harness-secret-%s\n", c.nonce);
	CHECK(write_text(c.secret_path, text) == 0);
	char env_secret[120];
	snprintf(env_secret, sizeof env_secret, "harness-secret-%s", c.nonce);
	setenv("SIXI_ATTACK_SECRET", env_secret, 1);

	/* a host process of ours the signal attack aims at */
	c.sibling_pid = fork();
	if (c.sibling_pid == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	snprintf(c.sibling, sizeof c.sibling, "%d", (int)c.sibling_pid);

	int n = (int)(sizeof attacks / sizeof attacks[0]), ran = 0, contained = 0;
	for (int i = 0; i < n; i++) {
		const struct attack *a = &attacks[i];
		if (only && strcmp(only, a->name) != 0)
			continue;
		ran++;
		char *code = expand(a->code, &c);
		CHECK(code != NULL);
		if (!code)
			continue;
		struct eval_task t = task_for(a->name, a->timeout_s, a->memory_mb, "assert ESCAPED\n");
		struct grade_result r;
		int64_t t0 = clock_now_ns();
		int rc = grade_solution(g, &t, code, &r);
		double s = (double)(clock_now_ns() - t0) / 1e9;
		free(code);
		char why[400] = "";
		bool host = !a->host_ok || a->host_ok(&c, why, sizeof why);
		bool ok = rc == 0 && r.status == GRADE_FAIL && s < a->max_s && host;
		printf("%-24s %s in %.1f s: %s%s%s\n", a->name, ok ? "contained" : "NOT CONTAINED", s,
		       rc ? "grade_solution failed" : r.status == GRADE_PASS ? "ESCAPED (the test passed)" : r.detail,
		       host ? "" : "; host: ", why);
		CHECK(rc == 0);
		CHECK(r.status == GRADE_FAIL);
		CHECK(s < a->max_s);
		CHECK(host);
		contained += ok;

		/* the harness still grades, both ways */
		struct eval_task good = task_for("after-attack", 10, 1024, "assert f() == 1\n");
		struct grade_result r2;
		CHECK(grade_solution(g, &good, "def f():\n    return 1\n", &r2) == 0);
		CHECK(r2.status == GRADE_PASS);
		CHECK(grade_solution(g, &good, "def f():\n    return 2\n", &r2) == 0);
		CHECK(r2.status == GRADE_FAIL);
	}
	printf("%d of %d attack kinds contained\n", contained, ran);
	CHECK(ran > 0);

	if (c.sibling_pid > 0) {
		kill(c.sibling_pid, SIGKILL);
		waitpid(c.sibling_pid, NULL, 0);
	}
	snprintf(path, sizeof path, "%s/solution.py", c.other_dir);
	CHECK(unlink(path) == 0); /* still there, untouched by the attacks */
	rmdir(c.other_dir);
	unlink(c.secret_path);
	close(c.listen_fd);
	grader_destroy(g);
	return test_done();
}
