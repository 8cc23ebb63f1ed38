#!/usr/bin/python3
"""harness/driver.py's judgement at a limit, on given measurements (no
process is run): past the CPU limit is a timeout; at the wall backstop under
the CPU limit, a run that waited on a run queue for at least half of the
wall time is 'overloaded' (the machine: environment), one that slept or
blocked is a timeout. And wire.decode accepts only plain data."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("SIXI_SOURCE_ROOT", "."), "harness"))
import driver  # noqa: E402
import wire  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


class FakeMeter:
    def __init__(self, cpu, delay, wall):
        self.values = (cpu, delay, wall)

    def sample(self):
        return self.values


def verdict(cpu, delay, wall, waited=None):
    try:
        driver.over_limit(FakeMeter(cpu, delay, wall), {"cpu_s": 2.0, "wall_s": 18.0}, "x", waited)
    except driver.Stop as e:
        return e.status
    return None


check(verdict(0.5, 0.1, 3) is None, "under both limits: goes on")
check(verdict(2.0, 0.0, 3) == "timeout", "the CPU limit reached: timeout")
check(verdict(2.5, 15.0, 18.0) == "timeout", "the CPU limit reached on a busy machine: still a timeout")
check(verdict(0.01, 0.2, 18.0) == "timeout", "asleep past the backstop: timeout")
check(verdict(1.5, 12.0, 18.0) == "overloaded", "starved of CPU past the backstop: overloaded")
check(verdict(1.5, 8.0, 18.0) == "timeout", "waited less than half the wall time: timeout")
check(verdict(0.5, 1.0, 30.0, waited=5.0) is None, "unit mode: the tests' own time is not the solution's")

remote = lambda ref, t: ("remote", ref)  # noqa: E731
check(wire.decode(["t", [["i", "1"], ["s", "a"]]], remote) == (1, "a"), "a tuple of plain values")
check(wire.decode(["d", [[["i", "2"], ["e", [["f", "1.5"]]]]]], remote) == {2: {1.5}}, "a dict of sets")
check(wire.decode(["r", 7, "Thing"], remote) == ("remote", 7), "an object stays a handle")
for bad in (["x"], ["i", 5], ["l", "notalist"], ["d", [[["n"]]]], ["b", 1], "s", [], ["r", "7", "T"]):
    try:
        wire.decode(bad, remote)
        check(False, "refused: %r" % (bad,))
    except wire.WireError:
        pass
print("FAILED" if failures else "ok", failures)
sys.exit(1 if failures else 0)
