// Marian models (OPUS-MT): model.npz holds the weights under Marian's names (matrices [in, out],
// biases [1, out]) and the model's options as YAML in the array "special:model.yml"; the vocabulary
// is a YAML map of pieces to ids; the text is segmented by source.spm and target.spm outside Marian.
#include <filesystem>

#include "core/error.h"
#include "import/import.h"
#include "import/tensors.h"
#include "io/atomic_file.h"
#include "io/marian_yaml.h"
#include "io/npz.h"

namespace tfm {

namespace {
namespace fs = std::filesystem;
}  // namespace

ImportedModel import_marian(const MarianImport& o) {
  for (const std::string* path : {&o.npz, &o.vocab, &o.source_spm, &o.target_spm})
    TFM_CHECK(fs::exists(*path), "import marian: '", *path, "' does not exist");
  TFM_CHECK(o.position_frequencies == "marian" || o.position_frequencies == "paper",
            "import marian: --position-frequencies must be marian or paper, got '", o.position_frequencies, "'");
  const NpzFile npz(o.npz);
  const std::string where = cat(o.npz, ": special:model.yml");
  TFM_CHECK(npz.has("special:model.yml"), "import marian: ", o.npz,
            " has no 'special:model.yml' (the model's options), so it is not a Marian model");
  const MarianConfig options = parse_marian_config(npz.read_bytes("special:model.yml"), where);

  // Marian's options → ModelConfig; every one that would change the computation and is not
  // supported is refused, naming it (Marian's defaults where a key is absent).
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
  const bool pre_norm = pre == "n" && post == "da" && top == "n";
  refuse_unless(pre_norm || (pre.empty() && post == "dan" && top.empty()),
                cat("transformer-preprocess '", pre, "', -postprocess '", post, "', -postprocess-top '", top,
                    "' (post-norm: '', dan, ''; or pre-norm: n, da, n)"));
  const std::string activation = options.get_string("transformer-ffn-activation", "swish");
  refuse_unless(activation == "relu" || activation == "swish" || activation == "gelu",
                cat("transformer-ffn-activation '", activation, "' (relu, swish, gelu are)"));

  ImportedModel m;
  ModelConfig& c = m.config;
  c.d_model = options.get_int("dim-emb", 512);
  c.heads = options.get_int("transformer-heads", 8);
  c.d_ff = options.get_int("transformer-dim-ffn", 2048);
  c.encoder_layers = options.get_int("enc-depth", 6);
  c.decoder_layers = options.get_int("dec-depth", 6);
  c.activation = activation == "gelu" ? "gelu_sigmoid" : activation;  // Marian's gelu is x·σ(1.702x)
  c.pre_norm = pre_norm;
  c.positions = "sin_cos";
  c.position_frequencies = o.position_frequencies;
  c.position_offset = 0;
  c.scale_embeddings = true;  // Marian always multiplies by √D before adding positions
  c.layer_norm_eps = 1e-6;    // Marian's transformer layer norm
  c.dropout = options.get_double("transformer-dropout", 0.1);
  c.attention_dropout = options.get_double("transformer-dropout-attention", 0.0);
  c.embedding_dropout = c.dropout;
  c.pad_id = -1;  // Marian has no padding token: positions are masked
  c.bos_id = -1;  // the decoder starts from a zero vector (plus the first position's encoding)

  // The vocabulary.
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
    m.vocab = Vocab::from_pieces(std::move(pieces), read_file(o.source_spm), read_file(o.target_spm), c.unk_id,
                                 {c.eos_id, c.unk_id}, cat("--source-spm '", o.source_spm, "'"),
                                 cat("--target-spm '", o.target_spm, "'"));
  } catch (const Error& e) {
    throw Error(cat("import marian: ", e.what()));
  }

  // The weights.
  auto put = [&](const std::string& ours, const std::string& theirs, bool transpose) {
    TFM_CHECK(npz.has(theirs), "import marian: ", o.npz, " has no tensor '", theirs, "'");
    const NpyArray& a = npz.array(theirs);
    std::vector<int64_t> shape = a.shape;
    if (!transpose && shape.size() == 2 && shape[0] == 1) shape = {shape[1]};  // a bias or a gain [1, n]
    m.tensors.push_back({ours, import_matrix(npz.read_f32(theirs), shape, transpose, cat(o.npz, ": '", theirs, "'"))});
  };
  const bool tied_all = npz.has("Wemb");
  c.tie_source_target = tied_all;
  if (tied_all) {
    put("embed.weight", "Wemb", false);
  } else {
    put("encoder.embed.weight", "encoder_Wemb", false);
    put("decoder.embed.weight", "decoder_Wemb", false);
  }
  c.tie_output = !npz.has("decoder_ff_logit_out_W") && !npz.has("decoder_ff_logit_out_Wt");
  if (npz.has("decoder_ff_logit_out_W")) put("output.weight", "decoder_ff_logit_out_W", true);
  else if (npz.has("decoder_ff_logit_out_Wt")) put("output.weight", "decoder_ff_logit_out_Wt", false);
  c.output_bias = npz.has("decoder_ff_logit_out_b");
  if (c.output_bias) put("output.bias", "decoder_ff_logit_out_b", false);
  const std::string ln = pre_norm ? "_pre" : "";
  auto norm = [&](const std::string& ours, const std::string& theirs) {
    put(ours + ".weight", theirs + "_ln_scale" + ln, false);
    put(ours + ".bias", theirs + "_ln_bias" + ln, false);
  };
  auto attention = [&](const std::string& ours, const std::string& theirs) {
    for (const auto& [p, x] : {std::pair{"q", "q"}, {"k", "k"}, {"v", "v"}, {"out", "o"}}) {
      put(cat(ours, ".", p, "_proj.weight"), cat(theirs, "_W", x), true);
      put(cat(ours, ".", p, "_proj.bias"), cat(theirs, "_b", x), false);
    }
  };
  auto ffn = [&](const std::string& ours, const std::string& theirs) {
    for (const char* i : {"1", "2"}) {
      put(cat(ours, ".ffn.fc", i, ".weight"), cat(theirs, "_ffn_W", i), true);
      put(cat(ours, ".ffn.fc", i, ".bias"), cat(theirs, "_ffn_b", i), false);
    }
    norm(ours + ".ffn_norm", theirs + "_ffn_ffn");
  };
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string ours = cat("encoder.layers.", i), theirs = cat("encoder_l", i + 1);
    attention(ours + ".self_attn", theirs + "_self");
    norm(ours + ".self_attn_norm", theirs + "_self_Wo");
    ffn(ours, theirs);
  }
  for (int64_t i = 0; i < c.decoder_layers; ++i) {
    const std::string ours = cat("decoder.layers.", i), theirs = cat("decoder_l", i + 1);
    attention(ours + ".self_attn", theirs + "_self");
    norm(ours + ".self_attn_norm", theirs + "_self_Wo");
    attention(ours + ".cross_attn", theirs + "_context");
    norm(ours + ".cross_attn_norm", theirs + "_context_Wo");
    ffn(ours, theirs);
  }
  if (pre_norm) {
    put("encoder.final_norm.weight", "encoder_top_ln_scale", false);
    put("encoder.final_norm.bias", "encoder_top_ln_bias", false);
    put("decoder.final_norm.weight", "decoder_top_ln_scale", false);
    put("decoder.final_norm.bias", "decoder_top_ln_bias", false);
  }
  c.validate();
  m.provenance = {{"format", "marian"},
                  {"npz", fs::absolute(o.npz).lexically_normal().string()},
                  {"vocab", fs::absolute(o.vocab).lexically_normal().string()},
                  {"marian_version", options.get_string("version", "")},
                  {"position_frequencies", o.position_frequencies}};
  m.notes.push_back(o.position_frequencies == "marian"
                        ? "positions: sines then cosines at Marian's rates 10000^(-i/(D/2-1)), as Marian trained the model"
                        : "positions: sines then cosines at rates 10000^(-2i/D), as Hugging Face's and CTranslate2's "
                          "converters use");
  return m;
}

}  // namespace tfm
