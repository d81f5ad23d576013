// The vocabulary of an imported Hugging Face model, from its tokenizer files: tokenizer.json (the
// fast tokenizer), else tokenizer.model (a SentencePiece model, as Llama 2's and Mistral's folders
// hold), else BERT's vocab.txt with tokenizer_config.json's options. The model's bos and eos ids
// become the special tokens the tokenizer's post-processor adds around a text.
#include <filesystem>

#include <sentencepiece_processor.h>

#include "data/hf_tokenizer.h"
#include "import/hf_common.h"
#include "io/atomic_file.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// tokenizer_config.json's BertTokenizer options for a vocab.txt folder.
HfTokenizerFiles wordpiece_files(const fs::path& dir) {
  HfTokenizerFiles f;
  f.wordpiece_vocab = read_file((dir / "vocab.txt").string());
  const fs::path config_path = dir / "tokenizer_config.json";
  const json config = fs::exists(config_path) ? read_hf_json(config_path) : json::object();
  f.lowercase = hf_field<bool>(config, "do_lower_case", true, config_path);
  f.chinese_chars = hf_field<bool>(config, "tokenize_chinese_chars", true, config_path);
  const auto it = config.find("strip_accents");
  f.strip_accents = it == config.end() || it->is_null() ? -1 : hf_field<bool>(config, "strip_accents", false, config_path);
  return f;
}

// A SentencePiece tokenizer.model (ids as SentencePiece numbers them) as a piece vocabulary: its
// pieces in id order, segmenting both sides; control pieces (<s>, </s>, padding) not decoded.
Vocab sentencepiece_vocab(const fs::path& path, int64_t size) {
  const std::string bytes = read_file(path.string());
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(bytes);
  TFM_CHECK(status.ok(), "import hf: '", path.string(), "' is not a SentencePiece model: ", status.ToString());
  std::vector<std::string> pieces;
  std::vector<int32_t> skipped;
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    pieces.push_back(sp.IdToPiece(id));
    if (sp.IsControl(id)) skipped.push_back(id);
  }
  TFM_CHECK(static_cast<int64_t>(pieces.size()) == size, "import hf: '", path.string(), "' has ", pieces.size(),
            " pieces but config.json's vocab_size is ", size, "; a padded embedding needs tokenizer.json");
  return Vocab::from_pieces(std::move(pieces), bytes, bytes, sp.unk_id(), skipped, cat("'", path.string(), "'"),
                            cat("'", path.string(), "'"));
}

// The special ids the tokenizer adds around one text become the model's: an encoder-only model
// wraps a text as [bos] tokens eos; a decoder-only one puts bos (if any) before a prompt.
void adopt_special_ids(const HfTokenizer& t, const HfFolderInfo& folder, ModelConfig& c) {
  const auto& prefix = t.prefix_ids();
  const auto& suffix = t.suffix_ids();
  TFM_CHECK(prefix.size() <= 1 && suffix.size() <= 1, "import hf: ", folder.dir.string(),
            ": the tokenizer adds ", prefix.size(), " tokens before a text and ", suffix.size(),
            " after it; at most one each is supported");
  for (const auto* ids : {&prefix, &suffix})
    for (int32_t id : *ids)
      TFM_CHECK(id >= 0 && id < c.vocab_size, "import hf: ", (folder.dir / "tokenizer.json").string(),
                ": the post_processor adds id ", id, " to each text, outside the model's vocabulary (vocab_size ",
                c.vocab_size, ")");
  if (c.architecture == "encoder-only") {
    TFM_CHECK(suffix.size() == 1, "import hf: ", folder.dir.string(),
              ": the tokenizer adds no token after a text (BERT's [SEP]), which an encoder-only model needs");
    c.bos_id = prefix.empty() ? -1 : prefix[0];
    c.eos_id = suffix[0];
  } else if (c.architecture == "decoder-only") {
    c.bos_id = prefix.empty() ? -1 : prefix[0];
  }
  if (const auto unk = t.unk_id()) c.unk_id = *unk;
}
}  // namespace

Vocab hf_vocabulary(const HfFolderInfo& folder, ModelConfig& config) {
  const fs::path json_path = folder.dir / "tokenizer.json", spm = folder.dir / "tokenizer.model",
                 wordpiece = folder.dir / "vocab.txt";
  if (!fs::exists(json_path) && fs::exists(spm)) return sentencepiece_vocab(spm, config.vocab_size);
  TFM_CHECK(fs::exists(json_path) || fs::exists(wordpiece), "import hf: ", folder.dir.string(),
            " has no tokenizer: none of tokenizer.json, tokenizer.model, vocab.txt");
  HfTokenizerFiles files;
  std::string what;
  if (fs::exists(json_path)) {
    files.tokenizer_json = read_file(json_path.string());
    what = cat("'", json_path.string(), "'");
    TFM_CHECK(!files.tokenizer_json.empty(), "import hf: ", what, " is empty (an interrupted download?)");
  } else {
    files = wordpiece_files(folder.dir);
    what = cat("'", wordpiece.string(), "'");
  }
  files.size = config.vocab_size;
  Vocab v = Vocab::from_hf_tokenizer(std::move(files), what);
  adopt_special_ids(*v.hf_tokenizer(), folder, config);
  return v;
}

}  // namespace tfm
