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
