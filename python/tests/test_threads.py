"""The GIL is released while the library computes: another Python thread runs meanwhile, and two
threads translate with one Translator at once."""

import threading
import time

import transformer
from conftest import MODEL, TINY, lines_of

FORCED = dict(beam=4, max_length_a=0, max_length_b=40, min_length=40)  # every sentence 39 tokens + EOS


def long_input(t, seconds):
    """Enough sentences that translating them takes about `seconds`."""
    lines = [line for line in lines_of(TINY / "input.en") if line]
    while True:
        start = time.perf_counter()
        t.translate(lines, **FORCED)
        if time.perf_counter() - start >= seconds:
            return lines
        lines = lines * 2


def ticks_during(call):
    """Runs call() on a thread while this one records the time every millisecond; returns the
    ticks that fell inside the middle 80% of the call's run."""
    window = {}

    def work():
        window["start"] = time.perf_counter()
        call()
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=work)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    start, end = window["start"], window["end"]
    margin = 0.1 * (end - start)
    return [x for x in ticks if start + margin < x < end - margin], end - start


def test_python_runs_while_translating():
    t = transformer.Translator(MODEL, threads=1)
    lines = long_input(t, 0.4)
    inside, seconds = ticks_during(lambda: t.translate(lines, **FORCED))
    # Holding the GIL, the translation would let this thread record nothing in that time.
    assert len(inside) >= 5, f"{len(inside)} ticks in {seconds:.2f} s of translation"


def test_python_runs_while_scoring():
    t = transformer.Translator(MODEL, weights="plain", threads=1)
    source = t.encode("three hundred forty-two")
    target = t.encode("dreihundertzweiundvierzig")
    pairs = 64
    while True:
        start = time.perf_counter()
        t.score_ids([source] * pairs, [target] * pairs)
        if time.perf_counter() - start >= 0.4:
            break
        pairs *= 2
    inside, seconds = ticks_during(lambda: t.score_ids([source] * pairs, [target] * pairs))
    assert len(inside) >= 5, f"{len(inside)} ticks in {seconds:.2f} s of scoring"


def test_two_threads_translate_with_one_translator():
    t = transformer.Translator(MODEL, threads=1)
    lines = lines_of(TINY / "input.en") * 8
    want = [[h.ids for h in r.hypotheses] for r in t.translate(lines, beam=4, n_best=2)]
    results = {}

    def work(k):
        results[k] = [[h.ids for h in r.hypotheses] for r in t.translate(lines, beam=4, n_best=2)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
        assert not th.is_alive()
    assert results[0] == want and results[1] == want
