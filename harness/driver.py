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
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from decimal import Decimal, InvalidOperation

RESULT = os.fdopen(3, "w", buffering=1)


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
                          timeout=limit_s, cwd="/task")


def shorten(s, n=300):
    s = s if len(s) <= n else s[:n] + "..."
    return s


def check_requires(task):
    for mod in task.get("requires", []):
        if importlib.util.find_spec(mod) is None:
            report("environment", "module %s is not installed for %s" % (mod, sys.executable))


def mode_unit(task):
    with open("/input/solution.py") as f:
        solution = f.read()
    ns = {"__name__": "__sixi_solution__"}
    try:
        exec(compile(solution, "solution.py", "exec"), ns)
        exec(compile(task.get("tests", ""), "tests.py", "exec"), ns)
        entry = task.get("entry_point")
        if "check" in ns and entry:
            if entry not in ns:
                report("fail", "the solution does not define %s" % entry)
            ns["check"](ns[entry])
    except SystemExit as e:
        report("fail", "the solution called exit(%r)" % (e.code,))
    except BaseException as e:  # noqa: BLE001 - any error of the model's code is a failure
        report("fail", "%s: %s" % (type(e).__name__, shorten(str(e))))
    report("pass")


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
