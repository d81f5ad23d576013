#!/usr/bin/env python3
"""The Python module's Translator.translate_ids against the C++ API's Translator::translate_ids, in
the same run, on BM_Translate's batch (bench/bench_model.cc): base shape, vocabulary 32000, pre-norm,
random weights of seed 1 (`transformer init`), 64 sentences of 25 random tokens, the output forced to
25 tokens + end of sentence, packed weights. A benchmark, not a test (docs/python.md, "Speed").

The C++ side is bench/api_translate (build it: cmake -DTFM_BUILD_BENCH=ON, ninja api_translate).
The C++ side is one process for the whole run (its --serve mode), as this one is: each holds the
model loaded and warm. Rounds alternate the two, C++ first in even rounds and Python first in odd
ones, so that a machine whose load changes during the run weighs on both alike; each side times the
same number of calls after an untimed one. It prints the ratio of the medians of the per-call throughputs, and that of
the fastest calls: on a shared machine, other jobs only ever slow a call down, so the fastest call of
each side is the one least disturbed.

    /usr/bin/python3 bench/python_translate.py [--build build] [--beam 1 --beam 4] [--rounds 5]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"), help="the CMake build folder (default: build)")
    p.add_argument("--model", help="the base-shape model file (default: BUILD/bench-base.safetensors, written "
                   "by `transformer init` when missing)")
    p.add_argument("--beam", type=int, action="append", help="beam sizes (default: 1 and 4)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=2, help="timed calls per side and round")
    p.add_argument("--threads", type=int, default=0, help="threads of both sides (0: all cores)")
    a = p.parse_args()
    build = pathlib.Path(a.build)
    sys.path.insert(0, str(build / "python"))
    import transformer

    cpp = build / "bench" / "api_translate"
    if not cpp.exists():
        sys.exit(f"no {cpp}: cmake -S . -B {build} -DTFM_BUILD_BENCH=ON && ninja -C {build} api_translate")
    model = pathlib.Path(a.model or build / "bench-base.safetensors")
    if not model.exists():
        subprocess.run([str(build / "transformer"), "init", "--preset", "base", "--vocab-size", "32000",
                        "--pre-norm", "--seed", "1", "-o", str(model)], check=True)
    sources = [[int(x) for x in line.split()] for line in subprocess.run(
        [str(cpp), str(model), "--print-sources"], check=True, capture_output=True, text=True).stdout.splitlines()]
    assert len(sources) == 64 and all(len(s) == 25 for s in sources)

    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    cpu = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores; threads {a.threads or 'all'}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"model: {model} ({transformer.model_info(model).total_parameters} parameters); "
          f"64 sentences x 25 tokens, 26 output tokens each; {a.rounds} rounds x {a.iterations} calls per side")

    t = transformer.Translator(model, need_vocab=False, threads=a.threads)
    for beam in a.beam or [1, 4]:
        options = dict(beam=beam, max_length_a=0, max_length_b=26, min_length=26)

        def python_calls():
            rates = []
            for _ in range(a.iterations):
                start = time.perf_counter()
                produced = sum(len(r.hypotheses[0].ids) for r in t.translate_ids(sources, **options))
                rates.append(produced / (time.perf_counter() - start))
            return rates

        # The C++ side: one process for all rounds, as warm as this one (one untimed call first).
        server = subprocess.Popen([str(cpp), str(model), "--beam", str(beam), "--threads", str(a.threads), "--serve"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def cpp_calls():
            server.stdin.write(f"{a.iterations}\n")
            server.stdin.flush()
            r = json.loads(server.stdout.readline())
            return [n / s for n, s in zip(r["tokens"], r["seconds"])]

        t.translate_ids(sources, **options)  # untimed, as the C++ side's first call
        py, cc = [], []
        for k in range(a.rounds):
            if k % 2 == 0:
                c = cpp_calls()
                q = python_calls()
            else:
                q = python_calls()
                c = cpp_calls()
            cc += c
            py += q
            print(f"  beam {beam} round {k + 1}: C++ {' '.join(f'{x:.0f}' for x in c)}, "
                  f"Python {' '.join(f'{x:.0f}' for x in q)} tokens/s", flush=True)
        server.stdin.close()
        if server.wait() != 0:
            sys.exit(f"{cpp} failed")
        mc, mp = statistics.median(cc), statistics.median(py)
        bc, bp = max(cc), max(py)
        print(f"beam {beam}: C++ API {mc:.0f} tokens/s, Python {mp:.0f} (medians of {len(cc)} calls each): "
              f"Python / C++ = {mp / mc:.3f}; fastest calls {bc:.0f} and {bp:.0f}: {bp / bc:.3f}", flush=True)


if __name__ == "__main__":
    main()
