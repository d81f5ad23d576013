#!/usr/bin/env python3
"""Checks the include graph of the library against its layers (README, "Layout").

Layers, lowest first: core, ops, the peers layers/data/io/eval/dist/viz, model, decode, train, api,
then cli/serve/import/python at the top. A file may include files of its own layer or below, never
above. Each public header (include/transformer) counts at the layer of the code that implements
what it declares; value types (options, results, errors) count as core. A module is a source file
with its header (src/train/trainer.h and .cc; a private implementation header, server_impl.h, belongs to
server's module); no two modules may include each other, directly or
through others (a cycle).

Usage: tools/check_layers.py [ROOT]    (exit status 1 and one line per violation when any)
"""
import os
import re
import sys

LAYERS = {
    "core": 0, "ops": 1,
    "layers": 2, "data": 2, "io": 2, "eval": 2, "dist": 2, "viz": 2,
    "model": 3, "decode": 4, "train": 5, "api": 6,
    "cli": 7, "serve": 7, "import": 7, "python": 8,
}
# The public headers' layers: where what they declare is implemented.
PUBLIC = {
    "error.h": "core", "text.h": "core", "search_options.h": "core", "language_options.h": "core", "translation.h": "core",
    "train_options.h": "core", "model_config.h": "core", "vocab_options.h": "core",
    "shortlist.h": "core", "embed_options.h": "core", "encoder.h": "api", "bleu.h": "eval", "chrf.h": "eval", "metrics.h": "eval",
    "trainer.h": "train", "translator.h": "api", "generator.h": "api", "model.h": "api", "attention_svg.h": "api",
    "system.h": "api", "demo.h": "api", "import.h": "import",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module(path):
    name = os.path.splitext(path)[0]
    return name[: -len("_impl")] if name.endswith("_impl") else name


def layer_of(path):
    """(layer name, module name) of a repository-relative path, or None outside the library."""
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1], module(path)
    if parts[0] == "include" and parts[1] == "transformer":
        name = parts[2]
        if name not in PUBLIC:
            raise SystemExit(f"{path}: a public header with no layer in tools/check_layers.py's PUBLIC")
        return PUBLIC[name], module(path)
    if parts[0] == "python" and parts[1] == "src":
        return "python", module(path)
    return None


def resolve(root, includer, name):
    """The repository-relative path an #include "name" of `includer` reads, or None (a system one)."""
    for base in (os.path.dirname(includer), "src", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def sources(root):
    for top in ("src", "include/transformer", "python/src"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".h", ".cc", ".cu", ".cuh", ".inc")):
                    yield os.path.relpath(os.path.join(folder, f), root)


def strongly_connected(graph):
    """Tarjan's components of more than one module (the include cycles), iteratively."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]; counter[0] += 1
                    stack.append(child); on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop(); on_stack.discard(top); component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems, graph, edges = [], {}, 0
    for path in sources(root):
        here = layer_of(path)
        if here is None or here[0] not in LAYERS:
            problems.append(f"{path}: in no layer (tools/check_layers.py's LAYERS)")
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            target = resolve(root, path, name)
            there = layer_of(target) if target else None
            if there is None:
                continue
            edges += 1
            if LAYERS[there[0]] > LAYERS[here[0]]:
                problems.append(f"{path} ({here[0]}) includes {target} ({there[0]}), a higher layer")
            if there[1] != here[1]:
                graph.setdefault(here[1], set()).add(there[1])
    for cycle in strongly_connected(graph):
        problems.append("include cycle between modules: " + " ↔ ".join(cycle))
    for p in problems:
        print(p)
    print(f"{edges} includes checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
