"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017): translation, scoring,
model files and BLEU/chrF from Python, over the project's C++ library (docs/python.md).

    import transformer

    t = transformer.Translator("runs/demo/model.safetensors")
    for r in t.translate(["three hundred forty-two"], beam=4, n_best=2):
        print(r.best.text, [h.score for h in r.hypotheses])

Every computing call releases the GIL. Errors of the library raise transformer.Error (a
RuntimeError) with the C++ library's message.
"""

from ._transformer import (
    MAX_BATCH_SENTENCES,
    MAX_BEAM_SIZE,
    MAX_INPUT_TOKENS,
    BleuScore,
    ChrfScore,
    CleanText,
    Error,
    ExactMatch,
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
    model_info,
    plot_training,
    repair_warnings,
    write_demo_data,
)

# Tracebacks and reprs name transformer.Error, transformer.Translator, ... (not the C++ module).
for _cls in (BleuScore, ChrfScore, CleanText, Error, ExactMatch, Hypothesis, LoadNotes, MetricsRecord, ModelInfo,
             Progress, Repairs, Score, StepResult, Trainer, TrainResult, Translation, Translator, ValidationResult):
    _cls.__module__ = __name__
del _cls


def train(*, on_message=None, on_progress=None, on_metrics=None, **options) -> TrainResult:
    """Trains to the end: Trainer(...).run(). The options are those of a `train --config` file
    (docs/training.md); see Trainer for the callbacks and Ctrl-C."""
    return Trainer(on_message=on_message, on_progress=on_progress, on_metrics=on_metrics, **options).run()

__all__ = [
    "MAX_BATCH_SENTENCES",
    "MAX_BEAM_SIZE",
    "MAX_INPUT_TOKENS",
    "BleuScore",
    "ChrfScore",
    "CleanText",
    "Error",
    "ExactMatch",
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
    "model_info",
    "plot_training",
    "repair_warnings",
    "train",
    "write_demo_data",
]
