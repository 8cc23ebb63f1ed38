#!/usr/bin/env python3
"""byte_bias.py SIXI_SERVER MODEL.gguf [KEY] — prints, as JSON, a logit_bias of -100 for
every token of MODEL whose text alone is not valid UTF-8 (a random model's byte tokens).
llama-server answers 500 ("does not match the expected Content-only format") when it
samples one, so side-by-side runs give both servers this bias. With KEY the bias is
printed as {KEY: bias}. Token texts come from `sixi-server --detokenize`: many ids a call,
each followed by the newline token where the vocabulary has one (a 248320-token vocabulary
in about 130 calls); a group whose text does not split into as many pieces (a token with a
newline in it) is halved until it does, down to one id a call."""
import json
import subprocess
import sys


def main():
    server, model = sys.argv[1], sys.argv[2]

    def detok(ids):
        r = subprocess.run([server, "--detokenize", model] + [str(i) for i in ids], capture_output=True)
        return r.stdout[:-1] if r.returncode == 0 and r.stdout.endswith(b"\n") else None

    n = 1  # the vocabulary size: the first id --detokenize refuses
    while detok([n]) is not None:
        n *= 2
    lo, hi = n // 2, n  # detok(lo) works (or lo == 0), detok(hi) fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if detok([mid]) is not None else (lo, mid)
    vocab = hi
    r = subprocess.run([server, "--tokenize", model, "\n"], capture_output=True, text=True)
    nl = r.stdout.split() if r.returncode == 0 else []
    sep = int(nl[0]) if len(nl) == 1 else None
    texts = {}

    def fill(ids):
        if len(ids) == 1 or sep is None:
            for i in ids:
                texts[i] = detok([i])
            return
        out = detok([x for i in ids for x in (i, sep)])
        parts = out.split(b"\n") if out is not None else []
        if len(parts) == len(ids) + 1 and parts[-1] == b"":
            for i, p in zip(ids, parts):
                texts[i] = p
        else:
            half = len(ids) // 2
            fill(ids[:half])
            fill(ids[half:])

    for start in range(0, vocab, 2000):
        fill(list(range(start, min(start + 2000, vocab))))
    bad = {}
    for i in range(vocab):
        try:
            texts[i].decode("utf-8")
        except (UnicodeDecodeError, AttributeError):
            bad[str(i)] = -100
    print(json.dumps({sys.argv[3]: bad} if len(sys.argv) > 3 else bad))


if __name__ == "__main__":
    main()
