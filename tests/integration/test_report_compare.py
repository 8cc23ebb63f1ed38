#!/usr/bin/python3
"""sixi-report compare compares what users compare: conditions that differ in
model or endpoint run without --allow-config-diff and the report header names
each nested key that differs; a comparison made invalid by a budget or the
repeats is refused, naming the nested key.

- two models on one server (the fake server of test_eval_run.py answers any model);
- one model on two servers (two fake servers on their own ports);
- a real refusal: the same model with another max_tokens, and with other repeats.
Servers are started here and stopped by PID."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_eval_run as ev  # noqa: E402  (fake server, sixi_eval)

REPORT = os.path.join(ev.BUILD, "src", "sixi-report")
check = ev.check


def run(srv, db, model, max_tokens=400):
    r = ev.sixi_eval("run", "--url", srv.url, "--model", model, "--dataset", ev.DEMO, "--concurrency", "2",
                     "--repeats", "3", "--max-tokens", str(max_tokens), "--no-preflight", "--db", db)
    check(r.returncode == 0, "run %s on %s: %s" % (model, srv.url, r.stderr[-500:]))


def compare(db, a, b, out, *extra):
    r = ev.subprocess.run([REPORT, "compare", "--db", db, str(a), str(b), "--out", out, "--formats", "md",
                           "--no-plots", *extra], capture_output=True, text=True, timeout=120)
    md = open(out + ".md").read() if r.returncode == 0 and os.path.exists(out + ".md") else ""
    return r, md


def main():
    tmp = ev.tempfile.mkdtemp(prefix="sixi-compare-")
    db = os.path.join(tmp, "cmp.db")
    s1, s2 = ev.Server(tmp, ev.rules({})), ev.Server(tmp, ev.rules({}))
    try:
        run(s1, db, "model-a")                         # 1
        run(s1, db, "model-b")                         # 2: another model, same server
        run(s2, db, "model-a")                         # 3: same model, another server
        run(s1, db, "model-a", 200)                    # 4: another budget
    finally:
        s1.stop()
        s2.stop()
    r, md = compare(db, 1, 2, os.path.join(tmp, "models"))
    check(r.returncode == 0, "two models on one server compare without --allow-config-diff: %s" % r.stderr[-500:])
    check("The conditions differ in:" in md and "protocol.conditions[0].model: \"model-a\" vs \"model-b\"" in md,
          "the header names the model difference: %r" % md[:1500])
    check("configurations differ" not in md, "no warning of a forced comparison")
    r, md = compare(db, 1, 3, os.path.join(tmp, "servers"))
    check(r.returncode == 0, "one model on two servers: %s" % r.stderr[-500:])
    check("protocol.conditions[0].endpoint: " in md and s1.url in md and s2.url in md,
          "the header names the endpoint difference: %r" % md[:1500])
    r, _ = compare(db, 1, 4, os.path.join(tmp, "budget"))
    check(r.returncode == 2 and "protocol.sampling.max_tokens" in r.stderr,
          "another max_tokens is refused, naming the nested key: %r" % r.stderr[-500:])
    check("protocol.conditions" not in r.stderr, "the refusal names only what makes it invalid: %r" % r.stderr)
    r, md = compare(db, 1, 4, os.path.join(tmp, "forced"), "--allow-config-diff")
    check(r.returncode == 0 and "configurations differ in protocol.sampling.max_tokens" in md,
          "forced, the report says what was compared anyway: %s" % r.stderr[-300:])
    print("FAILED" if ev.failures else "ok", ev.failures)
    return 1 if ev.failures else 0


sys.exit(main())
