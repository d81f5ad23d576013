// Reading and encoding a training's pairs, and the vocabulary it encodes them with.
#include "train/corpus.h"

#include <filesystem>

#include "core/error.h"
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

// Rank 0's vocabulary (--vocab, the run folder's, or trained), sent to the other ranks.
Vocab shared_vocab(const TrainOptions& o, dist::Communicator& comm, const std::vector<SentencePair>& pairs,
                   const Message& message) {
  const std::string vocab_path = (fs::path(o.run_dir) / "vocab.model").string();
  Vocab vocab;
  if (comm.is_root() && !o.vocab.empty()) {
    vocab = Vocab::load(o.vocab);
    vocab.save(vocab_path);
  } else if (comm.is_root() && o.resume && fs::exists(vocab_path)) {
    vocab = Vocab::load(vocab_path);
  } else if (comm.is_root()) {
    std::vector<std::string> sentences;
    for (const auto& p : pairs) {
      sentences.push_back(p.source);
      sentences.push_back(p.target);
    }
    VocabOptions vo = o.vocab_options;
    vo.seed = o.seed;
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

}  // namespace

void check_input_files(const TrainOptions& o, bool root) {
  for (const std::string& f : {o.train_source, o.train_target})
    TFM_CHECK(fs::is_regular_file(f), "'", f, "' is not a readable file");
  if (!root) return;
  for (const std::string& f : {o.valid_source, o.valid_target})
    TFM_CHECK(f.empty() || fs::is_regular_file(f), "'", f, "' is not a readable file");
  TFM_CHECK(o.vocab.empty() || fs::is_regular_file(o.vocab), "vocab (--vocab) '", o.vocab, "' is not a readable file");
}

TrainingCorpus prepare_corpus(const TrainOptions& o, dist::Communicator& comm, const Message& message) {
  const std::vector<SentencePair> pairs = read_training_pairs(o, comm, message);
  // The validation files too, before minutes of training a vocabulary: a mismatch shows at once.
  std::vector<SentencePair> valid_pairs;
  if (!o.valid_source.empty() && comm.is_root()) {
    CorpusStats vstats;
    valid_pairs = read_parallel(o.valid_source, o.valid_target, o.max_chars, &vstats);
    message(cat("validation data: ", vstats.summary()));
  }
  TrainingCorpus corpus;
  corpus.vocab = shared_vocab(o, comm, pairs, message);
  corpus.examples = encode_training_pairs(o, corpus.vocab, pairs, message);
  corpus.valid = encode_validation_pairs(corpus.vocab, valid_pairs);
  int64_t validates = !corpus.valid.src.empty();
  if (comm.size() > 1) comm.broadcast(validates, 0);
  corpus.validates = validates != 0;
  return corpus;
}

}  // namespace tfm
