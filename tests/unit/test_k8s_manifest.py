#!/usr/bin/python3
"""Structural check of harness/k8s: both manifests are valid YAML Jobs, the shard Job is
Indexed with completions == SIXI_SHARDS >= parallelism, its command passes
JOB_COMPLETION_INDEX as --shard K/N, and both Jobs mount the same claim at the path
the commands read and write."""
import os
import sys

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (apt-get install python3-yaml)")
    sys.exit(77)

SRC = os.environ.get("SIXI_SOURCE_ROOT", ".")
K8S = os.path.join(SRC, "harness", "k8s")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def load(name):
    with open(os.path.join(K8S, name), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    check(len(docs) == 1, f"{name}: one document, got {len(docs)}")
    job = docs[0]
    check(job.get("kind") == "Job" and job.get("apiVersion") == "batch/v1", f"{name}: a batch/v1 Job")
    return job


def container(job):
    cs = job["spec"]["template"]["spec"]["containers"]
    check(len(cs) == 1, "one container")
    return cs[0]


def env(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def mount(job, c):
    vols = {v["name"]: v for v in job["spec"]["template"]["spec"].get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = vols.get(m["name"])
        if v and "persistentVolumeClaim" in v:
            return v["persistentVolumeClaim"]["claimName"], m["mountPath"]
    return None, None


shard = load("shard-job.yaml")
merge = load("merge-job.yaml")
spec = shard["spec"]
check(spec.get("completionMode") == "Indexed", "shard Job is Indexed")
sc, mc = container(shard), container(merge)
n = int(env(sc).get("SIXI_SHARDS", "0"))
check(n >= 1 and spec.get("completions") == n, f"completions {spec.get('completions')} == SIXI_SHARDS {n}")
check(1 <= spec.get("parallelism", 1) <= n, "1 <= parallelism <= N")
check(int(env(mc).get("SIXI_SHARDS", "0")) == n, "merge Job's SIXI_SHARDS equals the shard Job's")
cmd = " ".join(sc.get("command", []) + sc.get("args", []))
check('--shard "$JOB_COMPLETION_INDEX/$SIXI_SHARDS"' in cmd, "command passes --shard $JOB_COMPLETION_INDEX/$SIXI_SHARDS")
claim_s, path_s = mount(shard, sc)
claim_m, path_m = mount(merge, mc)
check(claim_s is not None and claim_s == claim_m, f"both Jobs mount one claim ({claim_s}, {claim_m})")
check(path_s is not None and path_s == path_m, f"both mount it at one path ({path_s}, {path_m})")
check(f'--db "{path_s}/shard-$JOB_COMPLETION_INDEX.db"' in cmd, "shard DB is written on the shared volume")
mcmd = " ".join(mc.get("command", []) + mc.get("args", []))
check(f"{path_m}/shard-$k.db" in mcmd and "sixi-eval merge" in mcmd, "merge reads every shard DB on the volume")
for j in (shard, merge):
    check(j["spec"]["template"]["spec"].get("restartPolicy") == "Never", "restartPolicy Never")
print("k8s manifests:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
