#include "ops/elementwise.h"

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"

namespace tfm::ops {

void add(const Tensor& a, const Tensor& b, const Tensor& y) {
  check_same_shape("add", "a", a, "b", b);
  check_same_shape("add", "a", a, "y", y);
  check_all("add", y.dtype(), y.device(), {{"a", &a}, {"b", &b}});
  dispatch("add", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::add<T>(y.numel(), a.data<T>(), b.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) { k.add(y.numel(), a.data<float>(), b.data<float>(), y.data<float>()); });
}

void add_to(const Tensor& x, const Tensor& y) {
  check_same_shape("add_to", "x", x, "y", y);
  check_all("add_to", y.dtype(), y.device(), {{"x", &x}});
  dispatch("add_to", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::add_to<T>(y.numel(), x.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) { k.add_to(y.numel(), x.data<float>(), y.data<float>()); });
}

void scale(const Tensor& x, double alpha, const Tensor& y) {
  check_same_shape("scale", "x", x, "y", y);
  check_all("scale", y.dtype(), y.device(), {{"x", &x}});
  dispatch("scale", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::scale<T>(y.numel(), x.data<T>(), static_cast<T>(alpha), y.data<T>());
  }, [&](cuda::Kernels& k) { k.scale(y.numel(), x.data<float>(), static_cast<float>(alpha), y.data<float>()); });
}

namespace {
void check_bias(const char* op, const Tensor& x, const Tensor& bias) {
  TFM_CHECK(x.rank() >= 1, op, ": input must have rank >= 1, got shape ", x.shape());
  TFM_CHECK(bias.rank() == 1 && bias.size(0) == x.size(-1), op, ": bias has shape ", bias.shape(),
            ", expected [", x.size(-1), "] for input of shape ", x.shape());
}
}  // namespace

void bias_add(const Tensor& x, const Tensor& bias, const Tensor& y) {
  check_bias("bias_add", x, bias);
  check_same_shape("bias_add", "x", x, "y", y);
  check_all("bias_add", y.dtype(), y.device(), {{"x", &x}, {"bias", &bias}});
  dispatch("bias_add", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::bias_add<T>(x.shape().rows(), x.shape().last(), x.data<T>(), bias.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) {
    k.bias_add(x.shape().rows(), x.shape().last(), x.data<float>(), bias.data<float>(), y.data<float>());
  });
}

void bias_activate(const Tensor& x, const Tensor& bias, Activation act, const Tensor& y) {
  check_bias("bias_activate", x, bias);
  check_same_shape("bias_activate", "x", x, "y", y);
  check_all("bias_activate", y.dtype(), y.device(), {{"x", &x}, {"bias", &bias}});
  dispatch("bias_activate", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::bias_add<T>(x.shape().rows(), x.shape().last(), x.data<T>(), bias.data<T>(), y.data<T>());
    if (act != Activation::kNone) cpu::activate<T>(y.numel(), act, y.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) {
    k.bias_activate(x.shape().rows(), x.shape().last(), x.data<float>(), bias.data<float>(), act, y.data<float>());
  });
}

void bias_add_backward(const Tensor& dy, const Tensor& dbias) {
  check_bias("bias_add_backward", dy, dbias);
  check_all("bias_add_backward", dy.dtype(), dy.device(), {{"dbias", &dbias}});
  dispatch("bias_add_backward", dy.dtype(), dy.device(), [&](auto t) {
    using T = decltype(t);
    cpu::bias_add_backward<T>(dy.shape().rows(), dy.shape().last(), dy.data<T>(), dbias.data<T>());
  }, [&](cuda::Kernels& k) { k.bias_add_backward(dy.shape().rows(), dy.shape().last(), dy.data<float>(), dbias.data<float>()); });
}

void relu(const Tensor& x, const Tensor& y) {
  check_same_shape("relu", "x", x, "y", y);
  check_all("relu", y.dtype(), y.device(), {{"x", &x}});
  dispatch("relu", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::relu<T>(y.numel(), x.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) { k.relu(y.numel(), x.data<float>(), y.data<float>()); });
}

void relu_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  check_same_shape("relu_backward", "y", y, "dy", dy);
  check_same_shape("relu_backward", "y", y, "dx", dx);
  if (y.dtype() == DType::BF16) {  // a bfloat16 activation (Context::product_input): float32 gradients
    check_all("relu_backward", DType::F32, y.device(), {{"dy", &dy}, {"dx", &dx}});
    TFM_CHECK(y.device() == dx.device(), "relu_backward: y is on ", name(y.device()), ", dx on ", name(dx.device()));
    const auto* y16 = reinterpret_cast<const uint16_t*>(y.data<Bf16>());
    dispatch("relu_backward", dx.dtype(), dx.device(), [&](auto) {
      cpu::relu_backward_bf16(y.numel(), y16, dy.data<float>(), dx.data<float>());
    }, [&](cuda::Kernels& k) { k.relu_backward_bf16(y.numel(), y16, dy.data<float>(), dx.data<float>()); });
    return;
  }
  check_all("relu_backward", y.dtype(), y.device(), {{"dy", &dy}, {"dx", &dx}});
  dispatch("relu_backward", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::relu_backward<T>(y.numel(), y.data<T>(), dy.data<T>(), dx.data<T>());
  }, [&](cuda::Kernels& k) { k.relu_backward(y.numel(), y.data<float>(), dy.data<float>(), dx.data<float>()); });
}

void activate(Activation act, const Tensor& x, const Tensor& y) {
  check_same_shape("activate", "x", x, "y", y);
  check_all("activate", y.dtype(), y.device(), {{"x", &x}});
  if (act == Activation::kNone && x.raw() == y.raw()) return;  // the identity, in place
  dispatch("activate", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::activate<T>(y.numel(), act, x.data<T>(), y.data<T>());
  }, [&](cuda::Kernels& k) { k.activate(y.numel(), act, x.data<float>(), y.data<float>()); });
}

void activation_backward(Activation act, const Tensor& pre, const Tensor& dy, const Tensor& dx) {
  check_same_shape("activation_backward", "pre", pre, "dy", dy);
  check_same_shape("activation_backward", "pre", pre, "dx", dx);
  check_all("activation_backward", dx.dtype(), dx.device(), {{"pre", &pre}, {"dy", &dy}});
  dispatch("activation_backward", dx.dtype(), dx.device(), [&](auto t) {
    using T = decltype(t);
    cpu::activation_backward<T>(dx.numel(), act, pre.data<T>(), dy.data<T>(), dx.data<T>());
  }, [&](cuda::Kernels& k) {
    k.activation_backward(dx.numel(), act, pre.data<float>(), dy.data<float>(), dx.data<float>());
  });
}

namespace {
void check_rate(const char* op, double p) {
  TFM_CHECK(p >= 0.0 && p < 1.0, op, ": dropout rate must be in [0, 1), got ", p);
}
}  // namespace

void dropout(const Tensor& x, double p, const RngStream& rng, const Tensor& y) {
  check_rate("dropout", p);
  check_same_shape("dropout", "x", x, "y", y);
  check_all("dropout", y.dtype(), y.device(), {{"x", &x}});
  dispatch("dropout", y.dtype(), y.device(), [&](auto t) {
    using T = decltype(t);
    cpu::dropout<T>(y.numel(), x.data<T>(), p, rng, y.data<T>());
  }, [&](cuda::Kernels& k) { k.dropout(y.numel(), x.data<float>(), p, rng, y.data<float>()); });
}

double sum_squares(const Tensor& x) {
  double result = 0;
  dispatch("sum_squares", x.dtype(), x.device(), [&](auto t) {
    using T = decltype(t);
    result = cpu::sum_squares<T>(x.numel(), x.data<T>());
  }, [&](cuda::Kernels& k) { result = k.sum_squares(x.numel(), x.data<float>()); });
  return result;
}

}  // namespace tfm::ops
