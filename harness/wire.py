# wire.py — the plain-data encoding between driver.py (trusted) and worker.py
# (the candidate's process). A value is a JSON list whose first item is a tag:
#   ["n"] None, ["b", bool], ["i", "digits"], ["f", "repr"], ["s", str],
#   ["c", "re", "im"], ["y"|"ya", "hex"] bytes / bytearray, ["l"|"t"|"e"|"z", [values]]
#   list / tuple / set / frozenset, ["d", [[key, value]...]], ["g", start, stop, step] range,
#   ["it", [values]] an exhausted iterator, ["r", handle, "type"] an object kept in the worker.
# decode() is the driver's side: it accepts only this grammar and builds
# builtin values (never an object of the solution's classes); anything else
# raises WireError. The worker uses encode() for its replies; the driver uses
# it for arguments, where a handle comes from a Remote object.

MAX_DEPTH = 60


class WireError(Exception):
    pass


def encode(x, handle, depth=0):
    """handle(x) -> ["r", ...] for a value that is not plain data (or raises)."""
    if depth > MAX_DEPTH:
        raise ValueError("a value nested deeper than %d levels" % MAX_DEPTH)
    if x is None:
        return ["n"]
    if x is True or x is False:
        return ["b", x]
    # subclasses of the plain types travel as their base value
    if isinstance(x, int) and not isinstance(x, bool):
        return ["i", str(int(x))]
    if isinstance(x, float):
        return ["f", repr(float(x))]
    if isinstance(x, str):
        return ["s", str(x)]
    if isinstance(x, complex):
        return ["c", repr(float(x.real)), repr(float(x.imag))]
    if isinstance(x, (bytes, bytearray)):
        return ["y" if isinstance(x, bytes) else "ya", bytes(x).hex()]
    t = type(x)
    tags = {list: "l", tuple: "t", set: "e", frozenset: "z"}
    if t in tags:
        return [tags[t], [encode(v, handle, depth + 1) for v in x]]
    if t is dict:
        return ["d", [[encode(k, handle, depth + 1), encode(v, handle, depth + 1)] for k, v in x.items()]]
    if t is range:
        return ["g", x.start, x.stop, x.step]
    return handle(x)


def _text(v, i):
    if len(v) <= i or type(v[i]) is not str:
        raise WireError("malformed value")
    return v[i]


def _items(v):
    if len(v) != 2 or type(v[1]) is not list:
        raise WireError("malformed value")
    return v[1]


def decode(v, remote, depth=0):
    """remote(handle, type_name) -> the driver's stand-in for an object of the worker."""
    if depth > MAX_DEPTH or type(v) is not list or not v or type(v[0]) is not str:
        raise WireError("malformed value")
    tag = v[0]
    try:
        if tag == "n":
            return None
        if tag == "b":
            if type(v[1]) is not bool:
                raise WireError("malformed bool")
            return v[1]
        if tag == "i":
            s = _text(v, 1)
            if len(s) > 5000:
                raise WireError("an integer of more than 5000 digits")
            return int(s)
        if tag == "f":
            return float(_text(v, 1))
        if tag == "s":
            return _text(v, 1)
        if tag == "c":
            return complex(float(_text(v, 1)), float(_text(v, 2)))
        if tag in ("y", "ya"):
            b = bytes.fromhex(_text(v, 1))
            return b if tag == "y" else bytearray(b)
        if tag in ("l", "t", "e", "z", "it"):
            items = [decode(x, remote, depth + 1) for x in _items(v)]
            return {"l": list, "t": tuple, "e": set, "z": frozenset, "it": iter}[tag](items)
        if tag == "d":
            out = {}
            for kv in _items(v):
                if type(kv) is not list or len(kv) != 2:
                    raise WireError("malformed dict item")
                out[decode(kv[0], remote, depth + 1)] = decode(kv[1], remote, depth + 1)
            return out
        if tag == "g":
            if len(v) != 4 or not all(type(a) is int for a in v[1:]):
                raise WireError("malformed range")
            return range(v[1], v[2], v[3])
        if tag == "r":
            if len(v) != 3 or type(v[1]) is not int or type(v[2]) is not str:
                raise WireError("malformed handle")
            return remote(v[1], v[2][:60])
    except (ValueError, TypeError, IndexError, OverflowError) as e:
        raise WireError("malformed value (%s)" % e) from None
    raise WireError("unknown tag %.20r" % tag)
