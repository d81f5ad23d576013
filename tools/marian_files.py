#!/usr/bin/env python3
"""Marian's files, written as Marian writes them, from numpy alone: the vocabulary (vocab.yml, as
yaml-cpp emits it), the model (.npz as cnpy writes it, with `special:model.yml`), decoder.yml, and
random OPUS-MT-style weights in Marian's layout.

tools/make_import_fixtures.py builds the import fixtures with it (that tool also needs torch,
transformers and CTranslate2); `make bench` (scripts/bench.sh) builds an OPUS-MT-sized model with it:

    python3 tools/marian_files.py opus-mt-base OUTDIR

writes OUTDIR/model.npz (d=512, 8 heads, FFN 2048, 6+6 layers, swish, 58,101 vocabulary entries,
about 300 MB), OUTDIR/vocab.yml (the import fixture's pieces, then dummy pieces up to 58,101),
decoder.yml, and copies of the fixture's source.spm / target.spm: everything `transformer import
marian` and CTranslate2's OPUS-MT converter read. numpy is the only package it needs.
"""
import argparse
import io
import math
import os
import re
import shutil
import struct
import sys
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "import", "marian")


# The fixture model (tools/make_import_fixtures.py). OPUS-MT's transformer has d=512, 8 heads, FFN 2048, 6+6 layers (see BASE).
SMALL = dict(dim=32, heads=4, ffn=64, enc_depth=2, dec_depth=2, spm_vocab=200)
BASE = dict(dim=512, heads=8, ffn=2048, enc_depth=6, dec_depth=6, spm_vocab=200, vocab=58101)

# Random-weight scales, as gains: a matrix with fan-in n gets std gain/sqrt(n), so the statistics do
# not depend on the model size. They were tuned (see the summary the tool prints) so that greedy
# outputs differ between sentences, have different lengths, and the top-2 logits are rarely tied.
GAIN = dict(emb=2.0, att=1.5, ffn1=1.8, ffn2=1.5, bias=0.05, ln_scale=0.25, ln_bias=0.05, logit_bias=0.3,
            out_ln=2.0, chan_ln=2.5, out_chan_ln=20.0, eos_chan=3.0, eos_rand=0.3, eos_bias=0.0)
SEED = 20240611  # tools/make_import_fixtures.py's corpus and SentencePiece seed
WEIGHT_SEED = SEED + 2  # picked among the first few seeds for varied outputs and clear top-2 margins

MAX_LENGTH = 40  # HF max_length: the decoder-start token plus at most 39 generated tokens
VOCAB_YML = "opus.spm-spm.vocab.yml"
MODEL_NPZ = "model.npz"


# --------------------------------------------------------------------------------------------------
# 3. The Marian vocabulary, written like yaml-cpp's emitter (Marian's marian-vocab / vocab.yml)

def _yamlcpp_plain_ok(s):
    """yaml-cpp's Utils::IsValidPlainScalar for a block-context key (UTF-8 output allowed)."""
    if s in ("", "~", "null", "Null", "NULL"):
        return False
    b = s.encode("utf-8")
    blank_or_break = (b" ", b"\t", b"\n")

    def at(i):
        return b[i:i + 1]

    def is_blank_or_break(i):
        return at(i) in blank_or_break or b[i:i + 2] == b"\r\n"

    # the start: no blank/break, none of ,[]{}#&*!|>'"%@` and no -?: followed by blank/break/end
    if is_blank_or_break(0) or at(0) in [bytes([c]) for c in b",[]{}#&*!|>'\"%@`"]:
        return False
    if at(0) in (b"-", b"?", b":") and (len(b) == 1 or is_blank_or_break(1)):
        return False
    if b.endswith(b" "):
        return False
    for i in range(len(b)):
        c = b[i]
        if c == ord(":") and (i + 1 == len(b) or is_blank_or_break(i + 1)):
            return False  # EndScalar
        if is_blank_or_break(i):
            j = i + (2 if b[i:i + 2] == b"\r\n" else 1)
            if at(j) == b"#":
                return False  # BlankOrBreak + Comment
        if c in (0, 0x0B, 0x0C, 0x7F) or 1 <= c <= 8 or 0x0E <= c <= 0x1F:
            return False  # NotPrintable
        if c == 0xC2 and i + 1 < len(b) and (0x80 <= b[i + 1] <= 0x84 or 0x86 <= b[i + 1] <= 0x9F):
            return False  # NotPrintable (C1 controls other than NEL)
        if b[i:i + 3] == b"\xef\xbb\xbf" or c in (ord("\n"), ord("\t")) or b[i:i + 2] == b"\r\n":
            return False  # byte-order mark, break, tab
    return True


def _yamlcpp_double_quoted(s):
    """yaml-cpp's Utils::WriteDoubleQuotedString (escapeNonAscii off)."""
    out = ['"']
    for ch in s:
        cp = ord(ch)
        esc = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b"}.get(ch)
        if esc is not None:
            out.append(esc)
        elif cp < 0x20 or 0x80 <= cp <= 0xA0:
            out.append("\\x%02x" % cp)
        elif cp == 0xFEFF:
            out.append("\\ufeff")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def yamlcpp_key(s):
    return s if _yamlcpp_plain_ok(s) else _yamlcpp_double_quoted(s)


def write_vocab_yml(path, tokens):
    """`*stream << YAML::Node` for a block map: "key: id" lines joined by "\\n", no final newline."""
    text = "\n".join(f"{yamlcpp_key(t)}: {i}" for i, t in enumerate(tokens))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

# --------------------------------------------------------------------------------------------------
# 4. The Marian model (.npz)

def yamlcpp_model_config(cfg):
    """The `special:model.yml` text as Marian's cli::OutputYaml writes it: keys sorted, block style."""
    lines = []
    for key in sorted(cfg):
        v = cfg[key]
        if isinstance(v, list):
            if v:
                lines.append(f"{key}:")
                lines += [f"  - {x}" for x in v]
            else:
                lines += [f"{key}:", "  []"]
        elif isinstance(v, bool):
            lines.append(f"{key}: {'true' if v else 'false'}")
        else:
            lines.append(f"{key}: {yamlcpp_key(str(v))}")
    return "\n".join(lines)


def marian_config(shape, vocab_size):
    return {
        "bert-train-type-embeddings": True,
        "bert-type-vocab-size": 2,
        "dec-cell": "gru",
        "dec-cell-base-depth": 2,
        "dec-cell-high-depth": 1,
        "dec-depth": shape["dec_depth"],
        "dim-emb": shape["dim"],
        "dim-rnn": 1024,
        "dim-vocabs": [vocab_size, vocab_size],
        "enc-cell": "gru",
        "enc-cell-depth": 1,
        "enc-depth": shape["enc_depth"],
        "enc-type": "bidirectional",
        "input-types": [],
        "layer-normalization": False,
        "right-left": False,
        "skip": False,
        "tied-embeddings": False,
        "tied-embeddings-all": True,
        "tied-embeddings-src": False,
        "transformer-aan-activation": "swish",
        "transformer-aan-depth": 2,
        "transformer-aan-nogate": False,
        "transformer-decoder-autoreg": "self-attention",
        "transformer-dim-aan": 2048,
        "transformer-dim-ffn": shape["ffn"],
        "transformer-ffn-activation": "swish",
        "transformer-ffn-depth": 2,
        "transformer-guided-alignment-layer": "last",
        "transformer-heads": shape["heads"],
        "transformer-no-projection": False,
        "transformer-postprocess": "dan",
        "transformer-postprocess-emb": "d",
        "transformer-preprocess": "",
        "transformer-tied-layers": [],
        "transformer-train-position-embeddings": False,
        "type": "transformer",
        "ulr": False,
        "ulr-dim-emb": 0,
        "ulr-trainable-transformation": False,
        "version": "v1.11.0 (synthetic model from tools/make_import_fixtures.py)",
    }


def length_channel(d, max_steps=MAX_LENGTH):
    """Two groups of embedding dimensions (sin half of the HF/CTranslate2 encoding, rates
    10000^(-2i/d)): `rising`, whose sinusoid rises steadily over the first max_steps positions
    (rate * max_steps in [0.35, 1.4]), and `flat`, whose sinusoid stays ~0 (rate * max_steps < 0.02)."""
    rate = [max_steps * 10000.0 ** (-2.0 * i / d) for i in range(d // 2)]
    return [i for i in range(d // 2) if 0.35 <= rate[i] <= 1.4], [i for i in range(d // 2) if rate[i] < 0.02]


def random_marian_weights(shape, vocab_size, eos_id, seed):
    """Random float32 weights with Marian's names and shapes: W as [in, out] (y = x W + b), biases
    and layer-norm vectors as [1, n].

    Purely random weights make greedy decoding repeat one token forever and never stop, so two things
    are arranged: W2 of every FFN has centred columns (swish is mostly positive, and without that the
    FFNs add one large constant vector that swamps source and position), and a few "length channel"
    dimensions (see length_channel) carry only the position encoding: no token embedding, no attention
    or FFN output writes into them. The </s> embedding row reads them, so the </s> logit grows with the
    decoding step and outputs end after a source-dependent number of tokens. It reads the difference
    rising - flat: layer norm subtracts the mean over all dimensions, which the difference cancels."""
    rng = np.random.default_rng(seed)
    d, f = shape["dim"], shape["ffn"]
    rising, flat = length_channel(d)
    chan = rising + flat

    def normal(shp, std):
        return (rng.standard_normal(shp, dtype=np.float32) * np.float32(std)).astype("<f4")

    def ln(prefix, w, mean=1.0, chan_scale=GAIN["chan_ln"]):
        scale = mean + normal((1, d), GAIN["ln_scale"])
        bias = normal((1, d), GAIN["ln_bias"])
        scale[0, chan], bias[0, chan] = chan_scale, 0.0
        w[prefix + "_ln_scale"], w[prefix + "_ln_bias"] = scale.astype("<f4"), bias

    def no_write(wmat, bvec):  # a sublayer's output leaves the length channel alone
        wmat[:, chan], bvec[0, chan] = 0.0, 0.0

    def attention(prefix, w):
        for m in "qkvo":
            w[f"{prefix}_W{m}"] = normal((d, d), GAIN["att"] / math.sqrt(d))
            w[f"{prefix}_b{m}"] = normal((1, d), GAIN["bias"])
        no_write(w[f"{prefix}_Wo"], w[f"{prefix}_bo"])
        ln(prefix + "_Wo", w)

    def ffn(prefix, w, last=False):
        w[prefix + "_W1"] = normal((d, f), GAIN["ffn1"] / math.sqrt(d))
        w[prefix + "_b1"] = normal((1, f), GAIN["bias"])
        w2 = normal((f, d), GAIN["ffn2"] / math.sqrt(f))
        w[prefix + "_W2"] = (w2 - w2.mean(axis=0, keepdims=True)).astype("<f4")
        w[prefix + "_b2"] = normal((1, d), GAIN["bias"])
        no_write(w[prefix + "_W2"], w[prefix + "_b2"])
        if last:  # the decoder's last layer norm: its scale is the logits' scale
            ln(prefix + "_ffn", w, GAIN["out_ln"], GAIN["out_chan_ln"])
        else:
            ln(prefix + "_ffn", w)

    emb = normal((vocab_size, d), GAIN["emb"] / math.sqrt(d))
    emb[:, chan] = 0.0
    emb[eos_id] *= GAIN["eos_rand"]
    emb[eos_id, rising] = GAIN["eos_chan"] / len(rising)
    emb[eos_id, flat] = -GAIN["eos_chan"] / len(flat)
    w = {"Wemb": emb}
    for layer in range(1, shape["enc_depth"] + 1):
        attention(f"encoder_l{layer}_self", w)
        ffn(f"encoder_l{layer}_ffn", w)
    for layer in range(1, shape["dec_depth"] + 1):
        attention(f"decoder_l{layer}_self", w)
        attention(f"decoder_l{layer}_context", w)
        ffn(f"decoder_l{layer}_ffn", w, last=layer == shape["dec_depth"])
    bias = normal((1, vocab_size), GAIN["logit_bias"])
    bias[0, eos_id] = np.float32(GAIN["eos_bias"])
    w["decoder_ff_logit_out_b"] = bias
    return w


def _cnpy_npy_header(arr):
    """cnpy::create_npy_header: format 1.0, '<' + kind + item size (int8 is '<i1', not numpy's '|i1'),
    the dict padded with spaces so that the 10-byte preamble + dict is a multiple of 16."""
    kind = {"f": "f", "i": "i", "u": "u"}[arr.dtype.kind]
    shape = ", ".join(str(n) for n in arr.shape) + ("," if arr.ndim == 1 else "")
    d = f"{{'descr': '<{kind}{arr.dtype.itemsize}', 'fortran_order': False, 'shape': ({shape}), }}"
    d += " " * (16 - (10 + len(d)) % 16)
    d = d[:-1] + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode("ascii")


def write_npz(path, arrays):
    """The .npz exactly as Marian writes it (cnpy::npz_save): an uncompressed zip of NAME.npy members
    with zero timestamps, no extra fields and no zip64 records, parameters sorted by name (Marian's
    std::map) with special:model.yml last. np.load reads it like any .npz."""
    names = sorted(k for k in arrays if k != "special:model.yml") + ["special:model.yml"]
    out, central = io.BytesIO(), io.BytesIO()
    for name in names:
        arr = np.ascontiguousarray(arrays[name])
        fname = (name + ".npy").encode("utf-8")
        data = _cnpy_npy_header(arr) + arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        crc = zlib.crc32(data) & 0xFFFFFFFF
        # version 20, flags 0, stored, time 0, date 0, crc, sizes, name length, no extra field
        common = struct.pack("<HHHHHIIIHH", 20, 0, 0, 0, 0, crc, len(data), len(data), len(fname), 0)
        offset = out.tell()
        out.write(b"PK\x03\x04" + common + fname + data)
        central.write(b"PK\x01\x02" + struct.pack("<H", 20) + common
                      + struct.pack("<HHHII", 0, 0, 0, 0, offset) + fname)
    footer = struct.pack("<HHHHIIH", 0, 0, len(names), len(names), central.tell(), out.tell(), 0)
    with open(path, "wb") as f:
        f.write(out.getvalue() + central.getvalue() + b"PK\x05\x06" + footer)


def write_marian_model(path, shape, vocab_size, eos_id, seed):
    cfg = marian_config(shape, vocab_size)
    weights = random_marian_weights(shape, vocab_size, eos_id, seed)
    cfg_text = yamlcpp_model_config(cfg)
    # io::addMetaToItems: the YAML text plus one NUL, as int8 (Marian >= 1.12 pads to 256 bytes with
    # NULs; OPUS-MT's models predate that and carry exactly one terminator).
    weights["special:model.yml"] = np.frombuffer(cfg_text.encode("utf-8") + b"\0", dtype=np.int8)
    write_npz(path, weights)
    return cfg, cfg_text


def write_decoder_yml(path, model_name, vocab_name, beam_size=4, normalize=0.6):
    """EncoderDecoder::createDecoderConfig with relative paths (yaml-cpp, insertion order)."""
    text = "\n".join([
        "relative-paths: true", "models:", f"  - {model_name}", "vocabs:", f"  - {vocab_name}",
        f"  - {vocab_name}", f"beam-size: {beam_size}", f"normalize: {normalize}", "word-penalty: 0",
        "mini-batch: 16", "maxi-batch: 100", "maxi-batch-sort: src"])
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


# --------------------------------------------------------------------------------------------------
# 5. An OPUS-MT-sized model for the speed benchmark (scripts/bench.sh)

def read_vocab_yml(path):
    """The pieces of a vocab.yml as write_vocab_yml writes it: one `key: id` line per piece, ids in
    order, keys plain or double-quoted (the escapes _yamlcpp_double_quoted produces)."""
    tokens = []
    with open(path, encoding="utf-8", newline="") as f:
        for i, line in enumerate(f.read().split("\n")):
            key, _, idx = line.rpartition(": ")
            if int(idx) != i:
                sys.exit(f"{path}:{i + 1}: id {idx}, expected {i}")
            if key.startswith('"'):
                esc = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b"}
                key = re.sub(r'\\(x[0-9a-f]{2}|ufeff|.)',
                             lambda m: chr(int(m.group(1)[1:], 16)) if len(m.group(1)) > 1 else esc[m.group(1)],
                             key[1:-1])
            tokens.append(key)
    return tokens


def opus_mt_base(out_dir, seed=WEIGHT_SEED):
    """OPUS-MT's shape (BASE) with random weights: the fixture's SentencePiece models and pieces, the
    vocabulary padded with dummy pieces to 58,101 entries, as tools/make_import_fixtures.py --base."""
    if os.path.exists(out_dir):
        sys.exit(f"{out_dir} exists; remove it first")
    tokens = read_vocab_yml(os.path.join(FIXTURE_DIR, VOCAB_YML))
    tokens += [f"\u2581dummy{i:05d}" for i in range(BASE["vocab"] - len(tokens))]
    os.makedirs(out_dir)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(os.path.join(FIXTURE_DIR, name), os.path.join(out_dir, name))
    write_vocab_yml(os.path.join(out_dir, VOCAB_YML), tokens)
    write_marian_model(os.path.join(out_dir, MODEL_NPZ), BASE, len(tokens), tokens.index("</s>"), seed)
    write_decoder_yml(os.path.join(out_dir, "decoder.yml"), MODEL_NPZ, VOCAB_YML)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("opus-mt-base", help="write an OPUS-MT-sized random Marian model folder")
    b.add_argument("out_dir")
    args = ap.parse_args()
    if args.cmd == "opus-mt-base":
        opus_mt_base(args.out_dir)


if __name__ == "__main__":
    main()
