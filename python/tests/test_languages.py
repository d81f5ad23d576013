"""A multilingual translator (the NLLB fixture of tests/fixtures/hf, imported with the command line):
source_lang and target_lang reach the translation, which equals transformers' generate(); an unknown
code and a missing target language are refused naming them."""

import json
import subprocess

import pytest

import transformer
from conftest import SOURCE_DIR

FIXTURES = SOURCE_DIR / "tests" / "fixtures" / "hf"


@pytest.fixture(scope="module")
def nllb(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("nllb")
    subprocess.run([cli, "import", "hf", str(FIXTURES / "nllb"), "-o", str(out)], check=True, capture_output=True)
    return transformer.Translator(out / "model.safetensors")


def test_the_languages_reach_the_translation(nllb):
    ref = json.loads((FIXTURES / "m2m100_reference.json").read_text(encoding="utf-8"))["nllb"]
    out = nllb.translate(ref["sources"], beam=1, max_length_a=0, max_length_b=12,
                         source_lang=ref["source_lang"], target_lang=ref["target_lang"])
    for r, hf in zip(out, ref["greedy"]):
        assert r.best.ids[0] == ref["target_lang_id"]
        if hf["ids"][-1] == 2:  # ended before generate()'s limit
            assert r.best.ids == hf["ids"][1:-1]
            assert r.best.text == hf["text_after_language"]
    ids = nllb.translate_ids([s[:-1] for s in ref["source_ids"]], beam=1, max_length_a=0, max_length_b=12,
                             target_lang=ref["target_lang"])
    assert [r.best.ids for r in ids] == [r.best.ids for r in out]


def test_unknown_and_missing_languages_are_refused(nllb):
    with pytest.raises(transformer.Error, match="xx_Yyyy"):
        nllb.translate(["A man."], source_lang="eng_Latn", target_lang="xx_Yyyy")
    with pytest.raises(transformer.Error, match="target language"):
        nllb.translate(["A man."], source_lang="eng_Latn")
