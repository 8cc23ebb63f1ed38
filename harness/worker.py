# worker.py — the candidate's side of a python_tests grading job.
#
# Started by driver.py as `python3 -s /harness/worker.py` inside the sandbox,
# with the requests on fd 0 and the replies on fd 1 (moved to a private
# descriptor first; the solution's own prints go to stderr). It runs
# /input/solution.py and then answers the driver's requests, one JSON line
# each: call a name the solution defines (or a method of an object it
# returned) with plain arguments, and send back the result as plain data.
#
# Nothing in this process decides a verdict, holds the tests or sees an
# expected value: the solution may rewrite this file's functions, walk its
# frames or send forged lines, and all it achieves is different data, which
# the driver decodes into plain Python values and compares itself. Values that
# are not plain data stay here and the driver gets a handle it can only call
# methods on (an object with its own __eq__ never reaches a comparison).
import json
import os
import sys
import types

sys.path.insert(0, "/harness")
import wire  # noqa: E402

REPLY = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
REQUESTS = os.fdopen(os.dup(0), "r")
os.close(0)
objects = {}  # handle -> object the solution returned


def keep(x):
    objects[id(x)] = x
    return ["r", id(x), type(x).__name__[:60]]


def enc(x):
    if isinstance(x, (types.GeneratorType, map, filter, zip, enumerate, reversed)):
        return ["it", [enc(v) for v in x]]
    return wire.encode(x, keep)


def dec(v):
    return wire.decode(v, lambda ref, _type: objects[ref])


def send(obj):
    REPLY.write(json.dumps(obj) + "\n")
    REPLY.flush()


def error(e):
    return {"exc": type(e).__name__[:60], "msg": str(e)[:500]}


def names(ns):
    out = {}
    for k, v in list(ns.items()):
        if k.startswith("__") or isinstance(v, types.ModuleType):
            continue
        if callable(v):
            out[k] = ["callable"]
        else:
            try:
                out[k] = ["value", enc(v)]
            except Exception:  # noqa: BLE001 - a value that cannot be sent is left out
                pass
    return out


def serve(ns):
    for line in REQUESTS:
        try:
            req = json.loads(line)
            target = ns[req["name"]] if req.get("ref") is None else objects[req["ref"]]
            if req["op"] == "getattr":
                value = getattr(target, req["attr"])
                send({"callable": True} if callable(value) else {"ok": enc(value)})
                continue
            if req.get("attr"):
                target = getattr(target, req["attr"])
            args = [dec(a) for a in req.get("args", [])]
            kwargs = {k: dec(a) for k, a in req.get("kwargs", {}).items()}
            result = target(*args, **kwargs)
            send({"ok": enc(result)})
        except BaseException as e:  # noqa: BLE001 - the solution's errors go back as data
            send(error(e))


def main():
    ns = {"__name__": "__sixi_solution__"}
    try:
        with open("/input/solution.py") as f:
            source = f.read()
        exec(compile(source, "solution.py", "exec"), ns)
    except BaseException as e:  # noqa: BLE001
        send({"load_error": error(e)})
        return
    send({"names": names(ns)})
    serve(ns)


main()
