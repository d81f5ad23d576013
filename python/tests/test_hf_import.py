"""Hugging Face folders imported by `transformer import hf` (tests/fixtures/hf, written by
transformers' save_pretrained from tools/make_hf_*_fixtures.py) run from text as transformers runs
them: the tokenizer's ids, the greedy continuation decoded to text (tools/make_hf_text_fixtures.py),
and sentence-transformers' embeddings, through the Python Generator and Encoder and the command."""

import json
import pathlib
import subprocess

import numpy as np
import pytest

import transformer
from conftest import SOURCE_DIR

HF = SOURCE_DIR / "tests" / "fixtures" / "hf"
DECODERS = ["gpt2", "llama", "qwen2", "mistral"]


def imported(cli, tmp_path_factory, name):
    out = tmp_path_factory.mktemp(name)
    path = subprocess.run([cli, "import", "hf", str(HF / name), "-o", str(out)], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert path == str(out / "model.safetensors")
    return path


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_continues_text_as_transformers(cli, tmp_path_factory, name):
    ref = json.loads((HF / name / "text_reference.json").read_text(encoding="utf-8"))
    model = imported(cli, tmp_path_factory, name)
    g = transformer.Generator(model, threads=1)
    prompts = [c["prompt"] for c in ref["cases"]]
    for case in ref["cases"]:  # encode gives the text's ids; the tokenizer's BOS, if any, is the model's bos_id
        bos = [g.bos_id] if g.bos_id >= 0 else []
        assert bos + list(g.encode(case["prompt"])) == case["prompt_ids"], case["prompt"]
    got = g.generate(prompts, max_new_tokens=ref["max_new_tokens"])
    for case, gen in zip(ref["cases"], got):
        assert gen.prompt_ids == case["prompt_ids"], case["prompt"]
        assert gen.best.ids == case["continuation_ids"], case["prompt"]
        assert gen.best.text == case["continuation"], case["prompt"]
    out = subprocess.run([cli, "generate", "-m", model, "--threads", "1", "--max-new-tokens",
                          str(ref["max_new_tokens"])], input="\n".join(prompts) + "\n", capture_output=True,
                         text=True, check=True).stdout
    # One continuation per line; a continuation with a line break in it would span two.
    if not any("\n" in c["continuation"] for c in ref["cases"]):
        assert out.split("\n")[:-1] == [c["continuation"] for c in ref["cases"]]


def test_import_hf_from_python_writes_what_the_command_writes(cli, tmp_path_factory):
    by_command = imported(cli, tmp_path_factory, "qwen2")
    out = tmp_path_factory.mktemp("qwen2_python")
    with pytest.warns(UserWarning, match="no BOS"):  # the import's notes
        assert transformer.import_hf(HF / "qwen2", out) == str(out / "model.safetensors")
    for name in ["model.safetensors", "vocabulary.json", "tokenizer.json"]:
        assert (out / name).read_bytes() == (pathlib.Path(by_command).parent / name).read_bytes(), name
    with pytest.raises(transformer.Error, match="is the input folder"):
        transformer.import_hf(HF / "qwen2", HF / "qwen2")
    with pytest.raises(transformer.Error, match="config.json' does not exist"):
        transformer.import_hf(out, tmp_path_factory.mktemp("nothing"))


def test_sentence_transformers_embeds_text_as_sentence_transformers(tmp_path_factory):
    ref = json.loads((HF / "minilm" / "reference.json").read_text(encoding="utf-8"))
    with pytest.warns(UserWarning):  # the import's notes (what the pooling and normalization default to)
        model = transformer.import_hf(HF / "minilm", tmp_path_factory.mktemp("minilm"))
    enc = transformer.Encoder(model, threads=1)
    for sentence, ids in zip(ref["sentences"], ref["ids"]):
        assert list(enc.encode(sentence)) == ids, sentence
    got = enc.embed(ref["sentences"])  # the folder's own pooling (mean) and normalization
    np.testing.assert_allclose(got, np.array(ref["embeddings"]["mean_normalized"]), atol=1e-5)
    cls = enc.embed(ref["sentences"], pooling="cls", normalize=False)
    np.testing.assert_allclose(cls, np.array(ref["embeddings"]["cls"]), atol=1e-5)
