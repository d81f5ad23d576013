// Validating a model during training, and what a scheduled validation does to the run's state.
#include "train/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "decode/scorer.h"
#include "decode/translator.h"
#include "eval/bleu.h"
#include "eval/exact_match.h"
#include "train/batch_loss.h"

namespace tfm {

ValidationResult validate(const Transformer& model, const Vocab& vocab, const ValidData& data, const TrainOptions& o,
                          const Objective& objective) {
  ValidationResult r;
  // Loss: the plain cross-entropy per target token (no smoothing), so that ppl = exp(loss).
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& indices : plan_batches(data.examples, o.batch_tokens)) {
    const Batch batch = objective_batch(objective, data.examples, indices, model.config(), kValidationRound);
    const ops::LossSum s = score_batch(model, model.context(), batch, 0.0, nullptr).sum;
    nll += s.loss;
    tokens += s.tokens;
  }
  r.loss = tokens ? nll / static_cast<double>(tokens) : 0;
  r.ppl = std::exp(r.loss);
  if (objective.kind != Objective::Kind::kTranslation) return r;  // a language model translates nothing
  // BLEU and exact match of the translations.
  const size_t n = o.valid_max_sentences > 0 ? std::min(data.src.size(), static_cast<size_t>(o.valid_max_sentences))
                                             : data.src.size();
  TranslateOptions to;
  to.search.beam_size = o.valid_beam;
  // One batch at a time on all threads: no second batch's caches on top of training's memory, and
  // the unpacked model's large products stay on oneDNN with every thread.
  to.parallel_batches = 1;
  const std::vector<std::vector<int32_t>> sources(data.src.begin(), data.src.begin() + static_cast<std::ptrdiff_t>(n));
  const std::vector<Translation> out = translate_ids(model, sources, to);
  std::vector<std::string> hyps, refs;
  for (size_t i = 0; i < n; ++i) {
    hyps.push_back(out[i].hypotheses.empty() ? "" : vocab.decode(out[i].hypotheses[0].tokens));
    refs.push_back(data.references[i]);
  }
  if (n > 0) {
    r.bleu = corpus_bleu(hyps, {refs}).score;
    const ExactMatch m = exact_match(hyps, {refs});  // as `eval --metrics exact`
    r.exact = static_cast<double>(m.matches) / static_cast<double>(m.segments);
  }
  return r;
}

bool record_validation(const ValidationResult& r, const TrainOptions& o, TrainState& s) {
  const double score = o.best_metric == "bleu" && !language_model(o) ? r.bleu : -r.loss;
  const bool better = !s.has_best || score > s.best;
  if (better) {
    s.has_best = true;
    s.best = score;
    s.bad_validations = 0;
  } else {
    ++s.bad_validations;
  }
  return better;
}

std::string validation_line(int64_t step, const ValidationResult& r, bool best, bool translation) {
  char line[256];
  if (!translation) {
    std::snprintf(line, sizeof line, "validation at step %lld: loss %.4f | ppl %.2f%s", static_cast<long long>(step),
                  r.loss, r.ppl, best ? " (best)" : "");
    return line;
  }
  std::snprintf(line, sizeof line, "validation at step %lld: loss %.4f | ppl %.2f | BLEU %.2f | exact %.1f%%%s",
                static_cast<long long>(step), r.loss, r.ppl, r.bleu, 100 * r.exact, best ? " (best)" : "");
  return line;
}

}  // namespace tfm
