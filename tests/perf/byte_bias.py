#!/usr/bin/env python3
"""byte_bias.py SIXI_SERVER MODEL.gguf [KEY] — prints, as JSON, a logit_bias of -100 for
every token of MODEL whose text alone is not valid UTF-8 (a random model's byte tokens).
llama-server answers 500 ("does not match the expected Content-only format") when it
samples one, so side-by-side runs give both servers this bias. With KEY the bias is
printed as {KEY: bias}. Token texts come from `sixi-server --detokenize`."""
import json
import subprocess
import sys


def main():
    server, model = sys.argv[1], sys.argv[2]
    bad = {}
    for i in range(1 << 20):
        r = subprocess.run([server, "--detokenize", model, str(i)], capture_output=True)
        if r.returncode != 0:  # past the vocabulary
            break
        try:
            r.stdout.rstrip(b"\n").decode("utf-8")
        except UnicodeDecodeError:
            bad[str(i)] = -100
    print(json.dumps({sys.argv[3]: bad} if len(sys.argv) > 3 else bad))


if __name__ == "__main__":
    main()
