#!/usr/bin/env python3
"""Builds two tiny random M2M100ForConditionalGeneration translators, one with an NLLB-200 tokenizer
and one with an M2M-100 tokenizer, saved with save_pretrained as a user's checkpoint folder looks,
and the reference outputs of transformers that the `transformer import hf` tests compare with.

Run it (no network is touched; everything is built locally from fixed seeds):

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_hf_m2m100_fixtures.py

torch, transformers, sentencepiece and safetensors come from PyPI, installed in a virtualenv; only
regenerating the fixtures needs them. A rerun with the same package versions writes the same files.

What it writes into tests/fixtures/hf/:

  nllb/      config.json, model.safetensors (bfloat16; d_model 32, 2+2 layers, 4 heads, FFN 64,
             relu, scale_embedding true), generation_config.json, and an NllbTokenizer saved by
             save_pretrained (tokenizer.json, tokenizer_config.json) with four language codes
             (eng_Latn, deu_Latn, fra_Latn, ces_Latn); sentencepiece.bpe.model beside them, as the
             NLLB folders on the hub have it (transformers 5 converts it but does not save it).
  m2m100/    the same kind of model (float16, gelu, scale_embedding false, to cover those paths) with an
             M2M100Tokenizer (vocab.json, sentencepiece.bpe.model, tokenizer_config.json) of the
             "wmt21" language codes (en, ha, is, ja, cs, ru, zh, de); its vocab_size counts the 8
             "madeupword" rows fairseq adds after the language codes, as the real checkpoints do.
  m2m100_reference.json   per folder: source texts, the HF tokenizer's ids (src_lang set) for them
             and for Multi30k test lines, teacher-forced logits, and generate() outputs (greedy and
             beam 4, forced_bos_token_id the target language) with their decoded text.

The SentencePiece BPE model (500 pieces) is trained here on the first 300 lines of Multi30k's
English and German training text (../shared/data/multi30k/raw).
"""
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sentencepiece as spm  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer, NllbTokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "hf")
DATA = os.path.join(ROOT, "..", "shared", "data", "multi30k", "raw")
EOS_BOOST = 7.0  # </s>'s logit raised so that most outputs end within max_new_tokens
SUBLAYER_GAIN = 4.0  # the attention and feed-forward outputs' scale
NLLB_CODES = ["eng_Latn", "deu_Latn", "fra_Latn", "ces_Latn"]

SOURCES = [
    "A man in an orange hat starring at something.",
    "A Boston Terrier is running on lush green grass in front of a white fence.",
    "Two young girls are playing in the snow.",
    "People sit on a bench.",
    "A café in Zürich, 2019: «ÿ» and 🙂!",
]
TARGET = "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt."
HOSTILE = ["e\u0301 a\u0300 o\u0308", "👨‍👩‍👧 family", "שלום עולם", "a b\tc", "ﬁ ① Ａ Ⅻ", "x" * 300,
           "\u200bzero width", "ÄÖÜ äöü ß", "Ünïcödé", "l'homme « quoi ? »"]


def lines(name, n):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(n), f)]


def train_spm(tmp):
    # Relative names, so that the model's recorded trainer spec is the same on every run.
    cwd = os.getcwd()
    os.chdir(tmp)
    with open("corpus.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(lines("train.en", 300) + lines("train.de", 300)) + "\n")
    # spm_train's default special ids (<unk>=0 <s>=1 </s>=2, no pad), as NLLB's and M2M-100's models.
    spm.SentencePieceTrainer.train(input="corpus.txt", model_prefix="sp", vocab_size=500, model_type="bpe",
                                   character_coverage=1.0, num_threads=1, minloglevel=2)
    os.chdir(cwd)
    return os.path.join(tmp, "sp.model")


def nllb_tokenizer(spm_path, out):
    staging = tempfile.mkdtemp()
    shutil.copy(spm_path, os.path.join(staging, "sentencepiece.bpe.model"))
    tok = NllbTokenizer.from_pretrained(staging, src_lang="eng_Latn", extra_special_tokens=NLLB_CODES)
    tok.save_pretrained(out)
    shutil.copy(spm_path, os.path.join(out, "sentencepiece.bpe.model"))
    shutil.rmtree(staging)
    return NllbTokenizer.from_pretrained(out)


def m2m100_tokenizer(spm_path, out):
    # vocab.json: fairseq's dictionary, <s> <pad> </s> <unk> then the SentencePiece pieces.
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(3, sp.get_piece_size()):
        vocab[sp.id_to_piece(i)] = len(vocab)
    staging = tempfile.mkdtemp()
    with open(os.path.join(staging, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=2)
    shutil.copy(spm_path, os.path.join(staging, "sentencepiece.bpe.model"))
    tok = M2M100Tokenizer(vocab_file=os.path.join(staging, "vocab.json"),
                          spm_file=os.path.join(staging, "sentencepiece.bpe.model"), src_lang="en", tgt_lang="de",
                          language_codes="wmt21")
    tok.save_pretrained(out)
    shutil.rmtree(staging)
    return M2M100Tokenizer.from_pretrained(out)


def randomize(model, seed, eos_boost):
    """Random weights that make distinct tokens likely (logits far apart, so that float rounding
    never decides a search), the padding row zero as nn.Embedding's padding_idx initializes it, and
    outputs that end: the decoder's final norm holds dimension 0 at 1, where only </s>'s embedding
    is large, adding eos_boost to its logit at every step."""
    g = torch.Generator().manual_seed(seed)
    d = model.config.d_model
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("shared.weight"):
                p.copy_(torch.randn(p.shape, generator=g) / d ** 0.5)
                p[model.config.pad_token_id].zero_()
                p[model.config.eos_token_id, 0] = eos_boost
            elif p.dim() == 2:  # the sublayers' outputs outweigh the token's own embedding
                gain = SUBLAYER_GAIN if ("out_proj" in name or "fc2" in name) else 1.5
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5 * gain)
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
        norm = model.model.decoder.layer_norm
        norm.weight *= 3.0
        norm.weight[0], norm.bias[0] = 0.0, 1.0


def build_model(tok, vocab_size, seed, eos_boost, **overrides):
    torch.manual_seed(seed)
    config = M2M100Config(vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id,
                          bos_token_id=0, eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.eos_token_id,
                          **overrides)
    model = M2M100ForConditionalGeneration(config).eval()
    randomize(model, seed, eos_boost)
    return model


def lang_id(tok, code):
    return tok.get_lang_id(code) if isinstance(tok, M2M100Tokenizer) else tok.convert_tokens_to_ids(code)


def generate(model, tok, src_ids, target_code):
    forced = lang_id(tok, target_code)
    out = {}
    for name, beams in (("greedy", 1), ("beam4", 4)):
        hyps = []
        for ids in src_ids:
            seq = model.generate(torch.tensor([ids]), num_beams=beams, max_new_tokens=12, length_penalty=1.0,
                                 early_stopping=False, do_sample=False, forced_bos_token_id=forced,
                                 num_return_sequences=1)[0].tolist()
            hyps.append({"ids": seq, "text": tok.decode(seq, skip_special_tokens=True),
                         "text_after_language": tok.decode(seq[2:], skip_special_tokens=True)})
        out[name] = hyps
    return out


def references(name, model, tok, source_code, target_code):
    tok.src_lang = source_code
    src_ids = [tok(s).input_ids for s in SOURCES]
    forced = lang_id(tok, target_code)
    with torch.no_grad():
        logits = []
        for s in (0,):
            tgt = [model.config.decoder_start_token_id, forced] + tok(TARGET, add_special_tokens=False).input_ids
            out = model(input_ids=torch.tensor([src_ids[s]]), decoder_input_ids=torch.tensor([tgt])).logits[0]
            logits.append({"sentence": s, "decoder_input_ids": tgt,
                           "logits": [[float(f"{v:.7g}") for v in row] for row in out.tolist()]})
    test_lines = {lang: lines(f"test_2016_flickr.{lang}", 40) for lang in ("en", "de", "fr", "cs")}
    tokenized = [{"text": t, "ids": tok(t, add_special_tokens=False).input_ids}
                 for group in list(test_lines.values()) + [HOSTILE] for t in group]
    gen = generate(model, tok, src_ids, target_code)
    for hyps in gen.values():
        for h in hyps:
            assert model.config.pad_token_id not in h["ids"][1:], f"{name}: HF generated padding: {h['ids']}"
    return {"source_lang": source_code, "target_lang": target_code, "target_lang_id": forced,
            "sources": SOURCES, "source_ids": src_ids, "logits": logits, "tokenized": tokenized, **gen}


def main():
    tmp = tempfile.mkdtemp()
    spm_path = train_spm(tmp)
    reference = {"versions": {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]},
                 "generate": "num_beams 1 and 4, max_new_tokens 12, length_penalty 1.0, early_stopping False, "
                             "forced_bos_token_id the target language; ids include the decoder start </s>; text is "
                             "decode(skip_special_tokens=True), text_after_language decodes the ids after the forced "
                             "language token"}
    for name, make_tok, seed, overrides, codes in (
            ("nllb", nllb_tokenizer, 49, {}, ("eng_Latn", "deu_Latn")),
            ("m2m100", m2m100_tokenizer, 50, {"activation_function": "gelu", "scale_embedding": False}, ("en", "de"))):
        out = os.path.join(OUT, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        tok = make_tok(spm_path, out)
        # NLLB: the tokenizer's size; M2M-100: vocab.json, the language codes and 8 "madeupword"s.
        vocab_size = len(tok) if name == "nllb" else len(tok.encoder) + len(tok.lang_code_to_id) + 8
        model = build_model(tok, vocab_size, seed, EOS_BOOST, **overrides)
        # Half-precision weights, as checkpoints on the hub are often stored (and half the size).
        model = model.to(torch.bfloat16 if name == "nllb" else torch.float16)
        model.save_pretrained(out)
        # The references come from the saved weights, read back in float32.
        model = M2M100ForConditionalGeneration.from_pretrained(out, dtype=torch.float32).eval()
        reference[name] = references(name, model, tok, *codes)
    with open(os.path.join(OUT, "m2m100_reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    shutil.rmtree(tmp)
    for name in ("nllb", "m2m100"):
        for h in reference[name]["greedy"] + reference[name]["beam4"]:
            print(name, len(h["ids"]), h["ids"][-1] == 2, h["text"][:60], file=sys.stderr)


if __name__ == "__main__":
    main()
