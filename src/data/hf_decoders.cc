// tokenizer.json's decoders (WordPiece, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip,
// BPEDecoder, Sequence) and post-processors (TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel, Sequence), with the tokenizers library's semantics.
#include <functional>

#include "core/error.h"
#include "core/json_text.h"
#include "data/hf_byte_level.h"
#include "data/hf_components.h"
#include "data/text.h"

namespace tfm::hf {
namespace {

using Tokens = std::vector<std::string>;

class FunctionDecoder : public Decoder {
 public:
  explicit FunctionDecoder(std::function<Tokens(Tokens)> f) : f_(std::move(f)) {}
  Tokens decode_chain(Tokens tokens) const override { return f_(std::move(tokens)); }

 private:
  std::function<Tokens(Tokens)> f_;
};
std::unique_ptr<Decoder> decoder(std::function<Tokens(Tokens)> f) {
  return std::make_unique<FunctionDecoder>(std::move(f));
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
}

// The WordPiece decoder's cleanup of tokenization spaces.
std::string cleanup(std::string s) {
  for (const auto& [from, to] : {std::pair{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                 {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
                                 {" 've", "'ve"}, {" 're", "'re"}}) {
    replace_all(s, from, to);
  }
  return s;
}

std::unique_ptr<Decoder> wordpiece(const nlohmann::json& spec, const Where& where) {
  const std::string prefix = get_string(spec, "prefix", "##", where);
  const bool clean = get_bool(spec, "cleanup", true, where);
  return decoder([prefix, clean](Tokens tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      auto& t = tokens[i];
      if (i != 0) t = t.rfind(prefix, 0) == 0 ? t.substr(prefix.size()) : " " + t;
      if (clean) t = cleanup(std::move(t));
    }
    return tokens;
  });
}

Tokens byte_level(Tokens tokens) {
  std::string bytes;
  for (const auto& t : tokens) {
    const auto b = unicode_to_bytes(t);
    bytes += b ? *b : t;
  }
  return {unicode::repair(bytes)};
}

Tokens byte_fallback(Tokens tokens) {
  Tokens out;
  std::string pending;
  auto flush = [&] {
    if (pending.empty()) return;
    if (valid_utf8(pending)) {
      out.push_back(pending);
    } else {
      for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (auto& t : tokens) {
    if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
        std::isxdigit(static_cast<unsigned char>(t[4]))) {
      pending += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  return out;
}

std::unique_ptr<Decoder> strip(const nlohmann::json& spec, const Where& where) {
  const std::u32string content = unicode::to_utf32(get_string(spec, "content", " ", where));
  if (content.size() != 1) where["content"].fail("must be one character");
  const auto start = static_cast<size_t>(get_int(spec, "start", 0, where));
  const auto stop = static_cast<size_t>(get_int(spec, "stop", 0, where));
  return decoder([c = content[0], start, stop](Tokens tokens) {
    for (auto& t : tokens) {
      std::u32string chars = unicode::to_utf32(t);
      size_t b = 0, e = chars.size();
      while (b < start && b < chars.size() && chars[b] == c) ++b;
      for (size_t i = 0; i < stop && e > b && chars[e - 1] == c; ++i) --e;
      t = unicode::to_utf8(std::u32string_view(chars).substr(b, e - b));
    }
    return tokens;
  });
}

std::unique_ptr<Decoder> metaspace(const nlohmann::json& spec, const Where& where) {
  const std::string replacement = get_string(spec, "replacement", "\u2581", where);
  std::string scheme = get_string(spec, "prepend_scheme", "always", where);
  if (!get_bool(spec, "add_prefix_space", true, where)) scheme = "never";
  return decoder([replacement, scheme](Tokens tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], replacement, i == 0 && scheme != "never" ? "" : " ");
    return tokens;
  });
}

std::unique_ptr<Decoder> replace(const nlohmann::json& spec, const Where& where) {
  auto pattern = std::make_shared<unicode::Regex>(make_pattern(required(spec, "pattern", where), where["pattern"]));
  const std::string content = get_string(spec, "content", "", where);
  return decoder([pattern, content](Tokens tokens) {
    for (auto& t : tokens) {
      std::string out;
      size_t prev = 0;
      for (const auto& [b, e] : pattern->find_all(t)) {
        out.append(t, prev, b - prev);
        out += content;
        prev = e;
      }
      t = out + t.substr(prev);
    }
    return tokens;
  });
}

std::unique_ptr<Decoder> bpe_decoder(const nlohmann::json& spec, const Where& where) {
  const std::string suffix = get_string(spec, "suffix", "</w>", where);
  return decoder([suffix](Tokens tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (!suffix.empty()) replace_all(tokens[i], suffix, i + 1 == tokens.size() ? "" : " ");
    }
    return tokens;
  });
}

std::unique_ptr<Decoder> sequence(const nlohmann::json& spec, const Where& where) {
  const auto& list = required(spec, "decoders", where);
  if (!list.is_array()) where["decoders"].fail(cat("must be a list, got ", json_quote(list)));
  std::vector<std::shared_ptr<Decoder>> parts;
  for (size_t i = 0; i < list.size(); ++i) parts.push_back(make_decoder(list[i], where["decoders"][i]));
  return decoder([parts](Tokens tokens) {
    for (const auto& p : parts) tokens = p->decode_chain(std::move(tokens));
    return tokens;
  });
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const Where& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = type_of(spec, where);
  if (type == "WordPiece") return wordpiece(spec, where);
  if (type == "ByteLevel") return decoder(byte_level);
  if (type == "Metaspace") return metaspace(spec, where);
  if (type == "Replace") return replace(spec, where);
  if (type == "ByteFallback") return decoder(byte_fallback);
  if (type == "Fuse") return decoder([](Tokens tokens) {
      std::string all;
      for (const auto& t : tokens) all += t;
      return Tokens{all};
    });
  if (type == "Strip") return strip(spec, where);
  if (type == "BPEDecoder") return bpe_decoder(spec, where);
  if (type == "Sequence") return sequence(spec, where);
  where["type"].fail(cat("decoder '", type,
                         "' is not supported (supported: WordPiece, ByteLevel, Metaspace, Replace, ByteFallback, "
                         "Fuse, Strip, BPEDecoder, Sequence)"));
}

}  // namespace tfm::hf
