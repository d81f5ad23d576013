"""`transformer serve` as the Python tests run it: started on a free port, stopped with SIGTERM."""
import queue
import re
import signal
import subprocess
import sys
import threading


class Serving:
    """Starts `BINARY serve -m MODEL --port 0 EXTRA…` and waits (60 s at most) for its
    'serving … on http://HOST:PORT/' line; `url` and `port` are then set. stderr is read on a thread
    of its own (so the server never blocks on a full pipe) into `lines`."""

    def __init__(self, binary, model, extra=()):
        self.proc = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", *extra], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        found = queue.Queue()

        def drain():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = re.search(r"^serving .* on (http://[\d.]+:(\d+))/", line)
                if m:
                    found.put(m.groups())
            found.put(None)

        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        try:
            match = found.get(timeout=60)
        except queue.Empty:
            match = None
        if match is None:
            why = "within 60 s" if self.proc.poll() is None else f"(it exited with status {self.proc.wait()})"
            self.proc.kill()
            sys.exit(f"FAIL: the server printed no 'serving ... on http://HOST:PORT/' line {why}:\n" +
                     "\n".join(self.lines))
        self.url, self.port = match[0], int(match[1])

    def stop(self):
        """SIGTERM; returns None when the server exited with status 0 and said 'serve: stopped', else
        what went wrong."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "still running 30 s after SIGTERM (killed)"
        self.reader.join(timeout=5)
        if code != 0 or "serve: stopped" not in self.lines:
            return f"after SIGTERM: exit status {code}, stderr:\n  " + "\n  ".join(self.lines)
        return None
