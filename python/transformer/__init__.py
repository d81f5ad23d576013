"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017): translation, scoring,
model files and BLEU/chrF from Python, over the project's C++ library (docs/python.md).

    import transformer

    t = transformer.Translator("runs/demo/model.safetensors")
    for r in t.translate(["three hundred forty-two"], beam=4, n_best=2):
        print(r.best.text, [h.score for h in r.hypotheses])

Every computing call releases the GIL. Errors of the library raise transformer.Error (a
RuntimeError) with the C++ library's message; arguments of the wrong kind raise TypeError naming
them, as Python does.
"""

from ._transformer import (
    MAX_BATCH_SENTENCES,
    MAX_BEAM_SIZE,
    MAX_INPUT_TOKENS,
    BleuScore,
    ChrfScore,
    CleanText,
    Encoder,
    Error,
    ExactMatch,
    Generation,
    Generator,
    Hypothesis,
    LoadNotes,
    MetricsRecord,
    ModelInfo,
    Progress,
    Repairs,
    Score,
    StepResult,
    Trainer,
    TrainResult,
    Translation,
    Translator,
    ValidationResult,
    __version__,
    average_checkpoints,
    bleu,
    chrf,
    clean_input,
    exact_match,
    import_hf,
    model_info,
    plot_training,
    repair_warnings,
    write_demo_data,
)

# Tracebacks and reprs name transformer.Error, transformer.Translator, ... (not the C++ module).
for _cls in (BleuScore, ChrfScore, CleanText, Encoder, Error, ExactMatch, Hypothesis, LoadNotes, MetricsRecord, ModelInfo,
             Progress, Repairs, Score, StepResult, Trainer, TrainResult, Translation, Translator, ValidationResult,
             Generation, Generator):
    _cls.__module__ = __name__
del _cls


def _surrogates_as_bytes(value):
    """A str that UTF-8 cannot encode (lone surrogates, as open(..., errors="surrogateescape") gives
    for bytes that are not UTF-8) → its bytes (the escaped ones given back), which the input policy
    repairs and reports as it does any bytes that are not UTF-8; lists of them element by element.
    None when nothing needed it."""
    def fix(s):
        if not isinstance(s, str):
            return None
        try:
            s.encode("utf-8")
            return None
        except UnicodeEncodeError:
            try:
                return s.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                return s.encode("utf-8", "surrogatepass")

    if isinstance(value, (list, tuple)):
        fixed = [fix(s) for s in value]
        return None if all(f is None for f in fixed) else [s if f is None else f for s, f in zip(value, fixed)]
    return fix(value)


def _accept_surrogates(function):
    """Wraps a text-taking function of the C++ module: where it refuses its arguments (TypeError)
    because a str holds lone surrogates, it is called again with those strings as bytes. Other
    calls are not touched (nothing is checked unless the call fails)."""
    import functools

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError:
            fixed_args = [_surrogates_as_bytes(a) for a in args]
            fixed_kwargs = {k: _surrogates_as_bytes(v) for k, v in kwargs.items()}
            if all(f is None for f in fixed_args) and all(f is None for f in fixed_kwargs.values()):
                raise
            return function(*[a if f is None else f for a, f in zip(args, fixed_args)],
                            **{k: v if fixed_kwargs[k] is None else fixed_kwargs[k] for k, v in kwargs.items()})

    return call


# Arguments pybind11 refuses raise Python's TypeError ("Translator.translate() got an unexpected
# keyword argument 'beam_size'; did you mean 'beam'?"), for every method and function of the module.
from . import _arguments, _transformer  # noqa: E402

for _name, _function in _arguments.wrap_module(
    _transformer,
    (BleuScore, ChrfScore, CleanText, Encoder, ExactMatch, Hypothesis, LoadNotes, MetricsRecord, ModelInfo, Progress, Repairs,
     Score, StepResult, Trainer, TrainResult, Translation, Translator, ValidationResult, Generation, Generator),
    ("average_checkpoints", "bleu", "chrf", "exact_match", "import_hf", "model_info", "plot_training",
     "repair_warnings", "write_demo_data"),
).items():
    globals()[_name] = _function
clean_input = _arguments.pythonic(clean_input, "clean_input()")
del _name, _function

for _name in ("translate", "score", "encode"):
    setattr(Translator, _name, _accept_surrogates(getattr(Translator, _name)))
clean_input = _accept_surrogates(clean_input)  # outside: a retry of what pybind11 refused
setattr(Encoder, "embed", _accept_surrogates(Encoder.embed))
del _name

# Generation: text prompts may hold lone surrogates as translate's lines may; generate_tokens
# streams one prompt's tokens (python/transformer/_streaming.py).
from ._streaming import generate_tokens as _generate_tokens  # noqa: E402

for _name in ("generate", "encode"):
    setattr(Generator, _name, _accept_surrogates(getattr(Generator, _name)))
Generator.generate_tokens = _generate_tokens
del _name, _generate_tokens


def train(*, on_message=None, on_progress=None, on_metrics=None, verbose=True, **options) -> TrainResult:
    """Trains to the end: Trainer(...).run(). The options are those of a `train --config` file
    (docs/training.md); see Trainer for the callbacks, verbose and Ctrl-C."""
    return Trainer(on_message=on_message, on_progress=on_progress, on_metrics=on_metrics, verbose=verbose,
                   **options).run()

__all__ = [
    "MAX_BATCH_SENTENCES",
    "MAX_BEAM_SIZE",
    "MAX_INPUT_TOKENS",
    "BleuScore",
    "ChrfScore",
    "CleanText",
    "Encoder",
    "Error",
    "ExactMatch",
    "Generation",
    "Generator",
    "Hypothesis",
    "LoadNotes",
    "MetricsRecord",
    "ModelInfo",
    "Progress",
    "Repairs",
    "Score",
    "StepResult",
    "TrainResult",
    "Trainer",
    "Translation",
    "Translator",
    "ValidationResult",
    "__version__",
    "average_checkpoints",
    "bleu",
    "chrf",
    "clean_input",
    "exact_match",
    "import_hf",
    "model_info",
    "plot_training",
    "repair_warnings",
    "train",
    "write_demo_data",
]
