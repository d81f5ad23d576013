#!/usr/bin/env python3
"""Compares the training loss of two runs, step by step, from their metrics.jsonl files.

    tools/compare_loss_curves.py RUN REFERENCE [--labels bf16 float32] [--steps 10,100,300]
        [--window 5] [--tolerance 0.1] [--final-tolerance 0.05]
        [--early-until 100 --early-tolerance 0.005]

The relative difference at a step is |RUN − REFERENCE| / |REFERENCE|, of the loss records both files
have (`train` writes one every --log-every steps: the mean loss per token since the one before).
It prints a table of the chosen steps and the largest difference. --window N also compares the
curves smoothed over N log records (the mean of the record and the N − 1 before it), which follows
the curve and not the noise of single batches.

Checks, each optional:
  --tolerance REL          the (smoothed, with --window) difference at most REL at every common step;
  --final-tolerance REL    the (smoothed) difference at the last common step at most REL;
  --early-until STEP, --early-tolerance REL
                           the unsmoothed difference at most REL at every step up to STEP (early in
                           training two runs from the same start differ only by rounding; later,
                           training amplifies any difference);
and with any of them both runs must end at the same step (a run that stopped early does not pass).

Exit status: 0 passed (or nothing to check), 1 a check failed (the message names the step and the
values), 2 bad input (a file missing, unreadable or without loss records, or no common steps).
"""
import argparse
import json
import math
import sys

DEFAULT_STEPS = "10,50,100,200,300"


class BadInput(Exception):
    """A file the comparison cannot use: exit status 2."""


def losses(path):
    """{step: loss} of the training records of a metrics.jsonl file (validation records have no "loss")."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not a text file") from None
    out = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadInput(f"{path}, line {number}: not JSON ({e.msg})") from None
        if not isinstance(record, dict) or "loss" not in record:
            continue
        step, loss = record.get("step"), record["loss"]
        if not isinstance(step, int) or not isinstance(loss, (int, float)):
            raise BadInput(f"{path}, line {number}: a loss record needs an integer step and a number loss")
        out[step] = float(loss)
    if not out:
        raise BadInput(f"{path} has no loss records" + (" (it is empty)" if not lines else ""))
    return out


def relative(a, b):
    """|a − b| / |b|; infinite where b is 0 and a is not, NaN where either is."""
    if a == b:
        return 0.0
    return abs(a - b) / abs(b) if b != 0 else math.inf


def smoothed(curve, steps, window):
    """The mean of each step's loss and the window − 1 before it (fewer at the start), over steps."""
    values = [curve[s] for s in steps]
    return {s: sum(values[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1))
            for i, s in enumerate(steps)}


def worse(d, limit):
    """Whether a difference fails its limit (NaN fails)."""
    return not d <= limit


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    p.add_argument("run", help="metrics.jsonl of the run to check")
    p.add_argument("reference", help="metrics.jsonl of the reference run (the differences are relative to it)")
    p.add_argument("--labels", nargs=2, metavar=("RUN", "REFERENCE"), default=("run", "reference"),
                   help="names of the two runs in the output (default: run reference)")
    p.add_argument("--title", help="the table's first line (default: names the two labels)")
    p.add_argument("--steps", default=DEFAULT_STEPS,
                   help=f"comma-separated steps to print, or 'all' (default: {DEFAULT_STEPS}; those both files have)")
    p.add_argument("--window", type=int, default=1,
                   help="also compare the losses smoothed over this many log records (default: 1, not smoothed)")
    p.add_argument("--tolerance", type=float, metavar="REL",
                   help="fail if the (smoothed) relative difference exceeds REL at any common step")
    p.add_argument("--final-tolerance", type=float, metavar="REL",
                   help="fail if the (smoothed) relative difference at the last common step exceeds REL")
    p.add_argument("--early-until", type=int, metavar="STEP", help="the last step of the early check")
    p.add_argument("--early-tolerance", type=float, metavar="REL",
                   help="fail if the unsmoothed relative difference exceeds REL at a step up to --early-until")
    args = p.parse_args(argv)
    if args.window < 1:
        p.error(f"--window must be at least 1, got {args.window}")
    for name in ("tolerance", "final_tolerance", "early_tolerance"):
        value = getattr(args, name)
        if value is not None and not value >= 0:
            p.error(f"--{name.replace('_', '-')} must be a non-negative number, got {value}")
    if (args.early_until is None) != (args.early_tolerance is None):
        p.error("--early-until and --early-tolerance go together")
    if args.steps != "all":
        try:
            args.steps = [int(s) for s in args.steps.split(",") if s.strip()]
        except ValueError:
            p.error(f"--steps takes comma-separated integers or 'all', got '{args.steps}'")
    return args


def checking(args):
    """Whether any check was asked for."""
    return any(v is not None for v in (args.tolerance, args.final_tolerance, args.early_tolerance))


def worst_of(diff, steps):
    """The step of the largest difference among steps (NaN counts as the largest)."""
    return max(steps, key=lambda s: math.inf if math.isnan(diff[s]) else diff[s])


def compare(args):
    """Prints the table and returns the list of failed checks' messages."""
    run, ref = losses(args.run), losses(args.reference)
    steps = sorted(set(run) & set(ref))
    if not steps:
        raise BadInput(f"{args.run} (steps {min(run)}–{max(run)}) and {args.reference} "
                       f"(steps {min(ref)}–{max(ref)}) have no step in common")
    la, lb = args.labels
    smooth = args.window > 1
    raw = {s: relative(run[s], ref[s]) for s in steps}
    # Without --window the "smoothed" curves are the records themselves.
    sa, sb = smoothed(run, steps, args.window), smoothed(ref, steps, args.window)
    soft = {s: relative(sa[s], sb[s]) for s in steps}
    what = f"smoothed over {args.window} log records" if smooth else "unsmoothed"

    print(args.title or f"loss of {la} against {lb}, relative difference"
          + (f" (smoothed: the mean of {args.window} log records)" if smooth else ""))
    shown = steps if args.steps == "all" else [s for s in steps if s in set(args.steps)]
    width = max(len(la), len(lb), 8)
    print(f"  {'step':>10} {la:>{width}} {lb:>{width}} {'rel diff':>9}" + (f" {'smoothed':>9}" if smooth else ""))
    for s in shown:
        print(f"  step {s:5d} {run[s]:{width}.6f} {ref[s]:{width}.6f} {raw[s]:9.2e}"
              + (f" {soft[s]:9.2e}" if smooth else ""))
    worst = worst_of(raw, steps)
    print(f"  largest: {raw[worst]:.2e} at step {worst}")
    if smooth:
        worst = worst_of(soft, steps)
        print(f"  largest smoothed: {soft[worst]:.2e} at step {worst}")
    early = [s for s in steps if args.early_until is not None and s <= args.early_until]
    if early:
        worst = worst_of(raw, early)
        print(f"  largest up to step {args.early_until}: {raw[worst]:.2e} at step {worst}")

    failed = []
    end_a, end_b = max(run), max(ref)
    if end_a != end_b:
        note = f"{la} ends at step {end_a}, {lb} at step {end_b}"
        if checking(args):
            failed.append(note + ": the runs must have the same length")
        else:
            print(f"  note: {note}")

    def check(steps_checked, diff, a, b, limit, kind, name):
        """Appends a message for the first step of steps_checked over limit (name: the limit's, in words)."""
        bad = [s for s in steps_checked if worse(diff[s], limit)]
        if bad:
            s = bad[0]
            more = f" (and at {len(bad) - 1} more step{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
            failed.append(f"at step {s} the loss ({kind}) of {la} is {a[s]:.6f} against {b[s]:.6f} of {lb}: "
                          f"{diff[s]:.2e} relative, over {name}{more}")

    if args.early_tolerance is not None:
        if not early:
            failed.append(f"no common step up to --early-until {args.early_until}")
        check(early, raw, run, ref, args.early_tolerance, "unsmoothed",
              f"the early tolerance {args.early_tolerance:g} (steps up to {args.early_until})")
    if args.tolerance is not None:
        check(steps, soft, sa, sb, args.tolerance, what, f"the tolerance {args.tolerance:g}")
    if args.final_tolerance is not None and end_a == end_b:
        print(f"  final (step {end_a}, {what}): {sa[end_a]:.6f} against {sb[end_a]:.6f}, {soft[end_a]:.2e} relative")
        check([end_a], soft, sa, sb, args.final_tolerance, what, f"the final tolerance {args.final_tolerance:g}")
    return failed


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        failed = compare(args)
    except BadInput as e:
        print(f"compare_loss_curves: {e}", file=sys.stderr)
        return 2
    for message in failed:
        print(f"compare_loss_curves: FAILED: {message}", file=sys.stderr)
    if not failed and checking(args):
        parts = ([f"up to step {args.early_until} within {args.early_tolerance:g}"]
                 if args.early_tolerance is not None else []) + \
                ([f"every common step within {args.tolerance:g}"] if args.tolerance is not None else []) + \
                ([f"the final loss within {args.final_tolerance:g}"] if args.final_tolerance is not None else [])
        print("  passed: " + ", ".join(parts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
