#!/usr/bin/python3
"""Draws the scaling benchmarks (BM_TrainScaling, BM_TranslateScaling) of a Google Benchmark JSON
file as two SVG line charts, with nothing but the standard library:

    tools/plot_scaling.py build/bench-results.json docs/
writes docs/scaling-train.svg and docs/scaling-translate.svg.
"""
import json, os, sys


def series(benchmarks, prefix, arg):
    """(x, median tokens/s) pairs of the benchmarks whose run name starts with prefix."""
    best = {}
    for b in benchmarks:
        name = b.get("run_name", b["name"])
        if not name.startswith(prefix) or b.get("aggregate_name", "median") != "median":
            continue
        x = int(name.split(f"{arg}:")[1].split("/")[0])
        best[x] = b["tokens/s"]
    return sorted(best.items())


def chart(points, title, xlabel, path, log_x=True):
    import math
    w, h, left, top, pw, ph = 640, 360, 70, 40, 530, 260
    xs = [math.log2(x) if log_x else x for x, _ in points]
    ys = [y for _, y in points]
    x0, x1 = min(xs), max(xs)
    y1 = max(ys) * 1.1
    px = lambda x: left + pw * (x - x0) / ((x1 - x0) or 1)
    py = lambda y: top + ph * (1 - y / y1)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='12'>",
           "<rect width='100%' height='100%' fill='white'/>",
           f"<text x='{left + pw / 2}' y='24' text-anchor='middle' font-size='14'>{title}</text>",
           f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#888'/>"]
    for i in range(5):
        yv = y1 * i / 4
        out.append(f"<line x1='{left}' x2='{left + pw}' y1='{py(yv):.1f}' y2='{py(yv):.1f}' stroke='#eee'/>")
        out.append(f"<text x='{left - 6}' y='{py(yv) + 4:.1f}' text-anchor='end'>{yv:.0f}</text>")
    for (x, y), xv in zip(points, xs):
        out.append(f"<text x='{px(xv):.1f}' y='{top + ph + 16}' text-anchor='middle'>{x}</text>")
    out.append(f"<text x='{left + pw / 2}' y='{top + ph + 34}' text-anchor='middle'>{xlabel}</text>")
    out.append(f"<text transform='translate(16,{top + ph / 2}) rotate(-90)' text-anchor='middle'>tokens/s</text>")
    pts = " ".join(f"{px(xv):.1f},{py(y):.1f}" for xv, (_, y) in zip(xs, points))
    out.append(f"<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='{pts}'/>")
    for xv, (_, y) in zip(xs, points):
        out.append(f"<circle cx='{px(xv):.1f}' cy='{py(y):.1f}' r='3.5' fill='#1f77b4'/>")
        out.append(f"<text x='{px(xv):.1f}' y='{py(y) - 8:.1f}' text-anchor='middle' font-size='11'>{y:.0f}</text>")
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {path}")


def main():
    results, out_dir = sys.argv[1], sys.argv[2]
    benchmarks = json.load(open(results))["benchmarks"]
    train = series(benchmarks, "BM_TrainScaling", "len")
    translate = series(benchmarks, "BM_TranslateScaling", "batch")
    if train:
        chart(train, "training step, base, 4096 tokens per side, 2 threads", "sentence length (tokens)",
              os.path.join(out_dir, "scaling-train.svg"))
    if translate:
        chart(translate, "greedy translation, base, 25 tokens per sentence, 2 threads", "sentences per batch",
              os.path.join(out_dir, "scaling-translate.svg"))


if __name__ == "__main__":
    main()
