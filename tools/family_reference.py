"""The model family's forward pass in plain torch (float64), written from the definitions in
docs/checkpoint-format.md ("The model family"): the PyTorch reference that
tools/make_family_fixtures.py computes its fixtures with. Parameters are a dict by tensor name."""
import math

import torch

torch.set_default_dtype(torch.float64)
F64 = torch.float64
SMOOTHING = 0.1  # the training default, as in model_pre_ln.json
PAD, UNK, BOS, EOS, MASK = 0, 1, 2, 3, 4  # MASK: the id the BERT fixture puts at masked positions

# Every ModelConfig field, at the value the fixtures share; each model overrides some.
BASE_CONFIG = dict(
    vocab_size=29, d_model=16, d_ff=24, heads=4, encoder_layers=0, decoder_layers=2, dropout=0.0,
    embedding_dropout=0.0, attention_dropout=0.0, pre_norm=True, tie_source_target=True, layer_norm_eps=1e-5,
    pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS, activation="relu", positions="interleaved",
    position_frequencies="paper", position_offset=0, scale_embeddings=False, tie_output=True, output_bias=False,
    architecture="decoder-only", max_positions=0, rope_theta=10000.0, rotary_dims=0, rope_interleaved=False,
    norm="layernorm", final_norm=True, embedding_norm=False, gated=False, kv_heads=0, attention_bias=True,
    ffn_bias=True, token_types=0, attention_window=0, mlm_head=False)

ACTIVATIONS = {
    "relu": torch.relu,
    "swish": lambda x: x * torch.sigmoid(x),
    "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu_sigmoid": lambda x: x * torch.sigmoid(1.702 * x),
}


class FamilyModel:
    """The family's forward pass over a dict of named parameters (family-spec names)."""

    def __init__(self, config):
        c = self.c = config
        self.D, self.H, self.F, self.V = c["d_model"], c["heads"], c["d_ff"], c["vocab_size"]
        self.KV = c["kv_heads"] or self.H
        self.d = self.D // self.H
        self.r = c["rotary_dims"] or self.d
        self.act = ACTIVATIONS[c["activation"]]
        self.decoder = c["architecture"] == "decoder-only"
        self.stack = "decoder" if self.decoder else "encoder"
        self.layers = c["decoder_layers"] if self.decoder else c["encoder_layers"]

    # -- parameters ---------------------------------------------------------------------------
    def norm_shapes(self, prefix):
        bias = [(prefix + ".bias", (self.D,))] if self.c["norm"] == "layernorm" else []
        return [(prefix + ".weight", (self.D,))] + bias

    def layer_shapes(self, prefix):
        c, D, F, kv = self.c, self.D, self.F, self.KV * self.d
        s = []
        for proj, rows in (("q", D), ("k", kv), ("v", kv), ("out", D)):
            s.append((f"{prefix}.self_attn.{proj}_proj.weight", (rows, D)))
            if c["attention_bias"]:
                s.append((f"{prefix}.self_attn.{proj}_proj.bias", (rows,)))
        s += self.norm_shapes(prefix + ".self_attn_norm")
        fc1 = 2 * F if c["gated"] else F
        for name, shape in (("fc1", (fc1, D)), ("fc2", (D, F))):
            s.append((f"{prefix}.ffn.{name}.weight", shape))
            if c["ffn_bias"]:
                s.append((f"{prefix}.ffn.{name}.bias", shape[:1]))
        return s + self.norm_shapes(prefix + ".ffn_norm")

    def shapes(self):
        """(name, shape) of every parameter, in a fixed order."""
        c, D, V = self.c, self.D, self.V
        s = [("embed.weight", (V, D))]
        if c["positions"] == "learned":
            s.append(("positions.weight", (c["max_positions"], D)))
        if c["token_types"]:
            s.append(("token_types.weight", (c["token_types"], D)))
        if c["embedding_norm"]:
            s += self.norm_shapes("embed_norm")
        for i in range(self.layers):
            s += self.layer_shapes(f"{self.stack}.layers.{i}")
        if c["pre_norm"] and c["final_norm"]:
            s += self.norm_shapes(self.stack + ".final_norm")
        if c["mlm_head"]:
            s += [("mlm_head.dense.weight", (D, D)), ("mlm_head.dense.bias", (D,))] + self.norm_shapes("mlm_head.norm")
        if not c["tie_output"]:
            s.append(("output.weight", (V, D)))
        if c["output_bias"]:
            s.append(("output.bias", (V,)))
        return s

    def init_params(self, seed):
        """Random values rounded to 3 decimals: gains around 1, biases around 0, weights ~ 1/√fan_in."""
        gen = torch.Generator().manual_seed(seed)
        params = {}
        for name, shape in self.shapes():
            x = torch.randn(shape, generator=gen, dtype=F64)
            if name.endswith("norm.weight"):
                x = 1 + 0.2 * x
            elif len(shape) == 1:
                x = 0.2 * x
            elif name in ("embed.weight", "positions.weight", "token_types.weight"):
                x = 0.8 * x
            else:
                x = x / math.sqrt(shape[1])
            params[name] = (torch.round(x * 1000) / 1000).requires_grad_()
        return params

    # -- pieces -------------------------------------------------------------------------------
    def norm(self, p, prefix, x):
        eps, w = self.c["layer_norm_eps"], p[prefix + ".weight"]
        if self.c["norm"] == "rmsnorm":
            return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * w + p[prefix + ".bias"]

    @staticmethod
    def linear(p, prefix, x, bias):
        y = x @ p[prefix + ".weight"].t()
        return y + p[prefix + ".bias"] if bias else y

    def rope(self, x, pos):
        """x [B, L, heads, d] rotated at positions pos [L]: dims [0, r) in pairs, the rest as they are."""
        half = self.r // 2
        i = torch.arange(half, dtype=F64)
        angle = pos.to(F64).view(-1, 1) * self.c["rope_theta"] ** (-2 * i / self.r)  # [L, r/2]
        cos, sin = angle.cos().view(1, -1, 1, half), angle.sin().view(1, -1, 1, half)
        a_idx, b_idx = (2 * i.long(), 2 * i.long() + 1) if self.c["rope_interleaved"] else (i.long(), i.long() + half)
        a, b = x[..., a_idx], x[..., b_idx]
        out = x.clone()
        out[..., a_idx] = a * cos - b * sin
        out[..., b_idx] = b * cos + a * sin
        return out

    def allowed(self, T, S, key_lengths, q_start):
        """[B, T, S]: query i (position q_start + i) may see key j."""
        qpos = (q_start + torch.arange(T)).view(T, 1)
        j = torch.arange(S).view(1, S)
        ok = (j < torch.as_tensor(key_lengths).view(-1, 1, 1)).expand(-1, T, S)
        if self.decoder:
            ok = ok & (j <= qpos)
        if self.c["attention_window"]:
            ok = ok & (qpos - self.c["attention_window"] < j)
        return ok

    def attend(self, q, k, v, allowed):
        """q [B, T, H, d], k and v [B, S, KV, d]: query head h reads key/value head h / (H / KV). A
        query that sees no key gets zero weights and a zero output, as the project's attention op."""
        B, T = q.shape[:2]
        k = k.repeat_interleave(self.H // self.KV, dim=2)
        v = v.repeat_interleave(self.H // self.KV, dim=2)
        scores = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.d)
        ok = allowed.unsqueeze(1)
        scores = scores.masked_fill(~ok, float("-inf")).masked_fill(~ok.any(-1, keepdim=True), 0.0)
        probs = torch.softmax(scores, dim=-1) * ok
        return torch.einsum("bhts,bshd->bthd", probs, v).reshape(B, T, self.H * self.d)

    def qkv(self, p, prefix, x, pos):
        B, L, _ = x.shape
        bias = self.c["attention_bias"]
        q = self.linear(p, prefix + ".q_proj", x, bias).view(B, L, self.H, self.d)
        k = self.linear(p, prefix + ".k_proj", x, bias).view(B, L, self.KV, self.d)
        v = self.linear(p, prefix + ".v_proj", x, bias).view(B, L, self.KV, self.d)
        if self.c["positions"] == "rope":
            q, k = self.rope(q, pos), self.rope(k, pos)
        return q, k, v

    def ffn(self, p, prefix, x):
        bias = self.c["ffn_bias"]
        h = self.linear(p, prefix + ".fc1", x, bias)
        h = self.act(h[..., :self.F]) * h[..., self.F:] if self.c["gated"] else self.act(h)
        return self.linear(p, prefix + ".fc2", h, bias)

    def layer(self, p, prefix, x, attention):
        """One layer; attention(x_normed) is the self-attention sub-layer (full or cached)."""
        n = lambda name, y: self.norm(p, f"{prefix}.{name}", y)
        if self.c["pre_norm"]:
            x = x + attention(n("self_attn_norm", x))
            return x + self.ffn(p, prefix + ".ffn", n("ffn_norm", x))
        x = n("self_attn_norm", x + attention(x))
        return n("ffn_norm", x + self.ffn(p, prefix + ".ffn", x))

    def embed(self, p, ids, types, pos0):
        c = self.c
        e = p["embed.weight"][ids] * (math.sqrt(self.D) if c["scale_embeddings"] else 1.0)
        if c["positions"] == "learned":
            e = e + p["positions.weight"][c["position_offset"] + pos0 + torch.arange(ids.shape[1])]
        assert c["positions"] in ("learned", "rope", "none"), "sinusoids are make_fixtures.py's"
        if c["token_types"]:
            e = e + p["token_types.weight"][types if types is not None else torch.zeros_like(ids)]
        return self.norm(p, "embed_norm", e) if c["embedding_norm"] else e

    def head(self, p, h):
        c = self.c
        if c["pre_norm"] and c["final_norm"]:
            h = self.norm(p, self.stack + ".final_norm", h)
        if c["mlm_head"]:
            h = self.norm(p, "mlm_head.norm", self.act(self.linear(p, "mlm_head.dense", h, True)))
        w = p["embed.weight"] if c["tie_output"] else p["output.weight"]
        logits = h @ w.t()
        return logits + p["output.bias"] if c["output_bias"] else logits

    # -- whole model --------------------------------------------------------------------------
    def forward(self, p, ids, lengths, types=None):
        """Logits [B, L, V] of a right-padded batch, every position."""
        L = ids.shape[1]
        pos = torch.arange(L)
        mask = self.allowed(L, L, lengths, 0)

        def attention(prefix):
            def f(x):
                q, k, v = self.qkv(p, prefix, x, pos)
                return self.linear(p, prefix + ".out_proj", self.attend(q, k, v, mask), self.c["attention_bias"])
            return f

        x = self.embed(p, ids, types, 0)
        for i in range(self.layers):
            prefix = f"{self.stack}.layers.{i}"
            x = self.layer(p, prefix, x, attention(prefix + ".self_attn"))
        return self.head(p, x)

    def incremental(self, p, seq):
        """Decoding one token at a time with a key/value cache: each step's logits [len(seq), V]."""
        cache = [([], []) for _ in range(self.layers)]
        steps = []
        for t in range(len(seq)):
            pos = torch.tensor([t])

            def attention(i, prefix):
                def f(x):
                    q, k, v = self.qkv(p, prefix, x, pos)
                    cache[i][0].append(k)
                    cache[i][1].append(v)
                    keys, values = torch.cat(cache[i][0], 1), torch.cat(cache[i][1], 1)
                    out = self.attend(q, keys, values, self.allowed(1, t + 1, [t + 1], t))
                    return self.linear(p, prefix + ".out_proj", out, self.c["attention_bias"])
                return f

            x = self.embed(p, torch.tensor([[seq[t]]]), None, t)
            for i in range(self.layers):
                prefix = f"{self.stack}.layers.{i}"
                x = self.layer(p, prefix, x, attention(i, prefix + ".self_attn"))
            steps.append(self.head(p, x)[0, 0])
        return torch.stack(steps)


def smoothed_loss(logits, targets):
    """The project's loss (src/ops/loss.h): label-smoothed cross-entropy summed over the targets
    that are not padding; training divides it by their count. Returns (sum, count)."""
    V = logits.shape[-1]
    lossf = torch.nn.CrossEntropyLoss(label_smoothing=SMOOTHING, ignore_index=PAD, reduction="sum")
    return lossf(logits.reshape(-1, V), targets.reshape(-1)), int((targets != PAD).sum())
