#pragma once
// What a product takes after its bias in the same pass over its output: a feed-forward layer's
// first product (§3.3) takes its activation there.
#include <string_view>

namespace tfm::ops {

// σ(x) = 1 / (1 + e^−x), Φ the standard normal distribution function.
enum class Activation {
  kNone,         // x
  kRelu,         // max(0, x): the paper's
  kSwish,        // x · σ(x), also called SiLU: OPUS-MT's (Marian) feed-forward layers
  kGelu,         // 0.5 · x · (1 + erf(x / √2)) = x · Φ(x), exact: Hugging Face's "gelu", torch's default
  kGeluSigmoid,  // x · σ(1.702 · x): Marian's "gelu", CTranslate2's GELUSigmoid; within 0.02 of gelu
  kGeluTanh,     // 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))): GPT-2's "gelu_new", torch's
                 // gelu(approximate="tanh"); within 5e-4 of gelu. As 1 + tanh(u) = 2·σ(2u), it is
                 // computed as x · σ(w), w = 2·√(2/π) · x · (1 + 0.044715 · x²), which keeps x ≪ 0 accurate
};

// "none", "relu", "swish", "gelu", "gelu_sigmoid", "gelu_tanh": the names a model's configuration uses.
inline const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSwish: return "swish";
    case Activation::kGelu: return "gelu";
    case Activation::kGeluSigmoid: return "gelu_sigmoid";
    case Activation::kGeluTanh: return "gelu_tanh";
  }
  return "?";
}

// The activation of that name (activation_name's) into *out; false, *out untouched, for any other.
inline bool parse_activation(std::string_view name, Activation* out) {
  for (Activation a : {Activation::kNone, Activation::kRelu, Activation::kSwish, Activation::kGelu,
                       Activation::kGeluSigmoid, Activation::kGeluTanh})
    if (name == activation_name(a)) {
      *out = a;
      return true;
    }
  return false;
}

}  // namespace tfm::ops
