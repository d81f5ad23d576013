// Incremental decoding (DecodeState): the cache, one step, reordering hypotheses, and restricting
// the output to a shortlist.
#include "model/transformer.h"

#include <algorithm>

#include "ops/copy.h"
#include "ops/product.h"

namespace tfm {

namespace {
// A decoding cache's slab [L, C, D] at one position, its first `rows` rows: [rows, 1, D], contiguous.
Tensor slab_position(const Tensor& slab, int64_t position, int64_t rows) {
  const int64_t L = slab.size(0), C = slab.size(1), D = slab.size(2);
  TFM_CHECK(position >= 0 && position < L && rows <= C, "decoding: position ", position, " of ", rows,
            " hypotheses is outside the cache's ", L, " positions of ", C);
  return slab.view({L * C, D}).rows(position * C, rows).view({rows, 1, D});
}

// A slab's first `positions` positions [positions, C, D]: the keys a step reads (all L without a
// window: DecodeState::key_rows_there has as many columns).
Tensor slab_prefix(const Tensor& slab, int64_t positions) {
  const int64_t L = slab.size(0), C = slab.size(1), D = slab.size(2);
  if (positions == L) return slab;
  return slab.view({L * C, D}).rows(0, positions * C).view({positions, C, D});
}

// key_rows [R, L]'s first n columns [R, n], a copy.
Tensor first_columns(const Tensor& key_rows, int64_t n) {
  const int64_t R = key_rows.size(0), L = key_rows.size(1);
  Tensor out = Tensor::empty({R, n}, DType::I32);
  for (int64_t r = 0; r < R; ++r)
    std::copy_n(key_rows.data<int32_t>() + r * L, n, out.data<int32_t>() + r * n);
  return out;
}
}  // namespace

// Each sub-layer's output projection adds its residual in its own call (Residual::forward); the
// self-attention's keys and values go from their product straight into the cache's slabs at this
// step's position, row b for hypothesis b (decode_step's key_rows).
Tensor DecoderLayer::step(const Context& ctx, const Tensor& x, DecodeState& state, size_t index) const {
  const Tensor h1 = self_res.forward(  // [R, 1, D], as h2
      ctx, x,
      [&](const Tensor& in, const Tensor& r) {
        const int64_t rows = in.size(0), keys = state.key_rows_there.size(1);
        // [R, 1, D], [R, 1, KV] twice; k and v written into the slabs at this step's position
        const auto [q, k, v] = self_attn.project_qkv(ctx, in, slab_position(state.self_k[index], state.length, rows),
                                                     slab_position(state.self_v[index], state.length, rows),
                                                     state.length);
        return self_attn.attend_projected(ctx, in, q, slab_prefix(state.self_k[index], keys),
                                          slab_prefix(state.self_v[index], keys),
                                          {.key_lengths = state.step_lengths_there, .key_rows = state.key_rows_there},
                                          nullptr, r);
      },
      nullptr);
  const Tensor h2 = !cross ? h1 : cross_res.forward(
      ctx, h1,
      [&](const Tensor& in, const Tensor& r) {
        MultiHeadAttention::Saved saved;
        // [R, 1, D]
        Tensor y = cross_attn.attend(ctx, in, state.memory_k[index], state.memory_v[index],
                                     {.key_lengths = state.src_lengths_there, .kv_group = state.kv_group},
                                     state.record_attention ? &saved : nullptr, r);
        if (state.record_attention) state.cross_attention[index] = saved.probs;
        return y;
      },
      nullptr);
  return ffn_res.forward(
      ctx, h2, [&](const Tensor& in, const Tensor& r) { return ffn.forward(ctx, in, nullptr, r); }, nullptr);
}

Tensor DecoderLayer::prefix(const Context& ctx, const Tensor& x, DecodeState& state, size_t index) const {
  TFM_CHECK(!cross, "decoding: a prompt at once is for decoder-only models");
  const int64_t R = x.size(0), P = x.size(1);
  const Tensor h = self_res.forward(  // [R, P, D]
      ctx, x,
      [&](const Tensor& in, const Tensor& r) {
        const auto [q, k, v] = self_attn.project_qkv(ctx, in);  // [R, P, D], [R, P, KV], [R, P, KV]
        const int64_t KV = k.size(2);
        for (const auto& [part, slab] : {std::pair{k, state.self_k[index]}, std::pair{v, state.self_v[index]}}) {
          std::vector<Tensor> positions;  // [R, KV] each: position t's rows of the slab
          for (int64_t t = 0; t < P; ++t) positions.push_back(slab_position(slab, t, R).view({R, KV}));
          ops::split_columns(part.view({R, P * KV}), positions);
        }
        return self_attn.attend_projected(ctx, in, q, k, v, {.causal = true}, nullptr, r);
      },
      nullptr);
  return ffn_res.forward(
      ctx, h, [&](const Tensor& in, const Tensor& r) { return ffn.forward(ctx, in, nullptr, r); }, nullptr);
}

void Transformer::restrict_output(const Context& ctx, DecodeState& state, const std::vector<int32_t>& ids) const {
  TFM_CHECK(!ids.empty(), "restrict_output: an empty output vocabulary");
  for (size_t j = 0; j < ids.size(); ++j)
    TFM_CHECK(ids[j] >= 0 && ids[j] < config_.vocab_size && (j == 0 || ids[j] > ids[j - 1]),
              "restrict_output: ids must be sorted, unique and in [0, ", config_.vocab_size, "); got ", ids[j],
              " at position ", j);
  const int64_t n = static_cast<int64_t>(ids.size());
  state.output_ids = Tensor::from<int32_t>({n}, ids);
  state.output_bias = Tensor();
  if (output_bias >= 0) {
    state.output_bias = Tensor::empty({n}, params_.dtype(), params_.device());  // [V']
    ops::index_select(ctx.value(output_bias), state.output_ids, state.output_bias);
  }
  // The same kind of product as the full projection would use (ops::select_rows): int8 rows, or
  // E[ids] [V', D] in float32, packed anew for each batch when the full projection is packed (a
  // copy of V' rows, small beside a batch's decoding).
  state.output_weight = ops::select_rows(ctx.weight(output_weight), state.output_ids);
}

DecodeState Transformer::start_decoding(const Context& ctx, const Tensor& memory, const Tensor& src_lengths,
                                        int64_t max_length, bool record_attention, int64_t hypotheses) const {
  TFM_CHECK(max_length >= 1, "decoding needs a maximum length of at least 1, got ", max_length);
  TFM_CHECK(hypotheses >= 1, "decoding needs at least 1 hypothesis per sentence, got ", hypotheses);
  TFM_CHECK(config_.has_encoder() && config_.has_decoder(), "start_decoding: the model is ", config_.architecture,
            ": decoding over an encoder output needs an encoder-decoder model");
  DecodeState state;
  state.src_lengths = src_lengths.to_device(Device::CPU);  // a copy the host reads (decode_step's checks)
  state.record_attention = record_attention;
  const int64_t B = memory.size(0);
  for (const DecoderLayer& layer : decoder) {
    const auto [k, v] = layer.cross_attn.project_kv(ctx, memory);  // [B, S, KV] each
    state.memory_k.push_back(k);
    state.memory_v.push_back(v);
  }
  add_self_cache(state, B, max_length, hypotheses, memory.dtype(), memory.device());
  return state;
}

void Transformer::add_self_cache(DecodeState& state, int64_t B, int64_t max_length, int64_t hypotheses, DType dtype,
                                 Device device) const {
  for (const DecoderLayer& layer : decoder) {
    // [L, C, KV]: L = max_length positions of C = B · hypotheses rows
    const int64_t kv = layer.self_attn.kv_width();
    state.self_k.push_back(Tensor::zeros({max_length, B * hypotheses, kv}, dtype, device));
    state.self_v.push_back(Tensor::zeros({max_length, B * hypotheses, kv}, dtype, device));
  }
  state.key_rows = Tensor::zeros({B, max_length}, DType::I32);  // [R, L]
  state.cross_attention.resize(decoder.size());
  state.step_lengths = Tensor::zeros({B}, DType::I32);  // [R]
}

DecodeState Transformer::start_decoding(const Context& ctx, int64_t sequences, int64_t max_length,
                                        int64_t hypotheses) const {
  (void)ctx;  // the cache starts empty: nothing is computed yet
  TFM_CHECK(config_.architecture == "decoder-only", "start_decoding: the model is ", config_.architecture,
            ": decoding without an encoder output needs a decoder-only model");
  TFM_CHECK(sequences >= 1, "decoding needs at least 1 sequence, got ", sequences);
  TFM_CHECK(max_length >= 1, "decoding needs a maximum length of at least 1, got ", max_length);
  TFM_CHECK(hypotheses >= 1, "decoding needs at least 1 hypothesis per sequence, got ", hypotheses);
  TFM_CHECK(positions_table < 0 || config_.position_offset + max_length <= config_.max_positions,
            "decoding: a maximum length of ", max_length, " tokens is longer than the ",
            config_.max_positions - config_.position_offset, " that max_positions ", config_.max_positions,
            " allows (position_offset ", config_.position_offset, ")");
  DecodeState state;
  state.src_lengths = Tensor::zeros({sequences}, DType::I32);  // [R]: no encoder output to read
  add_self_cache(state, sequences, max_length, hypotheses, params_.dtype(), params_.device());
  return state;
}

Tensor Transformer::decode_prefix(const Context& ctx, DecodeState& state, const Tensor& prompt) const {
  TFM_CHECK(prompt.rank() == 2 && prompt.size(0) == state.rows() && prompt.size(1) >= 1, "decode_prefix: a prompt of shape ",
            prompt.shape(), " for ", state.rows(), " hypotheses (expected [", state.rows(), ", P ≥ 1])");
  const int64_t R = prompt.size(0), P = prompt.size(1);
  TFM_CHECK(state.length + P <= state.key_rows.size(1), "decode_prefix: ", state.length, " tokens and a prompt of ", P,
            " exceed the cache's capacity of ", state.key_rows.size(1));
  if (state.length == 0) return prefix_at_once(ctx, state, prompt);
  const Tensor host = prompt.to_device(Device::CPU);  // [R, P]
  Tensor hidden;  // [R, D]
  // After earlier tokens, one step per prompt position: the cache fills as decoding token by token.
  for (int64_t t = 0; t < P; ++t) {
    std::vector<int32_t> column(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) column[static_cast<size_t>(r)] = host.data<int32_t>()[r * P + t];
    hidden = decode_hidden(ctx, state, Tensor::from<int32_t>({R}, column).on(prompt.device()));
  }
  return hidden;
}

Tensor Transformer::prefix_at_once(const Context& ctx, DecodeState& state, const Tensor& prompt) const {
  const int64_t R = prompt.size(0), P = prompt.size(1), D = config_.d_model;
  Tensor x = embed(ctx, tgt_embedding, prompt.on(params_.device()), 0, nullptr);  // [R, P, D]
  for (size_t i = 0; i < decoder.size(); ++i) x = decoder[i].prefix(ctx, x, state, i);
  if (final_norms()) x = decoder_norm.forward(ctx, x, nullptr);
  // Hypothesis r's keys at positions [0, P) are in row r of each slab.
  int32_t* key_rows = state.key_rows.data<int32_t>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t t = 0; t < P; ++t) key_rows[r * state.key_rows.size(1) + t] = static_cast<int32_t>(r);
  state.length = P;
  if (P == 1) return x.view({R, D});
  // The last position's hidden state [R, D]: the columns after the first P − 1 positions.
  Tensor before = Tensor::empty({R, (P - 1) * D}, x.dtype(), x.device()), last = Tensor::empty({R, D}, x.dtype(), x.device());
  ops::split_columns(x.view({R, P * D}), {before, last});
  return last;
}

Tensor Transformer::decode_step(const Context& ctx, DecodeState& state, const Tensor& tokens) const {
  return project_step(ctx, state, decode_hidden(ctx, state, tokens));
}

Tensor Transformer::decode_hidden(const Context& ctx, DecodeState& state, const Tensor& tokens) const {
  const int64_t rows = state.rows();
  TFM_CHECK(tokens.numel() == rows, "decode_step: ", tokens.numel(), " tokens for ", rows, " hypotheses");
  TFM_CHECK(state.key_rows.size(1) > state.length, "decode_step: the cache holds ", state.length,
            " tokens, its capacity");
  state.step_lengths.fill(static_cast<double>(state.length + 1));
  // This step's keys go to row b of the slab, which hypothesis b reads from now on.
  int32_t* key_rows = state.key_rows.data<int32_t>();
  for (int64_t b = 0; b < rows; ++b) key_rows[b * state.key_rows.size(1) + state.length] = static_cast<int32_t>(b);
  // The attention op checks host values at each call; device copies are checked here, once.
  const Device device = params_.device();
  if (device != Device::CPU) {
    const int64_t slab_rows = state.self_k.empty() ? rows : state.self_k[0].size(1);
    for (int64_t i = 0; i < state.key_rows.numel(); ++i)
      TFM_CHECK(key_rows[i] >= 0 && key_rows[i] < slab_rows, "decode_step: key_rows[", i / state.key_rows.size(1),
                ", ", i % state.key_rows.size(1), "] = ", key_rows[i], " is outside the slab's ", slab_rows, " rows");
    const int64_t S = state.memory_k.empty() ? 0 : state.memory_k[0].size(1);
    const int32_t* src_lengths = state.src_lengths.data<int32_t>();
    for (int64_t b = 0; b < rows && !state.memory_k.empty(); ++b)
      TFM_CHECK(src_lengths[b] >= 0 && src_lengths[b] <= S, "decode_step: src_lengths[", b, "] = ", src_lengths[b],
                " is outside the encoder output's [0, ", S, "]");
  }
  auto there = [&](const Tensor& t) { return t.on(device); };
  state.step_lengths_there = there(state.step_lengths);
  // With a sliding window, the keys so far only: the window's start is counted back from the last
  // key the step reads (ops::AttentionArgs::window), this step's own.
  state.key_rows_there =
      there(config_.attention_window > 0 ? first_columns(state.key_rows, state.length + 1) : state.key_rows);
  state.src_lengths_there = there(state.src_lengths);
  Tensor x = embed(ctx, tgt_embedding, tokens.view({rows, 1}), state.length, nullptr);  // [R, 1, D]
  for (size_t i = 0; i < decoder.size(); ++i) x = decoder[i].step(ctx, x, state, i);
  if (final_norms()) x = decoder_norm.forward(ctx, x, nullptr);
  ++state.length;
  return x.view({rows, config_.d_model});
}

Tensor Transformer::project_step(const Context& ctx, const DecodeState& state, const Tensor& hidden) const {
  const int64_t rows = hidden.size(0);
  if (!state.output_ids.defined()) return project(ctx, hidden).view({rows, config_.vocab_size});
  Tensor logits = ops::product(hidden, state.output_weight);  // [R, V']
  if (state.output_bias.defined()) add_output_bias(logits, state.output_bias);
  return logits.view({rows, state.output_ids.numel()});
}

bool Transformer::screened_argmax(const Context& ctx, const DecodeState& state, const Tensor& hidden,
                                  const std::vector<int32_t>& banned, std::vector<int32_t>& ids) const {
  if (!screen_ || state.output_ids.defined() || hidden.device() != Device::CPU || hidden.dtype() != DType::F32)
    return false;
  // The float32 products the screen stands in for: packed (its float32 weights) or plain in float32.
  if (!ctx.weight(output_weight).float32_products()) return false;
  std::call_once(screen_->once, [&] {
    screen_->projection = std::make_shared<const ops::ScreenedProjection>(ops::screen_projection(
        params_.value(output_weight), output_bias >= 0 ? params_.value(output_bias) : Tensor()));
  });
  return ops::screened_argmax(hidden, *screen_->projection, banned, ids).undecided == 0;
}

void Transformer::reorder(DecodeState& state, const Tensor& rows, const Tensor& memory_rows) const {
  auto select = [](Tensor& t, const Tensor& which, int64_t prefix) {
    std::vector<int64_t> dims = t.shape().to_vector();
    dims[0] = which.numel();
    Tensor out = Tensor::empty(Shape(dims), t.dtype(), t.device());  // [R'', ...] (B_s'' for memory_rows)
    ops::index_select(t, which, out, prefix);
    t = out;
  };
  TFM_CHECK(state.self_k.empty() || rows.numel() <= state.self_k[0].size(1), "reorder: ", rows.numel(),
            " hypotheses exceed the ", state.self_k[0].size(1),
            " rows of the decoding cache's slabs (sentences × start_decoding's hypotheses per sentence)");
  select(state.src_lengths, rows, -1);
  select(state.step_lengths, rows, -1);
  select(state.key_rows, rows, -1);  // the caches' keys and values stay where they are
  for (Tensor& t : state.cross_attention)
    if (t.defined()) select(t, rows, -1);
  if (memory_rows.defined())
    for (auto* memory : {&state.memory_k, &state.memory_v})
      for (Tensor& t : *memory) select(t, memory_rows, -1);
  const int64_t entries = state.memory_k.empty() ? rows.numel() : state.memory_k[0].size(0);
  TFM_CHECK(entries > 0 && rows.numel() % entries == 0, "reorder: ", rows.numel(), " hypotheses cannot share ",
            entries, " encoder outputs evenly");
  state.kv_group = rows.numel() / entries;
}

}  // namespace tfm
