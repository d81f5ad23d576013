"""Arguments the module cannot take raise TypeError as Python words it (the function, the keyword or
argument, the nearest real keyword), not pybind11's list of signatures; for every public function
and method. And what results and training say: an empty line's repr and .best agree, the learning
rate is `lr` everywhere, and training prints its progress unless verbose=False."""

import functools
import io
import json
import re
import warnings

import pytest

import transformer
from transformer import _transformer
from conftest import MODEL


def raises_type_error(match, call, *args, **kwargs):
    with pytest.raises(TypeError) as e:
        call(*args, **kwargs)
    message = str(e.value)
    assert "incompatible" not in message and len(message) < 300, message
    assert re.search(match, message), message
    return message


def test_translate_says_what_is_wrong(translator):
    raises_type_error(r"^Translator\.translate\(\) argument 'lines' must be a list of str, not str \(for a single one, "
                      r"a list of one\)$", translator.translate, "a sentence")
    raises_type_error(r"^Translator\.translate\(\) got an unexpected keyword argument 'num_hypotheses'; "
                      r"did you mean 'n_best'\?$", translator.translate, ["one"], num_hypotheses=2)
    raises_type_error(r"got an unexpected keyword argument 'beem'; did you mean 'beam'\?$", translator.translate,
                      ["one"], beem=2)
    raises_type_error(r"^Translator\.translate\(\) missing required argument: 'lines'$", translator.translate)
    raises_type_error(r"^Translator\.translate\(\) takes 2 positional arguments but 3 were given \(the options are "
                      r"keyword-only: beam=\.\.\.\)$", translator.translate, ["one"], 4)
    raises_type_error(r"argument 'beam' must be int, not str$", translator.translate, ["one"], beam="4")
    raises_type_error(r"argument 'lines' must be a list of str; lines\[1\] is int$", translator.translate, ["one", 5])
    raises_type_error(r"argument 'sources' must be a list of lists of int; sources\[0\]\[1\] is str$",
                      translator.translate_ids, [[5, "6"]])
    raises_type_error(r"argument 'max_memory' must be int or None, not float$", translator.translate, ["one"],
                      max_memory=1.5)
    # What pybind11 took, the wrapper passes on unchanged: the library's own errors stay transformer.Error.
    with pytest.raises(transformer.Error, match="beam size"):
        translator.translate(["one"], beam=0)
    assert translator.translate(("one",), beam=1)[0].best.text == translator.translate(["one"], beam=1)[0].best.text


def test_functions_and_constructors_say_what_is_wrong(tmp_path):
    raises_type_error(r"^bleu\(\) argument 'refs' must be a list of lists of str; refs\[0\] is str$", transformer.bleu,
                      ["eins"], ["eins"])
    raises_type_error(r"^chrf\(\) got an unexpected keyword argument 'lowercased'; did you mean 'lowercase'\?$",
                      transformer.chrf, ["eins"], [["eins"]], lowercased=True)
    raises_type_error(r"^model_info\(\) got an unexpected keyword argument 'verfy'; did you mean 'verify'\?$",
                      transformer.model_info, MODEL, verfy=False)
    raises_type_error(r"^write_demo_data\(\) got an unexpected keyword argument 'trian'; did you mean 'train'\?$",
                      transformer.write_demo_data, tmp_path, trian=5)
    raises_type_error(r"^clean_input\(\) argument 'line' must be str, not int$", transformer.clean_input, 5)
    raises_type_error(r"^Translator\(\) got an unexpected keyword argument 'wieghts'; did you mean 'weights'\?$",
                      transformer.Translator, MODEL, wieghts="int8")
    raises_type_error(r"^Translator\(\) argument 'threads' must be int, not str$", transformer.Translator, MODEL,
                      threads="2")
    raises_type_error(r"^Trainer\(\) got an unexpected keyword argument 'max_step' \(not a training option\); "
                      r"did you mean 'max_steps'\?$", transformer.Trainer, max_step=3)
    raises_type_error(r"^Trainer\(\) takes 1 positional argument but 2 were given", transformer.Trainer, "run")
    assert not list(tmp_path.iterdir())


def public_callables():
    """(what, callable, whether it takes **kwargs) for every public function, method and constructor."""
    for name in sorted(n for n in dir(_transformer) if not n.startswith("_")):
        obj = getattr(transformer, name)
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for member, value in sorted(vars(obj).items()):
                if type(value).__name__ == "wrapper_descriptor":  # a class Python cannot construct
                    continue
                if callable(value) and (member == "__init__" or not member.startswith("_")):
                    kwargs = "**kwargs" in (value.__doc__ or "").split("\n")[0]
                    yield f"{name}.{member}", (obj if member == "__init__" else functools.partial(value, None)), kwargs
        elif callable(obj) and not isinstance(obj, type):
            yield name, obj, False


def test_every_public_callable_names_an_unknown_keyword():
    checked = 0
    for what, function, takes_kwargs in public_callables():
        if takes_kwargs:
            continue
        with pytest.raises(TypeError) as e:
            function(no_such_keyword=1)
        message = str(e.value)
        assert message.endswith("got an unexpected keyword argument 'no_such_keyword'"), (what, message)
        assert "incompatible" not in message, (what, message)
        checked += 1
    assert checked >= 25, checked


def test_an_empty_lines_repr_and_best_agree(translator):
    empty, full = translator.translate(["", "three hundred forty-two"], beam=1)
    assert repr(empty) == "Translation(hypotheses=0)"
    with pytest.raises(transformer.Error, match="an empty input has no translation"):
        empty.best
    assert repr(full) == f"Translation(best={full.best.text!r}, hypotheses=1)"


OPTIONS = dict(preset="tiny", model={"d_model": 16, "heads": 2, "d_ff": 32, "encoder_layers": 1, "decoder_layers": 1},
               vocab_size=80, batch_tokens=256, warmup_steps=10, threads=1, seed=5, log_every=2, max_steps=4)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    transformer.write_demo_data(d, seed=3, train=200, valid=10, test=0)
    return dict(OPTIONS, train_source=str(d / "train.en"), train_target=str(d / "train.de"))


def test_the_learning_rate_is_lr_everywhere(data, tmp_path):
    progress, records = [], []
    t = transformer.Trainer(**data, run_dir=str(tmp_path / "run"), verbose=False, on_progress=progress.append,
                            on_metrics=records.append)
    step = t.step()
    t.run()
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    by_step = {p.step: p.lr for p in progress}
    assert step.lr == by_step[1] > 0 and "lr=" in repr(step)
    for line, record in zip(logged, records):
        assert line["lr"] == record.values["lr"] == pytest.approx(by_step[line["step"]], rel=1e-12)
    # The earlier name still answers, with a DeprecationWarning.
    with pytest.warns(DeprecationWarning, match="use lr"):
        assert progress[0].learning_rate == progress[0].lr
    with pytest.warns(DeprecationWarning, match="use lr"):
        assert step.learning_rate == step.lr


def test_training_prints_its_progress_unless_quiet(data, tmp_path, capsys):
    transformer.train(**data, run_dir=str(tmp_path / "loud"))
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert any(line.startswith("vocabulary:") for line in lines), err
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split(" |")[0] for s in steps] == ["step 2", "step 4"], err  # plain lines at the log steps
    assert re.fullmatch(r"step 4 \| epoch \d+ \| \d+ tok/s \| loss \d+\.\d{4} \| lr \S+ \| \d+:\d\d:\d\d.*", steps[-1])
    assert lines[-1].startswith("stopped at step 4"), err
    transformer.train(**data, run_dir=str(tmp_path / "quiet"), verbose=False)
    assert capsys.readouterr() == ("", "")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_progress_line_is_redrawn():
    from transformer._progress import TrainingDisplay

    class P:
        epoch, loss, lr, tokens_per_s, elapsed_s, eta_s = 0, 2.5, 1e-4, 1000.0, 61.0, 3600.0

        def __init__(self, step, log_step):
            self.step, self.log_step = step, log_step

    out = Terminal()
    display = TrainingDisplay(out, interval=0)
    display.progress(P(1, False))
    display.progress(P(2, True))
    display.progress(P(3, False))
    display.message("validation")
    text = out.getvalue()
    assert text.startswith("\rstep 1 | epoch 0 | 1000 tok/s | loss 2.5000 | lr 0.0001 | 0:01:01 | ETA 1:00:00")
    assert "\rstep 2 " in text and text.count("\n") == 2  # kept at the log step, and the message's
    assert text.endswith("\r\033[Kvalidation\n")  # the open line cleared before a message
