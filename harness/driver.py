# driver.py — runs one grading job inside the sixi-eval sandbox.
#
# Started by src/eval/sandbox.c as `/usr/bin/python3 /harness/driver.py MODE`
# inside bubblewrap with /input (read-only: task.json, solution.py, brute.py)
# and a fresh tmpfs /task as the current directory. Writes "started" and then
# one JSON line {"status": ..., "detail": ...} to fd 3; status is one of
#   pass, fail, timeout (a case ran past its limit), environment (the grader
#   itself cannot run here, e.g. a module the task requires is missing).
# No "started" line means the harness never ran (sandbox or interpreter
# broken); "started" without a result means the job was killed (limits).
#
# Modes: unit (HumanEval/MBPP assertions), stdio (programs judged on
# stdin/stdout pairs), brute (stdin/stdout compared with a brute-force program
# on seeded random inputs). This file runs the model's code; it does not
# contain it: isolation is the sandbox's job, not this driver's.
#
# The result channel (fd 3) is this driver's alone: the model's code never runs
# in a process that holds it. unit mode runs the solution and its tests in a
# forked child that closes fd 3 first and sends its verdict back on a pipe,
# prefixed by a random nonce (a blind write of {"status": "pass"} to every open
# descriptor is not a verdict); stdio and brute run the solution as a program
# that inherits no descriptor beyond 0-2. The driver makes itself non-dumpable,
# so no process of the sandbox can reopen its fd 3 through /proc/PID/fd/3.
# What this does not do: stop code running in the same process as its tests
# from subverting those tests (in unit mode the tests call the solution's
# functions, as HumanEval's harness does); the sandbox bounds what such code can
# reach, not what the tests conclude.
import ctypes
import importlib.util
import json
import os
import random
import secrets
import subprocess
import sys
import time
from decimal import Decimal, InvalidOperation

RESULT = os.fdopen(3, "w", buffering=1)


def make_undumpable():
    # PR_SET_DUMPABLE (4) = 0: /proc/PID/fd of this process is closed to the
    # sandbox's other processes (same uid, no CAP_SYS_PTRACE)
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError) as e:
        report("environment", "cannot protect the result channel (prctl PR_SET_DUMPABLE: %s)" % e)


def report(status, detail=""):
    RESULT.write(json.dumps({"status": status, "detail": detail[:1500]}) + "\n")
    RESULT.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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


def run_program(path, stdin_text, limit_s):
    return subprocess.run([sys.executable, path], input=stdin_text, capture_output=True, text=True,
                          timeout=limit_s, cwd="/task", close_fds=True)


def shorten(s, n=300):
    s = s if len(s) <= n else s[:n] + "..."
    return s


def check_requires(task):
    for mod in task.get("requires", []):
        if importlib.util.find_spec(mod) is None:
            report("environment", "module %s is not installed for %s" % (mod, sys.executable))


def unit_child(task, solution, verdict_fd, nonce):
    # runs in the forked child: no fd 3 here, whatever the solution does
    RESULT.close()

    def verdict(status, detail=""):
        os.write(verdict_fd, (nonce + json.dumps({"status": status, "detail": detail[:1500]}) + "\n").encode())
        os._exit(0)

    ns = {"__name__": "__sixi_solution__"}
    try:
        exec(compile(solution, "solution.py", "exec"), ns)
        exec(compile(task.get("tests", ""), "tests.py", "exec"), ns)
        entry = task.get("entry_point")
        if "check" in ns and entry:
            if entry not in ns:
                verdict("fail", "the solution does not define %s" % entry)
            ns["check"](ns[entry])
    except SystemExit as e:
        verdict("fail", "the solution called exit(%r)" % (e.code,))
    except BaseException as e:  # noqa: BLE001 - any error of the model's code is a failure
        verdict("fail", "%s: %s" % (type(e).__name__, shorten(str(e))))
    verdict("pass")


def mode_unit(task):
    with open("/input/solution.py") as f:
        solution = f.read()
    nonce = secrets.token_hex(16)
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            unit_child(task, solution, w, nonce)
        finally:
            os._exit(1)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk or len(data) > 1 << 20:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    text = data.decode("utf-8", "replace")
    # the first line that carries the nonce is the verdict; anything else was written by the solution
    for line in text.splitlines():
        if line.startswith(nonce):
            try:
                v = json.loads(line[len(nonce):])
                report(v["status"], v.get("detail", ""))
            except (ValueError, KeyError, TypeError):
                break
    report("fail", "the solution ended the test process before the tests finished (%s)" %
           ("exit status %d" % os.WEXITSTATUS(status) if os.WIFEXITED(status)
            else "signal %d" % os.WTERMSIG(status)))


def judge(path, stdin_text, want, limit_s, label):
    try:
        r = run_program(path, stdin_text, limit_s)
    except subprocess.TimeoutExpired:
        report("timeout", "%s ran past %.1f s" % (label, limit_s))
    if r.returncode != 0:
        report("fail", "%s exited with %d: %s" % (label, r.returncode, shorten(r.stderr.strip()[-300:])))
    if not outputs_equal(r.stdout, want):
        report("fail", "%s: input %r: expected %r, got %r" % (label, shorten(stdin_text, 120),
                                                             shorten(want, 120), shorten(r.stdout, 120)))


def mode_stdio(task, limit_s):
    for i, case in enumerate(task["tests"]):
        judge("/input/solution.py", case["input"], case["output"], limit_s, "case %d" % i)
    report("pass")


def mode_brute(task, limit_s):
    ns = {}
    exec(compile(task["generator"], "generator.py", "exec"), ns)
    rng = random.Random(task.get("seed", 1))
    for i in range(task.get("random_inputs", 40)):
        stdin_text = ns["gen"](rng)
        try:
            ref = run_program("/input/brute.py", stdin_text, limit_s)
        except subprocess.TimeoutExpired:
            report("environment", "the brute-force program ran past %.1f s on random input %d" % (limit_s, i))
        if ref.returncode != 0:
            report("environment", "the brute-force program failed on random input %d: %s" %
                   (i, shorten(ref.stderr.strip()[-300:])))
        judge("/input/solution.py", stdin_text, ref.stdout, limit_s, "random input %d" % i)
    report("pass")


def main():
    RESULT.write("started\n")
    RESULT.flush()
    make_undumpable()
    mode = sys.argv[1]
    limit_s = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    with open("/input/task.json") as f:
        task = json.load(f)
    check_requires(task)
    started = time.monotonic()
    if mode == "unit":
        mode_unit(task)
    elif mode == "stdio":
        mode_stdio(task, limit_s)
    elif mode == "brute":
        mode_brute(task, limit_s)
    report("environment", "unknown driver mode %r (%.3f s)" % (mode, time.monotonic() - started))


main()
