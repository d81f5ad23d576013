"""Generator on a tiny decoder-only model of random weights (`transformer init`): generate equals
`transformer generate`, generate_ids keeps the prompt as given, generate_tokens yields the tokens
generate chooses and stops when closed, and bad models and options raise naming the problem."""

import subprocess
import threading
import time

import pytest

import transformer
from conftest import MODEL, TINY

PROMPTS = ["three hundred", "", "five"]


@pytest.fixture(scope="module")
def lm(cli, tmp_path_factory):
    vocab_size = transformer.model_info(MODEL).config["vocab_size"]
    path = tmp_path_factory.mktemp("lm") / "lm.safetensors"
    subprocess.run([cli, "init", "--preset", "tiny", "--vocab-size", str(vocab_size), "--architecture",
                    "decoder-only", "--encoder-layers", "0", "--d-model", "16", "--heads", "2", "--d-ff", "32",
                    "--positions", "learned", "--max-positions", "128", "-o", str(path)],
                   check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def generator(lm):
    return transformer.Generator(lm, TINY / "vocab.model", threads=1)


def test_generate_equals_the_command_line(generator, lm, cli):
    got = generator.generate(PROMPTS, max_new_tokens=6)
    assert [type(g) for g in got] == [transformer.Generation] * 3
    out = subprocess.run([cli, "generate", "-m", str(lm), "--vocab", str(TINY / "vocab.model"), "--threads", "1",
                          "--max-new-tokens", "6"], input="\n".join(PROMPTS) + "\n", capture_output=True,
                         text=True, check=True).stdout
    assert [g.best.text for g in got] == out.split("\n")[:-1]
    assert got[1].prompt_ids == [generator.bos_id]
    assert all(len(g.best.ids) <= 6 for g in got)


def test_generate_ids_keeps_the_prompt_as_given(generator):
    prompts = [[generator.bos_id, 5, 6], [7, 8]]
    got = generator.generate_ids(prompts, max_new_tokens=5, min_new_tokens=5)
    assert [len(g.best.ids) for g in got] == [5, 5]
    assert [g.prompt_ids for g in got] == prompts
    assert got[0].best.text == ""
    with_prompt = generator.generate_ids(prompts, max_new_tokens=5, min_new_tokens=5, include_prompt=True)
    assert [g.best.ids for g in with_prompt] == [p + g.best.ids for p, g in zip(prompts, got)]


def test_generate_tokens_yields_what_generate_chooses(generator):
    for options in ({}, {"sampling_topk": -1, "seed": 3}):
        want = generator.generate(["five"], max_new_tokens=8, min_new_tokens=8, **options)[0].best.ids
        assert list(generator.generate_tokens("five", max_new_tokens=8, min_new_tokens=8, **options)) == want
    ids = generator.generate_ids([[4, 5]], max_new_tokens=4, min_new_tokens=4)[0].best.ids
    assert list(generator.generate_tokens([4, 5], max_new_tokens=4, min_new_tokens=4)) == ids
    # on_token sees the same tokens, in order, as they are generated.
    seen = []
    got = generator.generate(["five", "three"], max_new_tokens=3, min_new_tokens=3,
                             on_token=lambda i, t: seen.append((i, t)))
    for i, g in enumerate(got):
        assert [t for j, t in seen if j == i] == g.best.ids


def test_closing_generate_tokens_ends_its_thread(generator):
    tokens = generator.generate_tokens("five", max_new_tokens=100, min_new_tokens=100)
    assert len([next(tokens), next(tokens)]) == 2
    tokens.close()
    deadline = time.monotonic() + 10
    while any(t.name == "generate_tokens" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "generate_tokens" for t in threading.enumerate())


def test_errors_name_the_problem(generator):
    with pytest.raises(transformer.Error, match="encoder-decoder.*decoder-only"):
        transformer.Generator(MODEL)
    with pytest.raises(transformer.Error, match="beam size 1"):
        list(generator.generate_tokens("five", beam=2))
    with pytest.raises(TypeError, match="on_token"):
        list(generator.generate_tokens("five", on_token=print))
    with pytest.raises(TypeError, match="beam_size.*did you mean 'beam'"):
        generator.generate(["five"], beam_size=2)
    with pytest.raises(transformer.Error, match="min_new_tokens"):
        generator.generate(["five"], max_new_tokens=2, min_new_tokens=3)
