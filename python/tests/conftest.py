"""Paths the tests share. ctest (python/CMakeLists.txt) sets TFM_SOURCE_DIR and TFM_CLI and puts the
in-tree package first on PYTHONPATH; by hand, run from the checkout:
    PYTHONPATH=build/python TFM_CLI=build/transformer /usr/bin/python3 -m pytest python/tests
"""

import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TFM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TINY = SOURCE_DIR / "tests" / "fixtures" / "tiny_model"
MODEL = TINY / "model.safetensors"


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


@pytest.fixture(scope="session")
def tiny():
    return TINY


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TFM_CLI", str(SOURCE_DIR / "build" / "transformer"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"no transformer binary at {path} (set TFM_CLI)")
    return path


@pytest.fixture(scope="session")
def translator():
    import transformer

    return transformer.Translator(MODEL)


@pytest.fixture(scope="session")
def plain():
    import transformer

    return transformer.Translator(MODEL, weights="plain")
