/* sandbox — see sandbox.h.
 *
 * One fork per run: the child sets its process group, rlimits and (as root)
 * an unprivileged uid, then execs bwrap, which builds the namespaces and runs
 * the command. The parent polls the two pipes (fd 3 channel, merged
 * stdout/stderr) until both close and the child exits, or the wall clock runs
 * out, when it kills the whole group. With --unshare-pid and --die-with-parent
 * nothing started inside outlives bwrap. Input and harness files are written
 * to two fresh host folders bound read-only, which are removed afterwards. */
#include "grade/sandbox.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hash.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUTPUT_KEEP_BYTES 4096
#define CHANNEL_MAX_BYTES 65536
#define SANDBOX_UID_BASE 1900000000u /* far above any real account */
#define SANDBOX_USER_HEADROOM 128     /* not root: tasks the user's other work may add meanwhile */
#define SANDBOX_MAX_FDS 1024         /* open descriptors per process (soft = hard) */

static const char *find_bwrap(void)
{
	static const char *const candidates[] = {"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap", NULL};
	for (const char *const *c = candidates; *c; c++)
		if (access(*c, X_OK) == 0)
			return *c;
	return NULL;
}

/* Processes of the calling user now (only needed when not root). */
/* Tasks (threads, which RLIMIT_NPROC counts, not processes) whose real uid is uid. */
static int64_t count_user_tasks(uid_t uid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int64_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], line[256];
		snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		long real_uid = -1, threads = 0;
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "Uid:", 4) == 0)
				real_uid = strtol(line + 4, NULL, 10);
			else if (strncmp(line, "Threads:", 8) == 0)
				threads = strtol(line + 8, NULL, 10);
		}
		fclose(f);
		if (real_uid == (long)uid)
			n += threads > 0 ? threads : 1;
	}
	closedir(d);
	return n;
}

static int write_file(const char *dir, const struct sandbox_file *f)
{
	if (!f->name[0] || strchr(f->name, '/') || f->name[0] == '.')
		return -EINVAL;
	char path[1100];
	snprintf(path, sizeof path, "%s/%s", dir, f->name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < f->len) {
		ssize_t w = write(fd, f->data + done, f->len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int rc = -errno;
			close(fd);
			return rc ? rc : -EIO;
		}
		done += (size_t)w;
	}
	fchmod(fd, 0644); /* umask must not hide inputs from the sandbox uid */
	return close(fd) == 0 ? 0 : -errno;
}

/* A fresh /tmp/sixi-sandbox-PID-XXXXXX holding files (0644; the folder 0755, so
 * the sandbox uid can read it whatever the umask). */
static int make_dir(char *dir, size_t dirlen, const struct sandbox_file *files, size_t n)
{
	snprintf(dir, dirlen, "/tmp/sixi-sandbox-%d-XXXXXX", (int)getpid());
	if (!mkdtemp(dir)) {
		dir[0] = 0;
		return -errno;
	}
	int rc = chmod(dir, 0755) == 0 ? 0 : -errno;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = write_file(dir, &files[i]);
	return rc;
}

/* The private blob as a sealed memfd at offset 0 (-1 with errno on failure). */
static int secret_fd(const char *data, size_t len)
{
	int fd = memfd_create("sixi-task", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			errno = w < 0 ? errno : EIO;
			return -1;
		}
		done += (size_t)w;
	}
	/* the command reads it; nothing may change it */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static void remove_dir(const char *dir)
{
	if (!dir[0])
		return;
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			char path[1100];
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* Adds the host's /bin, /lib... either as the same symlinks or as read-only binds. */
static size_t add_top_dirs(const char **args, size_t n, char links[][64])
{
	static const char *const tops[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", NULL};
	int li = 0;
	for (const char *const *t = tops; *t; t++) {
		struct stat st;
		if (lstat(*t, &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlink(*t, links[li], 63);
			if (k <= 0)
				continue;
			links[li][k] = 0;
			args[n++] = "--symlink";
			args[n++] = links[li++];
			args[n++] = *t;
		} else if (S_ISDIR(st.st_mode)) {
			args[n++] = "--ro-bind";
			args[n++] = *t;
			args[n++] = *t;
		}
	}
	return n;
}

void sandbox_sweep(void)
{
	DIR *d = opendir("/tmp");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		int pid = 0;
		char tail[16];
		/* only folders named by sandbox_run, whose process is gone (killed mid-grade) */
		if (sscanf(e->d_name, "sixi-sandbox-%d-%15s", &pid, tail) != 2 || pid <= 0 || strlen(tail) != 6)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char path[300];
		snprintf(path, sizeof path, "/tmp/%s", e->d_name);
		remove_dir(path);
	}
	closedir(d);
}

static void set_limit(int which, rlim_t soft, rlim_t hard)
{
	struct rlimit r = {soft, hard};
	setrlimit(which, &r);
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void child_exec(const char *bwrap, const char *const *args, int chan_w, int out_w, int secret,
		       uid_t drop_uid, const struct sandbox_limits *lim, rlim_t nproc)
{
	setpgid(0, 0);
	/* first out of the way (any of them may sit on 0-4), then into place */
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 1019) < 0 || dup2(out_w, 1020) < 0 || dup2(chan_w, 1021) < 0 ||
	    (secret >= 0 && dup2(secret, 1022) < 0))
		_exit(126);
	if (dup2(1019, 0) < 0 || dup2(1020, 1) < 0 || dup2(1020, 2) < 0 || dup2(1021, 3) < 0 ||
	    (secret >= 0 && dup2(1022, 4) < 0))
		_exit(126);
	for (int fd = secret >= 0 ? 5 : 4; fd < 1024; fd++)
		close(fd);
	if (drop_uid) {
		if (setgroups(0, NULL) != 0 || setgid((gid_t)drop_uid) != 0 || setuid(drop_uid) != 0)
			_exit(126);
	}
	rlim_t cpu = (rlim_t)(lim->cpu_s + 0.999);
	set_limit(RLIMIT_CPU, cpu, cpu + 1);
	set_limit(RLIMIT_AS, (rlim_t)lim->memory_mb << 20, (rlim_t)lim->memory_mb << 20);
	set_limit(RLIMIT_FSIZE, (rlim_t)lim->fsize_mb << 20, (rlim_t)lim->fsize_mb << 20);
	set_limit(RLIMIT_NPROC, nproc, nproc);
	set_limit(RLIMIT_CORE, 0, 0);
	set_limit(RLIMIT_NOFILE, SANDBOX_MAX_FDS, SANDBOX_MAX_FDS);
	/* bwrap is the sandbox's pid 1: /proc/1/environ inside shows its environment,
	 * so it gets none of ours (API keys, tokens) */
	static char *const clean_env[] = {"PATH=/usr/bin:/bin", NULL};
	execve(bwrap, (char *const *)args, clean_env);
	_exit(127);
}

static void keep_tail(struct buf *b, const char *p, size_t n)
{
	if (buf_append(b, p, n) == 0 && b->len > 2 * OUTPUT_KEEP_BYTES)
		buf_consume(b, b->len - OUTPUT_KEEP_BYTES);
}

int sandbox_run(const struct sandbox_job *job, const char *const *argv, const struct sandbox_limits *lim,
		struct sandbox_result *res)
{
	memset(res, 0, sizeof *res);
	const char *bwrap = find_bwrap();
	if (!bwrap)
		return -ENOSYS;
	char dir[64] = "", hdir[64] = "";
	int chan[2] = {-1, -1}, out[2] = {-1, -1}, secret = -1;
	int rc = make_dir(dir, sizeof dir, job->inputs, job->n_inputs);
	if (rc == 0 && job->n_harness)
		rc = make_dir(hdir, sizeof hdir, job->harness, job->n_harness);
	if (rc == 0 && job->secret && (secret = secret_fd(job->secret, job->secret_len)) < 0)
		rc = -errno;
	if (rc)
		goto out;

	const char *args[128];
	char links[8][64];
	size_t n = 0;
	args[n++] = "bwrap";
	args[n++] = "--unshare-all";
	args[n++] = "--die-with-parent";
	args[n++] = "--new-session";
	args[n++] = "--ro-bind";
	args[n++] = "/usr";
	args[n++] = "/usr";
	args[n++] = "--ro-bind";
	args[n++] = "/etc";
	args[n++] = "/etc";
	n = add_top_dirs(args, n, links);
	/* /tmp and /task are tmpfs, i.e. host memory: each is capped at 4 files' worth */
	char tmpfs_bytes[32];
	snprintf(tmpfs_bytes, sizeof tmpfs_bytes, "%lld", (long long)(lim->fsize_mb > 0 ? lim->fsize_mb : 1) * 4 << 20);
	static const char *const rest[] = {"--proc", "/proc", "--dev", "/dev", "--chdir", "/task", "--clearenv",
					   "--setenv", "HOME", "/task", "--setenv",
					   "PATH", "/usr/bin:/bin", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
					   "--setenv", "LANG", "C.UTF-8", NULL};
	for (const char *const *r = rest; *r; r++)
		args[n++] = *r;
	args[n++] = "--size";
	args[n++] = tmpfs_bytes;
	args[n++] = "--tmpfs";
	args[n++] = "/tmp";
	args[n++] = "--size";
	args[n++] = tmpfs_bytes;
	args[n++] = "--tmpfs";
	args[n++] = "/task";
	args[n++] = "--ro-bind";
	args[n++] = dir;
	args[n++] = "/input";
	if (hdir[0]) {
		args[n++] = "--ro-bind";
		args[n++] = hdir;
		args[n++] = "/harness";
	}
	/* last: the root and /dev become read-only once everything is mounted */
	args[n++] = "--remount-ro";
	args[n++] = "/";
	args[n++] = "--remount-ro";
	args[n++] = "/dev";
	args[n++] = "--";
	for (size_t i = 0; argv[i] && n + 1 < sizeof args / sizeof args[0]; i++)
		args[n++] = argv[i];
	args[n] = NULL;

	uid_t drop_uid = 0;
	rlim_t nproc = (rlim_t)lim->nproc;
	if (geteuid() == 0)
		drop_uid = SANDBOX_UID_BASE + (uid_t)(hash_fnv1a64(dir, strlen(dir)) % 100000);
	else
		/* RLIMIT_NPROC counts every task of the user: the ones running now, and
		 * headroom for the user's other work (parallel builds, another sandbox)
		 * growing while this one runs, or bwrap itself could not start */
		nproc += (rlim_t)count_user_tasks(getuid()) + SANDBOX_USER_HEADROOM;

	if (pipe2(chan, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		rc = -errno;
		goto out;
	}
	int64_t t0 = clock_now_ns();
	pid_t pid = fork();
	if (pid == 0)
		child_exec(bwrap, args, chan[1], out[1], secret, drop_uid, lim, nproc);
	close(chan[1]);
	close(out[1]);
	chan[1] = out[1] = -1;
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	setpgid(pid, pid); /* also in the child: whichever runs first */

	struct buf chan_buf, out_buf;
	buf_init(&chan_buf);
	buf_init(&out_buf);
	int64_t deadline = t0 + (int64_t)(lim->wall_s * 1e9);
	struct pollfd pfd[2] = {{chan[0], POLLIN, 0}, {out[0], POLLIN, 0}};
	int open_fds = 2, status = 0;
	bool exited = false, chan_full = false;
	/* bwrap is reaped only at the end: while it is a zombie its pid (and so the
	 * process group we signal) cannot be reused by anyone else */
	while (open_fds > 0 || !exited) {
		if (!exited) {
			siginfo_t si = {0};
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
				exited = true;
		}
		int64_t now = clock_now_ns();
		if (now >= deadline) {
			res->timed_out = !exited;
			break;
		}
		int wait_ms = (int)((deadline - now) / 1000000) + 1;
		if (open_fds == 0 || exited)
			wait_ms = wait_ms < 20 ? wait_ms : 20;
		if (exited && open_fds > 0)
			kill(-pid, SIGKILL); /* bwrap is gone; whatever still holds a pipe goes with its group */
		if (open_fds == 0) {
			clock_sleep_ns((int64_t)wait_ms * 1000000);
			continue;
		}
		int pr = poll(pfd, 2, wait_ms);
		if (pr < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[4096];
			ssize_t got = read(pfd[i].fd, chunk, sizeof chunk);
			if (got > 0) {
				/* the channel keeps its first 64 KiB, the output its last 4 KiB */
				if (i == 0 && !chan_full && (chan_buf.len >= CHANNEL_MAX_BYTES ||
							     buf_append(&chan_buf, chunk, (size_t)got)))
					chan_full = true;
				else if (i == 1)
					keep_tail(&out_buf, chunk, (size_t)got);
			} else if (got == 0 || errno != EINTR) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
			}
		}
	}
	/* nothing started by the run may outlive it */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	res->seconds = (double)(clock_now_ns() - t0) / 1e9;
	res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
	const char *ch = chan_buf.data ? chan_buf.data : "";
	res->started = strncmp(ch, "started\n", 8) == 0;
	res->channel = strdup(res->started ? ch + 8 : "");
	if (out_buf.len > OUTPUT_KEEP_BYTES)
		buf_consume(&out_buf, out_buf.len - OUTPUT_KEEP_BYTES);
	res->output = strdup(out_buf.data ? out_buf.data : "");
	buf_finish(&chan_buf);
	buf_finish(&out_buf);
	chan[0] = out[0] = -1; /* closed by the loop above */
	if (!res->channel || !res->output) {
		sandbox_result_finish(res);
		rc = -ENOMEM;
	}
out:
	for (int i = 0; i < 2; i++) {
		if (chan[i] >= 0)
			close(chan[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (secret >= 0)
		close(secret);
	remove_dir(dir);
	remove_dir(hdir);
	return rc;
}

void sandbox_result_finish(struct sandbox_result *res)
{
	if (!res)
		return;
	free(res->channel);
	free(res->output);
	res->channel = res->output = NULL;
}

int sandbox_probe(const char *python, char *why, size_t whylen)
{
	if (!find_bwrap()) {
		snprintf(why, whylen, "bwrap not found: install the Debian package bubblewrap");
		return -ENOSYS;
	}
	if (access(python, X_OK) != 0) {
		snprintf(why, whylen, "%s not found: install the Debian package python3", python);
		return -ENOSYS;
	}
	const char *argv[] = {python, "-c", "import os; os.write(3, b'started\\n')", NULL};
	struct sandbox_limits lim = {.wall_s = 20, .cpu_s = 10, .memory_mb = 1024, .nproc = 32, .fsize_mb = 1};
	struct sandbox_result r;
	struct sandbox_job job = {0};
	int rc = sandbox_run(&job, argv, &lim, &r);
	if (rc) {
		snprintf(why, whylen, "cannot start bwrap: %s", strerror(-rc));
		return -ENOSYS;
	}
	if (!r.started) {
		char *nl = strchr(r.output, '\n');
		if (nl)
			*nl = 0;
		snprintf(why, whylen, "bwrap cannot build the sandbox here (%s); grading reports environment failures",
			 r.output[0] ? r.output : r.timed_out ? "timed out" : "no output");
		sandbox_result_finish(&r);
		return -ENOSYS;
	}
	sandbox_result_finish(&r);
	return 0;
}
