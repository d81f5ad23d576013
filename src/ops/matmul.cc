#include "ops/matmul.h"

#include <algorithm>
#include <type_traits>

#include "ops/cpu/kernels.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace tfm::ops {

namespace {
struct Plan {
  int64_t batch, m, n, k, stride_a, stride_b, stride_c;
};

// Works out the product's sizes from the shapes and checks that they agree.
Plan plan(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulArgs& args) {
  TFM_CHECK(a.rank() >= 2 && b.rank() >= 2 && c.rank() >= 2, "matmul: operands must have rank >= 2, got A ",
            a.shape(), ", B ", b.shape(), ", C ", c.shape());
  Plan p{};
  const int64_t a_rows = a.size(-2), a_cols = a.size(-1);
  const int64_t b_rows = b.size(-2), b_cols = b.size(-1);
  p.k = args.trans_a ? a_rows : a_cols;
  const int64_t k_b = args.trans_b ? b_cols : b_rows;
  p.n = args.trans_b ? b_rows : b_cols;
  TFM_CHECK(p.k == k_b, "matmul: inner dimensions differ: op(A) of ", a.shape(), (args.trans_a ? " (transposed)" : ""),
            " has ", p.k, " columns, op(B) of ", b.shape(), (args.trans_b ? " (transposed)" : ""), " has ", k_b,
            " rows");
  if (b.rank() == 2 && a.rank() > 2) {
    TFM_CHECK(!args.trans_a, "matmul: A of shape ", a.shape(),
              " with leading dims cannot be transposed when B is a matrix");
    p.batch = 1;
    p.m = a.numel() / a_cols;
  } else {
    TFM_CHECK(a.rank() == b.rank(), "matmul: A ", a.shape(), " and B ", b.shape(), " have different ranks");
    p.batch = 1;  // the leading dims' product (not numel / matrix size: K may be 0)
    for (int i = 0; i < a.rank() - 2; ++i) {
      TFM_CHECK(a.size(i) == b.size(i), "matmul: batch dims of A ", a.shape(), " and B ", b.shape(), " differ");
      p.batch *= a.size(i);
    }
    p.m = args.trans_a ? a_cols : a_rows;
  }
  const int64_t want_c = p.batch * p.m * p.n;
  TFM_CHECK(c.size(-1) == p.n && c.numel() == want_c, "matmul: C has shape ", c.shape(), ", expected ",
            (p.batch > 1 ? cat(p.batch, " × ") : std::string()), "[", p.m, ", ", p.n, "] for A ", a.shape(),
            (args.trans_a ? "ᵀ" : ""), " · B ", b.shape(), (args.trans_b ? "ᵀ" : ""));
  p.stride_a = p.batch > 1 ? a_rows * a_cols : 0;
  p.stride_b = p.batch > 1 ? b_rows * b_cols : 0;
  p.stride_c = p.m * p.n;
  return p;
}

// A product's input as its kernels take it: float32 values, or bfloat16 ones (ops/bf16_input.h).
Bf16Input input(const Tensor& t) { return {t.raw(), t.dtype() == DType::BF16}; }

// Throws unless each input is on the output's device with its dtype, or, in a bfloat16 product
// into float32, holds bfloat16 values (training's activations and weight copies in --bf16).
void check_inputs(const char* op, const Tensor& out, Precision precision,
                  std::initializer_list<std::pair<const char*, const Tensor*>> inputs) {
  for (const auto& [input_name, t] : inputs) {
    if (precision == Precision::kBf16 && out.dtype() == DType::F32 && t->dtype() == DType::BF16)
      check_all(op, DType::BF16, out.device(), {{input_name, t}});
    else if (t->dtype() == DType::BF16)
      throw Error(cat(op, ": ", input_name, " holds bfloat16 values, which only bfloat16 products into float32 take, "
                      "not this one (precision ", precision == Precision::kBf16 ? "bf16" : "float32", ", output ",
                      name(out.dtype()), ")"));
    else
      check_all(op, out.dtype(), out.device(), {{input_name, t}});
  }
}
}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulArgs& args) {
  check_inputs("matmul", c, args.precision, {{"A", &a}, {"B", &b}});
  const Plan p = plan(a, b, c, args);
  dispatch(args.precision == Precision::kBf16 ? "matmul bf16" : "matmul", c.dtype(), c.device(), [&](auto t) {
    using T = decltype(t);
    if (args.precision == Precision::kBf16) {
      if constexpr (std::is_same_v<T, float>) {
        cpu::gemm_bf16(p.batch, args.trans_a, args.trans_b, p.m, p.n, p.k, args.alpha, input(a), p.stride_a,
                       input(b), p.stride_b, args.beta, c.data<float>(), p.stride_c);
        return;
      }
      throw Error(cat("matmul: bfloat16 products take float32 tensors, got ", name(c.dtype())));
    }
    cpu::gemm<T>(p.batch, args.trans_a, args.trans_b, p.m, p.n, p.k, static_cast<T>(args.alpha), a.data<T>(),
                 p.stride_a, b.data<T>(), p.stride_b, static_cast<T>(args.beta), c.data<T>(), p.stride_c);
  }, [&](cuda::Kernels& k) {
    k.gemm(p.batch, args.trans_a, args.trans_b, p.m, p.n, p.k, args.alpha, input(a), p.stride_a, input(b), p.stride_b,
           args.beta, c.data<float>(), p.stride_c, args.precision == Precision::kBf16);
  });
}

void matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dc, const Tensor* da, const Tensor* db,
                     const MatmulArgs& args) {
  plan(a, b, dc, args);  // validates the forward's shapes
  // A weight B shared across A's leading dims: fold them into rows, so dB sums over all of them.
  const bool fold = b.rank() == 2 && a.rank() > 2;
  const Tensor a2 = fold ? a.view({a.numel() / a.size(-1), a.size(-1)}) : a;
  const Tensor dc_rows = fold ? dc.view({dc.numel() / dc.size(-1), dc.size(-1)}) : dc;
  // In bf16, dC rounded once for both products, not by each.
  const bool round_once = args.precision == Precision::kBf16 && da && db && dc.dtype() == DType::F32;
  const Tensor dc2 = round_once ? to_bf16(dc_rows) : dc_rows;
  const bool ta = args.trans_a, tb = args.trans_b;
  const float alpha = args.alpha;
  if (da) {
    check_same_shape("matmul_backward", "dA", *da, "A", a);
    const Tensor da2 = fold ? da->view(a2.shape()) : *da;
    if (!ta) matmul(dc2, b, da2, {false, !tb, alpha, 1.0f, args.precision});  // dA = dC · op(B)ᵀ
    else     matmul(b, dc2, da2, {tb, true, alpha, 1.0f, args.precision});    // dA = op(B) · dCᵀ
  }
  if (db) {
    check_same_shape("matmul_backward", "dB", *db, "B", b);
    if (!tb) matmul(a2, dc2, *db, {!ta, false, alpha, 1.0f, args.precision});  // dB = op(A)ᵀ · dC
    else     matmul(dc2, a2, *db, {true, ta, alpha, 1.0f, args.precision});    // dB = dCᵀ · op(A)
  }
}

namespace {
// x [N, in], w [out, in], the bias (or its gradient) [out], y (or dy) [N, out]: checked, and N.
int64_t linear_rows(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    Precision precision) {
  check_inputs(op, y, precision, {{"x", &x}, {"w", &w}});
  check_all(op, y.dtype(), y.device(), {{"bias", &bias}});
  TFM_CHECK(w.rank() == 2 && x.rank() >= 1 && x.size(-1) == w.size(1) && bias.rank() == 1 &&
                bias.size(0) == w.size(0) && y.rank() >= 1 && y.size(-1) == w.size(0) &&
                y.numel() * w.size(1) == x.numel() * w.size(0),
            op, ": shapes x ", x.shape(), ", w ", w.shape(), ", bias ", bias.shape(), ", y ", y.shape(),
            " do not make y = x · wᵀ + bias");
  return w.size(1) > 0 ? x.numel() / w.size(1) : y.numel() / std::max<int64_t>(w.size(0), 1);
}
}  // namespace

void check_residual(const char* op, const Tensor& residual, const Tensor& y, Activation act) {
  if (!residual.defined()) return;
  check_dtype(op, "residual", residual, y.dtype());
  TFM_CHECK(residual.shape() == y.shape() && residual.device() == y.device(), op, ": the residual ", residual.shape(),
            " on ", name(residual.device()), " does not match the output ", y.shape(), " on ", name(y.device()));
  TFM_CHECK(act == Activation::kNone, op, ": a residual is added to a product without an activation, not after '",
            activation_name(act), "'");
  TFM_CHECK(residual.raw() != y.raw(), op, ": the residual may not be the output itself");
}

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act, const Tensor& y,
            Precision precision, const Tensor& residual) {
  const int64_t rows = linear_rows("linear", x, w, bias, y, precision);
  check_residual("linear", residual, y, act);
  if (y.device() != Device::CPU) {
    bool done = false;
    dispatch("linear (cuBLASLt)", y.dtype(), y.device(), [](auto) {}, [&](cuda::Kernels& k) {
      done = k.linear(rows, w.size(1), w.size(0), input(x), input(w), bias.data<float>(), act,
                      y.data<float>(), precision == Precision::kBf16,
                      residual.defined() ? residual.data<float>() : nullptr);
    });
    if (done) return;
  }
  matmul(x, w, y, {.trans_b = true, .precision = precision});
  bias_activate(y, bias, act, y);
  if (residual.defined()) add(residual, y, y);
}

void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor* dx, const Tensor& dw,
                     const Tensor& dbias, Precision precision) {
  const int64_t rows = linear_rows("linear_backward", x, w, dbias, dy, precision);
  check_same_shape("linear_backward", "dw", dw, "w", w);
  if (dx) check_same_shape("linear_backward", "dx", *dx, "x", x);
  if (dy.device() != Device::CPU) {
    dispatch("linear_backward", dy.dtype(), dy.device(), [](auto) {}, [&](cuda::Kernels& k) {
      k.linear_backward(rows, w.size(1), w.size(0), input(x), input(w), dy.data<float>(),
                        dx ? dx->data<float>() : nullptr, dw.data<float>(), dbias.data<float>(),
                        precision == Precision::kBf16);
    });
    return;
  }
  if (precision == Precision::kBf16 && dy.dtype() == DType::F32) {
    // One pass over dy for the bias gradient and its bfloat16 copy, which both products read.
    const Tensor dy16 = Tensor::empty(dy.shape(), DType::BF16);
    dispatch("bias_add_backward", dy.dtype(), dy.device(), [&](auto) {
      cpu::bias_add_backward_bf16(rows, w.size(0), dy.data<float>(), dbias.data<float>(),
                                  reinterpret_cast<uint16_t*>(dy16.data<Bf16>()));
    });
    matmul_backward(x, w, dy16, dx, &dw, {.trans_b = true, .precision = precision});
    return;
  }
  matmul_backward(x, w, dy, dx, &dw, {.trans_b = true, .precision = precision});
  bias_add_backward(dy, dbias);
}

void round_to_bf16(const Tensor& x, const Tensor& y) {
  check_all("round_to_bf16", y.dtype(), y.device(), {{"x", &x}});
  check_same_shape("round_to_bf16", "y", y, "x", x);
  dispatch("round_to_bf16", y.dtype(), y.device(), [&](auto t) {
    if constexpr (std::is_same_v<decltype(t), float>) cpu::round_to_bf16(x.numel(), x.data<float>(), y.data<float>());
    else throw Error(cat("round_to_bf16: takes float32 tensors, got ", name(y.dtype())));
  }, [&](cuda::Kernels& k) { k.round_to_bf16(x.numel(), x.data<float>(), y.data<float>()); });
}

void to_bf16(const Tensor& x, const Tensor& y) {
  check_dtype("to_bf16", "y", y, DType::BF16);
  check_same_shape("to_bf16", "y", y, "x", x);
  TFM_CHECK(x.device() == y.device(), "to_bf16: x is on ", name(x.device()), ", y on ", name(y.device()));
  dispatch("to_bf16", x.dtype(), x.device(), [&](auto t) {
    if constexpr (std::is_same_v<decltype(t), float>)
      cpu::to_bf16(x.numel(), x.data<float>(), reinterpret_cast<uint16_t*>(y.data<Bf16>()));
    else throw Error(cat("to_bf16: takes a float32 tensor, got ", name(x.dtype())));
  }, [&](cuda::Kernels& k) { k.to_bf16(x.numel(), x.data<float>(), y.raw()); });
}

Tensor to_bf16(const Tensor& x) {
  if (x.dtype() == DType::BF16) return x;
  Tensor y = Tensor::empty(x.shape(), DType::BF16, x.device());
  to_bf16(x, y);
  return y;
}

bool bf16_native() { return cpu::bf16_native(); }
const char* bf16_path() { return cpu::bf16_path(); }

}  // namespace tfm::ops
