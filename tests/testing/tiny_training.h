#pragma once
// The training options of the trainer tests: a tiny model (d 16, 2 heads, 1+1 layers, 80 pieces)
// on the demo task's files in `data` (write_number_dataset), on 1 thread, so that a step takes
// milliseconds. Each test sets what it checks (warm-up, seed, save and log intervals) on top.
#include <cstdint>
#include <filesystem>

#include "transformer/train_options.h"

namespace tfm::testing {

inline transformer::TrainOptions tiny_training(const std::filesystem::path& data, const std::filesystem::path& run,
                                               int64_t max_steps) {
  transformer::TrainOptions o;
  o.train_source = (data / "train.en").string();
  o.train_target = (data / "train.de").string();
  o.run_dir = run.string();
  o.preset = "tiny";
  o.model.d_model = 16;
  o.model.heads = 2;
  o.model.d_ff = 32;
  o.model.encoder_layers = o.model.decoder_layers = 1;
  o.vocab_options.size = 80;
  o.batch_tokens = 256;
  o.threads = 1;
  o.max_steps = max_steps;
  return o;
}

}  // namespace tfm::testing
