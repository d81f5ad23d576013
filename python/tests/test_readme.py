"""The README's Python example runs (on the committed tiny model in place of the demo's model)."""

import contextlib
import io

from conftest import MODEL, SOURCE_DIR

DEMO_MODEL = "runs/demo/model.safetensors"


def readme_example():
    text = (SOURCE_DIR / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## From Python\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_readme_example_runs():
    code = readme_example()
    assert DEMO_MODEL in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(DEMO_MODEL, str(MODEL)), "README.md", "exec"), {})
    printed = out.getvalue()
    assert printed.startswith("dreihundertzweiundvierzig"), printed
    assert "beam size must be in [1, 1024], got 0" in printed


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
