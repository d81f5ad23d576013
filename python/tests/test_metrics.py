"""bleu, chrf and exact_match give the command line's `transformer eval --json` numbers on the
committed file pairs (tests/fixtures/bleu), with one and two references."""

import json
import subprocess

import pytest

import transformer
from conftest import SOURCE_DIR, lines_of

BLEU = SOURCE_DIR / "tests" / "fixtures" / "bleu"


def cli_eval(cli, hyp, refs, *options):
    command = [cli, "eval", "--json", "--metrics", "bleu,chrf,exact", "--hyp", str(hyp), *options]
    for ref in refs:
        command += ["--ref", str(ref)]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


@pytest.mark.parametrize("refs", [["ref1.txt"], ["ref1.txt", "ref2.txt"]])
@pytest.mark.parametrize("lowercase", [False, True])
def test_metrics_equal_the_command_lines(cli, refs, lowercase):
    paths = [BLEU / r for r in refs]
    want = cli_eval(cli, BLEU / "hyp.txt", paths, *(["--lowercase"] if lowercase else []))
    hyps = lines_of(BLEU / "hyp.txt")
    streams = [lines_of(p) for p in paths]

    b = transformer.bleu(hyps, streams, lowercase=lowercase)
    assert b.score == pytest.approx(want["bleu"]["score"], abs=1e-9)
    assert b.precisions == pytest.approx(want["bleu"]["precisions"], abs=1e-9)
    assert b.bp == pytest.approx(want["bleu"]["bp"], abs=1e-12)
    assert b.ratio == pytest.approx(want["bleu"]["ratio"], abs=1e-12)
    assert (b.hyp_len, b.ref_len) == (want["bleu"]["hyp_len"], want["bleu"]["ref_len"])
    assert (b.counts, b.totals) == (want["bleu"]["counts"], want["bleu"]["totals"])
    assert b.format() == str(b) == want["bleu"]["line"]

    c = transformer.chrf(hyps, streams, lowercase=lowercase)
    assert c.score == pytest.approx(want["chrf"]["score"], abs=1e-9)
    assert c.name == want["chrf"]["name"] and c.format() == want["chrf"]["line"]

    e = transformer.exact_match(hyps, streams, lowercase=lowercase)
    assert (e.matches, e.segments) == (want["exact"]["matches"], want["exact"]["segments"])
    assert e.score == pytest.approx(want["exact"]["score"], abs=1e-9)


def test_sacrebleus_numbers():
    """And the numbers sacreBLEU itself gave (tests/fixtures/bleu/expected.json, default corpus)."""
    expected = json.loads((BLEU / "expected.json").read_text(encoding="utf-8"))
    corpus = next(c for c in expected["corpora"] if c["name"] == "default")
    hyps = lines_of(BLEU / corpus["hyp"])
    refs = [lines_of(BLEU / r) for r in corpus["refs"]]
    assert transformer.bleu(hyps, refs).score == pytest.approx(corpus["bleu"]["score"], abs=1e-9)
    assert transformer.chrf(hyps, refs).score == pytest.approx(corpus["chrf"]["score"], abs=1e-9)


def test_options_and_errors():
    assert transformer.bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]).score == pytest.approx(100)
    assert transformer.chrf(["the cat"], [["the cat"]], word_order=2).name == "chrF2++"
    assert transformer.bleu(["The Cat Sat On The Mat"], [["the cat sat on the mat"]], lowercase=True).score == pytest.approx(100)
    e = transformer.exact_match(["a", "B", "c"], [["a", "b", "x"], ["y", "y", "c"]])
    assert (e.matches, e.segments) == (2, 3) and e.score == pytest.approx(200 / 3)
    with pytest.raises(transformer.Error, match="unknown BLEU tokenizer 'intl'"):
        transformer.bleu(["a"], [["a"]], tokenize="intl")
    with pytest.raises(transformer.Error, match="reference stream 1 has 2"):
        transformer.bleu(["a"], [["a", "b"]])
    with pytest.raises(transformer.Error, match="at least one reference stream"):
        transformer.chrf(["a"], [])
    with pytest.raises(transformer.Error, match="1 hypotheses"):
        transformer.exact_match(["a"], [["a", "b"]])
    with pytest.raises(TypeError):  # one stream must still be a list of streams: [refs]
        transformer.bleu(["a"], ["a"])
