#include "cli/model_io.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.h"

namespace tfm::cli {

void add_model_options(CLI::App& cmd, ModelPaths& paths) {
  cmd.add_option("-m,--model", paths.model, "model file (.safetensors)")->required();
  cmd.add_option("--vocab", paths.vocab, "SentencePiece model (default: vocab.model beside the model)");
  add_no_verify_flag(cmd, paths.no_verify);
}

void add_no_verify_flag(CLI::App& cmd, bool& no_verify) {
  cmd.add_flag("--no-verify", no_verify,
               "skip the model file's checksum (loads faster; damaged weights then go unnoticed unless they are "
               "not finite)");
}

std::unique_ptr<Transformer> load_model_noting(const SafetensorsFile& file, bool no_verify) {
  auto model = load_model(file, DType::F32, no_verify ? Checksums::kSkip : Checksums::kVerify);
  if (!no_verify && !file.has_checksum())
    std::fprintf(stderr,
                 "note: '%s' records no checksum (model format version 1), so damage to it goes unnoticed; "
                 "`transformer average %s -o NEW` writes a copy with one\n",
                 file.source().c_str(), file.source().c_str());
  return model;
}

std::vector<int32_t> parse_ids(const std::string& line, int64_t line_number, const ModelConfig& c) {
  std::vector<int32_t> ids;
  std::istringstream s(line);
  std::string word;
  while (s >> word) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    TFM_CHECK(end && *end == '\0', "line ", line_number, ": '", word, "' is not a token id");
    // Out of range for strtoll too (ERANGE clamps it): the id as written, not the clamped value.
    TFM_CHECK(errno != ERANGE && v >= 0 && v < c.vocab_size, "line ", line_number, ": token id ", word,
              " is outside the vocabulary [0, ", c.vocab_size, ")");
    // The model adds BOS and EOS itself; padding is not a token.
    TFM_CHECK(v != c.pad_id && v != c.bos_id && v != c.eos_id, "line ", line_number, ": token id ", v,
              " is the ", v == c.pad_id ? "padding" : v == c.bos_id ? "beginning-of-sentence" : "end-of-sentence",
              " id, which input may not contain");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out;
}

LoadedModel load_model_and_vocab(const ModelPaths& paths, bool need_vocab) {
  LoadedModel lm;
  const SafetensorsFile file = SafetensorsFile::read(paths.model);
  lm.model = load_model_noting(file, paths.no_verify);
  if (const auto it = file.metadata().find(kVocabFingerprintKey); it != file.metadata().end())
    lm.vocab_fingerprint = it->second;
  if (need_vocab) {
    const std::string vocab = paths.vocab.empty()
                                  ? (std::filesystem::path(paths.model).parent_path() / "vocab.model").string()
                                  : paths.vocab;
    TFM_CHECK(std::filesystem::exists(vocab), "no vocabulary: '", vocab, "' does not exist (give --vocab)");
    lm.vocab = Vocab::load(vocab);
    TFM_CHECK(lm.vocab.size() == lm.model->config().vocab_size, "the vocabulary '", vocab, "' has ", lm.vocab.size(),
              " pieces but the model has ", lm.model->config().vocab_size);
    TFM_CHECK(lm.vocab_fingerprint.empty() || lm.vocab_fingerprint == lm.vocab.fingerprint(), "the vocabulary '",
              vocab, "' is not the one '", paths.model, "' was trained with (fingerprint ", lm.vocab.fingerprint(),
              ", the model's ", lm.vocab_fingerprint, ")");
    if (lm.vocab_fingerprint.empty())
      std::fprintf(stderr,
                   "warning: '%s' records no vocabulary fingerprint, so nothing checks that '%s' is the vocabulary "
                   "it was trained with (one of the same size but other pieces translates garbage)\n",
                   paths.model.c_str(), vocab.c_str());
  }
  return lm;
}

}  // namespace tfm::cli
