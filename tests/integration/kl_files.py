"""kl_files — what the sixi-eval kl tests share: the tiny qwen35moe model written in several
weight types, and a UTF-8 text cut from the README (tests/unit/test_eval_kl.py,
tests/integration/test_report_kl_rule.py, tests/integration/test_eval_kl_api.py)."""
import os
import subprocess


def write_models(server, d, types=("F32", "Q8_0", "Q4_0")):
    """sixi-server --write-tiny D/T.gguf --moe --type T for each T; returns {T: path}."""
    files = {}
    for t in types:
        files[t] = os.path.join(d, t + ".gguf")
        subprocess.run([server, "--write-tiny", files[t], "--moe", "--type", t], check=True, capture_output=True)
    return files


def write_text(src, d, n_bytes):
    """The first n_bytes of the README (a cut character dropped) as D/text.txt; returns (path, text)."""
    with open(os.path.join(src, "README.md"), "rb") as f:
        body = f.read(n_bytes).decode("utf-8", "ignore")
    path = os.path.join(d, "text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(body)
    return path, body


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def close_within(rel):
    """close(a, b) with rel fixed, for tests that compare at one tolerance throughout."""
    return lambda a, b, r=rel: close(a, b, r)
