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
    ModelInfo,
    Repairs,
    Score,
    Translation,
    Translator,
    __version__,
    average_checkpoints,
    bleu,
    chrf,
    clean_input,
    exact_match,
    model_info,
    repair_warnings,
)

# Tracebacks and reprs name transformer.Error, transformer.Translator, ... (not the C++ module).
for _cls in (BleuScore, ChrfScore, CleanText, Error, ExactMatch, Hypothesis, LoadNotes, ModelInfo, Repairs, Score,
             Translation, Translator):
    _cls.__module__ = __name__
del _cls

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
    "ModelInfo",
    "Repairs",
    "Score",
    "Translation",
    "Translator",
    "__version__",
    "average_checkpoints",
    "bleu",
    "chrf",
    "clean_input",
    "exact_match",
    "model_info",
    "repair_warnings",
]
