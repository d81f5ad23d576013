#pragma once
// What a layer's forward or backward needs besides its inputs.
//
// Dimension letters, used in every shape comment of layers/ and model/:
//   B batch (sentences), S source length, T target length, D model width (d_model),
//   H heads, F feed-forward width (d_ff), V vocabulary, N rows (all leading dims flattened).
#include "core/param_store.h"
#include "core/rng.h"

namespace tfm {

struct Context {
  const ParamStore* params = nullptr;  // values read, gradients accumulated (+=)
  Rng* rng = nullptr;                  // dropout's random streams; null: no dropout (inference)

  bool training() const { return rng != nullptr; }
  Tensor value(int id) const { return params->value(id); }
  Tensor grad(int id) const { return params->grad(id); }
};

}  // namespace tfm
