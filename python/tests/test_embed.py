"""transformer.Encoder: embeddings as NumPy arrays, from the encoder of the committed tiny
translation model and from a tiny encoder-only model written by `transformer init`; the same
numbers as `transformer embed`."""

import json
import subprocess

import numpy as np
import pytest

import transformer

from conftest import MODEL

TEXTS = ["three hundred and five", "seven", ""]


@pytest.fixture(scope="module")
def encoder():
    return transformer.Encoder(MODEL)


@pytest.fixture(scope="module")
def bert(cli, tmp_path_factory):
    path = tmp_path_factory.mktemp("bert") / "bert.safetensors"
    subprocess.run([cli, "init", "--preset", "tiny", "--architecture", "encoder-only", "--vocab-size", "40",
                    "--d-model", "16", "--heads", "2", "--d-ff", "32", "--encoder-layers", "1", "--positions",
                    "learned", "--max-positions", "32", "--token-types", "2", "-o", str(path)],
                   check=True, capture_output=True)
    return path


def test_pooled_embeddings_are_an_array(encoder):
    out = encoder.embed(TEXTS)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.shape == (3, encoder.dim)
    assert encoder.architecture == "encoder-decoder"
    unit = encoder.embed(TEXTS, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(unit, out / np.linalg.norm(out, axis=1, keepdims=True), atol=1e-6)
    cls = encoder.embed(TEXTS, pooling="cls")
    assert not np.allclose(cls, out)


def test_pooling_none_gives_every_token(encoder):
    out = encoder.embed(TEXTS, pooling="none")
    assert isinstance(out, list) and len(out) == 3
    for text, a in zip(TEXTS, out):
        assert a.shape == (len(encoder.encode(text)), encoder.dim)
    np.testing.assert_allclose(out[0].mean(axis=0), encoder.embed(TEXTS[:1])[0], atol=1e-5)
    np.testing.assert_allclose(out[0][-1], encoder.embed(TEXTS[:1], pooling="last")[0], atol=0)


def test_same_numbers_as_the_command_line(encoder, cli):
    run = subprocess.run([cli, "embed", "-m", str(MODEL), "--threads", "1"], input="\n".join(TEXTS) + "\n",
                         capture_output=True, text=True, check=True)
    printed = np.array([json.loads(line) for line in run.stdout.splitlines()], dtype=np.float32)
    np.testing.assert_allclose(printed, encoder.embed(TEXTS), atol=1e-6)


def test_encoder_only_model_with_ids_and_token_types(bert):
    e = transformer.Encoder(bert, need_vocab=False, weights="plain")
    ids = [[2, 5, 6, 7, 3], [2, 9, 3]]
    out = e.embed_ids(ids)
    assert out.shape == (2, 16)
    alone = e.embed_ids(ids[1:])
    np.testing.assert_allclose(alone[0], out[1], atol=1e-6)  # padding does not count
    typed = e.embed_ids(ids, token_types=[[0, 0, 1, 1, 1], [0, 1, 1]])
    assert not np.allclose(typed, out)
    with pytest.raises(transformer.Error, match="token type 2 is outside"):
        e.embed_ids(ids, token_types=[[0, 0, 0, 0, 2], [0, 0, 0]])
    with pytest.raises(transformer.Error, match="sentence 1: there are no tokens to embed"):
        e.embed_ids([[2, 3], []])
    with pytest.raises(transformer.Error, match="unknown pooling 'sum'"):
        e.embed_ids(ids, pooling="sum")
    with pytest.raises(transformer.Error, match="without a vocabulary"):
        e.embed(["seven"])
