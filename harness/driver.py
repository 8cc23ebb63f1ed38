# driver.py — the trusted side of one grading job inside the sixi-eval sandbox.
#
# Started by src/grade/sandbox.c as `/usr/bin/python3 /harness/driver.py MODE`
# inside bubblewrap. The task (tests, expected outputs, the brute-force
# program, the limits) arrives on fd 4, which this process reads and closes
# before any code of the candidate runs; /input holds only solution.py. Writes
# "started" and then one JSON line {"status", "detail", "cpu_s"} to fd 3;
# status is one of
#   pass, fail, timeout (the candidate used its CPU limit),
#   overloaded (the wall-clock backstop passed while the candidate was waiting
#     for a CPU, not using one: the machine, not the candidate),
#   environment (decided here before the candidate ran: a module the task
#     requires is missing, the brute-force program fails).
#
# Modes: unit (python_tests: the tests run HERE, and every name the solution
# defines is a stand-in that calls into worker.py, a separate process that ran
# the solution; arguments and results cross as plain data, see wire.py, and
# are compared here), stdio (the solution as a program judged on stdin/stdout
# pairs), brute (stdin/stdout compared with the trusted brute-force program on
# seeded random inputs; the brute-force outputs are computed before the
# candidate first runs).
#
# Why a candidate cannot forge the verdict: its code runs only in other
# processes (worker.py, or the program), which inherit fds 0-2 and nothing
# else; this process is non-dumpable (no ptrace, no /proc/PID/mem, fd or
# environ of it for the same uid) and ignores the signals it can ignore, so
# the candidate can kill it (no result: fail) but not steer it. After each
# candidate run every other process of the sandbox is killed (kill -1) before
# anything else runs. What crosses back is data decoded by wire.decode into
# builtin values; an object with its own __eq__ stays in the worker and is
# seen here as a Remote that equals only itself and has no truth value.
#
# Limits: CPU seconds of the candidate, counted over all its processes (live
# ones from /proc, exited ones through their reaper's child times), with a
# wall-clock backstop. A run past its CPU limit is a timeout; a run that
# reaches the backstop under its CPU limit is overloaded when its processes
# spent at least half of the wall time waiting on a run queue
# (/proc/PID/schedstat), else a timeout (it slept or blocked). In unit mode
# the wall time counted is the time spent waiting for the worker's replies,
# not the time the tests themselves take here.
import builtins
import ctypes
import importlib.util
import json
import os
import random
import resource
import select
import signal
import subprocess
import sys
import time
from decimal import Decimal, InvalidOperation

import wire

RESULT = None  # fd 3, opened by run()
CLK = os.sysconf("SC_CLK_TCK")
SELF = os.getpid()
state = {"candidate_ran": False, "cpu_s": 0.0}
REPLY_MAX_BYTES = 64 << 20


def report(status, detail=""):
    RESULT.write(json.dumps({"status": status, "detail": detail[:1500], "cpu_s": round(state["cpu_s"], 4)}) + "\n")
    RESULT.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def make_undumpable():
    # PR_SET_DUMPABLE (4) = 0: /proc/PID/{fd,mem,environ} and ptrace of this
    # process are closed to the sandbox's other processes (same uid, no CAP_SYS_PTRACE)
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError) as e:
        report("environment", "cannot protect the result channel (prctl PR_SET_DUMPABLE: %s)" % e)


IGNORED = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                       signal.SIGUSR2, signal.SIGPIPE, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF,
                       signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGXFSZ)]


def shorten(s, n=300):
    return s if len(s) <= n else s[:n] + "..."


# ---- accounting and clean-up of the candidate's processes ----------------------------


def stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    return s[s.rindex(")") + 2:].split()


def others():
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) not in (1, SELF):
            yield int(p)


class Meter:
    """CPU and run-queue time of every process but this one and pid 1, since start()."""

    def start(self):
        self.t0 = time.monotonic()
        self.base = self.reaped()

    def reaped(self):
        # exited processes: ours through our child times, orphans through pid 1's (bwrap reaps them)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            f = stat_fields(1)
            init = (int(f[13]) + int(f[14])) / CLK
        except (OSError, ValueError, IndexError):
            init = 0.0
        return ru.ru_utime + ru.ru_stime + init

    def sample(self):
        cpu, delay = self.reaped() - self.base, 0.0
        for pid in others():
            try:
                f = stat_fields(pid)
                cpu += sum(int(x) for x in f[11:15]) / CLK
                with open("/proc/%d/schedstat" % pid) as s:
                    delay += int(s.read().split()[1]) / 1e9
            except (OSError, ValueError, IndexError):
                pass
        return cpu, delay, time.monotonic() - self.t0


def kill_all():
    # kill(-1) reaches every process of this pid namespace but this one and pid 1
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        reap()
        time.sleep(0.002)
    reap()


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class Stop(Exception):
    def __init__(self, status, detail):
        super().__init__(detail)
        self.status, self.detail = status, detail


def over_limit(meter, lim, what, waited=None):
    """Raises Stop when the candidate passed its CPU limit or the wall backstop.
    waited: the wall time to judge (unit mode: only the time spent waiting for
    the worker, not the tests' own time in this process)."""
    cpu, delay, wall = meter.sample()
    wall = wall if waited is None else waited
    state["cpu_s"] = max(state["cpu_s"], cpu)
    if cpu >= lim["cpu_s"]:
        raise Stop("timeout", "%s used %.2f s of CPU, its limit is %.2f s" % (what, cpu, lim["cpu_s"]))
    if wall >= lim["wall_s"]:
        if delay >= 0.5 * wall:
            raise Stop("overloaded", "%s waited %.1f s of %.1f s for a CPU and used %.2f s of its %.2f s CPU "
                       "limit: the machine is overloaded" % (what, delay, wall, cpu, lim["cpu_s"]))
        raise Stop("timeout", "%s was idle or blocked past the %.1f s wall-clock limit (%.2f s of CPU used)" %
                   (what, lim["wall_s"], cpu))


def child_setup(cpu_s):
    def setup():
        for s in IGNORED:
            signal.signal(s, signal.SIG_DFL)
        cpu = int(cpu_s + 1.999)  # per process; the meter enforces the total
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    return setup


def finish_candidate(meter):
    kill_all()
    cpu, _, _ = meter.sample()
    state["cpu_s"] = max(state["cpu_s"], cpu)


# ---- programs on stdin/stdout (stdio, brute) ------------------------------------------


def run_program(argv, stdin_text, lim, what, candidate):
    """(returncode, stdout, stderr) of a program run; raises Stop at a limit."""
    meter = Meter()
    meter.start()
    if candidate:
        state["candidate_ran"] = True
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd="/task", close_fds=True, preexec_fn=child_setup(lim["cpu_s"]))
    first = True
    try:
        while True:
            try:
                out, err = p.communicate(stdin_text if first else None, timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                first = False
                over_limit(meter, lim, what)
    finally:
        finish_candidate(meter) if candidate else kill_all()
    if p.returncode == -signal.SIGXCPU:
        raise Stop("timeout", "%s passed its CPU limit of %.2f s (SIGXCPU)" % (what, lim["cpu_s"]))
    return p.returncode, out, err


def tokens_equal(a, b):
    if a == b:
        return True
    try:
        return Decimal(a) == Decimal(b)
    except (InvalidOperation, ValueError):
        return False


def outputs_equal(got, want):
    # Line by line after stripping; numbers compared as decimals ("1.50" == "1.5").
    g = [line.strip() for line in got.strip().splitlines()]
    w = [line.strip() for line in want.strip().splitlines()]
    if len(g) != len(w):
        return False
    for lg, lw in zip(g, w):
        if lg == lw:
            continue
        tg, tw = lg.split(), lw.split()
        if len(tg) != len(tw) or not all(tokens_equal(x, y) for x, y in zip(tg, tw)):
            return False
    return True


def judge(stdin_text, want, lim, label):
    rc, out, err = run_program([sys.executable, "/input/solution.py"], stdin_text, lim, label, True)
    if rc != 0:
        report("fail", "%s exited with %d: %s" % (label, rc, shorten(err.strip()[-300:])))
    if not outputs_equal(out, want):
        report("fail", "%s: input %r: expected %r, got %r" % (label, shorten(stdin_text, 120), shorten(want, 120),
                                                             shorten(out, 120)))


def mode_stdio(task, lim):
    for i, case in enumerate(task["tests"]):
        judge(case["input"], case["output"], lim, "case %d" % i)
    report("pass")


def mode_brute(task, lim):
    ns = {}
    exec(compile(task["generator"], "generator.py", "exec"), ns)
    rng = random.Random(task.get("seed", 1))
    cases = []
    # every expected output first, while no code of the candidate has run
    for i in range(task.get("random_inputs", 40)):
        stdin_text = ns["gen"](rng)
        try:
            rc, out, err = run_program([sys.executable, "-I", "-c", task["brute"]], stdin_text, lim,
                                       "the brute-force program", False)
        except Stop as e:
            report("environment", "the brute-force program stopped on random input %d: %s" % (i, e.detail))
        if rc != 0:
            report("environment", "the brute-force program failed on random input %d: %s" %
                   (i, shorten(err.strip()[-300:])))
        cases.append((stdin_text, out))
    state["cpu_s"] = 0.0
    for i, (stdin_text, want) in enumerate(cases):
        judge(stdin_text, want, lim, "random input %d" % i)
    report("pass")


# ---- python_tests: the tests here, the solution in worker.py ------------------------------


class RemoteError(Exception):
    """An error of the solution's process, or a reply that is not plain data."""


class Worker:
    def __init__(self, lim):
        self.lim = lim
        self.meter = Meter()
        self.meter.start()
        self.stopped = None
        self.buf = b""
        self.checked = time.monotonic()
        self.waited = 0.0  # wall seconds spent waiting for the worker's replies
        state["candidate_ran"] = True
        self.p = subprocess.Popen([sys.executable, "-s", "/harness/worker.py"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, cwd="/task", close_fds=True,
                                  preexec_fn=child_setup(lim["cpu_s"]))

    def recv(self):
        fd = self.p.stdout.fileno()
        entered = time.monotonic()
        try:
            return self.recv_line(fd, entered)
        finally:
            self.waited += time.monotonic() - entered

    def recv_line(self, fd, entered):
        while b"\n" not in self.buf:
            r, _, _ = select.select([fd], [], [], 0.2)
            if not r:
                over_limit(self.meter, self.lim, "the solution", self.waited + time.monotonic() - entered)
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                try:
                    rc = self.p.wait(1)
                except subprocess.TimeoutExpired:
                    rc = None
                over_limit(self.meter, self.lim, "the solution", self.waited + time.monotonic() - entered)
                if rc == -signal.SIGXCPU:
                    raise Stop("timeout", "the solution passed its CPU limit of %.2f s (SIGXCPU)" % self.lim["cpu_s"])
                raise RemoteError("the solution's process ended before it answered")
            self.buf += chunk
            if len(self.buf) > REPLY_MAX_BYTES:
                raise RemoteError("the solution's reply is larger than %d MiB" % (REPLY_MAX_BYTES >> 20))
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            raise RemoteError("the solution's process sent something that is not a reply") from None
        if type(msg) is not dict:
            raise RemoteError("the solution's process sent something that is not a reply")
        return msg

    def request(self, req):
        if self.stopped:
            raise self.stopped
        try:
            if time.monotonic() - self.checked > 0.5:
                self.checked = time.monotonic()
                over_limit(self.meter, self.lim, "the solution", self.waited)
            try:
                self.p.stdin.write((json.dumps(req) + "\n").encode())
                self.p.stdin.flush()
            except (BrokenPipeError, OSError):
                raise RemoteError("the solution's process ended before it answered") from None
            msg = self.recv()
        except Stop as e:
            self.stopped = e
            raise
        if "exc" in msg:
            raise remote_exception(msg.get("exc"), msg.get("msg"))
        return msg

    def value(self, msg):
        if "ok" not in msg:
            raise RemoteError("the solution's process sent something that is not a reply")
        try:
            return wire.decode(msg["ok"], lambda ref, tname: Remote(self, ref, tname))
        except wire.WireError as e:
            raise RemoteError("the solution's reply is not plain data: %s" % e) from None

    def call(self, name, ref, attr, args, kwargs):
        try:
            a = [wire.encode(x, handle_of) for x in args]
            k = {str(key): wire.encode(x, handle_of) for key, x in kwargs.items()}
        except ValueError as e:
            raise TypeError("cannot pass this argument to the solution: %s" % e) from None
        return self.value(self.request({"op": "call", "name": name, "ref": ref, "attr": attr, "args": a,
                                        "kwargs": k}))

    def getattr(self, ref, attr):
        msg = self.request({"op": "getattr", "name": None, "ref": ref, "attr": attr})
        if msg.get("callable") is True:
            return RemoteMethod(self, ref, attr)
        return self.value(msg)


def remote_exception(name, text):
    name = name if type(name) is str else "?"
    text = text if type(text) is str else ""
    cls = getattr(builtins, name, None) if name.isidentifier() else None
    # builtin exception types only: the tests may expect, say, a ValueError
    if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == "builtins":
        return cls(text)
    return RemoteError("%s: %s" % (name, shorten(text)))


def handle_of(x):
    if type(x) is Remote:
        return ["r", object.__getattribute__(x, "_ref"), "?"]
    raise ValueError("%s is not plain data" % type(x).__name__)


class Remote:
    """An object that stayed in the solution's process: methods can be called on it,
    it equals only itself and has no truth value."""
    __slots__ = ("_w", "_ref", "_type")

    def __init__(self, w, ref, tname):
        object.__setattr__(self, "_w", w)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_type", tname)

    def __getattr__(self, attr):
        return self._w.getattr(self._ref, attr)

    def __call__(self, *args, **kwargs):
        return self._w.call(None, self._ref, None, args, kwargs)

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("an object of the solution's class %s has no truth value here" % self._type)

    def __repr__(self):
        return "<%s object of the solution>" % self._type

    def __len__(self):
        n = self._w.call(None, self._ref, "__len__", (), {})
        if type(n) is not int:
            raise TypeError("len() of a %s is not an int" % self._type)
        return n

    def __getitem__(self, key):
        return self._w.call(None, self._ref, "__getitem__", (key,), {})

    def __contains__(self, key):
        v = self._w.call(None, self._ref, "__contains__", (key,), {})
        if type(v) is not bool:
            raise TypeError("'in' on a %s did not give a bool" % self._type)
        return v


class RemoteMethod:
    def __init__(self, w, ref, attr):
        self.w, self.ref, self.attr = w, ref, attr

    def __call__(self, *args, **kwargs):
        return self.w.call(None, self.ref, self.attr, args, kwargs)


class RemoteFunction:
    """A name the solution defines (function or class), called in its process."""

    def __init__(self, w, name):
        self.w, self.name, self.__name__ = w, name, name

    def __call__(self, *args, **kwargs):
        return self.w.call(self.name, None, None, args, kwargs)

    def __repr__(self):
        return "<%s of the solution>" % self.name


def mode_unit(task, lim):
    w = Worker(lim)
    verdict = None
    try:
        first = w.recv()
        if "load_error" in first:
            e = first["load_error"] if type(first["load_error"]) is dict else {}
            verdict = ("fail", "the solution does not run: %s: %s" % (str(e.get("exc", "?"))[:60],
                                                                     shorten(str(e.get("msg", "")))))
        elif type(first.get("names")) is not dict:
            verdict = ("fail", "the solution's process sent something that is not a reply")
        else:
            ns = {"__name__": "__sixi_tests__"}
            for name, info in first["names"].items():
                if type(name) is not str or not name.isidentifier() or type(info) is not list or not info:
                    continue
                if hasattr(builtins, name) and name != task.get("entry_point"):
                    continue  # a solution's sorted or int shadows the builtin in its own process only
                if info[0] == "callable":
                    ns[name] = RemoteFunction(w, name)
                elif info[0] == "value" and len(info) == 2:
                    ns[name] = w.value({"ok": info[1]})
            entry = task.get("entry_point")
            defined = set(ns) - {"__name__"}
            exec(compile(task.get("tests", ""), "tests.py", "exec"), ns)
            if "check" in ns and entry:
                if entry not in defined:
                    verdict = ("fail", "the solution does not define %s" % entry)
                else:
                    ns["check"](ns[entry])
    except Stop as e:
        verdict = (e.status, e.detail)
    except SystemExit as e:
        verdict = ("fail", "the tests exited (%r)" % (e.code,))
    except BaseException as e:  # noqa: BLE001 - any failed test or error of the solution is a failure
        verdict = ("fail", "%s: %s" % (type(e).__name__, shorten(str(e))))
    if w.stopped:
        # the tests may have caught the stop; the limit decides
        verdict = (w.stopped.status, w.stopped.detail)
    finish_candidate(w.meter)
    report(*(verdict or ("pass", "")))


def read_task():
    chunks = []
    while True:
        b = os.read(4, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(4)
    return json.loads(b"".join(chunks))


def check_requires(task):
    for mod in task.get("requires", []):
        if importlib.util.find_spec(mod) is None:
            report("environment", "module %s is not installed for %s" % (mod, sys.executable))


def main():
    global RESULT
    RESULT = os.fdopen(3, "w", buffering=1)
    RESULT.write("started\n")
    RESULT.flush()
    make_undumpable()
    for s in IGNORED:
        signal.signal(s, signal.SIG_IGN)
    mode = sys.argv[1]
    try:
        task = read_task()
        lim = {"cpu_s": float(task["limits"]["cpu_s"]), "wall_s": float(task["limits"]["wall_s"])}
        check_requires(task)
    except (OSError, ValueError, KeyError, TypeError) as e:
        report("environment", "the harness cannot read its task (%s: %s)" % (type(e).__name__, e))
    if mode == "unit":
        mode_unit(task, lim)
    elif mode == "stdio":
        mode_stdio(task, lim)
    elif mode == "brute":
        mode_brute(task, lim)
    report("environment", "unknown driver mode %r" % mode)


def run():
    try:
        main()
    except Stop as e:
        kill_all()
        report(e.status, e.detail)
    except Exception as e:  # noqa: BLE001
        kill_all()
        # an error of this file before the candidate ran is the harness's; after, it may be provoked
        report("fail" if state["candidate_ran"] else "environment",
               "harness error: %s: %s" % (type(e).__name__, shorten(str(e))))


if __name__ == "__main__":
    run()
