// Model files as a whole (include/transformer/model.h) and the loading shared by the API.
#include "transformer/model.h"

#include <filesystem>
#include <system_error>
#include <nlohmann/json.hpp>

#include "api/loading.h"
#include "core/error.h"
#include "model/checkpoint.h"

namespace transformer {

using tfm::cat;

namespace api {

std::unique_ptr<tfm::Transformer> load_model_noting(const tfm::SafetensorsFile& file, bool verify, LoadNotes& notes) {
  auto model = tfm::load_model(file, tfm::DType::F32, verify ? tfm::Checksums::kVerify : tfm::Checksums::kSkip);
  if (verify && !file.has_checksum())
    notes.notes.push_back(cat("'", file.source(), "' records no checksum (model format version 1), so damage to it ",
                              "goes unnoticed; `transformer average ", file.source(),
                              " -o NEW` writes a copy with one"));
  return model;
}

std::string vocab_fingerprint(const tfm::SafetensorsFile& file) {
  const auto it = file.metadata().find(tfm::kVocabFingerprintKey);
  return it == file.metadata().end() ? std::string() : it->second;
}

}  // namespace api

ModelInfo model_info(const std::string& path, bool verify) {
  ModelInfo info;
  const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(path);
  const auto model = api::load_model_noting(file, verify, info.notes);  // validates everything the file claims
  const tfm::ModelConfig& c = model->config();
  info.path = path;
  info.file_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  info.vocab_fingerprint = api::vocab_fingerprint(file);
  if (const auto sum = file.metadata().find(tfm::kChecksumKey); sum != file.metadata().end()) {
    info.checksum = sum->second;
    info.checksum_verified = verify;
  }
  const nlohmann::json j = c;
  for (const std::string& field : tfm::model_config_fields()) info.config.emplace_back(field, j[field].dump());
  info.head_dim = c.head_dim();
  info.tied_embeddings = c.tie_source_target;
  info.tied_output = c.tie_output;
  info.encoder_layers = c.has_encoder() ? c.encoder_layers : 0;  // a stack the architecture lacks: none
  info.decoder_layers = c.has_decoder() ? c.decoder_layers : 0;
  const tfm::ParamStore& p = model->params();
  for (int id = 0; id < p.size(); ++id) {
    const std::string& n = p.name(id);
    const int64_t count = p.shape(id).numel();
    // The embeddings with what joins them (positions, token types, their norm) and the output side.
    const bool embedding = n.find("embed.") != std::string::npos || n.starts_with("output.") ||
                           n.starts_with("positions.") || n.starts_with("token_types.") ||
                           n.starts_with("embed_norm.") || n.starts_with("mlm_head.");
    if (embedding) info.embedding_parameters += count;
    else if (n.starts_with("encoder.")) info.encoder_parameters += count;
    else info.decoder_parameters += count;
  }
  info.total_parameters = p.parameter_count();
  for (const auto& [k, v] : file.metadata())
    if (k != "config" && k != "format" && k != "format_version" && k != tfm::kChecksumKey) info.metadata[k] = v;
  return info;
}

int64_t init_model(const ModelConfig& config, uint64_t seed, const std::string& output) {
  config.validate();
  tfm::Transformer model(config);
  model.init_parameters(seed);
  tfm::save_model(model, output);
  return model.params().parameter_count();
}

namespace {
// Inputs to average record the same vocabulary fingerprint. A file without one (init, older
// versions) is of unknown vocabulary: averaged with one that has one, the output would claim a
// vocabulary that part of its weights may not know.
void check_same_vocabulary(const std::string& first, const std::string& first_vocab, const std::string& path,
                           const std::string& vocab) {
  TFM_CHECK(vocab.empty() || first_vocab.empty() || vocab == first_vocab, "cannot average '", path,
            "' with the earlier inputs: they were trained with different vocabularies (fingerprints ", vocab, " and ",
            first_vocab, ")");
  const auto says = [](const std::string& with, const std::string& fingerprint, const std::string& without) {
    return cat("'", with, "' records the vocabulary fingerprint ", fingerprint, " and '", without, "' none");
  };
  TFM_CHECK(vocab.empty() == first_vocab.empty(), "cannot average '", path, "' with '", first, "': ",
            vocab.empty() ? says(first, first_vocab, path) : says(path, vocab, first),
            ", so they may not share a vocabulary (files written by init and by older versions record none)");
}
}  // namespace

LoadNotes average_checkpoints(const std::vector<std::string>& inputs, const std::string& output, bool verify) {
  TFM_CHECK(!inputs.empty(), "average: give at least one model or checkpoint file");
  for (const std::string& input : inputs) {  // the output would replace a checkpoint being averaged
    std::error_code ec;
    TFM_CHECK(!std::filesystem::equivalent(output, input, ec), "average: the output '", output,
              "' is also a checkpoint to average ('", input, "'); give another file");
  }
  LoadNotes notes;
  // Summed in double, one checkpoint at a time, so memory stays at one model plus the sum.
  // The vocabulary fingerprint, recorded in every input or in none, must be the same in all; the
  // output keeps it.
  std::string fingerprint;
  std::unique_ptr<tfm::Transformer> first;
  {
    const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(inputs[0]);
    first = api::load_model_noting(file, verify, notes);
    fingerprint = api::vocab_fingerprint(file);
  }
  const nlohmann::json config = first->config();
  const tfm::Tensor& values = first->params().values();
  std::vector<double> sum = values.to_doubles();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const tfm::SafetensorsFile file = tfm::SafetensorsFile::read(inputs[i]);
    check_same_vocabulary(inputs[0], fingerprint, inputs[i], api::vocab_fingerprint(file));
    const std::unique_ptr<tfm::Transformer> m = api::load_model_noting(file, verify, notes);
    const nlohmann::json other = m->config();
    if (other != config) {  // named field by field: "d_model 256 here, 512 there"
      std::string fields;
      for (const auto& [field, value] : config.items())
        if (!other.contains(field) || other[field] != value)
          fields += cat(fields.empty() ? "" : ", ", field, " ", other.contains(field) ? other[field].dump() : "none",
                        " against ", value.dump());
      for (const auto& [field, value] : other.items())
        if (!config.contains(field)) fields += cat(fields.empty() ? "" : ", ", field, " ", value.dump(), " against none");
      throw tfm::Error(cat("cannot average '", inputs[i], "' with '", inputs[0], "': their configurations differ (",
                           fields, ")"));
    }
    const std::vector<double> v = m->params().values().to_doubles();
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += v[k];
  }
  const double n = static_cast<double>(inputs.size());
  float* out = values.data<float>();
  for (size_t k = 0; k < sum.size(); ++k) out[k] = static_cast<float>(sum[k] / n);
  std::map<std::string, std::string> meta = {{"averaged_from", std::to_string(inputs.size()) + " checkpoints"}};
  if (!fingerprint.empty()) meta[tfm::kVocabFingerprintKey] = fingerprint;
  tfm::save_model(*first, output, meta);
  return notes;
}

}  // namespace transformer
