#pragma once
// The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), and its two
// halves, configured (ModelConfig::architecture): the decoder-only language model (the decoder
// without encoder-decoder attention) and the encoder-only model. One definition serves training
// (teacher-forced forward and backward over a padded batch) and inference (the same layers, without
// saving activations; decoding adds its cache on top).
// Parameters live in one ParamStore: one flat buffer of values, one of gradients.
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "layers/attention.h"
#include "layers/feed_forward.h"
#include "layers/residual.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/decode_state.h"
#include "ops/positional.h"
#include "ops/screen.h"

namespace tfm {

class EncoderLayer {
 public:
  struct Saved {
    Residual::Saved attn_res, ffn_res;
    MultiHeadAttention::Saved attn;
    FeedForward::Saved ffn;
  };
  EncoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c);
  // x: [B, S, D] → [B, S, D]
  Tensor forward(const Context& ctx, const Tensor& x, const AttentionMask& mask, Saved* saved) const;
  Tensor backward(const Context& ctx, const Saved& saved, const Tensor& dy) const;  // → dx

  MultiHeadAttention self_attn;
  FeedForward ffn;
  Residual attn_res, ffn_res;
};

class DecoderLayer {
 public:
  struct Saved {
    Residual::Saved self_res, cross_res, ffn_res;
    MultiHeadAttention::Saved self_attn, cross_attn;
    FeedForward::Saved ffn;
  };
  DecoderLayer(ParamStore& params, const std::string& name, const ModelConfig& c);
  // x: [B, T, D], memory (the encoder's output): [B, S, D] → [B, T, D]. Without cross-attention
  // (decoder-only) memory and memory_mask are not read.
  Tensor forward(const Context& ctx, const Tensor& x, const Tensor& memory, const AttentionMask& self_mask,
                 const AttentionMask& memory_mask, Saved* saved) const;
  // One decoding step: x [R, 1, D] at position state.length, using and extending layer `index`'s
  // cache → [R, 1, D].
  Tensor step(const Context& ctx, const Tensor& x, DecodeState& state, size_t index) const;
  // A decoder-only prompt at once: x [R, P, D] at positions [0, P) of an empty cache, whose first P
  // slabs (rows [0, R)) receive layer `index`'s keys and values → [R, P, D].
  Tensor prefix(const Context& ctx, const Tensor& x, DecodeState& state, size_t index) const;
  // → dx; dmemory += the gradient reaching the encoder's output through this layer.
  Tensor backward(const Context& ctx, const Saved& saved, const Tensor& dy, const Tensor& dmemory) const;

  bool cross = true;  // has encoder-decoder attention (false: decoder-only, cross_attn registers nothing)
  MultiHeadAttention self_attn, cross_attn;
  FeedForward ffn;
  Residual self_res, cross_res, ffn_res;
};

class Transformer {
 public:
  // Activations kept by a training forward for its backward.
  struct EmbedSaved {
    Tensor ids;           // int32 [B, L]
    Tensor position_ids;  // int32 [B, L]: the learned table's rows (positions "learned")
    Tensor types;         // int32 [B, L]: token types (token_types > 0)
    LayerNorm::Saved norm;  // embedding_norm
    RngStream dropout;
    bool dropped = false;
  };
  // The masked-LM head's (mlm_head): dense's input and output [B, S, D], the norm's.
  struct MlmSaved {
    Tensor x, pre;
    LayerNorm::Saved norm;
  };
  struct Saved {
    EmbedSaved src_embed, tgt_embed;  // decoder-only: tgt_embed; encoder-only: src_embed
    std::vector<EncoderLayer::Saved> encoder;
    std::vector<DecoderLayer::Saved> decoder;
    LayerNorm::Saved encoder_norm, decoder_norm;  // pre-LN only
    MlmSaved mlm;
    Tensor hidden;  // the output projection's input: [B, T, D] (encoder-only [B, S, D])
  };

  // Registers and allocates every parameter (zeros; call init_parameters or load a checkpoint).
  explicit Transformer(const ModelConfig& config, DType dtype = DType::F32);
  Transformer(const Transformer&) = delete;
  Transformer& operator=(const Transformer&) = delete;

  // Xavier-uniform linear weights, zero biases, unit layer-norm gains, embeddings N(0, D^−½):
  // a pure function of the seed.
  void init_parameters(uint64_t seed);

  // Teacher forcing: logits [B, T, V] for the batch; saves what backward needs when `saved`.
  // decoder-only reads tgt_in and tgt_lengths (a language model's inputs; tgt_out are its
  // next-token targets); encoder-only reads src, src_lengths and token_types, and returns the
  // masked-LM logits [B, S, V] (through mlm_head when configured).
  Tensor forward(const Context& ctx, const Batch& batch, Saved* saved) const;
  // Accumulates every parameter's gradient from dlogits (forward's shape; bfloat16 in bf16 training
  // without a logits bias: ops::cross_entropy_backward_bf16).
  void backward(const Context& ctx, const Batch& batch, const Saved& saved, const Tensor& dlogits) const;

  // The pieces, for inference. src: int32 [B, S] → memory [B, S, D] (encoder-only: the hidden
  // states); token_types: int32 [B, S] segment ids (encoder-only with token_types > 0; undefined:
  // type 0).
  Tensor encode(const Context& ctx, const Tensor& src, const Tensor& src_lengths, Saved* saved,
                const Tensor& token_types = Tensor()) const;
  // tgt_in: int32 [B, T] → hidden [B, T, D] (before the projection). decoder-only: memory and
  // src_lengths undefined.
  Tensor decode(const Context& ctx, const Tensor& tgt_in, const Tensor& tgt_lengths, const Tensor& memory,
                const Tensor& src_lengths, Saved* saved) const;
  // hidden [..., D] → logits [..., V], through the (shared) target embedding: h · Eᵀ.
  Tensor project(const Context& ctx, const Tensor& hidden) const;

  // Incremental decoding over the encoder output memory [B, S, D], for up to max_length tokens and
  // up to `hypotheses` hypotheses per sentence at once (the beam size).
  DecodeState start_decoding(const Context& ctx, const Tensor& memory, const Tensor& src_lengths,
                             int64_t max_length, bool record_attention = false, int64_t hypotheses = 1) const;
  // decoder-only: incremental decoding of `sequences` sequences without memory, for up to
  // max_length tokens (prompt included).
  DecodeState start_decoding(const Context& ctx, int64_t sequences, int64_t max_length, int64_t hypotheses = 1) const;
  // decoder-only: feeds a prompt, int32 [R, P] (each hypothesis's next P tokens), into the cache and
  // returns the hidden state after its last token [R, D], as decode_hidden after each in turn would
  // (into an empty cache in one pass over the prompt; after earlier tokens, step by step).
  Tensor decode_prefix(const Context& ctx, DecodeState& state, const Tensor& prompt) const;
  // Restricts decode_step's output to target ids `ids` (sorted, unique, in [0, V)): its logits are
  // then [R, V'], column j scoring ids[j] (a vocabulary shortlist, decode/shortlist.h).
  void restrict_output(const Context& ctx, DecodeState& state, const std::vector<int32_t>& ids) const;
  // Feeds each hypothesis's last token, int32 [R], and returns the next token's logits [R, V]
  // (or [R, V'] after restrict_output): project_step(decode_hidden(...)).
  Tensor decode_step(const Context& ctx, DecodeState& state, const Tensor& tokens) const;
  // The two halves of decode_step: the decoder's output for the step [R, D] (after the final layer
  // norm of pre-LN models), and its logits [R, V] (or [R, V']).
  Tensor decode_hidden(const Context& ctx, DecodeState& state, const Tensor& tokens) const;
  Tensor project_step(const Context& ctx, const DecodeState& state, const Tensor& hidden) const;
  // Greedy search's choice without the logits (ops/screen.h): for each row of hidden [R, D], the
  // column of its largest logit among those not banned, exactly as project_step then
  // ops::top_k_logprobs would choose it. False (ids unspecified) where the model does not screen
  // (see screen_output), the output is restricted (a shortlist), the products are not float32's, or
  // some row is too close to call: the caller then takes project_step. Thread-safe.
  bool screened_argmax(const Context& ctx, const DecodeState& state, const Tensor& hidden,
                       const std::vector<int32_t>& banned, std::vector<int32_t>& ids) const;
  // Lets screened_argmax choose: the int8 copy of the output projection it reads (V · D bytes, 16 MB
  // for base) is made at its first call, so that beam search alone never pays for it. pack_weights
  // turns it on in float32 on the CPU for vocabularies of at least kScreenMinVocabulary entries,
  // where it pays (docs/performance.md, "Every CPU family"); this turns it on for any (tests). Off again
  // after quantize_int8 and pack_weights in bf16.
  void screen_output();
  bool screens_output() const { return screen_ != nullptr; }
  static constexpr int64_t kScreenMinVocabulary = 4096;
  // Keeps hypotheses `rows` (int32 [R'']), in that order: beam reordering, expansion of sentences
  // into beams, dropping finished sentences. Their rows of key_rows move, no keys or values; R'' ≤
  // R = sentences × start_decoding's `hypotheses`. `memory_rows` (int32 [B_s''])
  // selects the encoder outputs that remain, when sentences are dropped; undefined: all remain.
  // R'' must be a multiple of B_s'' (it sets kv_group).
  void reorder(DecodeState& state, const Tensor& rows, const Tensor& memory_rows = Tensor()) const;

  const ModelConfig& config() const { return config_; }
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  // The context of a forward pass: with `rng`, training (dropout on, float32); without, inference,
  // which uses the int8 weights once quantize_int8() has made them, else the packed ones once
  // pack_weights() has, else the plain weights in set_inference_products()'s precision.
  Context context(Rng* rng = nullptr) const {
    const bool inference = rng == nullptr;
    return Context{&params_, rng, inference && !int8_.empty() ? &int8_ : nullptr,
                   inference && !packed_.empty() ? &packed_ : nullptr,
                   inference ? inference_products_ : ops::Precision::kFloat32};
  }
  // What inference's products with the plain weights round their inputs to (Context::products):
  // kBf16 translates and scores with bfloat16 products and float32 sums, as `train --bf16` trains.
  // Int8 and packed weights ignore it.
  void set_inference_products(ops::Precision p) { inference_products_ = p; }
  // What becomes of a weight matrix's float32 values once inference has its own copy. kKeep: they
  // stay, and the model can still train, save and decode without the copies. kRelease (translation):
  // every linear layer's weight is given back to the system as soon as its copy is made
  // (ParamStore::release), which saves 176 MB for base; the embedding stays (lookups read it). The
  // model then only translates: encode() and the decoding steps; what reads a released weight
  // (training, saving, decode() of whole targets) throws, naming it.
  enum class PlainWeights { kKeep, kRelease };
  // int8 copies of every weight matrix (per output channel) and of the output projection, for
  // inference (training ignores the copies); and each decoder self-attention's Q, K and V as one
  // fused matrix for the decoding steps (with kRelease, in place of their own copies).
  void quantize_int8(PlainWeights plain = PlainWeights::kKeep);
  bool quantized() const { return !int8_.empty(); }
  // Every linear layer's weight and the output projection packed once (ops/packed.h), for
  // inference: decoding steps and the encoder run faster; results agree to float32 rounding.
  // Costs a second copy of those weights (242 MB for base, 65 MB of it the output projection) unless
  // the plain ones are released; each decoder self-attention's Q, K and V are also fused into one
  // product for the decoding steps (which alone is kept with kRelease, else 19 MB more for base),
  // and the feed-forward layers' first products take their activation. The parameters must not change
  // afterwards (the packing is not redone).
  // products = kBf16 (where ops::packs_bf16(): a GPU, or a CPU with bfloat16 instructions): packed
  // rounded to bfloat16 (on the CPU for oneDNN's bf16 products, on a GPU for cuBLASLt's), and
  // set_inference_products(kBf16) for those on the plain weights; each decoder
  // self-attention's Q, K and V are then packed on their own too, so that the teacher-forced
  // forward pass (scoring) needs no plain weight even after kRelease.
  void pack_weights(PlainWeights plain = PlainWeights::kKeep, ops::Precision products = ops::Precision::kFloat32);
  // Inference in bf16 products (translate --bf16): packed in bfloat16 where ops::packs_bf16() on
  // the parameters' device, else the plain weights with set_inference_products(kBf16).
  void use_bf16_products(PlainWeights plain);
  bool packed() const { return !packed_.empty(); }

  // The parameter id ranges [first, end) that backward() reports complete through
  // Context::grads_done, in the order it reports them; together they cover every parameter once.
  std::vector<std::pair<int, int>> grads_done_order() const;

  int src_embedding = -1, tgt_embedding = -1;  // the same id when tied (and decoder-only, encoder-only)
  int positions_table = -1;   // positions "learned": [max_positions, D]
  int token_type_table = -1;  // token_types > 0: [G, D]
  int output_weight = -1;  // the pre-softmax projection [V, D]: tgt_embedding unless config().tie_output is false
  int output_bias = -1;    // [V], when config().output_bias
  std::vector<EncoderLayer> encoder;
  std::vector<DecoderLayer> decoder;
  LayerNorm encoder_norm, decoder_norm;  // pre-LN with final_norm only
  LayerNorm embed_norm;                  // embedding_norm only
  Linear mlm_dense;                      // mlm_head only, then the activation and mlm_norm
  LayerNorm mlm_norm;

 private:
  // The parameter ids [first, end) each layer registered, for Context::grads_done.
  struct IdRange {
    int first = 0, end = 0;
  };
  std::vector<IdRange> encoder_ids_, decoder_ids_;
  IdRange encoder_norm_ids_, decoder_norm_ids_;
  IdRange embed_extra_ids_;  // the learned positions, token types and embedding norm (shared by both stacks)
  IdRange mlm_ids_;

  // Registers the stacks the architecture has, each range recorded.
  void add_stacks();
  // Registers the tables and norm the embeddings add besides the token embedding.
  void add_embedding_extras();
  bool final_norms() const { return config_.pre_norm && config_.final_norm; }
  // The stacks' backward: dx at the stack's output → dx at its embeddings (reporting each layer).
  Tensor decoder_backward(const Context& ctx, const Saved& s, Tensor dx, const Tensor& dmemory) const;
  Tensor encoder_backward(const Context& ctx, const Saved& s, Tensor dx) const;
  // The masked-LM head: hidden [B, S, D] → [B, S, D]; its backward returns dhidden.
  Tensor mlm_forward(const Context& ctx, const Tensor& hidden, MlmSaved* saved) const;
  Tensor mlm_backward(const Context& ctx, const MlmSaved& saved, const Tensor& dy) const;
  // decode_prefix into an empty cache: the prompt through each layer at once (DecoderLayer::prefix).
  Tensor prefix_at_once(const Context& ctx, DecodeState& state, const Tensor& prompt) const;
  // The self-attention caches of start_decoding: per decoder layer, max_length positions of
  // B · hypotheses rows, and the rows' bookkeeping.
  void add_self_cache(DecodeState& state, int64_t B, int64_t max_length, int64_t hypotheses, DType dtype,
                      Device device) const;
  // Adds the learned positions' rows, or throws naming a sequence past the table.
  void add_learned_positions(const Context& ctx, const Tensor& x, const Tensor& ids, int64_t start, EmbedSaved& s) const;

  // A matrix that inference multiplies by (and so may keep as an int8 or packed copy): every linear
  // layer's weight and the target embedding as the output projection; not the source embedding
  // when untied (only looked up).
  bool is_product_weight(int id) const;
  // A product weight that nothing but its product reads (not the target embedding, also looked up,
  // nor the output projection, whose rows a shortlist selects): those given back by kRelease.
  bool only_in_products(int id) const;
  // Every product weight's id, the target embedding last.
  std::vector<int> product_weights() const;
  // A self-attention's Q, K and V weights side by side, [D + 2KV, D], and their biases (undefined
  // without attention biases): copies,
  // for the fused product of decoding steps (MultiHeadAttention::project_qkv).
  std::pair<Tensor, Tensor> fused_qkv(const MultiHeadAttention& attention) const;
  // With kRelease, a decoder self-attention's three weights go once their fused copy exists: the
  // decoding steps read only that (so no copy of each is made either, 19 MB for base). Decoding a
  // whole target at once (decode(), forward()) then refuses, naming the released weight.
  void release_fused_parts(const MultiHeadAttention& attention, PlainWeights plain);
  // Refuses a second pack_weights or quantize_int8 once weights were released: its copies would
  // need the weights that are gone.
  void check_not_released(const char* what) const;
  // √D, or 1 when the configuration does not scale embeddings.
  double embedding_scale() const { return config_.scale_embeddings ? std::sqrt(double(config_.d_model)) : 1.0; }
  // logits [..., V] += bias [V] (V' of a shortlist).
  static void add_output_bias(const Tensor& logits, const Tensor& bias);
  Tensor embed(const Context& ctx, int table, const Tensor& ids, int64_t start, EmbedSaved* saved,
               const Tensor& types = Tensor()) const;
  void embed_backward(const Context& ctx, int table, const EmbedSaved& saved, const Tensor& dx) const;

  ModelConfig config_;
  ops::PositionEncoding positions_;  // config_'s, parsed once
  ParamStore params_;
  Int8Weights int8_;
  PackedWeights packed_;
  // screen_output's: made once, at the first screened_argmax (any thread); null: no screening.
  struct Screen {
    std::once_flag once;
    std::shared_ptr<const ops::ScreenedProjection> projection;
  };
  std::shared_ptr<Screen> screen_;
  ops::Precision inference_products_ = ops::Precision::kFloat32;
  ops::Precision packed_products_ = ops::Precision::kFloat32;  // pack_weights' (a shortlist's rows are packed alike)
};

}  // namespace tfm
