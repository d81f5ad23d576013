#!/usr/bin/env python3
"""tools/compare_loss_curves.py on made-up metrics.jsonl files: what passes, what fails (exit 1, the
message naming the step and the values) and what is refused as bad input (exit 2).

    tests/tools/compare_loss_curves_test.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "compare_loss_curves.py")


def curve(steps=range(10, 310, 10), scale=1.0, spike=None):
    """A falling loss every 10 steps, times scale; spike=(step, factor) multiplies one record."""
    out = {}
    for s in steps:
        out[s] = (1.2 + 4.6 * 0.99 ** s) * scale
    if spike:
        out[spike[0]] *= spike[1]
    return out


class CompareLossCurves(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, losses, extra=()):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            for s, loss in losses.items():
                f.write(json.dumps({"step": s, "epoch": 0, "loss": loss, "lr": 1e-3}) + "\n")
            for record in extra:
                f.write(json.dumps(record) + "\n")
        return path

    def run_tool(self, *args):
        r = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def test_identical_curves_pass_and_print_the_chosen_steps(self):
        a = self.write("a.jsonl", curve(), extra=[{"step": 300, "valid_loss": 1.0}])
        rc, out, err = self.run_tool(a, a, "--labels", "cuda", "cpu", "--tolerance", "0", "--final-tolerance", "0")
        self.assertEqual(rc, 0, err)
        self.assertIn("cuda", out)
        self.assertEqual([line.split()[1] for line in out.splitlines() if line.startswith("  step ")],
                         ["10", "50", "100", "200", "300"])
        self.assertIn("largest: 0.00e+00", out)
        self.assertIn("passed", out)

    def test_a_small_difference_passes_a_larger_tolerance(self):
        a, b = self.write("a.jsonl", curve(scale=1.004)), self.write("b.jsonl", curve())
        rc, out, err = self.run_tool(a, b, "--tolerance", "0.01", "--final-tolerance", "0.01")
        self.assertEqual(rc, 0, err)
        self.assertIn("largest: 4.00e-03", out)

    def test_a_step_over_the_tolerance_fails_naming_step_and_values(self):
        a, b = self.write("a.jsonl", curve(spike=(150, 1.1))), self.write("b.jsonl", curve())
        rc, out, err = self.run_tool(a, b, "--labels", "bf16", "float32", "--tolerance", "0.05")
        self.assertEqual(rc, 1)
        self.assertIn("at step 150", err)
        self.assertIn(f"{curve()[150] * 1.1:.6f} against {curve()[150]:.6f}", err)
        self.assertIn("bf16", err)

    def test_smoothing_lets_one_batch_through_but_not_a_shifted_curve(self):
        a, b = self.write("a.jsonl", curve(spike=(150, 1.1))), self.write("b.jsonl", curve())
        rc, out, err = self.run_tool(a, b, "--window", "5", "--tolerance", "0.05")
        self.assertEqual(rc, 0, err)
        self.assertIn("largest smoothed: ", out)
        c = self.write("c.jsonl", curve(scale=1.06))
        rc, out, err = self.run_tool(c, b, "--window", "5", "--tolerance", "0.05")
        self.assertEqual(rc, 1)
        self.assertIn("smoothed over 5 log records", err)

    def test_the_final_loss_has_its_own_tolerance(self):
        late = curve()
        late[300] *= 1.03
        a, b = self.write("a.jsonl", late), self.write("b.jsonl", curve())
        rc, out, err = self.run_tool(a, b, "--final-tolerance", "0.02")
        self.assertEqual(rc, 1)
        self.assertIn("at step 300", err)
        self.assertIn("over the final tolerance 0.02", err)
        # Smoothed over 5 records, the last one's 3% is 0.6% at the end.
        rc, out, err = self.run_tool(a, b, "--window", "5", "--final-tolerance", "0.02")
        self.assertEqual(rc, 0, err)
        self.assertIn("final (step 300, smoothed over 5 log records)", out)

    def test_the_early_check_is_unsmoothed_and_stops_at_its_step(self):
        early, late = curve(spike=(50, 1.01)), curve(spike=(250, 1.01))
        a, b, c = self.write("a.jsonl", early), self.write("b.jsonl", curve()), self.write("c.jsonl", late)
        args = ["--window", "5", "--early-until", "100", "--early-tolerance", "0.005"]
        rc, out, err = self.run_tool(a, b, *args)
        self.assertEqual(rc, 1)
        self.assertIn("at step 50 the loss (unsmoothed)", err)
        self.assertIn("over the early tolerance 0.005 (steps up to 100)", err)
        self.assertIn("largest up to step 100: 1.00e-02 at step 50", out)
        rc, out, err = self.run_tool(c, b, *args)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.run_tool(c, b, "--early-until", "100")
        self.assertEqual(rc, 2)
        self.assertIn("go together", err)

    def test_a_run_that_stopped_early_does_not_pass(self):
        a, b = self.write("a.jsonl", curve(steps=range(10, 160, 10))), self.write("b.jsonl", curve())
        self.assertEqual(self.run_tool(a, b)[0], 0)  # no check asked for: a note only
        rc, out, err = self.run_tool(a, b, "--tolerance", "0.5")
        self.assertEqual(rc, 1)
        self.assertIn("ends at step 150", err)

    def test_a_nan_loss_fails(self):
        a, b = self.write("a.jsonl", curve(spike=(100, float("nan")))), self.write("b.jsonl", curve())
        rc, out, err = self.run_tool(a, b, "--tolerance", "0.5")
        self.assertEqual(rc, 1)
        self.assertIn("at step 100", err)

    def test_bad_input_exits_2_with_a_message(self):
        b = self.write("b.jsonl", curve())
        empty = self.write("empty.jsonl", {})
        validation_only = self.write("valid.jsonl", {}, extra=[{"step": 10, "valid_loss": 2.0}])
        elsewhere = self.write("elsewhere.jsonl", curve(steps=[5, 15]))
        broken = os.path.join(self.dir.name, "broken.jsonl")
        with open(broken, "w") as f:
            f.write('{"step": 10, "loss": 1.0}\n{"step": 20,\n')
        cases = {os.path.join(self.dir.name, "missing.jsonl"): "cannot read",
                 empty: "no loss records (it is empty)", validation_only: "no loss records",
                 elsewhere: "no step in common", broken: "line 2: not JSON", self.dir.name: "cannot read"}
        for path, message in cases.items():
            rc, out, err = self.run_tool(path, b)
            self.assertEqual(rc, 2, path)
            self.assertIn(message, err)


if __name__ == "__main__":
    unittest.main()
