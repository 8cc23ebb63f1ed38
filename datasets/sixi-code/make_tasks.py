#!/usr/bin/python3
# make_tasks.py — writes datasets/sixi-code/tasks.jsonl and mutants.jsonl from
# the task definitions in tasks_src.py (all written for sixi).
#
#   /usr/bin/python3 datasets/sixi-code/make_tasks.py
#
# Every task is graded by the python_tests grader: its tests hold an
# independent brute-force implementation (_sx_brute), a seeded input generator
# (_sx_gen) and a list of edge cases; check(candidate) compares the candidate
# with the brute force on the edge cases and on 40 random inputs. Before
# writing, this script checks outside the sandbox that each reference agrees
# with its brute force and that each mutant (a plausible wrong solution:
# off-by-one, wrong boundary, swapped condition) disagrees somewhere; the
# sandboxed check is tests/integration/test_dataset_sixi_code.c.
import json
import os
import random
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tasks_src import TASKS  # noqa: E402

TESTS = '''import copy as _sx_copy
import random as _sx_random
{brute}
{gen}
_sx_edges = {edges}


def check(candidate):
    rng = _sx_random.Random({seed})
    cases = list(_sx_edges) + [_sx_gen(rng) for _ in range({n})]
    for args in cases:
        want = _sx_brute(*_sx_copy.deepcopy(args))
        got = candidate(*_sx_copy.deepcopy(args))
        assert got == want, "input %r: expected %r, got %r" % (args, want, got)
'''

SUFFIX = ("\n\nAnswer with the complete function (and any imports or helpers it needs) in one "
          "```python code block.")


def apply(ref, old, new, tid):
    if ref.count(old) != 1:
        sys.exit("%s: mutant pattern %r occurs %d times in the reference" % (tid, old, ref.count(old)))
    return ref.replace(old, new)


class Alarm(Exception):
    pass


def on_alarm(signum, frame):
    raise Alarm()


def local_check(t, code, cases, ns_base):
    # True when code agrees with the brute force on every case.
    ns = {}
    exec(code, ns)
    f = ns[t["entry"]]
    import copy
    for args in cases:
        want = ns_base["_sx_brute"](*copy.deepcopy(args))
        signal.alarm(2)
        try:
            got = f(*copy.deepcopy(args))
        except Alarm:
            return False, "timeout"
        except Exception as e:  # noqa: BLE001
            return False, "%s" % type(e).__name__
        finally:
            signal.alarm(0)
        if got != want:
            return False, "input %r: %r != %r" % (args, got, want)
    return True, ""


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    tasks, mutants, seen = [], [], set()
    n_killed = n_mut = 0
    for i, t in enumerate(TASKS):
        tid = "sixi-code/" + t["id"]
        if tid in seen:
            sys.exit("duplicate id " + tid)
        seen.add(tid)
        seed = 1000 + i
        muts = [(label, apply(t["ref"], old, new, tid)) for label, old, new in t["mutants"]]
        if not 2 <= len(muts) <= 3:
            sys.exit("%s: %d mutants (want 2-3)" % (tid, len(muts)))
        prompt = t["prompt"].strip()
        kind = "algorithm"
        if t.get("bugfix"):
            kind = "bug-fix"
            prompt += ("\n\nThis implementation has a bug. Find it and give the corrected function "
                       "(same name and arguments).\n\n```python\n" + muts[0][1] + "```")
        tests = TESTS.format(brute=t["brute"].strip() + "\n", gen=t["gen"].strip() + "\n",
                             edges=repr(t["edges"]), seed=seed, n=40)
        ns = {}
        exec(tests, ns)
        rng = random.Random(seed)
        cases = list(t["edges"]) + [ns["_sx_gen"](rng) for _ in range(40)]
        ok, why = local_check(t, t["ref"], cases, ns)
        if not ok:
            sys.exit("%s: the reference disagrees with the brute force: %s" % (tid, why))
        for label, code in muts:
            n_mut += 1
            killed, why = local_check(t, code, cases, ns)
            killed = not killed
            n_killed += killed
            if not killed:
                print("warning: %s mutant %s survives" % (tid, label), file=sys.stderr)
            mutants.append({"task": tid, "mutant": label, "solution": code})
        tasks.append({
            "id": tid, "grader": "python_tests", "entry_point": t["entry"],
            "prompt": prompt + SUFFIX, "tests": tests, "reference": t["ref"], "timeout_s": 5,
            "metadata": {"difficulty": t["diff"], "kind": kind, "random_inputs": 40,
                         "edge_cases": len(t["edges"]), "seed": seed, "source": "sixi"},
        })
    with open(os.path.join(HERE, "tasks.jsonl"), "w") as f:
        for t in tasks:
            f.write(json.dumps(t, sort_keys=True) + "\n")
    with open(os.path.join(HERE, "mutants.jsonl"), "w") as f:
        for m in mutants:
            f.write(json.dumps(m, sort_keys=True) + "\n")
    diffs = {}
    for t in TASKS:
        diffs[t["diff"]] = diffs.get(t["diff"], 0) + 1
    print("%d tasks (%s), %d mutants, %d killed locally" % (
        len(tasks), ", ".join("%s %d" % kv for kv in sorted(diffs.items())), n_mut, n_killed))


main()
