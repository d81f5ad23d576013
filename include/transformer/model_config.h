#pragma once
// The model's shape and regularisation: one documented struct, mapped onto JSON (config files, the
// checkpoint header) and command-line flags. Fields from the paper cite its section.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace transformer {

struct ModelConfig {
  // Which stacks exist: encoder-decoder (the paper) | decoder-only (the decoder without
  // encoder-decoder attention: a causal language model, GPT) | encoder-only (the encoder: BERT).
  // decoder-only reads decoder_layers, encoder-only encoder_layers; the other count is ignored.
  std::string architecture = "encoder-decoder";
  int64_t vocab_size = 8000;    // shared source/target vocabulary (§3.4)
  int64_t d_model = 512;        // D, the width of every layer's input and output (§3.1)
  int64_t d_ff = 2048;          // inner width of the position-wise feed-forward network (§3.3)
  int64_t heads = 8;            // H; each head has d_k = d_v = D / H (§3.2.2)
  int64_t encoder_layers = 6;   // N for the encoder (§3.1); set apart from the decoder's, since a
  int64_t decoder_layers = 6;   //   deep encoder with a shallow decoder translates faster
  double dropout = 0.1;         // P_drop on each sub-layer's output before the residual add (§5.4)
  double embedding_dropout = 0.1;  // on the sum of embeddings and positional encodings (§5.4)
  double attention_dropout = 0.1;  // on the attention weights
  bool pre_norm = false;        // false: post-LN as the paper, LN(x + F(x)); true: x + F(LN(x)) with a
                                //   final layer norm after each stack (final_norm; trains deep models
                                //   more stably)
  bool tie_source_target = true;  // one embedding matrix for source and target (§3.4); the target's is
                                  //   always the pre-softmax projection
  double layer_norm_eps = 1e-5;
  int32_t pad_id = 0;           // token ids of the vocabulary's special pieces. pad_id −1: no padding
  int32_t unk_id = 1;           //   token (Marian); padded positions are masked whatever their id.
  int32_t bos_id = 2;           //   bos_id is the decoder's first input; −1: a zero vector instead of
  int32_t eos_id = 3;           //   a token's embedding (Marian). bos_id may equal pad_id (Hugging Face
                                //   Marian models start from the padding token).
  std::vector<int32_t> stop_ids;  // further end-of-sequence ids: a hypothesis that chooses one ends there
                                  //   exactly as at eos_id (instruct models list several: Llama 3's
                                  //   <|eot_id|>, <|eom_id|>). In the vocabulary, none twice, none eos_id,
                                  //   pad_id or bos_id; empty: eos_id alone ends a hypothesis

  // How published models (OPUS-MT / Marian, Hugging Face; `transformer import`) differ from the
  // paper, as configuration. The defaults are the paper's; docs/checkpoint-format.md has the details.
  std::string activation = "relu";  // the feed-forward's (§3.3): relu | swish (x·σ(x), OPUS-MT) |
                                    //   gelu (exact, erf) | gelu_tanh (tanh approximation, GPT-2) |
                                    //   gelu_sigmoid (x·σ(1.702x), Marian's "gelu")
  std::string positions = "interleaved";  // sinusoid layout: interleaved (§3.5: sin at even, cos at odd
                                          //   dimensions) | sin_cos (all sines, then all cosines) |
                                          //   learned (a table `positions.weight`) | rope (rotary, on
                                          //   each self-attention's queries and keys) | none
  int64_t max_positions = 0;  // rows of the learned table (position_offset + the longest sequence must
                              //   fit); 0: no limit, only for positions other than learned
  std::string position_frequencies = "paper";  // pair i's angle rate: paper, 10000^(−2i/D) (§3.5; Hugging
                                               //   Face, CTranslate2) | marian, 10000^(−i/(D/2−1))
  int64_t position_offset = 0;  // the position of a sentence's first token (not rope's: it starts at 0)
  double rope_theta = 10000.0;  // positions rope: the rotary base θ, pair i turning at θ^(−2i/rotary_dims)
  int64_t rotary_dims = 0;      // positions rope: each head's dimensions that rotate (even); 0: all
  bool rope_interleaved = false;  // positions rope: pairs (2i, 2i+1) (GPT-J) instead of (i, i + r/2) (Llama)
  std::string rope_scaling = "none";  // positions rope: how pair i's rate r_i is scaled for long contexts:
                                      //   none | linear (r_i / rope_scaling_factor: positions interpolated) |
                                      //   llama3 (Llama 3.1's: by the pair's wavelength λ_i = 2π / r_i
                                      //   against L = rope_original_max_positions, r_i kept where
                                      //   λ_i < L / rope_high_freq_factor, r_i / factor where
                                      //   λ_i > L / rope_low_freq_factor, the two mixed between)
  double rope_scaling_factor = 1.0;     // rope_scaling linear, llama3: the factor, positive
  double rope_low_freq_factor = 1.0;    // rope_scaling llama3: positive, below rope_high_freq_factor
  double rope_high_freq_factor = 4.0;   // rope_scaling llama3
  int64_t rope_original_max_positions = 0;  // rope_scaling llama3: L, the pretraining context, positive
  bool scale_embeddings = true;  // embeddings multiplied by √D (§3.4)
  bool tie_output = true;   // the target embedding is the pre-softmax projection (§3.4); false: a matrix
                            //   of its own, `output.weight`
  bool output_bias = false;  // a bias added to the logits, `output.bias` [V] (Marian; HF's final_logits_bias)
  std::string norm = "layernorm";  // every norm of the model: layernorm | rmsnorm (weight only, no mean
                                   //   subtracted; eps layer_norm_eps as well)
  bool final_norm = true;      // pre-norm only: a norm after each stack (`encoder.final_norm`, `decoder.final_norm`)
  bool embedding_norm = false;  // a norm on the summed embeddings, `embed_norm` (BERT)
  bool attention_bias = true;  // biases on the attention's q, k, v and out projections
  bool ffn_bias = true;        // biases on the feed-forward's fc1 and fc2
  bool gated = false;          // gated feed-forward: fc1 [2F, D], hidden = act(gate rows) ⊙ up rows
                               //   (swish: SwiGLU, gelu: GeGLU)
  int64_t kv_heads = 0;        // self-attention's key/value heads (grouped-query; 1: multi-query); must
                               //   divide heads; 0: heads. Encoder-decoder attention keeps heads
  int64_t attention_window = 0;  // self-attention: query i sees keys j > i − window; 0: no window
  int64_t token_types = 0;     // encoder-only: segment embeddings `token_types.weight` [G, D] (BERT: 2)
  bool mlm_head = false;       // encoder-only: BERT's masked-LM transform before the output projection,
                               //   `mlm_head.dense` (D → D), the activation, `mlm_head.norm`
  std::string pooling = "mean";      // embedding: how `embed` pools when the call does not say
                                     //   (EmbedOptions::pooling unset): mean | cls | last | max | none
                                     //   (a sentence-transformers import records its Pooling module's)
  bool normalize_embeddings = false;  // embedding: whether `embed` L2-normalizes when the call does not
                                      //   say (a sentence-transformers Normalize module)

  int64_t head_dim() const { return d_model / heads; }
  int64_t self_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  bool has_encoder() const { return architecture != "decoder-only"; }
  bool has_decoder() const { return architecture != "encoder-only"; }
  // Throws transformer::Error naming the first field that is out of range.
  void validate() const;
};

// Fields to change in a preset: each one set replaces the preset's value, the others keep it.
// The JSON form (a training config's "model" object) holds the fields set, under their ModelConfig
// names; a training's vocab_size and special ids come from its vocabulary.
struct ModelOverrides {
  std::optional<int64_t> vocab_size, d_model, d_ff, heads, encoder_layers, decoder_layers;
  std::optional<double> dropout, embedding_dropout, attention_dropout;
  std::optional<bool> pre_norm, tie_source_target;
  std::optional<double> layer_norm_eps;
  std::optional<int32_t> pad_id, unk_id, bos_id, eos_id;
  std::optional<std::string> activation, positions, position_frequencies;
  std::optional<int64_t> position_offset;
  std::optional<bool> scale_embeddings, tie_output, output_bias;
  std::optional<std::string> architecture;
  std::optional<int64_t> max_positions, token_types;
  std::optional<bool> final_norm, embedding_norm, attention_bias, ffn_bias, mlm_head;
  std::optional<std::string> norm;
  std::optional<double> rope_theta;
  std::optional<int64_t> rotary_dims, kv_heads, attention_window;
  std::optional<bool> rope_interleaved, gated;
  std::optional<std::string> rope_scaling;
  std::optional<double> rope_scaling_factor, rope_low_freq_factor, rope_high_freq_factor;
  std::optional<int64_t> rope_original_max_positions;
  std::optional<std::string> pooling;
  std::optional<bool> normalize_embeddings;
  std::optional<std::vector<int32_t>> stop_ids;

  // `base` with the fields set here replaced (not validated).
  ModelConfig apply_to(ModelConfig base) const;
};

// Number of parameter values a model of this configuration has (without building it).
int64_t parameter_count(const ModelConfig& c);

// Presets: "base", "big" and "small" as the paper's and common practice; "tiny" for tests. An
// unknown name throws transformer::Error naming it.
ModelConfig model_preset(const std::string& name);

// The field names, as in JSON (and, with '-' for '_', as command-line flags).
const std::vector<std::string>& model_config_fields();

}  // namespace transformer
