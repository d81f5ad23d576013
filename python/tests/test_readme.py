"""The README's Python example runs (on the committed tiny model in place of the demo's model, and
on the demo's model where `make demo` made one), printing what its comments show."""

import contextlib
import io

import pytest

from conftest import MODEL, SOURCE_DIR

DEMO_MODEL = "runs/demo/model.safetensors"


def readme_example():
    text = (SOURCE_DIR / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## From Python\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def shown_output(code):
    """What the example's comments say it prints: each text after "# →"."""
    return [line.split("# →", 1)[1].strip() for line in code.splitlines() if "# →" in line]


def run_readme_example(model):
    code = readme_example()
    assert DEMO_MODEL in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        namespace = {}
        exec(compile(code.replace(DEMO_MODEL, str(model)), "README.md", "exec"), namespace)
    printed = out.getvalue()
    # The BLEU it shows means something: neither 0 nor 100.
    assert 5 < float(printed.split("BLEU = ")[1].split()[0]) < 95, printed
    # The translations are right: each is its reference.
    assert [r.best.text for r in namespace["results"]] == namespace["references"], printed
    # What the comments show is what it prints.
    shown = shown_output(code)
    assert len(shown) >= 4, shown
    for text in shown:
        assert text in printed, (text, printed)


def test_readme_example_runs():
    run_readme_example(MODEL)


def test_readme_example_runs_on_the_demo_model():
    """On the model `make demo` trains (runs/demo in the checkout), where there is one."""
    model = SOURCE_DIR / DEMO_MODEL
    if not model.exists():
        pytest.skip(f"no {model} (make demo)")
    run_readme_example(model)


def test_docs_training_example_runs(tmp_path, monkeypatch):
    """docs/python.md's training example, in a fresh folder (it writes data/ and runs/py/)."""
    text = (SOURCE_DIR / "docs" / "python.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Training\n") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/python.md", "exec"), {})
    printed = out.getvalue()
    assert "step 200: loss" in printed, printed
    assert "validation {'valid_bleu'" in printed, printed
    assert printed.rstrip().endswith("runs/py/model.safetensors reached max_steps 200"), printed[-300:]
    assert (tmp_path / "runs" / "py" / "model.safetensors").exists()
