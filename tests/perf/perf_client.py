#!/usr/bin/env python3
"""perf_client — sixi-bench's client ceiling against a Python asyncio + aiohttp
client (tests/perf/aiohttp_client.py) that parses the same stream the same way.

One emitter process (`sixi-bench emitter`, pinned to CPU 0) serves both; each
client is pinned to CPU 1 with one thread; they alternate A B A B. For every run
two figures are printed:
  - events per wall second, as each client reports it;
  - events per CPU second of the client process (user + sys from the kernel's
    rusage of the child), which stays meaningful on a machine shared with other
    work, where wall time is stretched by whatever else runs on CPU 1.
The median ratio of each is printed at the end.

It also prints what the figures depend on: sixi-bench's HTTP engine (--http:
native, the default, or curl), the build type, the CPUs and the load average
before and after, so a run can be judged (and repeated) from its output alone.

  tests/perf/perf_client.py [--build build] [--pairs 5] [--streams 64] [--rounds 40] [--http native|curl]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_measured(argv):
    """Runs argv, returns (stdout, cpu seconds of the child)."""
    r0 = os.times()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    r1 = os.times()
    if p.returncode != 0:
        sys.exit("perf_client: %s failed: %s" % (argv[0], p.stderr[-500:]))
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return p.stdout, cpu


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def build_type(build):
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            for opt in json.load(f):
                if opt.get("name") == "buildtype":
                    return opt.get("value")
    except (OSError, ValueError):
        pass
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--events", type=int, default=256)
    ap.add_argument("--http", default="native", choices=["native", "curl"])
    a = ap.parse_args()
    bench = os.path.join(a.build, "src", "sixi-bench")
    tmp = tempfile.mkdtemp(prefix="perf-client-")
    port_file = os.path.join(tmp, "port")
    em = subprocess.Popen(["taskset", "-c", "0", bench, "emitter", "--port-file", port_file,
                           "--events", str(a.events), "--lifetime", "900"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        url = "http://127.0.0.1:" + open(port_file).read().strip()
        print("emitter %s on CPU 0; each client on CPU 1 with one thread; %d streams x %d requests x %d events"
              % (url, a.streams, a.rounds, a.events))
        print("sixi-bench --http %s (%s build); %d CPUs; load average before: %s"
              % (a.http, build_type(a.build), os.cpu_count(), loadavg()))
        print("pair | sixi ev/s wall | aiohttp ev/s wall | ratio | sixi ev/cpu-s | aiohttp ev/cpu-s | ratio")
        wall_r, cpu_r = [], []
        for i in range(1, a.pairs + 1):
            out, cpu_a = run_measured(["taskset", "-c", "1", bench, "selftest", "--url", url, "--streams",
                                       str(a.streams), "--rounds", str(a.rounds), "--threads", "1",
                                       "--events", str(a.events), "--db", os.path.join(tmp, "perf.db"), "--json",
                                       "--http", a.http])
            ja = json.loads(out)
            lv = ja["levels"][0]
            ev_a, wall_a = lv["events_per_s"] * lv["wall_s"], lv["events_per_s"]
            out, cpu_b = run_measured(["taskset", "-c", "1", sys.executable, os.path.join(HERE, "aiohttp_client.py"),
                                       "--url", url, "--streams", str(a.streams), "--rounds", str(a.rounds)])
            jb = json.loads(out)
            ev_b, wall_b = jb["events"], jb["events_per_s"]
            ca, cb = ev_a / cpu_a, ev_b / cpu_b
            wall_r.append(wall_a / wall_b)
            cpu_r.append(ca / cb)
            print("%4d | %14.0f | %17.0f | %5.1fx | %13.0f | %16.0f | %5.1fx"
                  % (i, wall_a, wall_b, wall_a / wall_b, ca, cb, ca / cb))
        print("median ratio sixi / aiohttp: %.1fx events per wall second, %.1fx events per CPU second (%d pairs)"
              % (statistics.median(wall_r), statistics.median(cpu_r), a.pairs))
        print("min .. max per wall second: %.1fx .. %.1fx; per CPU second: %.1fx .. %.1fx; load average after: %s"
              % (min(wall_r), max(wall_r), min(cpu_r), max(cpu_r), loadavg()))
    finally:
        em.terminate()
        em.wait()


if __name__ == "__main__":
    main()
