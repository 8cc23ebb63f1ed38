#!/usr/bin/python3
"""Limits that do not depend on the machine: `sixi-eval preflight` of the
bundled sixi-code set while two CPU-burning processes (started here, bounded
to 15 minutes each, killed by PID) compete with the grader. The verdicts must
be those of a quiet machine: every reference passes and every empty solution
fails, so no reference is lost to a timeout. Skips (exit 77, saying why)
where the sandbox cannot run."""
import os
import subprocess
import sys

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EVAL = os.path.join(BUILD, "src", "sixi-eval")
BURN = "import time\nend = time.monotonic() + 900\nwhile time.monotonic() < end:\n    pass\n"


def main():
    demo = subprocess.run([EVAL, "preflight", os.path.join(SRC, "datasets", "demo"), "--no-canaries"],
                          capture_output=True, text=True, timeout=600)
    if "sandbox unusable" in demo.stdout:
        print("SKIP: the grading sandbox cannot run here: " + demo.stdout.splitlines()[0])
        return 77
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        r = subprocess.run([EVAL, "preflight", os.path.join(SRC, "datasets", "sixi-code"), "--no-canaries"],
                           capture_output=True, text=True, timeout=1800)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    lines = r.stdout.strip().splitlines()
    n_tasks = sum(1 for _ in open(os.path.join(SRC, "datasets", "sixi-code", "tasks.jsonl")))
    bad = [line for line in lines if line.startswith("FAIL")]
    for line in bad:
        print(line)
    ok = r.returncode == 0 and not bad and lines and lines[-1] == "%d passed, 0 failed" % (2 * n_tasks)
    print(lines[-1] if lines else r.stderr[-1000:])
    print("ok" if ok else "FAILED: verdicts on a busy machine differ from a quiet one's")
    return 0 if ok else 1


sys.exit(main())
