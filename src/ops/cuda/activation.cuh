#pragma once
// The activations of ops/activation.h and their derivatives for one element, in double as the CPU's
// reference definitions (ops/cpu/simd/activation.h): for the elementwise and the gated kernels.
#include <cuda_runtime.h>

#include "ops/activation.h"

namespace tfm::cuda {

__device__ inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
// gelu_tanh's 0.5·(1 + tanh(u)) as σ(w), w = 2u = 2√(2/π)·x·(1 + 0.044715·x²), and dw/dx.
__device__ inline double gelu_tanh_w(double x) { return 1.5957691216057308 * x * (1.0 + 0.044715 * x * x); }
__device__ inline double gelu_tanh_slope(double x) { return 1.5957691216057308 * (1.0 + 3.0 * 0.044715 * x * x); }

__device__ inline float activate_one(ops::Activation act, float xf) {
  const double x = xf;
  switch (act) {
    case ops::Activation::kNone: return xf;
    case ops::Activation::kRelu: return xf > 0.0f ? xf : 0.0f;
    case ops::Activation::kSwish: return static_cast<float>(x * sigmoid(x));
    case ops::Activation::kGelu: return static_cast<float>(0.5 * x * (1.0 + erf(x * 0.70710678118654752440)));
    case ops::Activation::kGeluSigmoid: return static_cast<float>(x * sigmoid(1.702 * x));
    case ops::Activation::kGeluTanh: return static_cast<float>(x * sigmoid(gelu_tanh_w(x)));
  }
  return xf;
}

__device__ inline float derivative(ops::Activation act, float xf) {
  const double x = xf;
  switch (act) {
    case ops::Activation::kNone: return 1.0f;
    case ops::Activation::kRelu: return xf > 0.0f ? 1.0f : 0.0f;
    case ops::Activation::kSwish: {
      const double s = sigmoid(x);
      return static_cast<float>(s * (1.0 + x * (1.0 - s)));
    }
    case ops::Activation::kGelu: {
      const double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
      const double pdf = 0.39894228040143267794 * exp(-0.5 * x * x);
      return static_cast<float>(cdf + x * pdf);
    }
    case ops::Activation::kGeluSigmoid: {
      const double u = 1.702 * x, s = sigmoid(u);
      return static_cast<float>(s + u * s * (1.0 - s));
    }
    case ops::Activation::kGeluTanh: {
      const double s = sigmoid(gelu_tanh_w(x));
      return static_cast<float>(s + x * gelu_tanh_slope(x) * s * (1.0 - s));
    }
  }
  return 1.0f;
}

}  // namespace tfm::cuda
