#!/usr/bin/env python3
"""CTranslate2 as a side-by-side peer for the translation benchmarks (optional; the project never
depends on it: `pip install ctranslate2`).

  ct2_peer.py convert MODEL.safetensors OUT_DIR        our model file -> a CTranslate2 model, same weights
  ct2_peer.py translate CT2_DIR --ids-in FILE [...]    token ids in, token ids out, as `transformer translate --ids`
  ct2_peer.py score CT2_DIR --source-ids F --target-ids F   'total<TAB>per_token', as `transformer score --ids`
  ct2_peer.py bench CT2_DIR [--batch 64 ...]           one JSON line: tokens/s of one forced-length batch
                                                       (--shortlist N: through a vocabulary map of N ids)
  ct2_peer.py random-ids --lines N --len L --vocab V   seeded random source ids (4 .. V-1), one sentence a line
  ct2_peer.py encode|decode VOCAB.model                text <-> ids with the model's SentencePiece vocabulary

How the two engines line up (checked against CTranslate2 4.x's decoding.cc and by running both):
- The model: sinusoidal positions as ours (sin and cos interleaved, PE[pos, 2i] = sin, PE[pos, 2i+1] =
  cos; CTranslate2's built-in table is concatenated halves, so ours is stored explicitly), embeddings
  times sqrt(d_model), post-LN or pre-LN with the final layer norms, our layer norm epsilon, ReLU,
  fused QKV (self-attention) and fused KV (cross-attention) projections, the target embedding as the
  output projection (no bias).
- Vocabulary: token i is the string of i, except the special ids of the configuration, which get the
  names CTranslate2 expects: pad "<blank>", unk "<unk>", bos "<s>" (the decoder's start token), eos
  "</s>". The source gets "</s>" appended as our make_batch does (add_source_eos in the model config).
- Lengths: our --max-length-b / --min-length count the end of sentence; CTranslate2's
  max_decoding_length / min_decoding_length count only the tokens before it. Here --max-length L and
  --min-length L count output tokens without the end of sentence (CTranslate2's sense), so
  `ct2_peer.py translate --max-length L --min-length M` matches
  `transformer translate --max-length-a 0 --max-length-b L+1 --min-length M+1`.
  At the maximum length ours appends the end of sentence (and its log-probability); CTranslate2 stops
  on whatever token the last step chose. Greedy output is the same either way; beam search ranks
  hypotheses that hit the maximum length differently (theirs without the EOS probability).
- Banned tokens: ours never produces padding or BOS; the same is asked of CTranslate2
  (suppress_sequences).
- Length penalty: ours is GNMT's ((5 + |Y|) / 6)^alpha with |Y| counting the EOS; CTranslate2 4.x
  divides by |Y|^alpha (|Y| without the EOS unless the end token is returned). `translate --beam K
  --length-penalty A` therefore asks CTranslate2 for its K finished hypotheses, recovers their raw
  log-probabilities and reranks them with our penalty (--ct2-length-penalty uses theirs instead).
  Stopping: ours ends a sentence when K hypotheses have ended (or none alive can win); CTranslate2
  does the same with a nonzero penalty, but with penalty 0 it goes on until its top beam ends (and
  may find a better, longer hypothesis), so the reranking path always runs it with a nonzero one.
- Scores: CTranslate2's decoding log-probabilities are approximate (about 1e-4 off the exact values
  that its score_batch and ours agree on to 1e-6), which can flip near-ties in beam search.
- bench: min = max = tgt-len, so every sentence gets exactly tgt-len tokens and no EOS, in tgt-len
  decoder steps; ours, with --max-length-b = --min-length = tgt-len + 1, takes one more step (the
  forced EOS) for the same tgt-len tokens. In a real translation both engines take that step: a
  sentence of n tokens costs n + 1 steps, the last choosing the EOS. --end-step gives CTranslate2
  that step too: it decodes tgt-len + 1 tokens and counts tgt-len, so both engines run the same
  steps for the same count (scripts/bench.sh uses it).
"""

import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

import numpy as np

SPECIAL_NAMES = {"pad_id": "<blank>", "unk_id": "<unk>", "bos_id": "<s>", "eos_id": "</s>"}
DEFAULT_CONFIG = {"pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3, "pre_norm": False,
                  "tie_source_target": True, "layer_norm_eps": 1e-5}
DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16}


# ---------------------------------------------------------------------------------------------
# Our model file (docs/checkpoint-format.md).

def read_safetensors(path):
    """Returns (tensors as float32 numpy arrays by name, metadata dict). Skips optimizer state."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise SystemExit(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise SystemExit(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        if name.startswith("optimizer."):
            continue
        dtype = DTYPES.get(info["dtype"])
        if dtype is None:
            raise SystemExit(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        a = np.frombuffer(data[begin:end], dtype=np.dtype(dtype).newbyteorder("<"))
        tensors[name] = a.reshape(info["shape"]).astype(np.float32)
    return tensors, meta


def sinusoidal_table(positions, d):
    """Our table (src/ops/cpu/positional.cc): rate = 10000^(-(c - c%2)/D), sin on even c, cos on odd c,
    in double precision, then rounded to float32."""
    pos = np.arange(positions, dtype=np.float64)[:, None]
    c = np.arange(d)
    rate = np.exp(-math.log(10000.0) * (c - c % 2).astype(np.float64) / d)
    angle = pos * rate[None, :]
    return np.where(c % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def vocabulary(cfg):
    tokens = [str(i) for i in range(int(cfg["vocab_size"]))]
    for key, name in SPECIAL_NAMES.items():
        tokens[int(cfg[key])] = name
    return tokens


# ---------------------------------------------------------------------------------------------
# convert

def build_spec(tensors, cfg, max_positions):
    from ctranslate2.specs import common_spec, transformer_spec

    pre_norm = bool(cfg["pre_norm"])
    spec = transformer_spec.TransformerSpec.from_config(
        (int(cfg["encoder_layers"]), int(cfg["decoder_layers"])),
        int(cfg["heads"]),
        pre_norm=pre_norm,
        activation=common_spec.Activation.RELU,
    )
    spec.config.layer_norm_epsilon = float(cfg["layer_norm_eps"])
    spec.config.add_source_eos = True  # make_batch appends EOS to every source sentence
    spec.config.decoder_start_token = "<s>"  # decoding starts from BOS

    used = set()

    def t(name):
        used.add(name)
        return tensors[name]

    def linear(lspec, prefix):
        lspec.weight = t(prefix + ".weight")
        lspec.bias = t(prefix + ".bias")

    def fused(lspec, prefixes):
        lspec.weight = np.concatenate([t(p + ".weight") for p in prefixes])
        lspec.bias = np.concatenate([t(p + ".bias") for p in prefixes])

    def norm(nspec, prefix):
        nspec.gamma = t(prefix + ".weight")
        nspec.beta = t(prefix + ".bias")

    def attention(aspec, prefix, norm_prefix, cross):
        if cross:  # queries from the decoder, keys and values from the encoder output
            linear(aspec.linear[0], prefix + ".q_proj")
            fused(aspec.linear[1], [prefix + ".k_proj", prefix + ".v_proj"])
        else:
            fused(aspec.linear[0], [prefix + ".q_proj", prefix + ".k_proj", prefix + ".v_proj"])
        linear(aspec.linear[-1], prefix + ".out_proj")
        norm(aspec.layer_norm, norm_prefix)

    def ffn(fspec, prefix):
        linear(fspec.linear_0, prefix + ".ffn.fc1")
        linear(fspec.linear_1, prefix + ".ffn.fc2")
        norm(fspec.layer_norm, prefix + ".ffn_norm")

    if cfg["tie_source_target"]:
        src_embed = tgt_embed = t("embed.weight")
    else:
        src_embed, tgt_embed = t("encoder.embed.weight"), t("decoder.embed.weight")
    pe = sinusoidal_table(max_positions, int(cfg["d_model"]))

    enc = spec.encoder
    enc.embeddings[0].weight = src_embed
    enc.scale_embeddings = True  # x sqrt(d_model)
    enc.position_encodings.encodings = pe
    for i, layer in enumerate(enc.layer):
        p = f"encoder.layers.{i}"
        attention(layer.self_attention, p + ".self_attn", p + ".self_attn_norm", cross=False)
        ffn(layer.ffn, p)
    if pre_norm:
        norm(enc.layer_norm, "encoder.final_norm")

    dec = spec.decoder
    dec.embeddings.weight = tgt_embed
    dec.scale_embeddings = True
    dec.position_encodings.encodings = pe
    dec.projection.weight = tgt_embed  # logits = h . E^T, no bias
    for i, layer in enumerate(dec.layer):
        p = f"decoder.layers.{i}"
        attention(layer.self_attention, p + ".self_attn", p + ".self_attn_norm", cross=False)
        attention(layer.attention, p + ".cross_attn", p + ".cross_attn_norm", cross=True)
        ffn(layer.ffn, p)
    if pre_norm:
        norm(dec.layer_norm, "decoder.final_norm")

    unused = sorted(set(tensors) - used)
    if unused:
        raise SystemExit("tensors not mapped onto the CTranslate2 model: " + ", ".join(unused[:8]))
    vocab = vocabulary(cfg)
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    return spec


def cmd_convert(args):
    import ctranslate2
    from ctranslate2.converters.converter import Converter

    tensors, meta = read_safetensors(args.model)
    if "config" not in meta:
        raise SystemExit(f"{args.model}: no model configuration in the header's __metadata__")
    cfg = dict(DEFAULT_CONFIG)
    cfg.update(json.loads(meta["config"]))
    names = [cfg[k] for k in SPECIAL_NAMES]
    if len(set(names)) != len(names):
        raise SystemExit(f"special ids must differ, got {names}")

    class OurConverter(Converter):
        def _load(self):
            return build_spec(tensors, cfg, args.max_positions)

    OurConverter().convert(args.out_dir, quantization=args.quantization, force=True)
    with open(os.path.join(args.out_dir, "tfm_config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps({"converted": args.model, "to": args.out_dir, "ctranslate2": ctranslate2.__version__,
                      "pre_norm": bool(cfg["pre_norm"]), "vocab_size": int(cfg["vocab_size"]),
                      "max_positions": args.max_positions}))


def cmd_convert_opus_mt(args):
    """An OPUS-MT (Marian) folder through CTranslate2's own converter (ct2-opus-mt-converter), as a
    user of CTranslate2 converts a downloaded OPUS-MT model: the peer of `transformer import marian`."""
    import ctranslate2

    ctranslate2.converters.OpusMTConverter(args.model_dir).convert(args.out_dir, quantization=args.quantization,
                                                                   force=True)
    print(json.dumps({"converted": args.model_dir, "to": args.out_dir, "ctranslate2": ctranslate2.__version__,
                      "converter": "OpusMTConverter"}))


# ---------------------------------------------------------------------------------------------
# Using a converted model.

def load_vocab(ct2_dir):
    for name in ("shared_vocabulary.json", "target_vocabulary.json"):
        path = os.path.join(ct2_dir, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
    for name in ("shared_vocabulary.txt", "target_vocabulary.txt"):
        path = os.path.join(ct2_dir, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return [line.rstrip("\n") for line in f]
    raise SystemExit(f"{ct2_dir}: no vocabulary file")


def open_translator(ct2_dir, compute_type, threads):
    import ctranslate2

    return ctranslate2.Translator(ct2_dir, device="cpu", compute_type=compute_type, inter_threads=1,
                                  intra_threads=threads)


def read_id_lines(path, vocab):
    """Token ids per line, as `transformer translate --ids` reads them: inside the vocabulary and
    never padding, BOS or EOS (the engines add those themselves)."""
    special = {vocab.index(name): name for name in SPECIAL_NAMES.values() if name != "<unk>" and name in vocab}
    sources = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            ids = [int(x) for x in line.split()]
            for i in ids:
                if not 0 <= i < len(vocab):
                    raise SystemExit(f"{path}:{n}: token id {i} is outside the vocabulary [0, {len(vocab)})")
                if i in special:
                    raise SystemExit(f"{path}:{n}: token id {i} is {special[i]}, which the engines add themselves")
            sources.append(ids)
    return sources


BANNED = [["<blank>"], ["<s>"]]  # as our search: never padding or BOS


def banned(vocab):
    """BANNED's tokens that the vocabulary has (an OPUS-MT model has neither: Marian's vocabulary has
    no padding or BOS token, and neither engine can produce one), or None."""
    present = [s for s in BANNED if s[0] in vocab]
    return present or None


def cmd_translate(args):
    vocab = load_vocab(args.ct2_dir)
    index = {tok: i for i, tok in enumerate(vocab)}
    sources = read_id_lines(args.ids_in, vocab)
    translator = open_translator(args.ct2_dir, args.compute_type, args.threads)
    todo = [i for i, s in enumerate(sources) if s]  # ours prints an empty line for an empty input
    batch = [[vocab[i] for i in sources[k][:args.max_input_tokens]] for k in todo]
    gnmt = args.beam > 1 and not args.ct2_length_penalty
    # CTranslate2 stops a sentence when K hypotheses have ended, as ours does, only with a nonzero
    # penalty (with 0 it waits for the top beam to end); its penalty is undone below in any case.
    ct2_alpha = args.length_penalty if args.length_penalty != 0 else 1.0
    opts = dict(beam_size=args.beam, max_decoding_length=args.max_length, min_decoding_length=args.min_length,
                suppress_sequences=banned(index), max_batch_size=args.batch_size, max_input_length=0)
    if gnmt:
        # Their K finished hypotheses with the end token, so that |Y| > 0 and the raw log-probability
        # is score * |Y|^alpha; then our penalty picks the best.
        opts.update(num_hypotheses=args.beam, return_scores=True, return_end_token=True, length_penalty=ct2_alpha)
    else:
        opts.update(length_penalty=args.length_penalty)
    start = time.perf_counter()
    results = translator.translate_batch(batch, **opts) if batch else []
    seconds = time.perf_counter() - start
    out = [""] * len(sources)
    for k, r in zip(todo, results):
        if gnmt:
            best, best_key = None, -math.inf
            for hyp, score in zip(r.hypotheses, r.scores):
                ended = bool(hyp) and hyp[-1] == "</s>"
                raw = score * len(hyp) ** ct2_alpha
                tokens = hyp[:-1] if ended else hyp
                key = raw / ((5.0 + len(tokens) + 1) / 6.0) ** args.length_penalty
                if key > best_key:
                    best, best_key = tokens, key
            hyp = best if best is not None else [tok for tok in r.hypotheses[0] if tok != "</s>"]
        else:
            hyp = r.hypotheses[0]
        out[k] = " ".join(str(index[tok]) for tok in hyp)
    sys.stdout.write("".join(line + "\n" for line in out))
    if args.stats:  # as `transformer translate --stats`: the translation alone, loading excluded
        tokens = sum(len(line.split()) for line in out)
        print(f"translated {len(sources)} sentences, {tokens} tokens in {seconds:.3f} s: "
              f"{tokens / max(seconds, 1e-9):.0f} tokens/s", file=sys.stderr)


def cmd_score(args):
    vocab = load_vocab(args.ct2_dir)
    src = read_id_lines(args.source_ids, vocab)
    tgt = read_id_lines(args.target_ids, vocab)
    if len(src) != len(tgt):
        raise SystemExit(f"{len(src)} source lines but {len(tgt)} target lines")
    translator = open_translator(args.ct2_dir, args.compute_type, args.threads)
    results = translator.score_batch([[vocab[i] for i in s] for s in src], [[vocab[i] for i in t] for t in tgt],
                                     max_input_length=0)
    for r in results:  # log-probabilities of the target tokens and the end of sentence
        total = float(sum(r.log_probs))
        print(f"{total:.6f}\t{total / len(r.log_probs):.6f}")


def random_sentences(lines, length, vocab_size, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(4, vocab_size, size=(lines, length)).tolist()


def cmd_random_ids(args):
    for s in random_sentences(args.lines, args.len, args.vocab, args.seed):
        print(" ".join(map(str, s)))


def cmd_bench(args):
    import ctranslate2

    vocab = load_vocab(args.ct2_dir)
    batch = [[vocab[i] for i in s] for s in random_sentences(args.batch, args.src_len, len(vocab), args.seed)]
    if args.shortlist:
        # The fixed output vocabulary BM_Translate's *_shortlist runs use: EOS and 4, 14, 24, ...
        # (args.shortlist ids in all), as a vocabulary map whose always-included line holds them.
        ids = [3] + list(range(4, len(vocab), 10))[:args.shortlist - 1]
        with open(os.path.join(args.ct2_dir, "vmap.txt"), "w", encoding="utf-8") as f:
            f.write("\t" + " ".join(vocab[i] for i in ids) + "\n")
    translator = open_translator(args.ct2_dir, args.compute_type, args.threads)
    # Exactly tgt_len tokens: EOS is disabled while step < min_decoding_length, and the step
    # max_decoding_length - 1 is the last, so every sentence gets tgt_len tokens and no EOS.
    # With --end-step, one more step (tgt_len + 1 tokens decoded, tgt_len counted): the step that
    # chooses the EOS in a real translation, and that ours takes at the forced length.
    steps = args.tgt_len + (1 if args.end_step else 0)
    opts = dict(beam_size=args.beam, max_decoding_length=steps, min_decoding_length=steps,
                length_penalty=args.length_penalty, suppress_sequences=banned(set(vocab)), max_input_length=0,
                use_vmap=args.shortlist > 0)
    translator.translate_batch(batch, **opts)  # warm-up, untimed
    times, tokens = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        results = translator.translate_batch(batch, **opts)
        times.append(time.perf_counter() - start)
        produced = sum(len(r.hypotheses[0]) for r in results)
        if produced != args.batch * steps:
            raise SystemExit(f"produced {produced} tokens, expected {args.batch} x {steps}")
        if any("</s>" in r.hypotheses[0] for r in results):
            raise SystemExit("an end of sentence inside a forced-length output")
        tokens = args.batch * args.tgt_len
    seconds = statistics.median(times)
    mode = (f"{args.label} " if args.label else "") + f"{args.compute_type} " + \
        ("greedy" if args.beam == 1 else f"beam {args.beam}")
    if args.shortlist:
        mode += f" shortlist {args.shortlist}"
    print(json.dumps({"peer": "ctranslate2", "version": ctranslate2.__version__, "mode": mode,
                      "compute_type": args.compute_type, "effective_compute_type": translator.compute_type,
                      "beam": args.beam, "batch": args.batch,
                      "src_len": args.src_len, "tgt_len": args.tgt_len, "decoder_steps": steps,
                      "threads": args.threads,
                      "tokens": tokens, "seconds": round(seconds, 6),
                      "tokens_per_s": round(tokens / seconds, 2)}))


# ---------------------------------------------------------------------------------------------

def cmd_encode(args):
    import sentencepiece  # pip install sentencepiece (only these two subcommands need it)

    sp = sentencepiece.SentencePieceProcessor(model_file=args.vocab)
    for line in sys.stdin:
        print(" ".join(map(str, sp.encode(line.strip()))))


def cmd_decode(args):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=args.vocab)
    for line in sys.stdin:
        print(sp.decode([int(x) for x in line.split()]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("convert", help="our .safetensors model -> a CTranslate2 model directory")
    c.add_argument("model")
    c.add_argument("out_dir")
    c.add_argument("--max-positions", type=int, default=1024,
                   help="rows of the positional table (the longest source or output it can handle)")
    c.add_argument("--quantization", default=None, help="CTranslate2 weight type on disk (default: float32 as read)")
    c.set_defaults(func=cmd_convert)

    c = sub.add_parser("convert-opus-mt", help="an OPUS-MT folder (model .npz, vocab .yml, decoder.yml) -> a "
                       "CTranslate2 model directory, with CTranslate2's OPUS-MT converter")
    c.add_argument("model_dir")
    c.add_argument("out_dir")
    c.add_argument("--quantization", default=None, help="CTranslate2 weight type on disk (default: float32 as read)")
    c.set_defaults(func=cmd_convert_opus_mt)

    def runtime(q):
        q.add_argument("--compute-type", default="float32", help="float32, int8, ... (CTranslate2's compute_type)")
        q.add_argument("--threads", type=int, default=1, help="intra_threads")

    t = sub.add_parser("translate", help="space-separated ids in, ids out (as transformer translate --ids)")
    t.add_argument("ct2_dir")
    t.add_argument("--ids-in", required=True)
    t.add_argument("--beam", type=int, default=4)
    t.add_argument("--max-length", type=int, default=256,
                   help="at most this many output tokens, EOS not counted (ours: --max-length-a 0 --max-length-b L+1)")
    t.add_argument("--min-length", type=int, default=0,
                   help="no EOS before this many output tokens, EOS not counted (ours: --min-length L+1)")
    t.add_argument("--length-penalty", type=float, default=0.6,
                   help="alpha of our ((5+|Y|)/6)^alpha, applied by reranking CTranslate2's beam")
    t.add_argument("--ct2-length-penalty", action="store_true",
                   help="use CTranslate2's own penalty |Y|^alpha instead of reranking")
    t.add_argument("--batch-size", type=int, default=64, help="sentences per CTranslate2 batch")
    t.add_argument("--max-input-tokens", type=int, default=1024, help="longer inputs are truncated, as ours")
    t.add_argument("--stats", action="store_true", help="print sentences, tokens and seconds of the translation to stderr")
    runtime(t)
    t.set_defaults(func=cmd_translate)

    s = sub.add_parser("score", help="log-probability of targets (as transformer score --ids)")
    s.add_argument("ct2_dir")
    s.add_argument("--source-ids", required=True)
    s.add_argument("--target-ids", required=True)
    runtime(s)
    s.set_defaults(func=cmd_score)

    b = sub.add_parser("bench", help="translate one random batch to a forced length; print one JSON line")
    b.add_argument("ct2_dir")
    b.add_argument("--batch", type=int, default=64)
    b.add_argument("--src-len", type=int, default=25)
    b.add_argument("--tgt-len", type=int, default=25, help="output tokens per sentence, EOS not counted")
    b.add_argument("--end-step", action="store_true",
                   help="decode one more token per sentence, not counted: the step that chooses the EOS in a "
                        "real translation (ours takes it at the forced length)")
    b.add_argument("--beam", type=int, default=1)
    b.add_argument("--length-penalty", type=float, default=0.6, help="CTranslate2's (no effect at a forced length)")
    b.add_argument("--repeats", type=int, default=3)
    b.add_argument("--seed", type=int, default=5)
    b.add_argument("--compute-type", default="float32")
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--label", default="", help="a word put before the mode in the JSON line (e.g. opus-mt)")
    b.add_argument("--shortlist", type=int, default=0,
                   help="restrict the output to this many fixed ids through a vocabulary map (as BM_Translate's "
                        "*_shortlist runs)")
    b.set_defaults(func=cmd_bench)

    e = sub.add_parser("encode", help="text on stdin -> token ids with a SentencePiece model (pip install sentencepiece)")
    e.add_argument("vocab")
    e.set_defaults(func=cmd_encode)
    d = sub.add_parser("decode", help="token ids on stdin -> text with a SentencePiece model")
    d.add_argument("vocab")
    d.set_defaults(func=cmd_decode)

    r = sub.add_parser("random-ids", help="seeded random source ids in [4, vocab), one sentence a line")
    r.add_argument("--lines", type=int, default=64)
    r.add_argument("--len", type=int, default=25)
    r.add_argument("--vocab", type=int, required=True)
    r.add_argument("--seed", type=int, default=7)
    r.set_defaults(func=cmd_random_ids)

    args = p.parse_args()
    if getattr(args, "max_length", 1) < 1:
        p.error("--max-length must be >= 1")
    args.func(args)


if __name__ == "__main__":
    main()
