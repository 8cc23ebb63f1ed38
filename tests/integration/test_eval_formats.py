#!/usr/bin/python3
"""Every import format's tests through the grading design (tests in the driver,
the solution in its own process, plain data between): each fixture of
tests/fixtures/import/ with code tasks is imported into a temporary folder and
preflighted: every reference passes and every empty solution fails. Skips
(exit 77, saying why) where the sandbox cannot run."""
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
BUILD = os.environ.get("SIXI_BUILD_ROOT", "build")
EVAL = os.path.join(BUILD, "src", "sixi-eval")
FIX = os.path.join(SRC, "tests", "fixtures", "import")
FORMATS = [("humaneval", "humaneval.jsonl"), ("humaneval+", "humanevalplus.jsonl"), ("mbpp", "mbpp.jsonl"),
           ("mbpp-sanitized", "mbpp-sanitized.json"), ("livecodebench", "livecodebench.jsonl"),
           ("bigcodebench", "bigcodebench.jsonl")]


def main():
    tmp = tempfile.mkdtemp(prefix="sixi-formats-")
    failures = 0
    for fmt, name in FORMATS:
        out = os.path.join(tmp, fmt.replace("+", "plus"))
        r = subprocess.run([EVAL, "import", "--format", fmt, os.path.join(FIX, name), "--out", tmp, "--name",
                            os.path.basename(out)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print("FAIL: import %s: %s" % (fmt, r.stderr[-500:]))
            failures += 1
            continue
        r = subprocess.run([EVAL, "preflight", out, "--no-canaries"], capture_output=True, text=True, timeout=600)
        if "sandbox unusable" in r.stdout:
            print("SKIP: the grading sandbox cannot run here: " + r.stdout.splitlines()[0])
            return 77
        lines = r.stdout.strip().splitlines()
        bad = [line for line in lines if line.startswith("FAIL")]
        ok = r.returncode == 0 and not bad and lines and lines[-1].endswith(" passed, 0 failed")
        print("%-15s %s" % (fmt, lines[-1] if lines else r.stderr[-300:]))
        for line in bad:
            print("  " + line)
        failures += not ok
    print("FAILED" if failures else "ok", failures)
    return 1 if failures else 0


sys.exit(main())
