#!/usr/bin/python3
"""Writes the PyTorch reference fixtures that tests/torch_reference_test.cc checks our ops against
(and tests/activation_test.cc the feed-forward activations).

The tests read only the committed JSON files, so they never need PyTorch. To regenerate them (needs
Debian's python3-torch; `scripts/install-deps.sh --fixtures` installs it):

    make fixtures
    # or: /usr/bin/python3 tools/make_fixtures.py --out tests/fixtures

Everything is computed in float64 from fixed seeds, so a rerun with the same torch writes the same
files. One file per op family; each is a JSON object whose entries are either a tensor,
{"shape": [...], "data": [flat row-major numbers]}, or a scalar setting (number or bool). Sizes are
deliberately odd so that no kernel gets away with assuming a multiple of a vector width.
"""
import argparse
import json
import math
import os

import torch

torch.set_default_dtype(torch.float64)
F64 = torch.float64


def tensor_entry(t):
    t = t.detach()
    data = t.reshape(-1).tolist()  # floats keep all 17 digits: json writes repr(), which round-trips
    return {"shape": list(t.shape), "data": data}


def write(out_dir, name, entries):
    """One entry per line (tensors on a single line each): small and still readable in a diff."""
    lines = []
    for key, value in entries.items():
        value = tensor_entry(value) if isinstance(value, torch.Tensor) else value
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    size = os.path.getsize(path)
    assert size < 200_000, f"{path} is {size} bytes; keep fixtures small"
    print(f"wrote {path} ({size} bytes)")


def header(description):
    return {"_about": description, "_generator": f"tools/make_fixtures.py, torch {torch.__version__}, float64"}


def attention_case(gen, prefix, B, T, S, H, dk, key_lengths, causal):
    """softmax(Q·Kᵀ/√d_k + mask)·V per head with plain torch ops; masked keys get -inf, so weight exactly 0."""
    q = torch.randn(B, T, H * dk, generator=gen, dtype=F64, requires_grad=True)
    k = torch.randn(B, S, H * dk, generator=gen, dtype=F64, requires_grad=True)
    v = torch.randn(B, S, H * dk, generator=gen, dtype=F64, requires_grad=True)
    heads = lambda x: x.view(B, x.shape[1], H, dk).transpose(1, 2)  # [B, H, len, dk]; head h = cols h·dk..
    scores = heads(q) @ heads(k).transpose(-1, -2) / math.sqrt(dk)  # [B, H, T, S]
    allowed = torch.ones(B, 1, T, S, dtype=torch.bool)
    if key_lengths is not None:
        allowed &= (torch.arange(S).view(1, S) < torch.tensor(key_lengths).view(B, 1)).view(B, 1, 1, S)
    if causal:  # query t sees keys s ≤ t + (S − T), as documented in src/ops/attention.h
        allowed &= (torch.arange(S).view(1, S) <= torch.arange(T).view(T, 1) + (S - T)).view(1, 1, T, S)
    assert allowed.any(-1).all(), "every query must see a key, or torch's softmax gives NaN"
    mask = torch.zeros(B, 1, T, S).masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores + mask, dim=-1)
    out = (probs @ heads(v)).transpose(1, 2).reshape(B, T, H * dk)
    dout = torch.randn(B, T, H * dk, generator=gen, dtype=F64)
    dq, dk_, dv = torch.autograd.grad(out, (q, k, v), dout)
    assert (probs.detach()[~allowed.expand(B, H, T, S)] == 0).all()
    e = {f"{prefix}.causal": causal}
    if key_lengths is not None:
        e[f"{prefix}.key_lengths"] = torch.tensor(key_lengths, dtype=torch.int32)
    for name, t in [("q", q), ("k", k), ("v", v), ("probs", probs), ("out", out), ("dout", dout), ("dq", dq),
                    ("dk", dk_), ("dv", dv)]:
        e[f"{prefix}.{name}"] = t
    return e


def attention(out_dir):
    gen = torch.Generator().manual_seed(1001)
    B, T, S, H, dk = 2, 5, 7, 3, 4
    e = header("Multi-head scaled dot-product attention. Cases (prefix.name): no_mask, padding (keys s >= "
               "key_lengths[b] masked), causal (S = T, plus padding), causal_cache (causal with S > T: query t "
               "sees keys s <= t + S - T, plus padding). q [B,T,H*dk], k/v [B,S,H*dk], probs [B,H,T,S], "
               "out/dout [B,T,H*dk]; dq/dk/dv from autograd with upstream gradient dout.")
    e["heads"] = H
    e.update(attention_case(gen, "no_mask", B, T, S, H, dk, None, False))
    e.update(attention_case(gen, "padding", B, T, S, H, dk, [7, 4], False))
    e.update(attention_case(gen, "causal", B, 5, 5, H, dk, [5, 3], True))
    e.update(attention_case(gen, "causal_cache", B, T, S, H, dk, [7, 6], True))
    write(out_dir, "attention.json", e)


def layer_norm(out_dir):
    gen = torch.Generator().manual_seed(1002)
    N, D, eps = 6, 13, 1e-5
    x = (torch.randn(N, D, generator=gen) * 2 + 0.5).requires_grad_()  # nonzero mean, non-unit variance
    gamma = (1 + 0.3 * torch.randn(D, generator=gen)).requires_grad_()
    beta = (0.2 * torch.randn(D, generator=gen)).requires_grad_()
    y = torch.nn.functional.layer_norm(x, (D,), gamma, beta, eps)
    dy = torch.randn(N, D, generator=gen)
    dx, dgamma, dbeta = torch.autograd.grad(y, (x, gamma, beta), dy)
    xd = x.detach()
    mean = xd.mean(-1)
    rstd = 1 / torch.sqrt(xd.var(-1, unbiased=False) + eps)
    e = header("torch.nn.functional.layer_norm over the last dim; mean/rstd are the per-row statistics (biased "
               "variance); dx/dgamma/dbeta from autograd with upstream gradient dy.")
    e.update(eps=eps, x=x, gamma=gamma, beta=beta, y=y, mean=mean, rstd=rstd, dy=dy, dx=dx, dgamma=dgamma,
             dbeta=dbeta)
    write(out_dir, "layer_norm.json", e)


def loss(out_dir):
    gen = torch.Generator().manual_seed(1003)
    N, V, smoothing, ignore = 9, 11, 0.1, 0
    logits = (3 * torch.randn(N, V, generator=gen)).requires_grad_()
    targets = torch.randint(1, V, (N,), generator=gen)
    targets[[2, 6]] = ignore  # padding rows; the rest are real tokens (1..V-1)
    targets[4] = V - 1  # the last class, an off-by-one trap
    loss_sum = torch.nn.CrossEntropyLoss(label_smoothing=smoothing, ignore_index=ignore, reduction="sum")(
        logits, targets)
    loss_mean = torch.nn.CrossEntropyLoss(label_smoothing=smoothing, ignore_index=ignore, reduction="mean")(
        logits, targets)
    (dlogits,) = torch.autograd.grad(loss_sum, logits)
    (dlogits_mean,) = torch.autograd.grad(loss_mean, logits)
    e = header("torch.nn.CrossEntropyLoss(label_smoothing, ignore_index) with reduction sum and mean; dlogits is "
               "the gradient of the sum, dlogits_mean of the mean; tokens counts targets != ignore_index.")
    e.update(smoothing=smoothing, ignore_index=ignore, tokens=int((targets != ignore).sum()), logits=logits,
             targets=targets.to(torch.int32), loss_sum=loss_sum.item(), loss_mean=loss_mean.item(),
             dlogits=dlogits, dlogits_mean=dlogits_mean)
    write(out_dir, "loss.json", e)


def softmax(out_dir):
    gen = torch.Generator().manual_seed(1004)
    x = 2 * torch.randn(5, 9, generator=gen)
    x[3] += 90  # exp(90) overflows float32: only a softmax that subtracts the row max first gets this row right
    x = x.requires_grad_()
    y = torch.softmax(x, dim=-1)
    dy = torch.randn(5, 9, generator=gen)
    (dx,) = torch.autograd.grad(y, x, dy)
    e = header("torch.softmax over the last dim; dx from autograd with upstream gradient dy.")
    e.update(x=x, y=y, dy=dy, dx=dx)
    write(out_dir, "softmax.json", e)


def adam(out_dir):
    gen = torch.Generator().manual_seed(1005)
    n, steps, lr, betas, eps = 17, 3, 0.01, (0.9, 0.98), 1e-9
    p = torch.randn(n, generator=gen)
    init = p.clone()
    # Gradients spanning 1e-9..10 in magnitude, and one exact zero, so that eps's placement matters.
    scale = torch.logspace(-9, 1, n)
    grads = torch.randn(steps, n, generator=gen) * scale
    grads[:, 5] = 0
    p.requires_grad_()
    opt = torch.optim.Adam([p], lr=lr, betas=betas, eps=eps)
    after = []
    for t in range(steps):
        p.grad = grads[t].clone()
        opt.step()
        after.append(p.detach().clone())
    state = opt.state[p]
    e = header("torch.optim.Adam on one vector: params before, grads[t] for step t+1, params_after[t] after step "
               "t+1; m and v are exp_avg and exp_avg_sq after the last step.")
    e.update(lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, steps=steps, params=init, grads=grads,
             params_after=torch.stack(after), m=state["exp_avg"], v=state["exp_avg_sq"])
    write(out_dir, "adam.json", e)


# The feed-forward activations (src/ops/activation.h) as torch computes them: gelu_sigmoid (Marian's
# "gelu") has no torch function, so it is written out.
ACTIVATIONS = {
    "relu": torch.relu,
    "swish": torch.nn.functional.silu,
    "gelu": lambda x: torch.nn.functional.gelu(x, approximate="none"),
    "gelu_sigmoid": lambda x: x * torch.sigmoid(1.702 * x),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
}


def feed_forward(out_dir):
    gen = torch.Generator().manual_seed(1006)
    # Elementwise: [-20, 20] in steps of 0.25 (0 and ReLU's kink included: its derivative there is
    # taken as 0, as ours), and a few random values.
    x = torch.cat([torch.linspace(-20, 20, 161), 3 * torch.randn(20, generator=gen)])
    dy = torch.randn(x.shape, generator=gen)
    e = header("Feed-forward activations (relu, swish = silu, exact gelu, gelu_sigmoid = x*sigmoid(1.702x), "
               "gelu_tanh = gelu(approximate='tanh')): "
               "act:<name>:y = act(x) and act:<name>:dx from autograd with upstream gradient dy; then a layer "
               "FFN(x) = fc2(act(fc1(x))) per activation from the same weights: ffn:<name>:y, and the gradients "
               "of x and of every parameter with upstream gradient ffn_dy.")
    e.update(x=x, dy=dy)
    for name, act in ACTIVATIONS.items():
        xr = x.clone().requires_grad_()
        y = act(xr)
        (dx,) = torch.autograd.grad(y, xr, dy)
        e[f"act:{name}:y"] = y
        e[f"act:{name}:dx"] = dx
    B, L, D, F = 2, 3, 5, 7
    shapes = {"fc1.weight": (F, D), "fc1.bias": (F,), "fc2.weight": (D, F), "fc2.bias": (D,)}
    params = {n: torch.randn(s, generator=gen) / math.sqrt(s[-1]) for n, s in shapes.items()}
    ffn_x = 2 * torch.randn(B, L, D, generator=gen)
    ffn_dy = torch.randn(B, L, D, generator=gen)
    e.update(d_model=D, d_ff=F, **params, ffn_x=ffn_x, ffn_dy=ffn_dy)
    linear = torch.nn.functional.linear
    for name, act in ACTIVATIONS.items():
        xr = ffn_x.clone().requires_grad_()
        p = {n: t.clone().requires_grad_() for n, t in params.items()}
        y = linear(act(linear(xr, p["fc1.weight"], p["fc1.bias"])), p["fc2.weight"], p["fc2.bias"])
        grads = torch.autograd.grad(y, [xr] + list(p.values()), ffn_dy)
        e[f"ffn:{name}:y"] = y
        e[f"ffn:{name}:dx"] = grads[0]
        for n, g in zip(p, grads[1:]):
            e[f"ffn:{name}:grad:{n}"] = g
    write(out_dir, "feed_forward.json", e)


class TorchTransformer(torch.nn.Module):
    """The paper's model from torch.nn layers: shared embedding ×√D + sinusoidal positions, encoder
    and decoder stacks of nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (ReLU, dropout 0,
    post-LN or pre-LN), a final layer norm per stack only for pre-LN, and the pre-softmax projection
    through the same embedding matrix."""

    def __init__(self, V, D, H, F, enc, dec, pre_norm):
        super().__init__()
        self.D = D
        self.embed = torch.nn.Embedding(V, D)
        kw = dict(d_model=D, nhead=H, dim_feedforward=F, dropout=0.0, activation="relu", batch_first=True,
                  norm_first=pre_norm, layer_norm_eps=1e-5)
        self.enc = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(**kw) for _ in range(enc))
        self.dec = torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(**kw) for _ in range(dec))
        self.enc_norm = torch.nn.LayerNorm(D) if pre_norm else None
        self.dec_norm = torch.nn.LayerNorm(D) if pre_norm else None

    def positions(self, L):
        pos = torch.arange(L, dtype=F64).unsqueeze(1)
        i = torch.arange(0, self.D, 2, dtype=F64)
        angle = pos * torch.exp(-math.log(10000.0) * i / self.D)
        pe = torch.zeros(L, self.D)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
        return pe

    def forward(self, src, src_len, tgt_in, tgt_len):
        B, S = src.shape
        T = tgt_in.shape[1]
        src_pad = torch.arange(S).view(1, S) >= src_len.view(B, 1)  # True = padding
        tgt_pad = torch.arange(T).view(1, T) >= tgt_len.view(B, 1)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = not allowed
        x = self.embed(src) * math.sqrt(self.D) + self.positions(S)
        for layer in self.enc:
            x = layer(x, src_key_padding_mask=src_pad)
        if self.enc_norm is not None:
            x = self.enc_norm(x)
        y = self.embed(tgt_in) * math.sqrt(self.D) + self.positions(T)
        for layer in self.dec:
            y = layer(y, x, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        if self.dec_norm is not None:
            y = self.dec_norm(y)
        return y @ self.embed.weight.t()

    def named_like_ours(self, grad=False):
        """(our parameter name, tensor) pairs, the parameters or (grad=True) their gradients.
        nn.MultiheadAttention keeps Q, K, V in one in_proj matrix [3D, D], split here into our
        q_proj, k_proj, v_proj."""
        D = self.D
        g = (lambda p: p.grad) if grad else (lambda p: p)
        out = [("embed.weight", g(self.embed.weight))]

        def attn(prefix, m):
            for j, n in enumerate(("q_proj", "k_proj", "v_proj")):
                out.append((f"{prefix}.{n}.weight", g(m.in_proj_weight)[j * D:(j + 1) * D]))
                out.append((f"{prefix}.{n}.bias", g(m.in_proj_bias)[j * D:(j + 1) * D]))
            out.append((f"{prefix}.out_proj.weight", g(m.out_proj.weight)))
            out.append((f"{prefix}.out_proj.bias", g(m.out_proj.bias)))

        def norm(prefix, m):
            out.append((f"{prefix}.weight", g(m.weight)))
            out.append((f"{prefix}.bias", g(m.bias)))

        def ffn(prefix, layer):
            for ours, theirs in (("fc1", layer.linear1), ("fc2", layer.linear2)):
                out.append((f"{prefix}.{ours}.weight", g(theirs.weight)))
                out.append((f"{prefix}.{ours}.bias", g(theirs.bias)))

        for i, layer in enumerate(self.enc):
            p = f"encoder.layers.{i}"
            attn(p + ".self_attn", layer.self_attn)
            norm(p + ".self_attn_norm", layer.norm1)
            ffn(p + ".ffn", layer)
            norm(p + ".ffn_norm", layer.norm2)
        for i, layer in enumerate(self.dec):
            p = f"decoder.layers.{i}"
            attn(p + ".self_attn", layer.self_attn)
            norm(p + ".self_attn_norm", layer.norm1)
            attn(p + ".cross_attn", layer.multihead_attn)
            norm(p + ".cross_attn_norm", layer.norm2)
            ffn(p + ".ffn", layer)
            norm(p + ".ffn_norm", layer.norm3)
        if self.enc_norm is not None:
            norm("encoder.final_norm", self.enc_norm)
            norm("decoder.final_norm", self.dec_norm)
        return out


def model_case(out_dir, name, pre_norm, enc, dec):
    """A tiny model with given weights, dropout off, on a padded batch of sentences of different
    lengths: logits, the label-smoothed loss and the gradient of every parameter."""
    V, D, H, F, pad, bos, eos = 11, 8, 2, 12, 0, 2, 3
    torch.manual_seed(1234)
    m = TorchTransformer(V, D, H, F, enc, dec, pre_norm)
    gen = torch.Generator().manual_seed(99)
    with torch.no_grad():  # non-trivial biases and norms, so that every parameter is exercised
        for n, t in m.named_like_ours():
            if t.dim() == 1:
                t.copy_(0.2 * torch.randn(t.shape, generator=gen, dtype=F64) + (1.0 if n.endswith("norm.weight") else 0.0))
    m.train()  # dropout is 0; train mode keeps torch off its inference fast path
    sources = [[4, 5, 6, 7, 8], [9, 4], [10, 5, 7]]
    targets = [[5, 6, 7], [8, 9, 10, 4, 6], [7]]
    B, S, T = len(sources), max(len(x) for x in sources) + 1, max(len(y) for y in targets) + 1
    src = torch.full((B, S), pad, dtype=torch.long)
    tgt_in = torch.full((B, T), pad, dtype=torch.long)
    tgt_out = torch.full((B, T), pad, dtype=torch.long)
    for b, (x, y) in enumerate(zip(sources, targets)):
        src[b, :len(x) + 1] = torch.tensor(x + [eos])
        tgt_in[b, :len(y) + 1] = torch.tensor([bos] + y)
        tgt_out[b, :len(y) + 1] = torch.tensor(y + [eos])
    src_len = torch.tensor([len(x) + 1 for x in sources])
    tgt_len = torch.tensor([len(y) + 1 for y in targets])
    logits = m(src, src_len, tgt_in, tgt_len)
    lossf = torch.nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=pad, reduction="sum")
    loss = lossf(logits.reshape(-1, V), tgt_out.reshape(-1))
    loss.backward()
    e = header(f"Tiny Transformer ({'pre' if pre_norm else 'post'}-LN) from torch.nn layers: logits, summed "
               "label-smoothed loss (0.1, padding ignored) and the gradient of every parameter by our names")
    e.update(vocab_size=V, d_model=D, heads=H, d_ff=F, encoder_layers=enc, decoder_layers=dec, pre_norm=pre_norm,
             pad_id=pad, bos_id=bos, eos_id=eos, smoothing=0.1,
             sources=json.dumps(sources), targets=json.dumps(targets),
             src=src.double(), src_lengths=src_len.double(), tgt_in=tgt_in.double(), tgt_out=tgt_out.double(),
             tgt_lengths=tgt_len.double(),
             logits=logits, loss=loss.item(), tokens=int((tgt_out != pad).sum()))
    params = m.named_like_ours()
    e["parameter_names"] = [n for n, _ in params]
    for n, t in params:
        e["param:" + n] = t
    for n, g in m.named_like_ours(grad=True):
        e["grad:" + n] = g
    write(out_dir, f"model_{name}.json", e)


def model(out_dir):
    model_case(out_dir, "post_ln", pre_norm=False, enc=2, dec=2)
    model_case(out_dir, "pre_ln", pre_norm=True, enc=2, dec=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"),
                        help="output folder (default: tests/fixtures)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)  # nothing should draw from the global generator, but pin it anyway
    for make in (attention, layer_norm, loss, softmax, adam, feed_forward, model):
        make(args.out)


if __name__ == "__main__":
    main()
