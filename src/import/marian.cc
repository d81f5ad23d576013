// Marian models (OPUS-MT): model.npz holds the weights under Marian's names (matrices [in, out],
// biases [1, out]) and the model's options as YAML in the array "special:model.yml"; the vocabulary
// is a YAML map of pieces to ids; the text is segmented by source.spm and target.spm outside Marian.
#include <filesystem>
#include <set>

#include "core/error.h"
#include "import/import.h"
#include "import/tensors.h"
#include "io/atomic_file.h"
#include "io/marian_yaml.h"
#include "io/npz.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;

// What of Marian's options shapes the computation beyond the sizes: where the layer norms stand
// and the feed-forward's activation (Marian's name).
struct MarianArchitecture {
  bool pre_norm = false;
  std::string activation;
};

void check_inputs(const MarianImport& o) {
  for (const std::string* path : {&o.npz, &o.vocab, &o.source_spm, &o.target_spm})
    TFM_CHECK(fs::exists(*path), "import marian: '", *path, "' does not exist");
  TFM_CHECK(o.position_frequencies == "marian" || o.position_frequencies == "paper",
            "import marian: --position-frequencies must be marian or paper, got '", o.position_frequencies, "'");
}

// The model's options, from the npz's "special:model.yml" (`where` names it).
MarianConfig read_options(const NpzFile& npz, const std::string& npz_path, const std::string& where) {
  TFM_CHECK(npz.has("special:model.yml"), "import marian: ", npz_path,
            " has no 'special:model.yml' (the model's options), so it is not a Marian model");
  return parse_marian_config(npz.read_bytes("special:model.yml"), where);
}

// Every option that would change the computation and is not supported is refused, naming it
// (Marian's defaults where a key is absent).
MarianArchitecture check_supported(const MarianConfig& options, const std::string& where) {
  auto refuse_unless = [&](bool ok, const std::string& what) {
    TFM_CHECK(ok, "import marian: ", where, ": ", what, " is not supported");
  };
  const std::string type = options.get_string("type", "");
  refuse_unless(type == "transformer", cat("type '", type, "' (transformer is)"));
  const std::string autoreg = options.get_string("transformer-decoder-autoreg", "self-attention");
  refuse_unless(autoreg == "self-attention", cat("transformer-decoder-autoreg '", autoreg, "'"));
  refuse_unless(!options.get_bool("transformer-no-projection", false), "transformer-no-projection true");
  refuse_unless(!options.get_bool("transformer-train-position-embeddings", false),
                "transformer-train-position-embeddings true (learned positions)");
  refuse_unless(options.get_int("transformer-ffn-depth", 2) == 2,
                cat("transformer-ffn-depth ", options.get_int("transformer-ffn-depth", 2), " (2 is)"));
  const std::string emb = options.get_string("transformer-postprocess-emb", "d");
  refuse_unless(emb == "d" || emb.empty(), cat("transformer-postprocess-emb '", emb, "' (d is)"));
  const std::string pre = options.get_string("transformer-preprocess", ""),
                    post = options.get_string("transformer-postprocess", "dan"),
                    top = options.get_string("transformer-postprocess-top", "");
  MarianArchitecture a;
  a.pre_norm = pre == "n" && post == "da" && top == "n";
  refuse_unless(a.pre_norm || (pre.empty() && post == "dan" && top.empty()),
                cat("transformer-preprocess '", pre, "', -postprocess '", post, "', -postprocess-top '", top,
                    "' (post-norm: '', dan, ''; or pre-norm: n, da, n)"));
  a.activation = options.get_string("transformer-ffn-activation", "swish");
  refuse_unless(a.activation == "relu" || a.activation == "swish" || a.activation == "gelu",
                cat("transformer-ffn-activation '", a.activation, "' (relu, swish, gelu are)"));
  return a;
}

// Marian's options → ModelConfig, but for the vocabulary and the tied weights (set by the steps
// that read them).
ModelConfig model_config(const MarianConfig& options, const MarianArchitecture& a,
                         const std::string& position_frequencies) {
  ModelConfig c;
  c.d_model = options.get_int("dim-emb", 512);
  c.heads = options.get_int("transformer-heads", 8);
  c.d_ff = options.get_int("transformer-dim-ffn", 2048);
  c.encoder_layers = options.get_int("enc-depth", 6);
  c.decoder_layers = options.get_int("dec-depth", 6);
  c.activation = a.activation == "gelu" ? "gelu_sigmoid" : a.activation;  // Marian's gelu is x·σ(1.702x)
  c.pre_norm = a.pre_norm;
  c.positions = "sin_cos";
  c.position_frequencies = position_frequencies;
  c.position_offset = 0;
  c.scale_embeddings = true;  // Marian always multiplies by √D before adding positions
  c.layer_norm_eps = 1e-6;    // Marian's transformer layer norm
  c.dropout = options.get_double("transformer-dropout", 0.1);
  c.attention_dropout = options.get_double("transformer-dropout-attention", 0.0);
  c.embedding_dropout = c.dropout;
  c.pad_id = -1;  // Marian has no padding token: positions are masked
  c.bos_id = -1;  // the decoder starts from a zero vector (plus the first position's encoding)
  return c;
}

// The vocabulary .yml (one for both sides) with the SentencePiece models; sets the configuration's
// vocab_size, eos_id and unk_id, checked against the options' dim-vocabs.
Vocab read_vocabulary(const MarianImport& o, const MarianConfig& options, const std::string& where, ModelConfig& c) {
  std::vector<std::string> pieces = read_marian_vocab(o.vocab);
  if (!o.target_vocab.empty()) {
    const std::vector<std::string> target = read_marian_vocab(o.target_vocab);
    TFM_CHECK(target == pieces, "import marian: the target vocabulary '", o.target_vocab, "' differs from '", o.vocab,
              "'; separate source and target vocabularies are not supported yet");
  }
  auto id_of = [&](const std::string& piece) -> int32_t {
    for (size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i] == piece) return static_cast<int32_t>(i);
    throw Error(cat("import marian: the vocabulary '", o.vocab, "' has no '", piece, "'"));
  };
  c.eos_id = id_of("</s>");
  c.unk_id = id_of("<unk>");
  c.vocab_size = static_cast<int64_t>(pieces.size());
  const std::vector<int64_t> dims = options.has("dim-vocabs") ? options.get_ints("dim-vocabs") : std::vector<int64_t>{};
  for (int64_t d : dims)
    TFM_CHECK(d == c.vocab_size, "import marian: ", where, ": dim-vocabs holds ", d, " but the vocabulary '", o.vocab,
              "' has ", c.vocab_size, " pieces");
  try {
    return Vocab::from_pieces(std::move(pieces), read_file(o.source_spm), read_file(o.target_spm), c.unk_id,
                              {c.eos_id, c.unk_id}, cat("--source-spm '", o.source_spm, "'"),
                              cat("--target-spm '", o.target_spm, "'"));
  } catch (const Error& e) {
    throw Error(cat("import marian: ", e.what()));
  }
}

// Converts the npz's arrays under this project's names, in the order asked for, noting which it read.
class MarianWeights {
 public:
  MarianWeights(const NpzFile& npz, const std::string& path) : npz_(npz), path_(path) {}

  bool has(const std::string& theirs) const { return npz_.has(theirs); }
  // A matrix stored [in, out] is transposed; a bias or a gain [1, n] becomes [n].
  void put(const std::string& ours, const std::string& theirs, bool transpose) {
    TFM_CHECK(npz_.has(theirs), "import marian: ", path_, " has no tensor '", theirs, "'");
    used_.insert(theirs);
    std::vector<int64_t> shape = npz_.array(theirs).shape;
    if (!transpose && shape.size() == 2 && shape[0] == 1) shape = {shape[1]};
    tensors_.push_back({ours, import_matrix(npz_.read_f32(theirs), shape, transpose, cat(path_, ": '", theirs, "'"))});
  }
  std::vector<NamedTensor> take() { return std::move(tensors_); }

  // Every array read, but for the options ("special:model.yml"): any other is refused, naming it
  // (the weights of a layer the options do not count, say), rather than dropped.
  void check_all_read(const ModelConfig& c) const {
    for (const NpyArray& a : npz_.arrays())
      TFM_CHECK(used_.count(a.name) || a.name == "special:model.yml", "import marian: ", path_, ": array '", a.name,
                "' is not part of the model special:model.yml describes (enc-depth ", c.encoder_layers,
                ", dec-depth ", c.decoder_layers, c.pre_norm ? ", pre-norm" : ", post-norm",
                "): are the options and the weights of one model?");
  }

 private:
  const NpzFile& npz_;
  const std::string& path_;
  std::vector<NamedTensor> tensors_;
  std::set<std::string> used_;
};

// The embeddings and the output projection, as the npz has them: sets which are tied and whether
// the output has a bias.
void convert_embeddings_and_output(MarianWeights& w, ModelConfig& c) {
  c.tie_source_target = w.has("Wemb");
  if (c.tie_source_target) {
    w.put("embed.weight", "Wemb", false);
  } else {
    w.put("encoder.embed.weight", "encoder_Wemb", false);
    w.put("decoder.embed.weight", "decoder_Wemb", false);
  }
  c.tie_output = !w.has("decoder_ff_logit_out_W") && !w.has("decoder_ff_logit_out_Wt");
  if (w.has("decoder_ff_logit_out_W")) w.put("output.weight", "decoder_ff_logit_out_W", true);
  else if (w.has("decoder_ff_logit_out_Wt")) w.put("output.weight", "decoder_ff_logit_out_Wt", false);
  c.output_bias = w.has("decoder_ff_logit_out_b");
  if (c.output_bias) w.put("output.bias", "decoder_ff_logit_out_b", false);
}

// Marian's name of a block in "encoder_l1" ("_self", "_context_Wo", ...).
const char* marian_block(LayerBlock block) {
  switch (block) {
    case LayerBlock::kSelfAttention: return "_self";
    case LayerBlock::kSelfAttentionNorm: return "_self_Wo";
    case LayerBlock::kCrossAttention: return "_context";
    case LayerBlock::kCrossAttentionNorm: return "_context_Wo";
    case LayerBlock::kFfn: return "";
    case LayerBlock::kFfnNorm: return "_ffn_ffn";
  }
  return "?";
}

// A layer parameter's array: "decoder_l3_context_Wq" (matrices transposed), "encoder_l1_ffn_b2",
// "encoder_l1_self_Wo_ln_scale" (with "_pre" for a pre-norm model's norms).
void put_layer_param(MarianWeights& w, const LayerParam& p, bool pre_norm) {
  const std::string theirs = cat(p.decoder ? "decoder_l" : "encoder_l", p.layer + 1, marian_block(p.block));
  if (p.part.empty()) {
    w.put(p.name, cat(theirs, p.weight ? "_ln_scale" : "_ln_bias", pre_norm ? "_pre" : ""), false);
  } else if (p.block == LayerBlock::kFfn) {
    w.put(p.name, cat(theirs, "_ffn_", p.weight ? "W" : "b", p.part.substr(2)), p.weight);
  } else {
    w.put(p.name, cat(theirs, p.weight ? "_W" : "_b", p.part == "out" ? "o" : p.part), p.weight);
  }
}

// Every parameter of the model the configuration describes, from the npz; sets the configuration's
// tie_source_target, tie_output and output_bias.
std::vector<NamedTensor> convert_weights(const NpzFile& npz, const std::string& npz_path, ModelConfig& c) {
  MarianWeights w(npz, npz_path);
  convert_embeddings_and_output(w, c);
  for_each_layer_param(c, [&](const LayerParam& p) { put_layer_param(w, p, c.pre_norm); });
  if (c.pre_norm) {
    w.put("encoder.final_norm.weight", "encoder_top_ln_scale", false);
    w.put("encoder.final_norm.bias", "encoder_top_ln_bias", false);
    w.put("decoder.final_norm.weight", "decoder_top_ln_scale", false);
    w.put("decoder.final_norm.bias", "decoder_top_ln_bias", false);
  }
  w.check_all_read(c);
  return w.take();
}

std::string position_note(const std::string& position_frequencies) {
  return position_frequencies == "marian"
             ? "positions: sines then cosines at Marian's rates 10000^(-i/(D/2-1)), as Marian trained the model"
             : "positions: sines then cosines at rates 10000^(-2i/D), as Hugging Face's and CTranslate2's "
               "converters use";
}
}  // namespace

ImportedModel import_marian(const MarianImport& o) {
  check_inputs(o);
  const NpzFile npz(o.npz);
  const std::string where = cat(o.npz, ": special:model.yml");
  const MarianConfig options = read_options(npz, o.npz, where);
  const MarianArchitecture architecture = check_supported(options, where);
  ImportedModel m;
  m.config = model_config(options, architecture, o.position_frequencies);
  m.vocab = read_vocabulary(o, options, where, m.config);
  m.tensors = convert_weights(npz, o.npz, m.config);
  m.config.validate();
  m.provenance = {{"format", "marian"},
                  {"npz", fs::absolute(o.npz).lexically_normal().string()},
                  {"vocab", fs::absolute(o.vocab).lexically_normal().string()},
                  {"marian_version", options.get_string("version", "")},
                  {"position_frequencies", o.position_frequencies}};
  m.notes.push_back(position_note(o.position_frequencies));
  return m;
}

}  // namespace tfm
