#!/usr/bin/env python3
"""Peer of BM_TrainStepCuda (bench/bench_model.cc): one training step of the paper's Transformer in
PyTorch on a CUDA GPU, as a PyTorch user would write it fast: torch.nn.Transformer (post-norm,
batch_first), embeddings shared with the output projection and scaled by sqrt(d_model), sinusoidal
positions, dropout 0.1, label smoothing 0.1, AMP bfloat16 autocast, scaled-dot-product attention
(nn.MultiheadAttention's own), fused Adam; optionally torch.compile.

  python3 bench/torch_gpu_train_step.py --config base --batch 500 --len 50 --vocab 37000 [--compile]

Prints one line of JSON: step time (median of --steps after 2 warm-ups) and source+target tokens/s.
Runs on the GPU machine (scripts/gpu-check.sh bench), never in the C++ build or tests.
"""
import argparse, json, math, time

import torch

CONFIGS = {
    "base": dict(d=512, h=8, ff=2048, layers=6),
    "big": dict(d=1024, h=16, ff=4096, layers=6),
}


class Model(torch.nn.Module):
    def __init__(self, vocab, d, h, ff, layers, dropout):
        super().__init__()
        self.d = d
        self.emb = torch.nn.Embedding(vocab, d)
        self.tf = torch.nn.Transformer(d_model=d, nhead=h, num_encoder_layers=layers,
                                       num_decoder_layers=layers, dim_feedforward=ff,
                                       dropout=dropout, batch_first=True)
        pos = torch.arange(4096).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(4096, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.drop = torch.nn.Dropout(dropout)

    def embed(self, x):
        return self.drop(self.emb(x) * math.sqrt(self.d) + self.pe[: x.shape[1]])

    def forward(self, src, tgt, tgt_mask):
        h = self.tf(self.embed(src), self.embed(tgt), tgt_mask=tgt_mask, tgt_is_causal=True)
        return h @ self.emb.weight.t()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="base", choices=CONFIGS)
    p.add_argument("--vocab", type=int, default=37000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--len", type=int, default=50)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    c = CONFIGS[a.config]
    m = Model(a.vocab, c["d"], c["h"], c["ff"], c["layers"], 0.1).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True)
    lossf = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    src = torch.randint(1, a.vocab, (a.batch, a.len), device=dev)
    tgt = torch.randint(1, a.vocab, (a.batch, a.len + 1), device=dev)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(a.len, device=dev)
    fwd = torch.compile(m) if a.compile else m

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fwd(src, tgt[:, :-1], mask)
            loss = lossf(out.reshape(-1, a.vocab).float(), tgt[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):  # warm-up (and compilation)
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.steps):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    t = sorted(times)[len(times) // 2]
    print(json.dumps(dict(peer="pytorch", torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                          config=a.config, batch=a.batch, len=a.len, vocab=a.vocab, compile=a.compile,
                          step_ms=round(t * 1e3, 2), tokens_per_s=round(2 * a.batch * a.len / t, 1),
                          params=sum(p.numel() for p in m.parameters()))))


if __name__ == "__main__":
    main()
