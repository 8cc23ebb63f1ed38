"""server_itest — what the Python integration tests of sixi-server share: finding the
built sixi-server (skipping, exit 77, outside meson test or in a build without it) and
a failure counter whose verdict ends the test."""
import os
import sys


def sixi_server_exe():
    build = os.environ.get("SIXI_BUILD_ROOT")
    if not build:
        print("SKIP: SIXI_BUILD_ROOT is not set (run through meson test)")
        sys.exit(77)
    exe = os.path.join(build, "src", "sixi-server")
    if not os.path.exists(exe):
        print("SKIP: no sixi-server in this build")
        sys.exit(77)
    return exe


_failures = 0


def check(ok, what):
    """Counts a failed expectation and says which."""
    global _failures
    if not ok:
        _failures += 1
        print("FAIL:", what)


def finish():
    """Prints the verdict and exits 1 when any check failed."""
    print("FAILED" if _failures else "ok", _failures)
    sys.exit(1 if _failures else 0)
