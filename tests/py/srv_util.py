"""Helpers for the server tests: build the demo model, start `dotlm serve` on a
free port, wait for it, stop it."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from tcheck import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("DOTLM_BIN", os.path.join(ROOT, "build", "dotlm"))


def demo_model(hidden=64, layers=2):
    """A random qwen3-shaped model with the real Qwen3 tokenizer (cached per run)."""
    d = os.path.join(tempfile.gettempdir(), "dotlm_srv_demo_%d_%d_%d" % (os.getpid(), hidden, layers))
    if not os.path.exists(os.path.join(d, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_demo_model.py"), d,
                        "--hidden", str(hidden), "--layers", str(layers)], check=True,
                       stdout=subprocess.DEVNULL)
    return d


class Server:
    def __init__(self, model_dir, *args, threads=2):
        self.log = []
        self.p = subprocess.Popen([BIN, "serve", model_dir, "--port", "0", "-t", str(threads), *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.p.stderr:
                self.log.append(line)
                m = re.search(r"listening on http://[^ ]*:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.t = threading.Thread(target=pump, daemon=True)
        self.t.start()
        ready.wait(60)
        if self.port is None:
            raise RuntimeError("server did not start:\n" + "".join(self.log))
        self.base = "http://127.0.0.1:%d" % self.port

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.t.join(5)
        return self.p.returncode


class Tally(Checks):
    """Checks with a runner that counts a test function that raises as a
    failure."""

    def check(self, cond, what):
        self(cond, what)

    def run(self, fn, *a):
        t0 = time.time()
        try:
            fn(*a)
        except Exception as e:  # a crashing test is a failure, not an abort
            import traceback
            traceback.print_exc()
            self.check(False, "%s raised %r" % (fn.__name__, e))
        print("  %-32s %.1fs" % (fn.__name__, time.time() - t0), flush=True)

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
