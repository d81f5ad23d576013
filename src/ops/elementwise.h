#pragma once
// Element-wise ops. Every backward accumulates (dx += ...) into its gradient tensors, so that a
// tensor used twice (a residual branch, a shared embedding) sums its gradients; callers zero them.
// Shapes: N = any number of rows (all leading dims), C = the last dim.
#include "core/rng.h"
#include "core/tensor.h"
#include "ops/activation.h"

namespace tfm::ops {

// y = a + b (same shapes; y may alias a or b).
void add(const Tensor& a, const Tensor& b, const Tensor& y);
// y += x (same shapes): the backward of add and of any identity, and gradient accumulation.
void add_to(const Tensor& x, const Tensor& y);
// y = alpha · x (same shapes; y may alias x).
void scale(const Tensor& x, double alpha, const Tensor& y);

// y[n, c] = x[n, c] + bias[c]; x, y: [N, C], bias: [C]; y may alias x.
void bias_add(const Tensor& x, const Tensor& bias, const Tensor& y);
// y = act(x + bias) in one pass (a linear layer's bias and activation); y may alias x.
void bias_activate(const Tensor& x, const Tensor& bias, Activation act, const Tensor& y);
// dbias[c] += Σ_n dy[n, c]. (dx = dy: the caller passes dy on.)
void bias_add_backward(const Tensor& dy, const Tensor& dbias);

// y = max(x, 0); y may alias x.
void relu(const Tensor& x, const Tensor& y);
// dx += dy where y > 0 (y: the forward output; it may be bfloat16, dy and dx then float32).
void relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx);

// y = act(x) for any activation of ops/activation.h (kRelu: relu, kNone: a copy); y may alias x.
// Float32 runs on vectors (gelu's in double lanes), within 3 ulps of the definitions in double
// precision over [−20, 20] (ops/cpu/simd/activation.h).
void activate(Activation act, const Tensor& x, const Tensor& y);
// dx += dy · act′(pre), with pre the activation's INPUT (relu_backward takes the output; for kRelu
// the two agree: pre > 0 exactly where y > 0). kNone: dx += dy. At ReLU's kink, 0, the derivative
// taken is 0. Derivatives: swish σ(x)·(1 + x·(1 − σ(x))), gelu_sigmoid the same with u = 1.702·x,
// σ(u) + u·σ(u)·(1 − σ(u)), gelu Φ(x) + x·φ(x).
void activation_backward(Activation act, const Tensor& pre, const Tensor& dy, const Tensor& dx);

// Inverted dropout: y = x · keep / (1 − p), keep = [uniform(i) ≥ p] from `rng`, element i of the
// flat tensor; p in [0, 1). The mask is a pure function of (rng, i): nothing is stored, and the
// result does not depend on the thread count. y may alias x. The backward is the same call on the
// gradient with the same rng: dx = dy · keep / (1 − p).
void dropout(const Tensor& x, double p, const RngStream& rng, const Tensor& y);

// Σ x² over all elements, in double precision (for gradient-norm clipping).
double sum_squares(const Tensor& x);

}  // namespace tfm::ops
