#pragma once
// What a product takes after its bias in the same pass over its output: nothing, or max(0, ·)
// (a feed-forward layer's first product, §3.3).

namespace tfm::ops {

enum class Activation { kNone, kRelu };

}  // namespace tfm::ops
