"""fake_base — what the two scriptable OpenAI-compatible test servers share
(fake_openai.py for sixi-bench, fake_eval_server.py for sixi-eval): a handler
base that writes JSON replies, chunked HTTP/1.1 and SSE events and can end a
connection with a TCP reset, the text of a request's prompt, and serving on
127.0.0.1 with the chosen port written to a file; and, for the tests, starting
such a server (or sixi-server) and stopping it, each wait bounded in time.
Python standard library only."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_OPENAI = os.path.join(HERE, "fake_openai.py")
FAKE_EVAL = os.path.join(HERE, "fake_eval_server.py")


def prompt_text(body):
    """The prompt of a completions or chat request as one string (chat: the contents joined by spaces)."""
    if "messages" in body:
        return " ".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    event_end = b"\n\n"  # what ends an SSE event; a server may choose \r\n\r\n

    def log_message(self, fmt, *a):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        self.chunk(b"data: " + json.dumps(obj).encode() + self.event_end)

    def done(self):
        """[DONE] and the last (empty) chunk."""
        self.chunk(b"data: [DONE]" + self.event_end)
        self.chunk(b"")

    def reset(self):
        """Linger 0 then close the descriptor itself: the peer sees a TCP reset."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        os.close(self.connection.detach())
        self.close_connection = True


def listen(handler, port, port_file, lifetime=None, queue=None):
    """A server of handler on 127.0.0.1:port (0: any free port) and its port, written to
    port_file (atomically) when given; its serve_forever returns after lifetime seconds
    (never when None)."""
    cls = type("Server", (ThreadingHTTPServer,), {"daemon_threads": True})
    if queue:
        cls.request_queue_size = queue
    srv = cls(("127.0.0.1", port), handler)
    port = srv.server_address[1]
    if port_file:
        with open(port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(port_file + ".tmp", port_file)
    if lifetime:
        threading.Timer(lifetime, srv.shutdown).start()
    return srv, port


# ---- for the tests: start and stop a server ----

def wait_port(proc, port_file, what, timeout_s=30):
    """The port that the starting server proc wrote to port_file; SystemExit naming
    what when proc exits first or timeout_s passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(port_file) as f:
                text = f.read().strip()
        except FileNotFoundError:
            text = ""
        if text:
            return int(text)
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("FAIL: %s did not start" % what)
        time.sleep(0.02)


def start(argv, port_file, what, timeout_s=30, **popen):
    """Starts argv (a server that writes its port to port_file); returns (proc, url)."""
    proc = subprocess.Popen(argv, **popen)
    try:
        port = wait_port(proc, port_file, what, timeout_s)
    except SystemExit:
        stop(proc)
        raise
    return proc, "http://127.0.0.1:%d" % port


def start_fake(server, port_file, *args, timeout_s=30, **popen):
    """start() for fake_openai.py or fake_eval_server.py (FAKE_OPENAI, FAKE_EVAL) with args."""
    return start([sys.executable, server, "--port-file", port_file, *args], port_file,
                 os.path.basename(server), timeout_s, **popen)


def stop(proc, timeout_s=10):
    """SIGTERM, then SIGKILL when it has not exited after timeout_s; returns the exit status."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
