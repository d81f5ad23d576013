#!/usr/bin/env python3
"""Peer of BM_TranslateCuda (bench/bench_model.cc): greedy and beam-4 decoding of the paper's base
Transformer in PyTorch on a CUDA GPU, as a PyTorch user would write incremental decoding: pre-norm
layers, embeddings shared with the output projection and scaled by sqrt(d_model), sinusoidal
positions, a key/value cache per decoder layer (preallocated, written in place), the cross-attention
keys and values computed once, scaled_dot_product_attention, weights and activations in bfloat16
(or float32), eager mode.

The same work as ours: 128 sentences of 25 source tokens (random ids, random weights), each output
forced to 26 steps (no early end), greedy = argmax, beam 4 = the 4 best continuations of each
sentence's 4 beams by summed log-probability (log_softmax in float32), caches reordered every step.

  python3 bench/torch_gpu_translate.py [--dtype bf16|fp32] [--beam 1|4] [--device cuda]

Prints one line of JSON per beam size: time per batch (median of --repeats after one warm-up) and
target tokens/s (tokens = sentences x 25, as BM_TranslateCuda counts them). Runs on the GPU machine
(scripts/gpu-check.sh), never in the C++ build or tests.
"""
import argparse, json, math, time

import torch
import torch.nn.functional as F

if not hasattr(F, "scaled_dot_product_attention"):  # torch < 2.0 (Debian's, to try the script on a CPU)
    def _sdpa(q, k, v, attn_mask=None):
        w = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.softmax(w.float(), dim=-1).to(q.dtype) @ v
    F.scaled_dot_product_attention = _sdpa


class Layer(torch.nn.Module):
    def __init__(self, d, h, ff, cross):
        super().__init__()
        self.h, self.dk = h, d // h
        self.n1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)
        if cross:
            self.n2 = torch.nn.LayerNorm(d)
            self.q2 = torch.nn.Linear(d, d)
            self.kv2 = torch.nn.Linear(d, 2 * d)
            self.o2 = torch.nn.Linear(d, d)
        self.n3 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, ff)
        self.fc2 = torch.nn.Linear(ff, d)

    def heads(self, x):  # [B, L, D] -> [B, H, L, dk]
        return x.view(x.shape[0], x.shape[1], self.h, self.dk).transpose(1, 2)

    def merge(self, x):  # [B, H, L, dk] -> [B, L, D]
        return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], self.h * self.dk)

    def ffn(self, x):
        return x + self.fc2(F.relu(self.fc1(self.n3(x))))

    def encode(self, x, mask):
        q, k, v = self.heads_qkv(self.n1(x))
        x = x + self.o(self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))
        return self.ffn(x)

    def heads_qkv(self, x):
        return [self.heads(t) for t in self.qkv(x).chunk(3, dim=-1)]

    def memory(self, m):  # the cross-attention's keys and values, once per batch
        return [self.heads(t) for t in self.kv2(m).chunk(2, dim=-1)]

    def step(self, x, t, cache_k, cache_v, mk, mv, mask):
        q, k, v = self.heads_qkv(self.n1(x))  # [R, H, 1, dk]
        cache_k[:, :, t : t + 1] = k
        cache_v[:, :, t : t + 1] = v
        a = F.scaled_dot_product_attention(q, cache_k[:, :, : t + 1], cache_v[:, :, : t + 1])
        x = x + self.o(self.merge(a))
        q2 = self.heads(self.q2(self.n2(x)))
        x = x + self.o2(self.merge(F.scaled_dot_product_attention(q2, mk, mv, attn_mask=mask)))
        return self.ffn(x)


class Model(torch.nn.Module):
    def __init__(self, vocab, d=512, h=8, ff=2048, layers=6):
        super().__init__()
        self.d = d
        self.emb = torch.nn.Embedding(vocab, d)
        self.enc = torch.nn.ModuleList(Layer(d, h, ff, False) for _ in range(layers))
        self.dec = torch.nn.ModuleList(Layer(d, h, ff, True) for _ in range(layers))
        self.enc_norm, self.dec_norm = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        pos = torch.arange(1024).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(1024, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def embed(self, ids, start):
        return self.emb(ids) * math.sqrt(self.d) + self.pe[start : start + ids.shape[1]].to(self.emb.weight.dtype)

    @torch.no_grad()
    def translate(self, src, beam, steps, bos=1):
        B, S = src.shape
        mask = None  # every source is 25 tokens: no padding
        x = self.embed(src, 0)
        for l in self.enc:
            x = l.encode(x, mask)
        mem = self.enc_norm(x)
        R = B * beam
        if beam > 1:  # each sentence's memory for its beams
            mem = mem.repeat_interleave(beam, dim=0)
        mkv = [l.memory(mem) for l in self.dec]
        dt, dev, H, dk = mem.dtype, mem.device, self.dec[0].h, self.dec[0].dk
        ck = [torch.empty(R, H, steps, dk, dtype=dt, device=dev) for _ in self.dec]
        cv = [torch.empty(R, H, steps, dk, dtype=dt, device=dev) for _ in self.dec]
        tok = torch.full((R, 1), bos, dtype=torch.long, device=dev)
        score = torch.zeros(B, beam, device=dev)
        if beam > 1:
            score[:, 1:] = -float("inf")  # one live beam at the start
        out = []
        for t in range(steps):
            x = self.embed(tok, t)
            for i, l in enumerate(self.dec):
                x = l.step(x, t, ck[i], cv[i], mkv[i][0], mkv[i][1], mask)
            logits = self.dec_norm(x)[:, 0] @ self.emb.weight.t()  # [R, V]
            if beam == 1:
                tok = logits.argmax(-1, keepdim=True)
                out.append(tok)
                continue
            lp = F.log_softmax(logits.float(), dim=-1).view(B, beam, -1) + score.unsqueeze(-1)
            score, best = lp.view(B, -1).topk(beam, dim=-1)  # [B, beam]
            V = logits.shape[-1]
            parent = (best // V + torch.arange(B, device=dev).unsqueeze(1) * beam).view(-1)
            tok = (best % V).view(R, 1)
            for i in range(len(self.dec)):  # the caches follow their beams
                ck[i] = ck[i].index_select(0, parent)
                cv[i] = cv[i].index_select(0, parent)
            out.append(tok)
        return torch.cat(out, dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--beam", type=int, nargs="+", default=[1, 4])
    p.add_argument("--sentences", type=int, default=128)
    p.add_argument("--len", type=int, default=25)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device(a.device)
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    m = Model(a.vocab).to(dev, dt).eval()
    src = torch.randint(4, a.vocab, (a.sentences, a.len), device=dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for beam in a.beam:
        m.translate(src, beam, a.len + 1)  # warm-up
        times = []
        for _ in range(a.repeats):
            sync()
            t0 = time.perf_counter()
            m.translate(src, beam, a.len + 1)
            sync()
            times.append(time.perf_counter() - t0)
        t = sorted(times)[len(times) // 2]
        print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "task": "translate",
                          "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
                          "dtype": a.dtype, "beam": beam, "sentences": a.sentences, "len": a.len,
                          "vocab": a.vocab, "batch_ms": round(t * 1e3, 2),
                          "tokens_per_s": round(a.sentences * a.len / t, 1)}), flush=True)


if __name__ == "__main__":
    main()
