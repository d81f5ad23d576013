#pragma once
// Pictures of attention: a hypothesis's encoder-decoder attention as an SVG heatmap, source tokens
// across, target tokens down, darker for more weight (`transformer attention`).
#include <cstdint>
#include <string>
#include <vector>

#include "transformer/translator.h"

namespace transformer {

struct AttentionView {
  int64_t layer = -1;  // decoder layer from 0; -1: the last
  int64_t head = -1;   // one head from 0; -1: the average of all heads
  bool grid = false;   // every head of the layer, 4 to a row (head is then ignored)
};

// The SVG of hypothesis `h` (recorded with SearchOptions::record_attention) of translation `t`,
// labelled with the translator's pieces (end of sentence included on both sides). Throws Error
// naming a layer or head outside the model, or a hypothesis without attention.
std::string attention_svg(const Translator& translator, const Translation& t, const Hypothesis& h,
                          const AttentionView& view = {});

}  // namespace transformer
