// What the public API's loaders share (api/loading.h): the vocabulary checked against the model,
// the inference copies of the weights on their device, and bounded tokenizing of a text.
#include "api/loading.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "core/device.h"
#include "core/error.h"
#include "model/checkpoint.h"

namespace transformer::api {

using tfm::cat;

tfm::Vocab load_matching_vocab(const std::string& model_path, const std::string& vocab_option,
                               const tfm::Transformer& model, const std::string& fingerprint, LoadNotes& notes) {
  const std::string vocab = vocab_option.empty() ? tfm::default_vocab_path(model_path) : vocab_option;
  TFM_CHECK(std::filesystem::exists(vocab), "no vocabulary: '", vocab, "' does not exist (give vocab, --vocab)");
  tfm::Vocab out = tfm::Vocab::load(vocab);
  TFM_CHECK(out.size() == model.config().vocab_size, "the vocabulary '", vocab, "' has ", out.size(),
            " pieces but the model has ", model.config().vocab_size);
  TFM_CHECK(fingerprint.empty() || fingerprint == out.fingerprint(), "the vocabulary '", vocab, "' is not the one '",
            model_path, "' was trained with (fingerprint ", out.fingerprint(), ", the model's ", fingerprint, ")");
  if (fingerprint.empty())
    notes.warnings.push_back(cat("'", model_path, "' records no vocabulary fingerprint, so nothing checks that '", vocab,
                                 "' is the vocabulary it was trained with (one of the same size but other pieces "
                                 "translates garbage)"));
  return out;
}

void prepare_inference_weights(tfm::Transformer& model, TranslatorOptions::Weights weights, const std::string& device_name,
                               const char* work) {
  using W = TranslatorOptions::Weights;
  constexpr auto kRelease = tfm::Transformer::PlainWeights::kRelease;
  const tfm::Device device = tfm::parse_device(device_name, "device");
  if (device != tfm::Device::CPU) {
    TFM_CHECK(weights != W::kInt8, "int8 weights are for the CPU; on ", device_name,
              " the model runs in float32 (leave out the int8 weights, --int8)");
    tfm::require_device_memory(device, work);
    model.params().to_device(device, /*gradients=*/false);  // inference needs none
    // Packed there too (ops/packed.h): each decoder self-attention's Q, K and V as one product, the
    // biases and ReLU in the products' epilogues; with kBf16 the weights rounded to bfloat16 once
    // (the float32 ones given back), not at every product. kPlain: the weights as they are.
    if (weights == W::kBf16) model.use_bf16_products(kRelease);
    else if (weights == W::kPacked) model.pack_weights(kRelease);
  } else if (weights == W::kInt8) {
    model.quantize_int8(kRelease);
  } else if (weights == W::kPacked) {
    model.pack_weights(kRelease);
  } else if (weights == W::kBf16) {
    // Packed in bfloat16 where the CPU has bf16 instructions (every product, scoring's whole-target
    // forward pass included), the plain weights given back.
    model.use_bf16_products(kRelease);
  }
}

std::vector<int32_t> encode_bounded(const tfm::Vocab& vocab, const std::string& text, int64_t max_tokens,
                                    tfm::Side side, bool& cut) {
  const size_t first = static_cast<size_t>(max_tokens) * kBytesPerToken;
  cut = false;
  for (size_t limit = first; limit < text.size(); limit *= 2) {
    size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // UTF-8 (clean_input's)
    std::vector<int32_t> ids = vocab.encode(text.substr(0, end), side);
    if (static_cast<int64_t>(ids.size()) > max_tokens || limit >= first * kMaxGrowth) {
      cut = true;
      return ids;
    }
  }
  return vocab.encode(text, side);
}

std::vector<int32_t> parse_id_line(std::string_view line, int64_t line_number,
                                   const std::function<void(long long id, const std::string& word)>& check) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    if (pos == line.size()) break;
    size_t end = pos;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
    const std::string word(line.substr(pos, end - pos));
    pos = end;
    char* stop = nullptr;
    errno = 0;
    const long long v = std::strtoll(word.c_str(), &stop, 10);
    TFM_CHECK(stop && *stop == '\0', "line ", line_number, ": '", word, "' is not a token id");
    // Out of range for strtoll too (ERANGE clamps it): the id as written, not the clamped value.
    check(errno == ERANGE ? -1 : v, word);
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

}  // namespace transformer::api
