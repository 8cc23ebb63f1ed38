/* sandbox — runs one command under bubblewrap with no network, a read-only
 * system, a fresh tmpfs work directory, resource limits and a wall-clock
 * timeout; the caller's files appear read-only under /input, the harness's
 * files read-only under /harness, and one private blob (the task, with its
 * tests and expected values) is readable once on fd 4.
 *
 * Isolation: --unshare-all (network, pid, ipc, uts, cgroup, user namespaces),
 * /usr, /etc, / and /dev read-only, /task and /tmp fresh tmpfs of 4 x fsize_mb
 * each, --die-with-parent and --new-session; bwrap itself gets an empty
 * environment (it is pid 1 inside, and /proc/1/environ is readable there).
 * Limits are rlimits set before bwrap starts: CPU seconds, address space,
 * processes, file size, 1024 open descriptors. RLIMIT_NPROC does not bind uid 0, so
 * when running as root the sandbox first drops to an unused uid (one per
 * concurrent slot); otherwise the process limit is added on top of the user's
 * current task count (threads included, as the kernel counts them) and a headroom
 * for the user's other work growing meanwhile, so another program's threads or a
 * parallel sandbox cannot keep bwrap from starting. The whole process group is killed at the timeout.
 *
 * Every file the sandbox reads is copied by the host into folders it creates
 * (mode 0755 under /tmp, one pair per run, removed afterwards), never bound
 * from where the project lives: as root the sandbox runs as an unused uid,
 * which could not enter a private (mode 0700) checkout such as a clone in root's home.
 * The private blob is a sealed memfd on fd 4 of the command only.
 *
 * It does not interpret results beyond what fd 3 says: the harness driver
 * writes "started" and then one result line there (harness/driver.py).
 * Arguments are borrowed; sandbox_result_finish frees a result's strings. */
#ifndef SIXI_EVAL_SANDBOX_H
#define SIXI_EVAL_SANDBOX_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sandbox_limits {
	double wall_s;      /* killed after this much wall-clock time */
	double cpu_s;       /* RLIMIT_CPU per process (rounded up) */
	int64_t memory_mb;  /* RLIMIT_AS */
	int64_t nproc;      /* processes the sandbox may have at once */
	int64_t fsize_mb;   /* largest file it may write */
};

struct sandbox_file {
	const char *name;   /* plain file name under /input */
	const char *data;
	size_t len;
};

struct sandbox_result {
	bool started;       /* the driver wrote "started": the sandbox and interpreter work */
	bool timed_out;     /* killed at wall_s */
	int exit_status;    /* >= 0 exit code; -N killed by signal N */
	char *channel;      /* what came on fd 3 after "started\n" (the result line), or "" */
	char *output;       /* the last 4 KiB of stdout+stderr */
	double seconds;
};

struct sandbox_job {
	const struct sandbox_file *inputs;  /* under /input */
	size_t n_inputs;
	const struct sandbox_file *harness; /* under /harness */
	size_t n_harness;
	const char *secret;                 /* on fd 4 of the command (NULL: fd 4 closed) */
	size_t secret_len;
};

/* Is the sandbox usable here? 0, or -ENOSYS with the reason in why. Runs bwrap once. */
int sandbox_probe(const char *python, char *why, size_t whylen);
/* Runs argv (argv[0] an absolute path inside the sandbox) for job. 0 when the
 * child ran (whatever it did), or a negative errno when the host could not
 * even start it (res is then empty). */
__attribute__((warn_unused_result)) int sandbox_run(const struct sandbox_job *job, const char *const *argv,
						    const struct sandbox_limits *lim, struct sandbox_result *res);
void sandbox_result_finish(struct sandbox_result *res);
/* Removes input folders left in /tmp by a process killed while grading (named
 * sixi-sandbox-PID-XXXXXX, PID no longer running). */
void sandbox_sweep(void);
#endif
