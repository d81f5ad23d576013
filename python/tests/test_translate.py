"""Translator on the committed tiny model (tests/fixtures/tiny_model): the committed outputs, n-best,
attention, scores by teacher forcing, ids, the input policy, and model files."""

import gc
import math
import os
import pathlib

import numpy as np
import pytest

import transformer
from conftest import MODEL, TINY, lines_of


@pytest.mark.parametrize("beam, expected", [(1, "expected.greedy.de"), (4, "expected.beam4.de")])
def test_translates_as_the_committed_outputs(translator, beam, expected):
    inputs = lines_of(TINY / "input.en")
    want = lines_of(TINY / expected)
    assert len(inputs) == len(want) == 10
    results = translator.translate(inputs, beam=beam)
    assert [r.best.text if r.hypotheses else "" for r in results] == want
    for line, r in zip(inputs, results):
        assert len(r.hypotheses) == (0 if line == "" else 1)
        assert not r.truncated and not r.repairs


def test_an_empty_input_has_no_best(translator):
    (r,) = translator.translate([""])
    assert r.hypotheses == [] and len(r) == 0
    with pytest.raises(transformer.Error, match="an empty input has no translation"):
        r.best


def test_n_best_is_sorted_and_distinct(translator):
    for r in translator.translate(["three hundred forty-two", "seventy-one", "one"], beam=4, n_best=4):
        assert len(r.hypotheses) == 4
        normalized = [h.normalized for h in r.hypotheses]
        assert normalized == sorted(normalized, reverse=True)
        assert len({tuple(h.ids) for h in r.hypotheses}) == 4
        assert r.best.ids == r.hypotheses[0].ids
        for h in r.hypotheses:
            assert h.score < 0 and h.text == translator.decode(h.ids)


def test_attention_is_a_probability_over_the_source(translator):
    layers = transformer.model_info(MODEL).decoder_layers
    results = translator.translate(["three hundred forty-two", "seventy-one"], beam=4, n_best=2, attention=True)
    for r in results:
        for h in r.hypotheses:
            a = h.attention
            assert isinstance(a, np.ndarray) and a.dtype == np.float32
            assert a.shape[0] == layers and a.shape[1] >= 1
            assert a.shape[2:] == (len(h.ids) + 1, len(r.source_ids) + 1)
            np.testing.assert_allclose(a.sum(axis=-1), 1.0, atol=1e-5)
            assert (a >= 0).all()
            assert not a.flags.writeable
    # The array outlives the result it views.
    a = translator.translate(["one"], attention=True)[0].best.attention
    gc.collect()
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, atol=1e-5)
    assert translator.translate(["one"])[0].best.attention is None


def test_scores_agree_with_the_search(plain):
    results = plain.translate(["three hundred forty-two", "seventy-one", "one"], beam=4, n_best=3)
    sources, targets, expected = [], [], []
    for r in results:
        assert len(r.hypotheses) == 3
        for h in r.hypotheses:
            sources.append(r.source_ids)
            targets.append(h.ids)
            expected.append(h.score)
    scores = plain.score_ids(sources, targets)
    assert len(scores) == len(expected)
    for s, t, want in zip(scores, targets, expected):
        assert s.total == pytest.approx(want, abs=1e-4)
        assert s.tokens == len(t) + 1
        assert s.per_token == pytest.approx(s.total / s.tokens, abs=1e-12)
    (text,) = plain.score(["three hundred forty-two"], [results[0].best.text])
    assert plain.encode(results[0].best.text) == results[0].best.ids
    assert text.total == pytest.approx(results[0].best.score, abs=1e-4)


def test_translate_ids_gives_the_ids_of_translate(translator):
    text = translator.translate(["three hundred forty-two", "sixteen"], beam=4, n_best=2)
    ids = translator.translate_ids([r.source_ids for r in text], beam=4, n_best=2)
    for a, b in zip(text, ids):
        assert [h.ids for h in a.hypotheses] == [h.ids for h in b.hypotheses]
        assert all(h.text == "" for h in b.hypotheses)
        assert b.source_ids == a.source_ids


def test_without_scores_the_same_translations_and_nan_scores(translator):
    lines = ["three hundred forty-two", "sixteen", "nine thousand"]
    for beam in (1, 4):
        with_scores = translator.translate(lines, beam=beam)
        without = translator.translate(lines, beam=beam, return_scores=False)
        assert [r.best.ids for r in without] == [r.best.ids for r in with_scores]
        assert all(math.isnan(r.best.score) and math.isnan(r.best.normalized) for r in without)
        assert not any(math.isnan(r.best.score) for r in with_scores)


def test_options_reach_the_search(translator):
    (r,) = translator.translate(["three hundred forty-two"], beam=1, max_length_a=0, max_length_b=3)
    assert len(r.best.ids) <= 2  # at most 3 output tokens, end of sentence included
    (r,) = translator.translate(["one"], beam=2, min_length=6, max_length_a=0, max_length_b=6)
    assert len(r.best.ids) == 5
    long = " ".join(["three hundred"] * 40)
    (r,) = translator.translate([long], beam=1, max_input_tokens=5)
    assert r.truncated and len(r.source_ids) == 5


def test_input_policy_repairs_and_reports(translator, plain):
    c = transformer.clean_input(b"  three\0hundred \n")
    assert c.text == "three hundred" and c.repairs.nul_bytes and not c.repairs.invalid_utf8
    bad = transformer.clean_input(b"drei\xffhundert")
    assert bad.text == "drei\ufffdhundert" and bad.repairs.invalid_utf8
    assert not transformer.clean_input("vier").repairs.any()
    assert transformer.repair_warnings(bad.repairs, "line 7") == [
        "line 7 is not valid UTF-8; invalid bytes replaced by U+FFFD"
    ]
    a, b = translator.translate(["three\0hundred", "three hundred"], beam=1)
    assert a.repairs.nul_bytes and not b.repairs
    assert a.best.text == b.best.text
    (s,) = plain.score(["three hundred"], [b"drei\xffhundert"])
    assert s.target_repairs.invalid_utf8 and not s.source_repairs.any()
    # A str with lone surrogates (a file read with errors="surrogateescape") is its bytes: repaired
    # and reported as bytes are, not refused with a TypeError about the argument's type.
    escaped = b"three\xffhundred".decode("utf-8", "surrogateescape")
    (r,) = translator.translate([escaped], beam=1)
    assert r.repairs.invalid_utf8 and r.source_ids == translator.translate([b"three\xffhundred"], beam=1)[0].source_ids
    assert transformer.clean_input(escaped).text == "three\ufffdhundred"
    assert transformer.clean_input("drei\ud800").repairs.invalid_utf8
    assert translator.encode(escaped) == translator.encode(b"three\xffhundred")
    (s,) = plain.score([escaped], ["drei"])
    assert s.source_repairs.invalid_utf8
    with pytest.raises(TypeError):
        translator.translate([5])


def test_vocabulary(translator):
    ids = translator.encode("three hundred")
    assert ids and translator.decode(ids) == "three hundred"
    for bad in (translator.vocab_size, -5):
        with pytest.raises(transformer.Error, match=f"token id {bad} .at 1. is outside the vocabulary"):
            translator.decode([ids[0], bad])
    assert all(isinstance(translator.piece(i), str) for i in ids)
    assert translator.parse_ids(" 5  6\t7 ", 3) == [5, 6, 7]
    assert translator.has_vocab and translator.vocab_size == transformer.model_info(MODEL).config["vocab_size"]
    assert translator.model_path == str(MODEL)


def test_errors_carry_the_library_messages(translator):
    assert issubclass(transformer.Error, RuntimeError)
    with pytest.raises(transformer.Error, match=r"^beam size must be in \[1, 1024\], got 0$"):
        translator.translate(["one"], beam=0)
    with pytest.raises(transformer.Error, match=r"^n-best must be in \[1, beam size 4\], got 5$"):
        translator.translate(["one"], beam=4, n_best=5)
    with pytest.raises(transformer.Error, match=r"^sentence 1: token id 100000 is outside the vocabulary \[0, \d+\)$"):
        translator.translate_ids([[5, 6], [5, 100000]])
    with pytest.raises(transformer.Error, match="padding"):
        translator.translate_ids([[0]])
    with pytest.raises(transformer.Error, match=r"line 3.*'x' is not a token id"):
        translator.parse_ids("5 x", 3)
    with pytest.raises(transformer.Error, match="weights = plain"):
        translator.score(["three hundred"], ["drei"])
    with pytest.raises(transformer.Error, match="^there are 1 sources but 0 targets$"):
        translator.score_ids([[5]], [])
    with pytest.raises(transformer.Error, match="/nonexistent/model.safetensors"):
        transformer.Translator("/nonexistent/model.safetensors")
    with pytest.raises(transformer.Error, match="/nonexistent.model"):
        transformer.Translator(MODEL, "/nonexistent.model")
    with pytest.raises(transformer.Error, match="weights must be 'packed', 'int8', 'plain' or 'bf16', got 'fast'"):
        transformer.Translator(MODEL, weights="fast")
    with pytest.raises(transformer.Error, match="device 'gpu' is not a device: cpu, or cuda"):
        transformer.Translator(MODEL, device="gpu")
    ids_only = transformer.Translator(MODEL, need_vocab=False)
    assert not ids_only.has_vocab
    with pytest.raises(transformer.Error, match="without a vocabulary"):
        ids_only.translate(["one"])
    # Python's own argument checks stay Python's.
    with pytest.raises(TypeError):
        translator.translate("one")


def test_messages_equal_the_command_lines(translator, cli, tmp_path):
    """The library's message reaches Python unchanged: the command line prints the same one."""
    import subprocess

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(MODEL.read_bytes()[:1000])
    with pytest.raises(transformer.Error) as python:
        transformer.Translator(bad, TINY / "vocab.model")
    run = subprocess.run([cli, "info", str(bad)], capture_output=True, text=True)
    assert run.returncode != 0
    assert str(python.value) in run.stderr


def test_weights_and_threads_do_not_change_greedy_ids(translator):
    inputs = lines_of(TINY / "input.en")
    want = [r.best.ids if r.hypotheses else [] for r in translator.translate(inputs, beam=1)]
    for kwargs in ({"weights": "plain"}, {"threads": 1}, {"verify": False}):
        t = transformer.Translator(MODEL, **kwargs)
        got = [r.best.ids if r.hypotheses else [] for r in t.translate(inputs, beam=1)]
        assert got == want, kwargs
    int8 = transformer.Translator(pathlib.Path(MODEL), weights="int8")
    assert len(int8.translate(inputs, beam=1)) == len(inputs)


def test_bf16_products_score_what_they_translate():
    bf16 = transformer.Translator(MODEL, weights="bf16")
    plain = transformer.Translator(MODEL, weights="plain")
    inputs = [line for line in lines_of(TINY / "input.en") if line]
    out = bf16.translate(inputs, beam=1)
    scores = bf16.score(inputs, [r.best.text for r in out])
    assert [s.total for s in scores] == pytest.approx([r.best.score for r in out], abs=1e-4)
    f32 = plain.score(inputs, [r.best.text for r in out])
    assert any(abs(a.total - b.total) > 1e-6 for a, b in zip(scores, f32))  # the products were rounded


def test_load_warnings_are_python_warnings():
    with pytest.warns(UserWarning, match="records no vocabulary fingerprint") as caught:
        t = transformer.Translator(MODEL)
    assert [str(w.message) for w in caught] == t.load_notes.warnings
    assert caught[0].filename == __file__  # the line that loads the model, not the package's wrapper
    assert len(t.load_notes.warnings) == 1
    assert not transformer.Translator(MODEL, need_vocab=False).load_notes.warnings


def test_model_info_and_averaging(tmp_path):
    info = transformer.model_info(MODEL)
    assert info.total_parameters == info.embedding_parameters + info.encoder_parameters + info.decoder_parameters > 0
    assert info.file_bytes == os.path.getsize(MODEL)
    assert list(info.config)[0] == "vocab_size" and isinstance(info.config["d_model"], int)
    assert info.checksum == "" and len(info.notes.notes) == 1 and "records no checksum" in info.notes.notes[0]
    out = tmp_path / "avg.safetensors"
    transformer.average_checkpoints([MODEL, str(MODEL)], out)
    avg = transformer.model_info(out)
    assert avg.checksum and avg.checksum_verified
    assert avg.metadata["averaged_from"] == "2 checkpoints"
    a = transformer.Translator(MODEL)
    b = transformer.Translator(out, TINY / "vocab.model")
    assert a.translate(["seventy-one"])[0].best.ids == b.translate(["seventy-one"])[0].best.ids
    assert "records no checksum" in a.load_notes.notes[0]
    assert b.load_notes.notes == []
    with pytest.raises(transformer.Error, match="at least one"):
        transformer.average_checkpoints([], out)
    with pytest.raises(transformer.Error, match="is also a checkpoint to average"):
        transformer.average_checkpoints([MODEL, out], out)
    assert transformer.model_info(out).checksum == avg.checksum  # untouched
    # A bytes path is the file system's bytes, not the text "b'...'".
    transformer.average_checkpoints([os.fsencode(MODEL)], os.fsencode(tmp_path / "bytes.safetensors"))
    assert (tmp_path / "bytes.safetensors").is_file() and not list(tmp_path.glob("b'*"))
    assert transformer.Translator(os.fsencode(MODEL)).translate(["seventy-one"])[0].best.ids == \
        a.translate(["seventy-one"])[0].best.ids


def test_running_out_of_memory_is_a_memory_error(translator):
    with pytest.raises(MemoryError, match="out of memory allocating"):
        translator.translate(["one"], beam=1, max_length_b=9e15, max_memory=0)
    with pytest.raises(transformer.Error, match="finite"):
        translator.translate(["one"], max_length_b=float("inf"))


def test_sampling_is_seeded_and_prefixes_are_forced(translator, plain):
    lines = ["three hundred forty-two", "seventy-one thousand one hundred one", "nine"]
    a = translator.translate(lines, beam=1, sampling_topk=-1, sampling_temperature=1.5, seed=7)
    b = translator.translate(lines[::-1], beam=1, sampling_topk=-1, sampling_temperature=1.5, seed=7, batch_size=1)
    assert [r.best.ids for r in a] == [r.best.ids for r in b[::-1]]  # independent of order and batching
    seeds = {tuple(translator.translate(lines, beam=1, sampling_topk=-1, sampling_temperature=2.0, seed=s)[0].best.ids)
             for s in range(8)}
    assert len(seeds) > 1
    with pytest.raises(transformer.Error, match="beam"):
        translator.translate(lines, beam=4, sampling_topk=5)
    # A forced prefix starts every hypothesis, and its score is teacher forcing's.
    (r,) = plain.translate(["three hundred forty-two"], beam=4, n_best=2, target_prefixes=["dreihundert"])
    assert r.target_prefix_ids == plain.encode("dreihundert")
    for h in r.hypotheses:
        assert h.ids[: len(r.target_prefix_ids)] == r.target_prefix_ids
    (s,) = plain.score_ids([r.source_ids], [r.best.ids])
    assert s.total == pytest.approx(r.best.score, abs=1e-4)
    with pytest.raises(transformer.Error, match="prefix"):
        plain.translate(["one", "two"], target_prefixes=["eins"])
