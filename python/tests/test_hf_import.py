"""Hugging Face folders imported by `transformer import hf` (tests/fixtures/hf, written by
transformers' save_pretrained from tools/make_hf_*_fixtures.py) run from text as transformers runs
them: the tokenizer's ids, the greedy continuation decoded to text (tools/make_hf_text_fixtures.py),
and sentence-transformers' embeddings, through the Python Generator and Encoder and the command."""

import json
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


def test_sentence_transformers_embeds_text_as_sentence_transformers(cli, tmp_path_factory):
    ref = json.loads((HF / "minilm" / "reference.json").read_text(encoding="utf-8"))
    model = imported(cli, tmp_path_factory, "minilm")
    enc = transformer.Encoder(model, threads=1)
    for sentence, ids in zip(ref["sentences"], ref["ids"]):
        assert list(enc.encode(sentence)) == ids, sentence
    got = enc.embed(ref["sentences"])  # the folder's own pooling (mean) and normalization
    np.testing.assert_allclose(got, np.array(ref["embeddings"]["mean_normalized"]), atol=1e-5)
    cls = enc.embed(ref["sentences"], pooling="cls", normalize=False)
    np.testing.assert_allclose(cls, np.array(ref["embeddings"]["cls"]), atol=1e-5)
