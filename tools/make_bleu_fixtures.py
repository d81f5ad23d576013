#!/usr/bin/env python3
"""Writes tests/fixtures/bleu/expected.json: what sacreBLEU itself says about the committed text files
in tests/fixtures/bleu, for tests/bleu_test.cc to compare our BLEU and chrF against.

sacreBLEU is only a cross-check tool: the build and the tests never need it, they read the committed
JSON. To regenerate (sacreBLEU 2.x from PyPI, e.g. in a throwaway virtual environment):

    python3 -m venv /tmp/sb && /tmp/sb/bin/pip install sacrebleu
    /tmp/sb/bin/python tools/make_bleu_fixtures.py
    /tmp/sb/bin/python tools/make_bleu_fixtures.py --unicode-tables   # also rewrites src/eval/unicode_tables.inc

--unicode-tables regenerates the case tables that src/eval/text.cc uses to lowercase exactly like
Python's str.lower() (which sacreBLEU's --lowercase calls), from this Python's Unicode database.

Text files are read the way sacreBLEU's command line reads them (UTF-8, lines split on "\\n" only),
but lines are passed to the API with only the "\\n" removed, so the metrics' own handling of
trailing whitespace is part of what is checked.
"""
import argparse
import json
import os
import sys
import unicodedata

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "bleu")


def read_lines(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="\n") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":  # a final newline ends the last line; it does not start another
        lines.pop()
    return lines


def bleu_entry(score):
    return {
        "score": score.score,
        "precisions": list(score.precisions),
        "counts": [int(c) for c in score.counts],
        "totals": [int(t) for t in score.totals],
        "bp": score.bp,
        "ratio": score.ratio,
        "sys_len": int(score.sys_len),
        "ref_len": int(score.ref_len),
        "line": score.format(),  # "BLEU = 35.12 65.3/42.1/29.8/21.0 (BP = ... ref_len = ...)"
    }


def chrf_entry(score):
    return {"score": score.score, "line": score.format()}  # "chrF2 = 57.31"


# (name, reference files, BLEU options, chrF options). Every case runs over hyp.txt.
CASES = [
    ("default", ["ref1.txt"], {}, {}),
    ("two_refs", ["ref1.txt", "ref2.txt"], {}, {}),
    ("second_ref_only", ["ref2.txt"], {}, {}),
    ("lowercase", ["ref1.txt", "ref2.txt"], {"lowercase": True}, {"lowercase": True}),
    ("tokenize_none", ["ref1.txt", "ref2.txt"], {"tokenize": "none"}, {}),
    ("chrf_plus_plus_eps", ["ref1.txt", "ref2.txt"], {"lowercase": True, "tokenize": "none"},
     {"word_order": 2, "eps_smoothing": True}),
    ("chrf_whitespace", ["ref1.txt", "ref2.txt"], {}, {"whitespace": True}),
]


def make_fixtures():
    hyps = read_lines("hyp.txt")
    out = {
        "_about": "sacreBLEU's corpus BLEU and chrF on the text files beside this one; "
                  "written by tools/make_bleu_fixtures.py",
        "_generator": f"sacrebleu {sacrebleu.__version__}, Python {sys.version.split()[0]}",
        "corpora": [],
        "segments": [],
        "tokenize": [],
    }
    for name, ref_files, bleu_opts, chrf_opts in CASES:
        refs = [read_lines(f) for f in ref_files]
        assert all(len(r) == len(hyps) for r in refs), name
        bleu = BLEU(**bleu_opts).corpus_score(hyps, refs)
        chrf = CHRF(**chrf_opts).corpus_score(hyps, refs)
        out["corpora"].append({
            "name": name, "hyp": "hyp.txt", "refs": ref_files,
            "bleu_options": {"lowercase": bleu_opts.get("lowercase", False),
                             "tokenize": bleu_opts.get("tokenize", "13a")},
            "chrf_options": {"lowercase": chrf_opts.get("lowercase", False),
                             "word_order": chrf_opts.get("word_order", 0),
                             "eps_smoothing": chrf_opts.get("eps_smoothing", False),
                             "whitespace": chrf_opts.get("whitespace", False)},
            "bleu": bleu_entry(bleu), "chrf": chrf_entry(chrf),
        })

    # Every sentence alone as a one-line corpus against both references: short segments reach the
    # corners (no 4-gram matches, empty lines, no matches at all) that a whole corpus averages away.
    refs = [read_lines("ref1.txt"), read_lines("ref2.txt")]
    for i, hyp in enumerate(hyps):
        seg_refs = [[r[i]] for r in refs]
        out["segments"].append({
            "index": i,
            "bleu": bleu_entry(BLEU().corpus_score([hyp], seg_refs)),
            "chrf": chrf_entry(CHRF().corpus_score([hyp], seg_refs)),
        })

    tok = Tokenizer13a()
    for line in read_lines("tokenize.txt") + hyps:
        out["tokenize"].append({"line": line, "lower": line.lower(), "13a": tok(line), "13a_lower": tok(line.lower())})

    path = os.path.join(FIXTURES, "expected.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)  # floats keep all 17 digits (repr round-trips)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def case_tables():
    """Python's str.lower(): a one-to-one map except U+0130, plus the Final_Sigma rule for U+03A3, which
    needs the Cased and Case_Ignorable properties. Python exposes neither, so they are read off lower()
    itself: "XΣ" ends in final sigma iff X is cased and not case-ignorable, and "AXΣ" iff X is either."""
    lower_map = []
    for cp in range(0x110000):
        c = chr(cp)
        low = c.lower()
        if low == c:
            continue
        if len(low) != 1:
            assert cp == 0x130 and low == "i\u0307", (hex(cp), low)  # handled in text.cc
            continue
        lower_map.append((cp, ord(low) - cp))

    # Runs of code points with the same offset and a constant stride (1, or 2 for the alternating
    # upper/lower pairs of the Latin Extended blocks): {first, count, stride, delta}.
    runs = []
    for cp, delta in lower_map:
        if runs and runs[-1][3] == delta:
            first, count, stride, _ = runs[-1]
            last = first + (count - 1) * stride
            if count == 1 and cp - last in (1, 2):
                runs[-1] = [first, 2, cp - last, delta]
                continue
            if count > 1 and cp - last == stride:
                runs[-1][1] += 1
                continue
        runs.append([cp, 1, 1, delta])
    expanded = [(f + i * s, d) for f, n, s, d in runs for i in range(n)]
    assert expanded == lower_map

    def final(s):
        return s.lower().endswith("\u03c2")

    ignorable = [cp for cp in range(0x110000) if final("A" + chr(cp) + "\u03a3") and not final(chr(cp) + "\u03a3")]
    cased = [cp for cp in range(0x110000) if final(chr(cp) + "\u03a3")]

    def ranges(cps):
        out = []
        for cp in cps:
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
        return out

    def rows(items, per_line):
        lines = []
        for i in range(0, len(items), per_line):
            lines.append("    " + " ".join(items[i:i + per_line]))
        return "\n".join(lines)

    run_items = [f"{{0x{f:X}, {n}, {s}, {d}}}," for f, n, s, d in runs]
    ign_items = [f"{{0x{a:X}, 0x{b:X}}}," for a, b in ranges(ignorable)]
    cased_items = [f"{{0x{a:X}, 0x{b:X}}}," for a, b in ranges(cased)]
    text = f"""// Generated by tools/make_bleu_fixtures.py --unicode-tables from Python {sys.version.split()[0]}
// (Unicode {unicodedata.unidata_version}); do not edit. Included by src/eval/text.cc only.

// str.lower() as runs: first + i·stride (i < count) lowercases to itself + delta.
constexpr LowerRun kLowerRuns[] = {{
{rows(run_items, 4)}
}};

// Case_Ignorable code points, as inclusive ranges.
constexpr CodeRange kCaseIgnorable[] = {{
{rows(ign_items, 6)}
}};

// Cased code points that are not Case_Ignorable, as inclusive ranges (the Final_Sigma rule only
// asks whether a character that is not case-ignorable is cased).
constexpr CodeRange kCasedNotIgnorable[] = {{
{rows(cased_items, 6)}
}};
"""
    path = os.path.join(ROOT, "src", "eval", "unicode_tables.inc")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}: {len(runs)} lowercase runs, {len(ign_items)} + {len(cased_items)} ranges")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unicode-tables", action="store_true", help="also rewrite src/eval/unicode_tables.inc")
    args = parser.parse_args()
    if args.unicode_tables:
        case_tables()
    make_fixtures()


if __name__ == "__main__":
    main()
