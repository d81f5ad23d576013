"""Decoder-only and encoder-only speed against CTranslate2, on the same random weights.

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/bench_family_ct2.py WORK --cli build/transformer \\
        [--shapes real|tiny] [--isa avx2] [--threads N] [--repeats 3] [--encode-repeats 7]
        [--models gpt2,llama,minilm]

Needs transformers, torch, tokenizers and ctranslate2 from PyPI in the Python that runs it (the
project never depends on them), and the build's command (--cli) and Python module (--python-path,
default the module beside the command, run by --ours-python, default /usr/bin/python3, the Python it
is built for). WORK is a folder outside the repository; per shape and model it gets
  hf/           the model from tools/bench_family_models.py (save_pretrained, random weights, seeded)
  ct2-float32/, ct2-int8/   CTranslate2's TransformersConverter output (quantization float32, int8)
  ours/         `transformer import hf hf -o ours`
and is reused by later runs (--rebuild writes it anew). Then, per model and dtype, each engine runs
in a process of its own (so that an instruction-set cap applies to it alone and the two OpenMP
runtimes never meet), in-process timing: one untimed warm-up call, then --repeats timed calls
(--encode-repeats for encoding, whose calls take a second: more of them steady its median on a
shared machine), the median reported.
  generation (gpt2, llama): B prompts of P random ids, exactly N new tokens each, greedy; ours
    Generator.generate_ids(min_new_tokens = max_new_tokens = N), CTranslate2 Generator.generate_batch
    (min_length = max_length = N, include_prompt_in_result False, the ids ours never produces
    suppressed: padding, and BOS where it differs from EOS). tokens/s = B*N / seconds (the prompts'
    forward pass included in the seconds of both). float32: ours packed weights, theirs float32;
    int8: ours weights="int8", theirs quantized int8 and compute_type int8.
  encoding (minilm): B sentences of L random ids (no padding) through the encoder; ours
    Encoder.embed_ids(pooling="none"), every token's vector as CTranslate2's last_hidden_state
    (Encoder.forward_batch, which also runs BERT's pooler: one d x d product per sentence).
    tokens/s = B*L / seconds.
Outputs are compared: the greedy ids sequence by sequence, the encodings by their relative error
||ours - theirs|| / ||theirs||. Both engines get the same thread count (ours threads=T, theirs
intra_threads=T, inter_threads=1; OMP_NUM_THREADS=T). --isa avx2 adds a second table with both
engines capped at AVX2 (TFM_CPU_ISA=avx2 OPENBLAS_CORETYPE=Haswell CT2_FORCE_CPU_ISA=AVX2
DNNL_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2). The markdown goes to stdout and WORK/results.md,
every figure to WORK/results.json.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = {"gpt2": "generate", "llama": "generate", "minilm": "encode"}
CAPS = {"avx2": {"TFM_CPU_ISA": "avx2", "OPENBLAS_CORETYPE": "Haswell", "CT2_FORCE_CPU_ISA": "AVX2",
                 "DNNL_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}}
TOLERANCE = {"float32": 1e-4, "int8": 0.1}  # relative error of the encodings called matching


# ---------------------------------------------------------------------------------------------
# Workers: one engine, one model, one dtype, in a process of its own.

def timed(call, repeats):
    """One untimed warm-up call, then `repeats` timed ones: (seconds of each, the last result)."""
    out = call()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        seconds.append(time.perf_counter() - start)
    return seconds, out


def ours_worker(spec):
    import numpy as np
    import transformer

    weights = "int8" if spec["dtype"] == "int8" else "packed"
    model = os.path.join(spec["model"], "model.safetensors")
    ids = spec["inputs"]
    if spec["task"] == "generate":
        n = spec["new_tokens"]
        g = transformer.Generator(model, need_vocab=False, weights=weights, threads=spec["threads"])
        seconds, out = timed(lambda: g.generate_ids(ids, max_new_tokens=n, min_new_tokens=n, beam=1,
                                                    return_scores=False, batch_size=len(ids)), spec["repeats"])
        return {"seconds": seconds, "outputs": [r.best.ids for r in out]}
    e = transformer.Encoder(model, need_vocab=False, weights=weights, threads=spec["threads"])
    seconds, out = timed(lambda: e.embed_ids(ids, pooling="none", batch_size=len(ids),
                                             max_input_tokens=len(ids[0])), spec["repeats"])
    np.save(spec["encodings"], np.stack(out))
    return {"seconds": seconds}


def ct2_worker(spec):
    import ctranslate2
    import numpy as np

    path = spec["model"]
    kind = ctranslate2.Generator if spec["task"] == "generate" else ctranslate2.Encoder
    engine = kind(path, device="cpu", compute_type=spec["dtype"], inter_threads=1, intra_threads=spec["threads"])
    info = {"version": ctranslate2.__version__, "compute_type": engine.compute_type}
    if spec["task"] == "generate":
        with open(os.path.join(path, "vocabulary.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        prompts = [[vocab[i] for i in p] for p in spec["inputs"]]
        n = spec["new_tokens"]
        suppress = [[vocab[i]] for i in spec["suppress"]] or None
        seconds, out = timed(lambda: engine.generate_batch(prompts, max_length=n, min_length=n, beam_size=1,
                                                           include_prompt_in_result=False,
                                                           suppress_sequences=suppress), spec["repeats"])
        return dict(info, seconds=seconds, outputs=[r.sequences_ids[0] for r in out])
    seconds, out = timed(lambda: np.array(engine.forward_batch(spec["inputs"]).last_hidden_state), spec["repeats"])
    np.save(spec["encodings"], out)
    return dict(info, seconds=seconds)


def worker_main(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    result = (ours_worker if spec["engine"] == "ours" else ct2_worker)(spec)
    with open(spec["result"], "w") as f:
        json.dump(result, f)


# ---------------------------------------------------------------------------------------------
# Preparing a model: the Hugging Face folder, CTranslate2's conversions, our import.

def safetensors_config(path):
    """The model configuration in our model file's header (docs/checkpoint-format.md)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return json.loads(header["__metadata__"]["config"])


def prepare(args, name):
    folder = Path(args.work) / args.shapes / name
    stamp = folder / "bench.json"
    wanted = {"shapes": args.shapes, "seed": args.seed}
    if not args.rebuild and stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    import bench_family_models
    import ctranslate2

    params = bench_family_models.build(name, args.shapes, folder / "hf", args.seed)
    log(f"{name}: {params / 1e6:.1f}M parameters written to {folder / 'hf'}")
    for dtype in ("float32", "int8"):
        converter = ctranslate2.converters.TransformersConverter(str(folder / "hf"))
        converter.convert(str(folder / f"ct2-{dtype}"), quantization=dtype, force=True)
    subprocess.run([args.cli, "import", "hf", str(folder / "hf"), "-o", str(folder / "ours")], check=True,
                   stdout=subprocess.DEVNULL)
    stamp.write_text(json.dumps(wanted) + "\n")
    return folder


def random_ids(rng, rows, cols, low, high):
    return [[int(rng.integers(low, high)) for _ in range(cols)] for _ in range(rows)]


def inputs_for(args, name, config):
    """The same random ids for both engines: prompts for a decoder, sentences for an encoder, never a
    special id (bench_family_models puts them first, and GPT-2's end of text last)."""
    import numpy as np

    rng = np.random.default_rng(args.seed)
    low = 5 if name == "minilm" else 3
    if TASKS[name] == "generate":
        return random_ids(rng, args.batch, args.prompt_len, low, int(config["vocab_size"]) - 1)
    return random_ids(rng, args.sentences, args.sentence_len, low, int(config["vocab_size"]))


# ---------------------------------------------------------------------------------------------
# Running the two engines and comparing them.

def run_worker(args, spec, env_extra):
    spec_path = Path(spec["result"]).with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **env_extra)
    if spec["engine"] == "ours":
        python = args.ours_python
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.python_path, env.get("PYTHONPATH")]))
    else:
        python = sys.executable
    subprocess.run([python, __file__, "--worker", str(spec_path)], check=True, env=env)
    return json.loads(Path(spec["result"]).read_text())


def banned_ids(config):
    """The ids our search never produces (src/decode/search_common.cc): padding, and BOS unless it is EOS."""
    pad, bos, eos = (int(config.get(k, -1)) for k in ("pad_id", "bos_id", "eos_id"))
    return [i for i in (pad, bos if bos != eos else -1) if i >= 0]


def compare_generations(ours, theirs, n):
    for engine, outs in (("ours", ours), ("CTranslate2", theirs)):
        lengths = sorted({len(o) for o in outs})
        if lengths != [n]:
            raise SystemExit(f"{engine} generated {lengths} tokens per prompt, expected exactly {n}")
    same = sum(a == b for a, b in zip(ours, theirs))
    return same, f"{same}/{len(ours)} sequences"


def compare_encodings(ours_path, theirs_path, dtype):
    import numpy as np

    a, b = np.load(ours_path).astype(np.float64), np.load(theirs_path).astype(np.float64)
    if a.shape != b.shape:
        raise SystemExit(f"encodings of shape {a.shape} (ours) and {b.shape} (CTranslate2)")
    err = float(np.linalg.norm(a - b) / np.linalg.norm(b))
    tol = TOLERANCE[dtype]
    return err, f"rel. error {err:.1e} ({'≤' if err <= tol else '>'} {tol:g})"


def measure(args, name, folder, dtype, level):
    config = safetensors_config(folder / "ours" / "model.safetensors")
    task = TASKS[name]
    inputs = inputs_for(args, name, config)
    runs = Path(args.work) / "runs"
    runs.mkdir(exist_ok=True)
    repeats = args.encode_repeats if task == "encode" else args.repeats
    base = dict(task=task, dtype=dtype, threads=args.threads, repeats=repeats, inputs=inputs,
                new_tokens=args.new_tokens, suppress=banned_ids(config))
    results = {}
    for engine, model in (("ours", folder / "ours"), ("ct2", folder / f"ct2-{dtype}")):
        stem = runs / f"{name}-{dtype}-{level}-{engine}"
        spec = dict(base, engine=engine, model=str(model), result=str(stem) + ".json",
                    encodings=str(stem) + ".npy")
        results[engine] = run_worker(args, spec, CAPS.get(level, {}))
    work = len(inputs) * (args.new_tokens if task == "generate" else len(inputs[0]))
    row = {"model": name, "dtype": dtype, "task": task, "level": level, "tokens": work,
           "ct2_compute_type": results["ct2"]["compute_type"], "ct2_version": results["ct2"]["version"]}
    for engine in ("ours", "ct2"):
        row[f"{engine}_seconds"] = results[engine]["seconds"]
        row[f"{engine}_tokens_per_s"] = work / statistics.median(results[engine]["seconds"])
    if task == "generate":
        row["identical"], row["outputs"] = compare_generations(results["ours"]["outputs"],
                                                               results["ct2"]["outputs"], args.new_tokens)
    else:
        row["rel_error"], row["outputs"] = compare_encodings(encodings_path(runs, name, dtype, level, "ours"),
                                                             encodings_path(runs, name, dtype, level, "ct2"), dtype)
    if dtype == "int8":
        row["outputs"] += against_float32(runs, name, level, task, results)
    log(f"{level} {name} {dtype}: ours {row['ours_tokens_per_s']:.1f}, CTranslate2 {row['ct2_tokens_per_s']:.1f} "
        f"tokens/s; {row['outputs']}")
    return row


def encodings_path(runs, name, dtype, level, engine):
    return runs / f"{name}-{dtype}-{level}-{engine}.npy"


def against_float32(runs, name, level, task, results):
    """How far each engine's int8 outputs are from its own float32 ones of this run (when float32 ran
    first): which engine's quantization moves the output more."""
    parts = []
    for engine, label in (("ours", "ours"), ("ct2", "CTranslate2")):
        reference = runs / f"{name}-float32-{level}-{engine}"
        if task == "generate" and reference.with_suffix(".json").exists():
            full = json.loads(reference.with_suffix(".json").read_text())["outputs"]
            same = sum(a == b for a, b in zip(results[engine]["outputs"], full))
            parts.append(f"{label} {same}/{len(full)}")
        elif task == "encode" and reference.with_suffix(".npy").exists():
            err, _ = compare_encodings(encodings_path(runs, name, "int8", level, engine),
                                       reference.with_suffix(".npy"), "int8")
            parts.append(f"{label} {err:.1e}")
    return f"; against float32: {', '.join(parts)}" if parts else ""


# ---------------------------------------------------------------------------------------------
# The report.

def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def versions(args, rows):
    import torch
    import transformers

    ours = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    ct2 = rows[0]["ct2_version"] if rows else "?"
    return f"{ours} at {commit or '?'}; CTranslate2 {ct2}; transformers {transformers.__version__}, torch {torch.__version__}"


def table(rows, level):
    lines = [f"| model | dtype | task | ours tokens/s | CTranslate2 tokens/s | ratio | outputs identical |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["level"] != level:
            continue
        ratio = r["ours_tokens_per_s"] / r["ct2_tokens_per_s"]
        lines.append(f"| {r['model']} | {r['dtype']} | {r['task']} | {r['ours_tokens_per_s']:,.0f} | "
                     f"{r['ct2_tokens_per_s']:,.0f} | {ratio:.2f} | {r['outputs']} |")
    return "\n".join(lines)


def report(args, rows, levels):
    flags = sorted({f for f in open("/proc/cpuinfo").read().split() if f in
                    ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")}) \
        if os.path.exists("/proc/cpuinfo") else []
    head = [f"CPU: {cpu_name()} ({os.cpu_count()} cores; {' '.join(flags)}), {args.threads} threads; shapes "
            f"{args.shapes}; generation {args.batch} prompts x {args.prompt_len} ids, {args.new_tokens} new tokens "
            f"greedy; encoding {args.sentences} sentences x {args.sentence_len} ids; medians of {args.repeats} "
            f"(encoding {args.encode_repeats}) after a warm-up.", f"Versions: {versions(args, rows)}.", ""]
    for level in levels:
        caps = " ".join(f"{k}={v}" for k, v in CAPS.get(level, {}).items())
        head += [f"**{level}**" + (f" ({caps})" if caps else ""), "", table(rows, level), ""]
    return "\n".join(head)


# ---------------------------------------------------------------------------------------------

def log(message):
    print(message, file=sys.stderr, flush=True)


DEFAULTS = {"real": dict(batch=16, prompt_len=32, new_tokens=64, sentences=256, sentence_len=32),
            "tiny": dict(batch=4, prompt_len=8, new_tokens=8, sentences=8, sentence_len=16)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("work", help="work folder, outside the repository (models, conversions, results)")
    p.add_argument("--cli", required=True, help="the build's transformer command")
    p.add_argument("--python-path", help="folder holding our Python package (default: python/ beside --cli)")
    p.add_argument("--ours-python", default="/usr/bin/python3", help="the Python our module is built for")
    p.add_argument("--shapes", choices=("real", "tiny"), default="real")
    p.add_argument("--models", default="gpt2,llama,minilm")
    p.add_argument("--dtypes", default="float32,int8")
    p.add_argument("--isa", choices=sorted(CAPS), help="also run both engines capped at this level")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="default: nproc")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--encode-repeats", type=int, default=7)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rebuild", action="store_true", help="write the models and conversions anew")
    for key in DEFAULTS["real"]:
        p.add_argument("--" + key.replace("_", "-"), type=int, help=f"default {DEFAULTS['real'][key]} "
                       f"({DEFAULTS['tiny'][key]} with --shapes tiny)")
    args = p.parse_args()
    for key, value in DEFAULTS[args.shapes].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.cli = os.path.abspath(args.cli)
    args.python_path = os.path.abspath(args.python_path or os.path.join(os.path.dirname(args.cli), "python"))
    work = Path(args.work).resolve()
    if work == ROOT or ROOT in work.parents:
        p.error(f"the work folder {work} is inside the repository; give one outside it")
    args.work = str(work)
    return args


def main():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        return worker_main(sys.argv[2])
    args = parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in TASKS:
            raise SystemExit(f"unknown model '{m}' (known: {', '.join(TASKS)})")
    levels = ["native"] + ([args.isa] if args.isa else [])
    shutil.rmtree(Path(args.work) / "runs", ignore_errors=True)  # this run's outputs only
    rows = []
    for name in models:
        folder = prepare(args, name)
        for level in levels:
            for dtype in args.dtypes.split(","):
                rows.append(measure(args, name, folder, dtype, level))
    text = report(args, rows, levels)
    Path(args.work, "results.md").write_text(text + "\n")
    Path(args.work, "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
