#pragma once
// What the Hugging Face causal language models' importers (GPT-2, Llama, Qwen2, Mistral) share: the
// special token ids a decoder-only model generates with, and the reshaping of their weights.
#include <string>
#include <vector>

#include "import/hf_common.h"

namespace tfm {

// bos_id, eos_id, stop_ids, pad_id and a provisional unk_id from config.json's bos_token_id,
// eos_token_id (generation_config.json's when it has one: generate() stops there) and pad_token_id.
// An eos_token_id list (instruct models') gives eos_id its first id and stop_ids the others:
// generation ends at any of them, as generate()'s. bos_id is −1 (no BOS before a prompt) when
// config.json names none or an end-of-sequence id; pad_id is always −1:
// batches are masked by length, and a padding id would be banned from the output, which
// generate() does not do. unk_id is the first id that is none of them, until the tokenizer's
// import sets it. Notes say what was chosen.
void hf_decoder_special_ids(const HfFolderInfo& folder, ModelConfig& c, std::vector<std::string>& notes);

// The checkpoint's 2-D tensor `name` read and transposed (GPT-2's Conv1D weights are stored
// [in, out]); another rank is refused naming the file and the tensor.
Tensor hf_transposed(HfWeights& w, const std::string& name);
// Rows [begin, begin + count) of a tensor, as a tensor of its own.
Tensor hf_rows(const Tensor& t, int64_t begin, int64_t count);
// a's rows, then b's (the gated feed-forward's fc1: the gate's rows first, then the up projection's);
// tensors of other widths are refused, the message beginning with `what` (the file and the names).
Tensor hf_stacked(const Tensor& a, const Tensor& b, const std::string& what);

}  // namespace tfm
