"""Training from Python: Trainer and train() on a small demo task, with callbacks, a stop request,
resuming, the options' errors, and the GIL released while training."""

import json
import threading

import pytest

import transformer

OPTIONS = dict(
    preset="tiny",
    model={"d_model": 16, "heads": 2, "d_ff": 32, "encoder_layers": 1, "decoder_layers": 1},
    vocab_size=80,
    batch_tokens=256,
    warmup_steps=10,
    threads=1,
    seed=5,
    save_every=4,
    log_every=2,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    counts = transformer.write_demo_data(d, seed=3, train=300, valid=20, test=0)
    assert counts["train"] == 300 and counts["valid"] == 20
    assert counts["example"][0] and counts["example"][1]
    return d


def options(data, run, **more):
    return dict(OPTIONS, train_source=str(data / "train.en"), train_target=str(data / "train.de"), run_dir=str(run),
                **more)


def test_train_calls_back_and_writes_what_it_reports(data, tmp_path):
    messages, progress, records = [], [], []
    result = transformer.train(
        **options(data, tmp_path / "run", max_steps=6, valid_source=str(data / "valid.en"),
                  valid_target=str(data / "valid.de"), valid_every=3, best_metric="loss"),
        on_message=messages.append, on_progress=progress.append, on_metrics=records.append)
    assert result.steps == 6 and not result.interrupted
    assert result.final_model == str(tmp_path / "run" / "model.safetensors")
    assert [p.step for p in progress] == [1, 2, 3, 4, 5, 6]
    assert any(m.startswith("vocabulary:") for m in messages)
    # Every metrics.jsonl record reached on_metrics, with the same numbers.
    lines = [json.loads(l) for l in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == len(records) > 0
    for line, r in zip(lines, records):
        assert line["step"] == r.step
        for k, v in r.values.items():
            assert line[k] == pytest.approx(v, rel=1e-12)
    assert {r.kind for r in records} == {"training", "validation"}
    # The model translates.
    t = transformer.Translator(result.final_model)
    assert t.translate(["seven"], beam=1)[0].hypotheses


def test_step_by_step_equals_run_and_a_stop_resumes(data, tmp_path):
    whole = transformer.Trainer(**options(data, tmp_path / "whole", max_steps=8)).run()
    # Stopped from the progress callback at step 3, then resumed to 8: the same weights.
    holder = {}

    def stop_at_3(p):
        if p.step == 3:
            holder["t"].request_stop()

    t = transformer.Trainer(**options(data, tmp_path / "parts", max_steps=8), on_progress=stop_at_3)
    holder["t"] = t
    first = t.run()
    assert first.interrupted and first.steps == 3 and first.stop_reason == "interrupted"
    del t, holder["t"]  # releases the run folder's lock
    t = transformer.Trainer(**options(data, tmp_path / "parts", max_steps=8, resume=True))
    steps = []
    while not t.finished:
        r = t.step()
        if r.stepped:
            steps.append(r.step)
            assert repr(r).startswith(f"StepResult(step={r.step}, epoch=") and "stepped=True" in repr(r)
    assert steps == [4, 5, 6, 7, 8]
    assert t.result.steps == 8
    a = (tmp_path / "whole" / "model.safetensors").read_bytes()
    b = (tmp_path / "parts" / "model.safetensors").read_bytes()
    assert a == b


def test_options_errors_name_the_field(data, tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_step' .*did you mean 'max_steps'"):
        transformer.Trainer(**options(data, tmp_path / "x", max_step=3))
    with pytest.raises(transformer.Error, match="max_steps"):
        transformer.Trainer(**options(data, tmp_path / "x", max_steps="three"))
    with pytest.raises(transformer.Error, match="missing.en"):
        transformer.Trainer(**dict(options(data, tmp_path / "x"), train_source=str(tmp_path / "missing.en")))
    with pytest.raises(transformer.Error, match="'label_smoothing' must be a finite number, got nan"):
        transformer.Trainer(**options(data, tmp_path / "x", label_smoothing=float("nan")))
    # Paths may be os.PathLike or bytes here too, as everywhere in the API.
    paths = transformer.Trainer(**dict(options(data, tmp_path / "paths", max_steps=1), train_source=data / "train.en",
                                       train_target=bytes(data / "train.de"), run_dir=tmp_path / "paths"))
    assert paths.options["train_source"] == str(data / "train.en")
    assert paths.options["train_target"] == str(data / "train.de")
    del paths
    # A callback that cannot be called is refused before anything is written; None means the default.
    with pytest.raises(TypeError, match="on_progress must be callable or None, got 5"):
        transformer.Trainer(**options(data, tmp_path / "notcallable", max_steps=1), on_progress=5)
    assert not (tmp_path / "notcallable").exists()
    none = transformer.Trainer(**dict(options(data, tmp_path / "none", max_steps=1), model=None, seed=None))
    left_out = options(data, tmp_path / "left_out", max_steps=1)
    del left_out["model"], left_out["seed"]
    default = transformer.Trainer(**left_out)
    assert none.options["model"] == default.options["model"] and none.options["seed"] == default.options["seed"]
    assert none.options["model"] != OPTIONS["model"]
    del none, default
    t = transformer.Trainer(**options(data, tmp_path / "busy", max_steps=1))
    with pytest.raises(transformer.Error, match="busy"):
        transformer.Trainer(**options(data, tmp_path / "busy", max_steps=1))
    assert t.options["max_steps"] == 1 and t.options["model"]["d_model"] == 16


def test_a_callback_error_propagates(data, tmp_path):
    def boom(p):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        transformer.train(**options(data, tmp_path / "boom", max_steps=3), on_progress=boom)


def test_training_releases_the_gil(data, tmp_path):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    before = len(ticks)
    transformer.train(**options(data, tmp_path / "gil", max_steps=20))
    during = len(ticks) - before
    stop.set()
    thread.join()
    assert during > 10


def test_ctrl_c_stops_like_request_stop(data, tmp_path):
    import os
    import signal

    # SIGINT while the C++ loop runs (the GIL released): the next step notices it and stops the
    # training as request_stop() does, a checkpoint kept, instead of raising KeyboardInterrupt.
    # The signal is sent once the loop runs (its first metrics record is written): sent at a fixed
    # time, on a loaded machine it could land while the constructor ran, and Python would raise
    # KeyboardInterrupt between the constructor and run().
    run = tmp_path / "ctrl-c"
    done = threading.Event()

    def interrupt_once_training():
        while not done.is_set():
            if (run / "metrics.jsonl").exists():
                os.kill(os.getpid(), signal.SIGINT)
                return
            done.wait(0.01)

    watcher = threading.Thread(target=interrupt_once_training)
    watcher.start()
    try:
        result = transformer.train(**options(data, run, max_steps=100000, save_every=100000))
    finally:
        done.set()
        watcher.join()
    assert result.interrupted and 0 < result.steps < 100000
    assert (tmp_path / "ctrl-c" / "model.safetensors").exists()
    assert (tmp_path / "ctrl-c" / f"checkpoint-{result.steps:08d}.safetensors").exists()


def test_two_threads_stepping_one_trainer_take_turns(data, tmp_path):
    # One trainer, two threads stepping it: each call is one whole step, in turn (the Trainer's
    # lock), and the weights are those of one thread taking the same steps.
    alone = transformer.Trainer(**options(data, tmp_path / "alone", max_steps=16)).run()
    t = transformer.Trainer(**options(data, tmp_path / "shared", max_steps=16))
    seen, errors = [], []

    def work():
        try:
            for _ in range(8):
                seen.append(t.step().step)
                assert t.result.steps >= seen[-1]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert sorted(seen) == list(range(1, 17))
    assert t.finished and t.result.steps == 16 and t.result.last_loss == alone.last_loss
    assert (tmp_path / "alone" / "model.safetensors").read_bytes() == (tmp_path / "shared" / "model.safetensors").read_bytes()
