// Reading and encoding a training's pairs, and the vocabulary it encodes them with.
#include "train/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "data/monolingual_corpus.h"
#include "data/parallel_corpus.h"
#include "io/checksum.h"
#include "train/ranks.h"

namespace tfm {

namespace fs = std::filesystem;

namespace {

using Message = std::function<void(const std::string&)>;

std::vector<SentencePair> read_training_pairs(const TrainOptions& o, dist::Communicator& comm, const Message& message) {
  CorpusStats stats;
  std::vector<SentencePair> pairs = read_parallel(o.train_source, o.train_target, o.max_chars, &stats);
  message(cat("training data: ", stats.summary()));
  TFM_CHECK(!pairs.empty(), "no usable training pairs in '", o.train_source, "' and '", o.train_target, "'");
  if (comm.size() > 1) {
    // Each rank reads its own copy of the training files (machines may not share a disk): they
    // must hold the same text, or the ranks would train on different batches.
    Checksum text;
    for (const auto& p : pairs) {
      text.update(p.source);
      text.update("\t");
      text.update(p.target);
      text.update("\n");
    }
    check_same_as_root(comm, text.value(), cat("training data ('", o.train_source, "', '", o.train_target, "')"));
  }
  return pairs;
}

// Rank 0's vocabulary (--vocab, the run folder's, or trained on `sentences`), sent to the other
// ranks; `symbols` are the user-defined pieces a trained one gets ("<mask>" for a masked LM).
Vocab shared_vocab(const TrainOptions& o, dist::Communicator& comm, const std::vector<std::string>& sentences,
                   const std::vector<std::string>& symbols, const Message& message) {
  const std::string vocab_path = (fs::path(o.run_dir) / "vocab.model").string();
  Vocab vocab;
  if (comm.is_root() && !o.vocab.empty()) {
    vocab = Vocab::load(o.vocab);
    vocab.save(vocab_path);
  } else if (comm.is_root() && o.resume && fs::exists(vocab_path)) {
    vocab = Vocab::load(vocab_path);
  } else if (comm.is_root()) {
    VocabOptions vo = o.vocab_options;
    vo.seed = o.seed;
    vo.user_defined_symbols = symbols;
    vocab = Vocab::train(sentences, vo);
    vocab.save(vocab_path);
    message(cat("vocabulary: ", vocab.size(), " ", vo.model_type, " pieces, written to ", vocab_path));
  }
  if (comm.size() > 1) {
    std::string bytes = comm.is_root() ? vocab.serialized() : std::string();
    comm.broadcast(bytes, 0);
    if (!comm.is_root()) vocab = Vocab::from_serialized(std::move(bytes), "rank 0's vocabulary");
  }
  return vocab;
}

// The pairs within max_tokens on both sides once split into pieces.
std::vector<Example> encode_training_pairs(const TrainOptions& o, const Vocab& vocab,
                                           const std::vector<SentencePair>& pairs, const Message& message) {
  std::vector<Example> examples;
  int64_t too_long = 0;
  for (const auto& p : pairs) {
    Example e{vocab.encode(p.source), vocab.encode(p.target)};
    if (static_cast<int64_t>(e.src.size()) > o.max_tokens || static_cast<int64_t>(e.tgt.size()) > o.max_tokens) {
      ++too_long;
      continue;
    }
    examples.push_back(std::move(e));
  }
  if (too_long)
    message(cat("skipped ", too_long, too_long == 1 ? " pair" : " pairs", " longer than ", o.max_tokens,
                " tokens (max_tokens) once split into pieces"));
  TFM_CHECK(!examples.empty(), "every training pair is longer than max_tokens ", o.max_tokens);
  return examples;
}

ValidData encode_validation_pairs(const Vocab& vocab, const std::vector<SentencePair>& pairs) {
  ValidData valid;
  for (const auto& p : pairs) {
    valid.examples.push_back({vocab.encode(p.source), vocab.encode(p.target)});
    valid.src.push_back(valid.examples.back().src);
    valid.references.push_back(p.target);
  }
  return valid;
}

std::vector<std::string> read_text(const std::string& path, int64_t max_chars, const char* what,
                                   const Message& message) {
  TextStats stats;
  std::vector<std::string> lines = read_monolingual(path, max_chars, &stats);
  message(cat(what, ": ", stats.summary()));
  return lines;
}

// A language model's training sentences, checked to be rank 0's on every rank.
std::vector<std::string> read_training_text(const TrainOptions& o, dist::Communicator& comm, const Message& message) {
  std::vector<std::string> lines = read_text(o.train_text, o.max_chars, "training text", message);
  TFM_CHECK(!lines.empty(), "no usable training lines in '", o.train_text, "' (train_text): it is empty, or every "
            "line is empty, longer than max_chars ", o.max_chars, " or not valid UTF-8");
  if (comm.size() > 1) {
    Checksum text;
    for (const auto& line : lines) {
      text.update(line);
      text.update("\n");
    }
    check_same_as_root(comm, text.value(), cat("training text ('", o.train_text, "')"));
  }
  return lines;
}

// The vocabulary's "<mask>" (a masked LM's), or an error naming the vocabulary that lacks it.
int32_t find_mask_id(const TrainOptions& o, const Vocab& vocab) {
  const int32_t id = vocab.piece_id(kMaskPiece);
  const std::string path = o.vocab.empty() ? (fs::path(o.run_dir) / "vocab.model").string() : o.vocab;
  TFM_CHECK(id >= 0, "the vocabulary '", path, "' has no ", kMaskPiece, " piece, which encoder-only (masked-LM) "
            "training needs: train one with the run (leave out vocab, --vocab), which adds it, or give a "
            "SentencePiece model trained with --user_defined_symbols=", kMaskPiece);
  return id;
}

// A language model's sentences within max_tokens (a masked LM's with a token to mask), as Example::tgt.
std::vector<Example> encode_sentences(const TrainingCorpus& c, const std::vector<std::string>& lines,
                                      int64_t max_tokens, int64_t* skipped) {
  std::vector<Example> examples;
  for (const auto& line : lines) {
    Example e{{}, c.vocab.encode(line)};
    if (static_cast<int64_t>(e.tgt.size()) > max_tokens || loss_tokens(c.objective, e) == 0) ++*skipped;
    else examples.push_back(std::move(e));
  }
  return examples;
}

// The perplexity of the validation tokens the loss counts under the training text's token
// frequencies (add-one smoothed): the baseline a language model must beat.
double unigram_perplexity(const TrainingCorpus& c, int32_t eos_id) {
  std::vector<double> counts(static_cast<size_t>(c.vocab.size()), 1.0);
  const MaskingOptions& m = c.objective.masking;
  auto counted = [&](int32_t id) {  // what the loss predicts: every token and EOS, or the maskable ones
    if (c.objective.kind != Objective::Kind::kMasked) return true;
    return id != m.mask_id && std::find(m.special.begin(), m.special.end(), id) == m.special.end();
  };
  auto each = [&](const std::vector<Example>& examples, auto&& f) {
    for (const Example& e : examples) {
      for (const int32_t id : e.tgt)
        if (counted(id)) f(id);
      if (c.objective.kind == Objective::Kind::kCausal) f(eos_id);
    }
  };
  double total = 0;
  each(c.examples, [&](int32_t id) { counts[static_cast<size_t>(id)] += 1, total += 1; });
  total += static_cast<double>(counts.size());
  double nll = 0, n = 0;
  each(c.valid.examples, [&](int32_t id) { nll -= std::log(counts[static_cast<size_t>(id)] / total), n += 1; });
  return n > 0 ? std::exp(nll / n) : 0;
}

// prepare_corpus for a language model: sentences instead of pairs.
TrainingCorpus prepare_text_corpus(const TrainOptions& o, dist::Communicator& comm, const Message& message) {
  const std::vector<std::string> lines = read_training_text(o, comm, message);
  std::vector<std::string> valid_lines;
  if (!o.valid_text.empty() && comm.is_root())
    valid_lines = read_text(o.valid_text, o.max_chars, "validation text", message);
  const bool masked = model_architecture(o) == "encoder-only";
  TrainingCorpus corpus;
  const std::vector<std::string> none;
  corpus.vocab = shared_vocab(o, comm, comm.is_root() ? lines : none,
                              masked ? std::vector<std::string>{kMaskPiece} : none, message);
  if (masked) corpus.mask_id = find_mask_id(o, corpus.vocab);
  const ModelConfig config = o.resolved_model(corpus.vocab.size());
  corpus.objective = make_objective(config, o.mask_fraction, corpus.mask_id, o.seed);
  int64_t skipped = 0, valid_skipped = 0;
  corpus.examples = encode_sentences(corpus, lines, o.max_tokens, &skipped);
  if (skipped)
    message(cat("skipped ", skipped, skipped == 1 ? " sentence" : " sentences", " longer than ", o.max_tokens,
                " tokens (max_tokens) once split into pieces", masked ? ", or without a token to mask" : ""));
  TFM_CHECK(!corpus.examples.empty(), "every training sentence in '", o.train_text, "' is longer than max_tokens ",
            o.max_tokens, masked ? " or has no token to mask" : "");
  corpus.valid.examples = encode_sentences(corpus, valid_lines, o.max_tokens, &valid_skipped);
  int64_t validates = !corpus.valid.examples.empty();
  if (validates) {
    char ppl[32];
    std::snprintf(ppl, sizeof ppl, "%.2f", unigram_perplexity(corpus, config.eos_id));
    message(cat("unigram baseline: validation perplexity ", ppl, " (the training text's token frequencies, add-one "
                "smoothed, over the tokens the loss counts)"));
  }
  if (comm.size() > 1) comm.broadcast(validates, 0);
  corpus.validates = validates != 0;
  return corpus;
}

}  // namespace

void check_input_files(const TrainOptions& o, bool root) {
  for (const std::string& f : language_model(o) ? std::vector{o.train_text} : std::vector{o.train_source, o.train_target})
    TFM_CHECK(fs::is_regular_file(f), "'", f, "' is not a readable file");
  if (!root) return;
  for (const std::string& f : {o.valid_source, o.valid_target, o.valid_text})
    TFM_CHECK(f.empty() || fs::is_regular_file(f), "'", f, "' is not a readable file");
  TFM_CHECK(o.vocab.empty() || fs::is_regular_file(o.vocab), "vocab (--vocab) '", o.vocab, "' is not a readable file");
}

TrainingCorpus prepare_corpus(const TrainOptions& o, dist::Communicator& comm, const Message& message) {
  if (language_model(o)) return prepare_text_corpus(o, comm, message);
  const std::vector<SentencePair> pairs = read_training_pairs(o, comm, message);
  // The validation files too, before minutes of training a vocabulary: a mismatch shows at once.
  std::vector<SentencePair> valid_pairs;
  if (!o.valid_source.empty() && comm.is_root()) {
    CorpusStats vstats;
    valid_pairs = read_parallel(o.valid_source, o.valid_target, o.max_chars, &vstats);
    message(cat("validation data: ", vstats.summary()));
  }
  TrainingCorpus corpus;
  std::vector<std::string> sentences;  // both sides, for training a vocabulary on rank 0
  for (size_t i = 0; comm.is_root() && i < pairs.size(); ++i) {
    sentences.push_back(pairs[i].source);
    sentences.push_back(pairs[i].target);
  }
  corpus.vocab = shared_vocab(o, comm, sentences, {}, message);
  corpus.examples = encode_training_pairs(o, corpus.vocab, pairs, message);
  corpus.valid = encode_validation_pairs(corpus.vocab, valid_pairs);
  int64_t validates = !corpus.valid.examples.empty();
  if (comm.size() > 1) comm.broadcast(validates, 0);
  corpus.validates = validates != 0;
  return corpus;
}

}  // namespace tfm
