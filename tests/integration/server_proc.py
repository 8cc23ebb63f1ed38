"""server_proc — a sixi-server started by a Python test: on 127.0.0.1, port 0 written to a port
file, its stderr in a log under the test's folder, stopped by PID (SIGTERM) with its exit
status returned. The start waits at most timeout_s for the port file; a server that exits or
never listens ends the test, naming its log."""
import os
import signal
import subprocess
import time


class Server:
    def __init__(self, exe, args, tmp, name="server", timeout_s=30):
        pf = os.path.join(tmp, "%s-%d.port" % (name, time.monotonic_ns()))
        self.log = open(os.path.join(tmp, name + ".log"), "a")
        self.proc = subprocess.Popen([exe, *args, "--host", "127.0.0.1", "--port", "0", "--port-file", pf],
                                     stderr=self.log, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while not (os.path.exists(pf) and open(pf).read().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.proc.kill()
                raise SystemExit("sixi-server %s did not start (see %s)" % (" ".join(args), self.log.name))
            time.sleep(0.02)
        self.url = "http://127.0.0.1:" + open(pf).read().strip()

    def stop(self):
        os.kill(self.proc.pid, signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.log.close()
        return rc
