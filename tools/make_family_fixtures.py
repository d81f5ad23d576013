#!/usr/bin/python3
"""Writes the PyTorch reference fixtures of the model family (docs/checkpoint-format.md, "The model
family"): GPT-2-like and Llama-like decoder-only models and a BERT-like encoder-only model, computed
in plain torch from the family's forward definitions, not from torch.nn's Transformer layers.

    make fixtures
    # or: /usr/bin/python3 tools/make_family_fixtures.py --out tests/fixtures/family

Everything is float64 from fixed seeds. Each file is one JSON object in the layout of
tools/make_fixtures.py (a tensor is {"shape": [...], "data": [row-major]}), plus `config`, the
model's ModelConfig as a JSON object. Parameters are random values rounded to 3 decimals, so they
print short and every program reads exactly the same doubles; results keep all 17 digits. Before
writing, the script asserts its own pieces (finite differences, incremental decoding, grouped-query
against multi-head attention, whole layers against torch.nn's, rope and RMSNorm identities) and
stops if one fails.
"""
import argparse
import json
import math
import os

import torch

from family_reference import BASE_CONFIG, BOS, EOS, MASK, PAD, SMOOTHING, FamilyModel, smoothed_loss


# -- self-checks: each asserts, so that a wrong reference never gets written -------------------------
def check_close(got, want, what, tol=1e-12):
    err = (got - want).abs().max().item()
    assert err <= tol * max(1.0, want.abs().max().item()), f"{what}: off by {err}"


def check_gradient(loss_fn, params, grads, picks):
    """Autograd's gradient of the loss against a central finite difference, one value of each pick."""
    h = 1e-6
    for name, index in picks:
        t = params[name]
        want = grads[name].reshape(-1)[index].item()
        assert abs(want) > 1e-6, f"{name}[{index}]: gradient {want} too small to check"
        with torch.no_grad():
            flat = t.view(-1)
            keep = flat[index].item()
            flat[index] = keep + h
            up = loss_fn().item()
            flat[index] = keep - h
            down = loss_fn().item()
            flat[index] = keep
        fd = (up - down) / (2 * h)
        assert abs(fd - want) <= 1e-7 + 1e-6 * abs(want), f"{name}[{index}]: autograd {want}, difference {fd}"


def check_rope_and_rms_norm():
    gen = torch.Generator().manual_seed(7)
    m = FamilyModel(dict(BASE_CONFIG, positions="rope", heads=2, rotary_dims=4))
    x = torch.randn(2, 5, 2, 8, generator=gen)
    assert torch.equal(m.rope(x, torch.zeros(5, dtype=torch.long)), x), "rope at position 0 is not the identity"
    y = m.rope(x, torch.arange(5))
    assert torch.equal(y[..., 4:], x[..., 4:]), "rope moved dimensions past rotary_dims"
    check_close(y.norm(dim=-1), x.norm(dim=-1), "rope changed a vector's length")
    m.c["rope_interleaved"] = True
    assert not torch.allclose(m.rope(x, torch.arange(5)), y), "rope layouts agree: the fixtures cannot tell them apart"

    m = FamilyModel(dict(BASE_CONFIG, norm="rmsnorm", layer_norm_eps=1e-6))
    p = {"n.weight": 1 + 0.2 * torch.randn(16, generator=gen)}
    x = 3 * torch.randn(4, 16, generator=gen) + 1
    if hasattr(torch.nn.functional, "rms_norm"):
        want = torch.nn.functional.rms_norm(x, (16,), p["n.weight"], 1e-6)
    else:  # y = gamma · x / ‖x‖₂·√D, with eps inside the root
        want = p["n.weight"] * x * math.sqrt(16) / torch.sqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2
                                                             + 16 * 1e-6)
    check_close(m.norm(p, "n", x), want, "RMSNorm")


def check_attention(gpt2, llama, gen):
    """With kv_heads = heads, the family's attention equals torch's multi-head attention; with fewer
    key/value heads, it equals multi-head attention whose k/v weights repeat each group's head."""
    m, p, prefix = gpt2
    B, L, D = 3, 6, m.D
    x, lengths = torch.randn(B, L, D, generator=gen), [6, 2, 4]
    q, k, v = m.qkv(p, prefix, x, torch.arange(L))
    ours = m.linear(p, prefix + ".out_proj", m.attend(q, k, v, m.allowed(L, L, lengths, 0)), True)
    w = lambda n: p[f"{prefix}.{n}"]
    theirs, _ = torch.nn.functional.multi_head_attention_forward(
        x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1), D, m.H, None,
        torch.cat([w("q_proj.bias"), w("k_proj.bias"), w("v_proj.bias")]), None, None, False, 0.0,
        w("out_proj.weight"), w("out_proj.bias"), training=False,
        key_padding_mask=torch.arange(L).view(1, L) >= torch.tensor(lengths).view(B, 1), need_weights=False,
        attn_mask=torch.triu(torch.ones(L, L, dtype=torch.bool), 1), use_separate_proj_weight=True,
        q_proj_weight=w("q_proj.weight"), k_proj_weight=w("k_proj.weight"), v_proj_weight=w("v_proj.weight"))
    check_close(ours, theirs.transpose(0, 1), "attention with kv_heads = heads against torch's")

    m, p, prefix = llama
    mha = FamilyModel(dict(m.c, kv_heads=m.H))
    group = m.H // m.KV
    pm = dict(p)
    for n in ("k_proj", "v_proj"):
        pm[f"{prefix}.{n}.weight"] = p[f"{prefix}.{n}.weight"].view(m.KV, m.d, m.D).repeat_interleave(group, 0) \
            .reshape(m.H * m.d, m.D)
    x = torch.randn(B, L, m.D, generator=gen)
    out = []
    for model, params in ((m, p), (mha, pm)):
        q, k, v = model.qkv(params, prefix, x, torch.arange(L))
        out.append(model.attend(q, k, v, model.allowed(L, L, lengths, 0)))
    check_close(out[0], out[1], "grouped-query attention against multi-head attention with repeated heads")



def check_layer(m, p, prefix, gen):
    """A whole layer (layernorm, biases, ungated feed-forward, no rope) against torch.nn's encoder
    layer with the same weights: pre- or post-norm, causal or not, with key padding."""
    B, L, D = 2, 5, m.D
    torch_layer = torch.nn.TransformerEncoderLayer(D, m.H, m.F, 0.0, m.act, m.c["layer_norm_eps"], batch_first=True,
                                                   norm_first=m.c["pre_norm"])
    w = lambda n: p[f"{prefix}.{n}"].detach()
    with torch.no_grad():
        sa = torch_layer.self_attn
        sa.in_proj_weight.copy_(torch.cat([w(f"self_attn.{n}_proj.weight") for n in "qkv"]))
        sa.in_proj_bias.copy_(torch.cat([w(f"self_attn.{n}_proj.bias") for n in "qkv"]))
        pairs = [(sa.out_proj, "self_attn.out_proj"), (torch_layer.linear1, "ffn.fc1"), (torch_layer.linear2, "ffn.fc2"),
                 (torch_layer.norm1, "self_attn_norm"), (torch_layer.norm2, "ffn_norm")]
        for module, name in pairs:
            module.weight.copy_(w(name + ".weight"))
            module.bias.copy_(w(name + ".bias"))
    x, lengths = torch.randn(B, L, D, generator=gen), [5, 3]
    mask = m.allowed(L, L, lengths, 0)

    def attention(y):
        q, k, v = m.qkv(p, prefix + ".self_attn", y, torch.arange(L))
        return m.linear(p, prefix + ".self_attn.out_proj", m.attend(q, k, v, mask), True)

    ours = m.layer(p, prefix, x, attention)
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1) if m.decoder else None
    torch_layer.train()  # dropout 0; train mode keeps torch off its inference fast path
    theirs = torch_layer(x, src_mask=causal, src_key_padding_mask=torch.arange(L).view(1, L) >= torch.tensor(
        lengths).view(B, 1))
    check_close(ours, theirs, f"{prefix} against torch.nn.TransformerEncoderLayer")

# -- fixtures --------------------------------------------------------------------------------------
def tensor_entry(t):
    t = t.detach()
    return {"shape": list(t.shape), "data": t.reshape(-1).tolist()}


def write(out_dir, name, entries):
    """One entry per line, written to a temporary file and renamed, so a failed run leaves no half file."""
    lines = []
    for key, value in entries.items():
        value = tensor_entry(value) if isinstance(value, torch.Tensor) else value
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    size = os.path.getsize(path + ".tmp")
    assert size < 200_000, f"{path} would be {size} bytes; keep fixtures small"
    os.replace(path + ".tmp", path)
    print(f"wrote {path} ({size} bytes)")


def common_entries(about, m, p, logits, targets, seed):
    """The header, config, results and every parameter with its gradient of the mean loss."""
    loss_sum, count = smoothed_loss(logits, targets)
    loss = loss_sum / count
    grads = dict(zip(p, torch.autograd.grad(loss, list(p.values()))))
    e = {"_about": about + (
        f" Loss: torch.nn.CrossEntropyLoss(label_smoothing={SMOOTHING}, ignore_index=pad_id) over every "
        "position whose target is not pad_id: loss_sum is the sum, tokens their count, loss = loss_sum / "
        "tokens (the training loss), and grad:NAME is the gradient of loss (not of loss_sum) for every "
        "parameter param:NAME (parameter_names lists them)."),
        "_generator": f"tools/make_family_fixtures.py, torch {torch.__version__}, float64, seed {seed}",
        "config": m.c, "smoothing": SMOOTHING, "logits": logits, "loss": loss.item(),
        "loss_sum": loss_sum.item(), "tokens": count, "parameter_names": list(p)}
    e.update({"param:" + n: t for n, t in p.items()})
    e.update({"grad:" + n: g for n, g in grads.items()})
    return e, grads


def decoder_batch(gen, V, content_lengths):
    """[BOS] + random tokens + [EOS] per sequence, right-padded: ids [B, L+1]; inputs = ids[:, :-1]
    and targets = ids[:, 1:] with pad_id past each sequence."""
    seqs = [[BOS] + torch.randint(MASK + 1, V, (n,), generator=gen).tolist() + [EOS] for n in content_lengths]
    lengths = torch.tensor([len(s) for s in seqs])
    ids = torch.full((len(seqs), int(lengths.max())), PAD, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
    inputs, targets = ids[:, :-1].clone(), ids[:, 1:].clone()
    for b, n in enumerate(lengths.tolist()):
        inputs[b, n - 1:] = PAD
    return ids, lengths, inputs, targets


def decoder_fixture(out_dir, name, about, overrides, seed):
    m = FamilyModel(dict(BASE_CONFIG, **overrides))
    p = m.init_params(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    ids, lengths, inputs, targets = decoder_batch(gen, m.V, [7, 3, 5])
    in_lengths = lengths - 1
    logits = m.forward(p, inputs, in_lengths)
    e, grads = common_entries(about + (
        " Decoder-only, next-token loss: ids [B, L+1] are [bos_id] + tokens + [eos_id] right-padded with "
        "pad_id, lengths their lengths; inputs = ids[:, :-1] with pad_id from input_lengths = lengths - 1 on, "
        "targets = ids[:, 1:]. logits [B, L, V] at every input position, padded ones included (a query whose "
        "keys are all masked gets a zero attention output). step_logits [B, L, V]: each sequence alone "
        "(inputs[b, :input_lengths[b]], no padding) decoded one token at a time with a key/value cache, "
        "each step's logits; zeros past input_lengths[b]. They equal logits at the unpadded positions."),
        m, p, logits, targets, seed)
    steps = torch.zeros_like(logits)
    for b, n in enumerate(in_lengths.tolist()):
        steps[b, :n] = m.incremental(p, inputs[b, :n].tolist())
        check_close(steps[b, :n], logits[b, :n].detach(), f"{name}: incremental decoding of sequence {b}")
    last = m.layers - 1
    check_gradient(lambda: smoothed_loss(m.forward(p, inputs, in_lengths), targets)[0] / e["tokens"], p, grads,
                   [("decoder.layers.0.self_attn.q_proj.weight", 3), (f"decoder.layers.{last}.ffn.fc1.weight", 5),
                    ("embed.weight", BOS * m.D + 2)])
    e.update(ids=ids, lengths=lengths, inputs=inputs, input_lengths=in_lengths, targets=targets,
             step_logits=steps.detach())
    write(out_dir, name, e)


def bert_batch(gen, V):
    """Sentence pairs [bos] A [eos] B [eos] (B optional), token type 1 on B's part; masked-LM positions
    (b, t): the first two get MASK, the third a random other token, the last keeps its token."""
    pairs = [(4, 2), (2, 1), (2, 0)]
    rows, types = [], []
    for a, bl in pairs:
        tok = lambda n: torch.randint(MASK + 1, V, (n,), generator=gen).tolist()
        rows.append([BOS] + tok(a) + [EOS] + (tok(bl) + [EOS] if bl else []))
        types.append([0] * (a + 2) + ([1] * (bl + 1) if bl else []))
    lengths = torch.tensor([len(r) for r in rows])
    ids = torch.full((len(rows), int(lengths.max())), PAD, dtype=torch.long)
    type_ids = torch.zeros_like(ids)
    for b, (r, t) in enumerate(zip(rows, types)):
        ids[b, :len(r)], type_ids[b, :len(t)] = torch.tensor(r), torch.tensor(t)
    positions = [(0, 2), (1, 1), (0, 6), (2, 2)]
    targets = torch.full_like(ids, PAD)
    for b, t in positions:
        targets[b, t] = ids[b, t]
    inputs = ids.clone()
    inputs[0, 2] = inputs[1, 1] = MASK
    inputs[0, 6] = MASK + 1 + (int(ids[0, 6]) - MASK) % (V - MASK - 1)  # another ordinary token
    return inputs, lengths, type_ids, targets, torch.tensor(positions)


def bert_fixture(out_dir, name, about, overrides, seed):
    m = FamilyModel(dict(BASE_CONFIG, **overrides))
    p = m.init_params(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    inputs, lengths, types, targets, positions = bert_batch(gen, m.V)
    logits = m.forward(p, inputs, lengths, types)
    e, grads = common_entries(about + (
        " Encoder-only, masked-LM loss: inputs [B, L] right-padded with pad_id (input_lengths), token_type_ids "
        "[B, L] (0 on padding), logits [B, L, V] = the MLM head's at every position; targets [B, L] hold the "
        "original token at the masked positions mlm_positions ([M, 2] rows of (b, t)) and pad_id everywhere "
        f"else, so only those M positions count. inputs hold {MASK} (a stand-in mask token) at the first "
        "two, another ordinary token at the third, the original token at the fourth."), m, p, logits, targets, seed)
    check_gradient(lambda: smoothed_loss(m.forward(p, inputs, lengths, types), targets)[0] / e["tokens"], p, grads,
                   [("encoder.layers.0.self_attn.k_proj.weight", 7), ("token_types.weight", m.D + 1),
                    ("embed_norm.weight", 4)])
    e.update(inputs=inputs, input_lengths=lengths, token_type_ids=types, targets=targets, mlm_positions=positions)
    write(out_dir, name, e)


GPT2 = dict(positions="learned", max_positions=16, activation="gelu_tanh")
LLAMA = dict(architecture="decoder-only", positions="rope", norm="rmsnorm", layer_norm_eps=1e-6, activation="swish",
             gated=True, attention_bias=False, ffn_bias=False, tie_output=False, heads=8, kv_heads=2)
BERT = dict(architecture="encoder-only", encoder_layers=2, decoder_layers=0, positions="learned", max_positions=16,
            token_types=2, embedding_norm=True, pre_norm=False, final_norm=False, layer_norm_eps=1e-12,
            activation="gelu", mlm_head=True, output_bias=True)


def self_checks():
    check_rope_and_rms_norm()
    gen = torch.Generator().manual_seed(8)
    gpt2, llama = FamilyModel(dict(BASE_CONFIG, **GPT2)), FamilyModel(dict(BASE_CONFIG, **LLAMA))
    bert = FamilyModel(dict(BASE_CONFIG, **BERT))
    gpt2_params = gpt2.init_params(3001)
    check_attention((gpt2, gpt2_params, "decoder.layers.1.self_attn"),
                    (llama, llama.init_params(3002), "decoder.layers.0.self_attn"), gen)
    check_layer(gpt2, gpt2_params, "decoder.layers.0", gen)
    check_layer(bert, bert.init_params(3003), "encoder.layers.1", gen)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "family"),
                        help="output folder (default: tests/fixtures/family)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)  # nothing draws from the global generator, but pin it anyway
    self_checks()  # then each fixture checks its own gradient and incremental decoding before it is written
    decoder_fixture(args.out, "gpt2.json", "GPT-2-like decoder: learned positions, pre-norm layernorm with final "
                    "norm, gelu_tanh, biases, tied output.", GPT2, 2001)
    decoder_fixture(args.out, "llama.json", "Llama-like decoder: half-split rope over the whole head, RMSNorm "
                    "pre-norm with final norm, SwiGLU, 8 query and 2 key/value heads, no biases, untied output.",
                    LLAMA, 2002)
    decoder_fixture(args.out, "llama_partial_interleaved.json", "Llama-like decoder, variant: interleaved rope "
                    "over half of each head (rotary_dims 4 of head_dim 8), sliding attention window 3, one "
                    "key/value head for two query heads.",
                    dict(LLAMA, heads=2, kv_heads=1, rotary_dims=4, rope_interleaved=True, attention_window=3), 2003)
    decoder_fixture(args.out, "llama_mqa.json", "Llama-like decoder, variant: multi-query attention (4 query "
                    "heads, 1 key/value head) with head_dim 4, so that half-split rope has two pairs per head "
                    "(llama.json's head_dim 2 has one, where the two layouts coincide), rope_theta 500000.",
                    dict(LLAMA, heads=4, kv_heads=1, rope_theta=500000.0), 2004)
    bert_fixture(args.out, "bert.json", "BERT-like encoder: learned positions and 2 token types, embedding norm, "
                 "post-norm layernorm (eps 1e-12), exact gelu, biases, MLM head, tied output with bias.", BERT, 2005)
    print("self-checks passed; fixtures written")


if __name__ == "__main__":
    main()
