"""What training prints by default (Trainer(verbose=True)): the command line's log lines and progress
on sys.stderr, the progress a line updated in place on a terminal and one line per log step
elsewhere (a file, a pipe, a notebook's stream), as `transformer train` draws them."""

import sys
import time


def _hms(seconds):
    s = int(max(0.0, seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def progress_line(p):
    """A Progress as the command line's progress line."""
    eta = f" | ETA {_hms(p.eta_s)}" if p.eta_s >= 0 else ""
    return (f"step {p.step} | epoch {p.epoch} | {p.tokens_per_s:.0f} tok/s | loss {p.loss:.4f} | lr {p.lr:.3g} | "
            f"{_hms(p.elapsed_s)}{eta}")


class TrainingDisplay:
    """The Trainer's messages and progress on a stream (None: sys.stderr as it is at each write).
    On a terminal the progress line is redrawn at most every `interval` seconds, and kept at log steps."""

    def __init__(self, stream=None, interval=0.1):
        self._stream = stream
        self._interval = interval
        self._drawn = float("-inf")
        self._open = False  # a progress line is on the terminal without its newline

    def _out(self):
        out = self._stream if self._stream is not None else sys.stderr
        try:
            tty = out.isatty()
        except (AttributeError, ValueError):
            tty = False
        return out, tty

    def message(self, line):
        out, tty = self._out()
        out.write(("\r\033[K" if tty and self._open else "") + line + "\n")
        out.flush()
        self._open = False

    def progress(self, p):
        out, tty = self._out()
        if not tty:
            if p.log_step:
                out.write(progress_line(p) + "\n")
                out.flush()
            return
        now = time.monotonic()
        if not p.log_step and now - self._drawn < self._interval:
            return
        self._drawn = now
        out.write(f"\r{progress_line(p):<100}" + ("\n" if p.log_step else ""))
        out.flush()
        self._open = not p.log_step
