#!/usr/bin/env python3
"""Builds a small random OPUS-MT (Marian) model and its Hugging Face conversion, and writes the
reference fixtures that the `transformer import marian` / `transformer import hf` tests compare with.

Run it (no network is touched; everything is built locally from fixed seeds):

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_import_fixtures.py

torch, transformers, ctranslate2, sentencepiece, safetensors, pyyaml and numpy come from PyPI,
installed in a virtualenv (e.g. `python3 -m venv /tmp/hf-venv && /tmp/hf-venv/bin/pip install
torch transformers ctranslate2 sentencepiece safetensors pyyaml numpy`). They are only needed to
regenerate the fixtures: the C++ build and its tests read the committed files and never need them.
A rerun with the same package versions writes byte-identical files.

What it writes into tests/fixtures/import/ (about 1.7 MB on disk, half of it the SentencePiece
models, which hf/ holds identical copies of; git stores those once):

  marian/                     an OPUS-MT style model folder, as in an OPUS-MT release zip
    source.spm, target.spm    SentencePiece unigram models (spm_train defaults: <unk>=0 <s>=1 </s>=2)
                              trained on synthetic English / German-ish text generated here
    opus.spm-spm.vocab.yml    the joint Marian vocabulary (</s>: 0, <unk>: 1, then the union of the
                              pieces of both spm models in marian-vocab's order), written as
                              Marian's yaml-cpp emitter writes it (no trailing newline)
    model.npz                 random weights in Marian's layout (float32, [in, out] matrices,
                              [1, n] biases / layer-norm vectors, tied-embeddings-all `Wemb`,
                              `decoder_ff_logit_out_b`, `special:model.yml` as NUL-terminated int8)
    decoder.yml               the decoder config Marian writes next to a model (models, vocabs, ...)
  hf/                         the same model as a Hugging Face MarianMTModel folder, built the way
                              transformers' convert_marian_to_pytorch.py builds it (the converter is
                              not shipped in the transformers wheel, so its steps are mirrored here)
  reference.json              token ids, teacher-forced logits and HF generate() / CTranslate2
                              outputs for a few source sentences (schema in the "schema" entry)
  README.md                   a short description of the above

`--base OUTDIR` instead writes the same kind of random model at OPUS-MT's real size (d=512, 8 heads,
FFN 2048, 6+6 layers, 58101 vocabulary entries) to OUTDIR (marian files, hf/, and a float32
CTranslate2 conversion in ct2/), for speed benchmarks. It is large (about 1 GB) and not a fixture.
"""
import argparse
import copy
import io
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import sentencepiece as spm  # noqa: E402
import yaml  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
import ctranslate2  # noqa: E402
import safetensors  # noqa: E402
from ctranslate2.converters.marian import load_vocab as ct2_load_vocab  # noqa: E402
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer  # noqa: E402

# Marian's file formats and the random OPUS-MT-style weights (numpy only; also used by make bench).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marian_files import (BASE, GAIN, MAX_LENGTH, MODEL_NPZ, SEED, SMALL, VOCAB_YML, WEIGHT_SEED,  # noqa: E402
                          length_channel, write_decoder_yml, write_marian_model, write_vocab_yml)

torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "fixtures", "import")

SRC_LANG, TGT_LANG = "en", "de"
BEAM = 4

# Fixture sentences: 1 to ~25 words; one with characters the spm models never saw (-> <unk>), one
# with extra whitespace (SentencePiece's normalizer removes it), punctuation that needs YAML quoting.
SOURCES = [
    "Hello!",
    "The man sees a book.",
    "My friend buys the green apple in the morning.",
    "Where is the old key?",
    "It costs 12 % more: 10:30, not 9:45!",
    "The doctor sees жук and 漢字 near the river.",
    "  The girl   hears the ball.  ",
    "Yes, the naïve café owner in Zürich reads the newspaper on Sunday.",
    "Quixotic zebras jog.",
    "The teacher says: \"The child likes a small house, and our neighbour carries the white door again.\"",
    "On Sunday the woman in Montréal opens a large street, the boy eats a cake with joy, and my friend "
    "finds the old key near the river.",
]
LOGIT_SENTENCES = [2, 4, 5]  # indices into SOURCES whose teacher-forced logits are stored


# --------------------------------------------------------------------------------------------------
# 1. Synthetic parallel text

SUBJECTS = [("the man", "der Mann"), ("the woman", "die Frau"), ("the child", "das Kind"),
            ("my friend", "mein Freund"), ("the teacher", "der Lehrer"), ("the doctor", "der Arzt"),
            ("the girl", "das Mädchen"), ("the boy", "der Junge"), ("our neighbour", "unser Nachbar"),
            ("the café owner", "der Cafébesitzer"), ("José", "José"), ("the naïve student", "der naive Student"),
            ("the old farmer", "der alte Bauer"), ("her brother", "ihr Bruder"),
            ("the young baker", "der junge Bäcker"),
            ("his sister", "seine Schwester"), ("the tired driver", "der müde Fahrer"), ("Chloé", "Chloé")]
VERBS = [("sees", "sieht"), ("buys", "kauft"), ("likes", "mag"), ("finds", "findet"), ("opens", "öffnet"),
         ("needs", "braucht"), ("reads", "liest"), ("carries", "trägt"), ("hears", "hört"), ("eats", "isst"),
         ("forgets", "vergisst"), ("writes", "schreibt"), ("paints", "malt"), ("sells", "verkauft"),
         ("brings", "bringt"), ("cleans", "putzt"), ("loses", "verliert"), ("repairs", "repariert")]
OBJECTS = [("a book", "ein Buch"), ("the green apple", "den grünen Apfel"), ("a small house", "ein kleines Haus"),
           ("the white door", "die weiße Tür"), ("a large street", "eine große Straße"),
           ("the old key", "den alten Schlüssel"), ("a cup of coffee", "eine Tasse Kaffee"),
           ("the newspaper", "die Zeitung"), ("a cake", "einen Kuchen"), ("the ball", "den Ball"),
           ("a résumé", "einen Lebenslauf"), ("the blue bicycle", "das blaue Fahrrad"),
           ("a heavy suitcase", "einen schweren Koffer"), ("the yellow umbrella", "den gelben Regenschirm"),
           ("a warm sweater", "einen warmen Pullover"), ("the broken clock", "die kaputte Uhr"),
           ("a glass of juice", "ein Glas Saft"), ("the map of Europe", "die Karte von Europa")]
ADVERBIALS = [("today", "heute"), ("in the morning", "am Morgen"), ("at 10:30", "um 10:30"),
              ("on Sunday", "am Sonntag"), ("in Zürich", "in Zürich"), ("near the river", "am Fluss"),
              ("with joy", "mit Freude"), ("again", "wieder"), ("in Montréal", "in Montréal"),
              ("every day", "jeden Tag"), ("at 9:45", "um 9:45"), ("in Köln", "in Köln"),
              ("quickly", "schnell"), ("after work", "nach der Arbeit"), ("in the garden", "im Garten"),
              ("during the week", "während der Woche"), ("at the station", "am Bahnhof"), ("in Málaga", "in Málaga")]
PHRASES = [("Hello!", "Hallo!"), ("Thank you.", "Danke."), ("I don't know.", "Ich weiß es nicht."),
           ("Yes.", "Ja."), ("No.", "Nein."), ("Good morning!", "Guten Morgen!"),
           ("What time is it?", "Wie spät ist es?"), ("See you tomorrow.", "Bis morgen."),
           ("That's great!", "Das ist großartig!"), ("It's cold outside.", "Draußen ist es kalt."),
           ("Excuse me, where is the station?", "Entschuldigung, wo ist der Bahnhof?"),
           ("How much is it?", "Wie viel kostet das?"), ("Please help me!", "Bitte hilf mir!"),
           ("We are very hungry.", "Wir haben großen Hunger."), ("The weather is nice.", "Das Wetter ist schön."),
           ("Happy birthday!", "Alles Gute zum Geburtstag!"), ("Don't worry.", "Keine Sorge."),
           ("Is this seat free?", "Ist dieser Platz frei?")]


def cap(s):
    return s[0].upper() + s[1:]


def make_corpus(n_lines, seed):
    """Deterministic synthetic parallel text: English-like source, German-like target."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(n_lines):
        kind = rng.randrange(8)
        s, v, o, a = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(ADVERBIALS)
        if kind <= 2:
            e = f"{cap(s[0])} {v[0]} {o[0]} {a[0]}."
            g = f"{cap(s[1])} {v[1]} {a[1]} {o[1]}."
        elif kind == 3:
            e, g = f"Where is {o[0]}?", f"Wo ist {o[1]}?"
        elif kind == 4:
            s2, v2, o2 = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
            e = f"{cap(s[0])} says: \"{cap(s2[0])} {v2[0]} {o2[0]}.\""
            g = f"{cap(s[1])} sagt: „{cap(s2[1])} {v2[1]} {o2[1]}.“"
        elif kind == 5:
            n = rng.randrange(1, 100)
            e, g = f"{cap(o[0])} costs {n} % more {a[0]}!", f"{cap(o[1])} kostet {a[1]} {n} % mehr!"
        elif kind == 6:
            p = rng.choice(PHRASES)
            e, g = p
        else:
            s2, v2, o2 = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
            e = f"Yes, {s[0]} {v[0]} {o[0]}, and {s2[0]} {v2[0]} {o2[0]} {a[0]}."
            g = f"Ja, {s[1]} {v[1]} {o[1]}, und {s2[1]} {v2[1]} {a[1]} {o2[1]}."
        src.append(e)
        tgt.append(g)
    return src, tgt


# --------------------------------------------------------------------------------------------------
# 2. SentencePiece

def train_spm(lines, vocab_size):
    """A unigram model with spm_train's defaults (<unk>=0, <s>=1, </s>=2, no <pad>), trained
    deterministically: one thread, no sampling of the input, no shuffling."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=out, model_type="unigram", vocab_size=vocab_size,
        character_coverage=1.0, num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
        seed_sentencepiece_size=1000000, minloglevel=2)
    return out.getvalue()


def spm_processor(model_bytes):
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model_bytes)
    return sp



def joint_vocab(sp_src, sp_tgt, src_lines, tgt_lines):
    """</s>, <unk>, then every piece of both spm models except <unk>, <s>, </s>, in marian-vocab's
    order on the spm-encoded training text: by descending count, ties by byte order (pieces that never
    occur come last, still by byte order)."""
    counts = {}
    for sp, lines in ((sp_src, src_lines), (sp_tgt, tgt_lines)):
        for line in lines:
            for p in sp.encode(line, out_type=str):
                counts[p] = counts.get(p, 0) + 1
    pieces = set()
    for sp in (sp_src, sp_tgt):
        for i in range(sp.get_piece_size()):
            if not (sp.is_unknown(i) or sp.is_control(i)):
                pieces.add(sp.id_to_piece(i))
    ordered = sorted(pieces, key=lambda p: (-counts.get(p, 0), p.encode("utf-8")))
    return ["</s>", "<unk>"] + ordered


# --------------------------------------------------------------------------------------------------
# 5. Hugging Face conversion (mirrors transformers/models/marian/convert_marian_to_pytorch.py)

BART_CONVERTER = {  # convert_marian_to_pytorch.BART_CONVERTER
    "self_Wq": "self_attn.q_proj.weight", "self_Wk": "self_attn.k_proj.weight",
    "self_Wv": "self_attn.v_proj.weight", "self_Wo": "self_attn.out_proj.weight",
    "self_bq": "self_attn.q_proj.bias", "self_bk": "self_attn.k_proj.bias",
    "self_bv": "self_attn.v_proj.bias", "self_bo": "self_attn.out_proj.bias",
    "self_Wo_ln_scale": "self_attn_layer_norm.weight", "self_Wo_ln_bias": "self_attn_layer_norm.bias",
    "ffn_W1": "fc1.weight", "ffn_b1": "fc1.bias", "ffn_W2": "fc2.weight", "ffn_b2": "fc2.bias",
    "ffn_ffn_ln_scale": "final_layer_norm.weight", "ffn_ffn_ln_bias": "final_layer_norm.bias",
    "context_Wk": "encoder_attn.k_proj.weight", "context_Wo": "encoder_attn.out_proj.weight",
    "context_Wq": "encoder_attn.q_proj.weight", "context_Wv": "encoder_attn.v_proj.weight",
    "context_bk": "encoder_attn.k_proj.bias", "context_bo": "encoder_attn.out_proj.bias",
    "context_bq": "encoder_attn.q_proj.bias", "context_bv": "encoder_attn.v_proj.bias",
    "context_Wo_ln_scale": "encoder_attn_layer_norm.weight",
    "context_Wo_ln_bias": "encoder_attn_layer_norm.bias",
}
ASSUMED_SETTINGS = {  # convert_marian_to_pytorch.check_marian_cfg_assumptions
    "layer-normalization": False, "right-left": False, "transformer-ffn-depth": 2,
    "transformer-aan-depth": 2, "transformer-no-projection": False, "transformer-postprocess-emb": "d",
    "transformer-postprocess": "dan", "transformer-preprocess": "", "type": "transformer",
    "ulr-dim-emb": 0, "dec-cell-base-depth": 2, "dec-cell-high-depth": 1, "transformer-aan-nogate": False,
}
HF_MAX_POSITIONS = 512  # the converter uses dim-emb (512 for OPUS-MT); see the note in reference.json


def _cast_yaml_str(v):  # convert_marian_to_pytorch._cast_yaml_str
    if not isinstance(v, str):
        return v
    if v in ("true", "false"):
        return v == "true"
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def convert_to_hf(marian_dir, hf_dir):
    """OpusState(source_dir) + convert(): vocab.json = vocab.yml (yaml BaseLoader) plus <pad> at the
    next id; Wemb and decoder_ff_logit_out_b get one zero row/column for <pad>; every npz matrix is
    transposed; tied embeddings; pad = decoder start = bad word. Returns the list of deviations."""
    deviations = []
    with tempfile.TemporaryDirectory() as tmp:
        # The converter reads the OPUS-MT folder in place; its name (e.g. "en-de") gives the languages.
        src = os.path.join(tmp, f"{SRC_LANG}-{TGT_LANG}")
        shutil.copytree(marian_dir, src)
        npz = dict(np.load(os.path.join(src, MODEL_NPZ)))
        cfg_str = "".join(chr(x) for x in npz["special:model.yml"])
        cfg = {k: _cast_yaml_str(v) for k, v in yaml.load(cfg_str[:-1], Loader=yaml.BaseLoader).items()}
        assert cfg["dim-vocabs"][0] == cfg["dim-vocabs"][1] and "Wpos" not in npz
        if cfg["tied-embeddings-all"]:
            cfg["tied-embeddings-src"] = True
            cfg["tied-embeddings"] = True
        for k, v in ASSUMED_SETTINGS.items():
            assert cfg[k] == v, (k, cfg[k], v)

        # add_special_tokens_to_vocab(): vocab.json, tokenizer_config.json
        with open(os.path.join(src, VOCAB_YML), encoding="utf-8") as f:
            vocab = {k: int(v) for k, v in yaml.load(f, Loader=yaml.BaseLoader).items()}
        if "<pad>" not in vocab:
            vocab["<pad>"] = max(vocab.values()) + 1
        with open(os.path.join(src, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f)
        with open(os.path.join(src, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"target_lang": TGT_LANG, "source_lang": SRC_LANG, "separate_vocabs": False}, f)
        tokenizer = MarianTokenizer.from_pretrained(src)
        eos_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0

        wemb = npz["Wemb"]
        wemb = np.concatenate([wemb, np.zeros((1, wemb.shape[1]))])  # add_emb_entries (float64 zeros)
        bias = np.concatenate([npz["decoder_ff_logit_out_b"], np.zeros((1, 1))], axis=1)
        pad_id = wemb.shape[0] - 1
        assert pad_id + 1 == tokenizer.vocab_size == len(vocab)
        with open(os.path.join(src, "decoder.yml"), encoding="utf-8") as f:
            decoder_yml = {k: _cast_yaml_str(v) for k, v in yaml.load(f, Loader=yaml.BaseLoader).items()}
        hidden, _ = npz["encoder_l1_ffn_W1"].shape
        assert hidden == cfg["dim-emb"]

        config = MarianConfig(
            vocab_size=pad_id + 1, decoder_vocab_size=pad_id + 1,
            share_encoder_decoder_embeddings=cfg["tied-embeddings-src"],
            decoder_layers=cfg["dec-depth"], encoder_layers=cfg["enc-depth"],
            decoder_attention_heads=cfg["transformer-heads"], encoder_attention_heads=cfg["transformer-heads"],
            decoder_ffn_dim=cfg["transformer-dim-ffn"], encoder_ffn_dim=cfg["transformer-dim-ffn"],
            d_model=cfg["dim-emb"], activation_function=cfg["transformer-ffn-activation"],
            pad_token_id=pad_id, eos_token_id=eos_id, forced_eos_token_id=eos_id, bos_token_id=0,
            max_position_embeddings=max(cfg["dim-emb"], HF_MAX_POSITIONS),
            scale_embedding=True, normalize_embedding="n" in cfg["transformer-preprocess"],
            static_position_embeddings=not cfg["transformer-train-position-embeddings"],
            tie_word_embeddings=cfg["tied-embeddings"], dropout=0.1,
            decoder_start_token_id=pad_id)
        if cfg["dim-emb"] < HF_MAX_POSITIONS:
            deviations.append(
                f"max_position_embeddings = {HF_MAX_POSITIONS}, not dim-emb = {cfg['dim-emb']} as the converter "
                f"sets it (OPUS-MT has dim-emb 512, so real conversions get 512); with {cfg['dim-emb']} positions HF "
                "could not encode the longer fixture sentences. The table is sinusoidal, so only its length changes.")
        model = MarianMTModel(config).eval()

        # load_layers_(): every npz tensor except the embeddings is transposed and squeezed
        for stack, tag in ((model.model.encoder.layers, "encoder"), (model.model.decoder.layers, "decoder")):
            for i, layer in enumerate(stack):
                prefix = f"{tag}_l{i + 1}_"
                sd = {BART_CONVERTER[k[len(prefix):]]: torch.tensor(v.T).squeeze()
                      for k, v in npz.items() if k.startswith(prefix)}
                missing, unexpected = layer.load_state_dict(sd, strict=False)
                assert not missing and not unexpected, (missing, unexpected)
        with torch.no_grad():
            model.model.shared.weight = torch.nn.Parameter(torch.FloatTensor(wemb))
            model.model.encoder.embed_tokens = model.model.decoder.embed_tokens = model.model.shared
            model.lm_head.weight.data = model.model.decoder.embed_tokens.weight.data.clone()
            # final_logits_bias is a buffer in transformers 5 (the converter assigns an nn.Parameter,
            # which torch refuses for a registered buffer), so copy the values in.
            model.final_logits_bias.copy_(torch.FloatTensor(bias))
        deviations.append("final_logits_bias copied into the existing buffer (the converter assigns an "
                          "nn.Parameter, which transformers 5 / torch reject for a registered buffer)")
        assert model.get_input_embeddings().padding_idx == pad_id

        # The converter passes num_beams / bad_words_ids / max_length to MarianConfig; transformers 5
        # silently drops generation settings given to a model config, so they are put where 4.x-era
        # conversions (the Helsinki-NLP hub folders) have them: generation_config.json.
        gen = model.generation_config
        gen.num_beams = decoder_yml["beam-size"]
        gen.bad_words_ids = [[pad_id]]
        gen.max_length = 512
        deviations.append("num_beams (decoder.yml beam-size), bad_words_ids [[pad]] and max_length 512 set on "
                          "generation_config (transformers 5 drops them from MarianConfig(...) kwargs)")
        deviations.append("weights saved as float32 (the current converter calls model.half(); the Helsinki-NLP "
                          "hub models are float32)")

        tokenizer.save_pretrained(hf_dir)
        model.save_pretrained(hf_dir)
    for name in os.listdir(hf_dir):
        os.chmod(os.path.join(hf_dir, name), 0o644)  # safetensors writes 0600
    # convert() reloads as a sanity check; the reloaded model must hold exactly the converted weights
    reloaded = MarianMTModel.from_pretrained(hf_dir)
    for k, v in model.state_dict().items():
        assert torch.equal(v, reloaded.state_dict()[k]), k
    return deviations


def safetensors_summary(path):
    """The non-layer tensors of a model.safetensors: name -> [shape, dtype]."""
    with safetensors.safe_open(path, "np") as f:
        keys = list(f.keys())
        out = {k: [list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()] for k in keys if ".layers." not in k}
        if "lm_head.weight" in keys:
            out["lm_head.weight equals model.shared.weight"] = bool(
                np.array_equal(f.get_tensor("lm_head.weight"), f.get_tensor("model.shared.weight")))
    out["tensors in all"] = len(keys)
    return out


# --------------------------------------------------------------------------------------------------
# 6./7. References

def sig7(x):
    return float(f"{x:.7g}")


def marian_source_ids(sp_src, vocab_index, text):
    """The Marian path: source.spm pieces looked up in vocab.yml (<unk> if absent), then </s>."""
    unk = vocab_index["<unk>"]
    return [vocab_index.get(p, unk) for p in sp_src.encode(text, out_type=str)] + [vocab_index["</s>"]]


def top2_gaps(logits):
    top = torch.topk(logits, 2, dim=-1).values
    return (top[..., 0] - top[..., 1]).tolist()


def gen_record(gc):
    """A GenerationConfig's settings, without the unset (None) ones and bookkeeping entries."""
    d = gc.to_dict()
    for k in ("transformers_version", "_from_model_config", "output_scores", "return_dict_in_generate"):
        d.pop(k, None)
    return {k: v for k, v in sorted(d.items()) if v is not None}


def hf_references(hf_dir, sources, sp_src, vocab_index):
    tok = MarianTokenizer.from_pretrained(hf_dir)
    model = MarianMTModel.from_pretrained(hf_dir, attn_implementation="eager").eval()
    model64 = MarianMTModel.from_pretrained(hf_dir, attn_implementation="eager", dtype=torch.float64).eval()
    fp64_diff = 0.0  # how far float32 logits are from float64 ones: a floor for test tolerances
    file_gen = gen_record(model.generation_config)
    start = model.config.decoder_start_token_id
    pad = model.config.pad_token_id

    # In transformers 5 a None in the GenerationConfig given to generate() means "take the model's
    # value", so overrides to None go on the model's generation_config itself (in memory only).
    overrides = {
        "forced_eos_token_id": None,  # ForcedEOSTokenLogitsProcessor: forces </s> at max_length-1
    }
    for k, v in overrides.items():
        setattr(model.generation_config, k, v)
    common = dict(max_length=MAX_LENGTH, max_new_tokens=None, do_sample=False)
    settings = {
        "greedy": dict(num_beams=1, num_return_sequences=1),
        "beam4_lp1": dict(num_beams=BEAM, length_penalty=1.0, num_return_sequences=1),
        "beam4_lp0": dict(num_beams=BEAM, length_penalty=0.0, num_return_sequences=1),
        "beam4_lp1_nbest": dict(num_beams=BEAM, length_penalty=1.0, num_return_sequences=BEAM),
        "beam4_lp0_nbest": dict(num_beams=BEAM, length_penalty=0.0, num_return_sequences=BEAM),
    }
    gen_configs, effective = {}, {}
    for name, kw in settings.items():
        gc = GenerationConfig(**common, **kw, output_scores=True, return_dict_in_generate=True)
        gen_configs[name] = gc
        # what generate() will actually use: these values merged over the model's and global defaults
        effective[name] = gen_record(model._prepare_generation_config(copy.deepcopy(gc))[0])

    source_ids = []
    outputs = {name: [] for name in settings}
    logits_out = []
    stats = []
    with torch.no_grad():
        for idx, text in enumerate(sources):
            ids = tok(text)["input_ids"]
            assert ids == marian_source_ids(sp_src, vocab_index, text), (text, ids)
            source_ids.append(ids)
            input_ids = torch.tensor([ids])
            for name, gc in gen_configs.items():
                res = model.generate(input_ids, generation_config=gc)
                hyps = []
                for k, seq in enumerate(res.sequences.tolist()):
                    assert seq[0] == start
                    seq = seq[1:]
                    # generate() pads finished hypotheses (beam: with pad) to a common length
                    if pad in seq:
                        seq = seq[:seq.index(pad)]
                    hyp = {"ids": seq,
                           "text": tok.decode(seq, skip_special_tokens=True, use_source_tokenizer=False)}
                    if gc.num_beams > 1:
                        hyp["score"] = sig7(res.sequences_scores[k].item())
                    hyps.append(hyp)
                if name == "greedy":
                    default_text = tok.decode(hyps[0]["ids"], skip_special_tokens=True)
                    if default_text != hyps[0]["text"]:
                        hyps[0]["text_default_decode"] = default_text
                outputs[name].append(hyps if name.endswith("nbest") else hyps[0])
            for lp in ("lp1", "lp0"):  # the best of the n-best is the 1-best
                assert outputs[f"beam4_{lp}_nbest"][-1][0]["ids"] == outputs[f"beam4_{lp}"][-1]["ids"]

            # teacher forcing on the greedy output
            target = outputs["greedy"][-1]["ids"]
            dec_in = torch.tensor([[start] + target])
            lg = model(input_ids=input_ids, decoder_input_ids=dec_in).logits[0]
            lg64 = model64(input_ids=input_ids, decoder_input_ids=dec_in).logits[0]
            fp64_diff = max(fp64_diff, (lg.double() - lg64).abs().max().item())
            lsm = torch.log_softmax(lg, dim=-1)
            lsm_v = torch.log_softmax(lg[:, :pad], dim=-1)  # over the V real entries, without <pad>
            outputs["greedy"][-1]["token_log_probs"] = [sig7(lsm[t, y].item()) for t, y in enumerate(target)]
            outputs["greedy"][-1]["token_log_probs_without_pad"] = [sig7(lsm_v[t, y].item())
                                                                    for t, y in enumerate(target)]
            gaps = top2_gaps(lg[:len(target)])
            stats.append(dict(len=len(target), eos=bool(target and target[-1] == model.config.eos_token_id),
                              distinct=len(set(target)), min_gap=min(gaps) if gaps else None,
                              median_gap=float(np.median(gaps)) if gaps else None))
            if idx in LOGIT_SENTENCES:
                logits_out.append({
                    "sentence": idx,
                    "decoder_input_ids": [start] + target,
                    "target_ids": target,
                    "shape": list(lg.shape),
                    "logits": [[sig7(x) for x in row] for row in lg.tolist()],
                    "target_log_softmax": [sig7(lsm[t, y].item()) for t, y in enumerate(target)],
                })

    return dict(
        source_ids=source_ids, outputs=outputs, logits=logits_out, stats=stats, fp64_diff=fp64_diff,
        generation_config_file=file_gen,
        generation_settings=effective,
        overrides=overrides,
        marian_emulated=marian_emulated(model, tok, source_ids, gen_configs["greedy"]))


def marian_sinusoids(n_pos, d):
    """Marian C++ SinusoidalPositionEmbeddings: rate_i = exp(-i ln(10000) / (d/2 - 1)), sin half, cos half."""
    half = d // 2
    rate = np.exp(np.arange(half) * -(math.log(10000.0) / (half - 1)))
    angle = np.arange(n_pos)[:, None] * rate[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def marian_emulated(model, tok, source_ids, greedy_config):
    """What Marian's own C++ would compute, approximated with the HF modules: Marian's sinusoid rates
    and its layer-norm epsilon 1e-6. (Changes `model` in place: call it last.)"""
    d = model.config.d_model
    with torch.no_grad():
        for emb in (model.model.encoder.embed_positions, model.model.decoder.embed_positions):
            emb.weight.copy_(torch.tensor(marian_sinusoids(emb.weight.shape[0], d), dtype=emb.weight.dtype))
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.eps = 1e-6
        greedy, logits = [], None
        start, pad = model.config.decoder_start_token_id, model.config.pad_token_id
        for idx, ids in enumerate(source_ids):
            input_ids = torch.tensor([ids])
            seq = model.generate(input_ids, generation_config=greedy_config).sequences[0].tolist()[1:]
            seq = seq[:seq.index(pad)] if pad in seq else seq
            lg = model(input_ids=input_ids, decoder_input_ids=torch.tensor([[start] + seq])).logits[0]
            lsm_v = torch.log_softmax(lg[:, :pad], dim=-1)
            greedy.append({"ids": seq, "text": tok.decode(seq, skip_special_tokens=True, use_source_tokenizer=False),
                           "token_log_probs_without_pad": [sig7(lsm_v[t, y].item()) for t, y in enumerate(seq)]})
            if idx == LOGIT_SENTENCES[0]:
                logits = {"sentence": idx, "decoder_input_ids": [start] + seq, "shape": list(lg.shape),
                          "logits": [[sig7(x) for x in row] for row in lg.tolist()]}
    return {"greedy": greedy, "logits": logits}


def ct2_references(marian_dir, sources, sp_src, sp_tgt, vocab_index, tokens, eos_id, hf_greedy):
    """CTranslate2 outputs on its own conversion of the Marian folder; also CTranslate2's log-probs
    (score_batch) of the HF greedy outputs, to compare the two conversions token by token."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ct2")
        ctranslate2.converters.OpusMTConverter(marian_dir).convert(out, quantization=None, force=True)
        with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
            ct2_config = json.load(f)
        translator = ctranslate2.Translator(out, device="cpu", inter_threads=1, intra_threads=1)
        settings = {
            "greedy": dict(beam_size=1),
            "beam4_lp1": dict(beam_size=BEAM, length_penalty=1.0),
            "beam4_lp0": dict(beam_size=BEAM, length_penalty=0.0),
        }
        outputs = {name: [] for name in settings}
        hf_greedy_scored = []
        for i, text in enumerate(sources):
            pieces = sp_src.encode(text, out_type=str)
            target = [tokens[t] for t in hf_greedy[i] if t != eos_id]
            hf_greedy_scored.append(translator.score_batch([pieces], [target])[0].log_probs[:len(hf_greedy[i])])
            for name, kw in settings.items():
                r = translator.translate_batch([pieces], max_decoding_length=MAX_LENGTH - 1, return_scores=True,
                                               **kw)[0]
                toks = r.hypotheses[0]
                outputs[name].append({
                    "tokens": toks,
                    "ids": [vocab_index[t] for t in toks],
                    "text": sp_tgt.decode_pieces(toks),
                    "score": sig7(r.scores[0]),
                })
        del translator
    return dict(outputs=outputs, hf_greedy_scored=hf_greedy_scored,
                settings={k: dict(v, max_decoding_length=MAX_LENGTH - 1)
                                           for k, v in settings.items()},
                config={k: v for k, v in ct2_config.items() if k not in ("source_vocabulary", "target_vocabulary",
                                                                         "vocabulary")})


def check_vocab_parsers(vocab_path, tokens):
    """The vocab.yml must read back identically with PyYAML (what the HF converter uses) and with
    CTranslate2's line parser (which mimics what Marian's yaml-cpp reader sees)."""
    with open(vocab_path, encoding="utf-8") as f:
        py = yaml.load(f, Loader=yaml.BaseLoader)
    assert list(py.keys()) == tokens and [int(v) for v in py.values()] == list(range(len(tokens)))
    assert ct2_load_vocab(vocab_path) == tokens


def self_test_yaml_writer():
    # (NEL, U+0085, is left out: yaml-cpp writes it plain and PyYAML reads it as a line break, a known
    # problem with some real OPUS-MT vocabularies, CTranslate2 issue #1134.)
    tricky = ["</s>", "<unk>", "▁a", ",", "'s", "\"", ":", "a:", "a:b", "-", "-x", "?", "null", "~", "yes",
              "a #b", "a#b", "#", "x ", " x", "\\", "é", "\x01", "\x84", "%", "@x", "`", "{", "a,b", "!"]
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "t.yml")
        write_vocab_yml(p, tricky)
        check_vocab_parsers(p, tricky)


# --------------------------------------------------------------------------------------------------

def build_marian_folder(out_dir, shape, vocab_size=None):
    """Writes source.spm, target.spm, vocab.yml (padded with dummy pieces up to vocab_size if given),
    model.npz and decoder.yml. Returns what the references need."""
    src_lines, tgt_lines = make_corpus(600, SEED)
    src_model = train_spm(src_lines, shape["spm_vocab"])
    tgt_model = train_spm(tgt_lines, shape["spm_vocab"])
    sp_src, sp_tgt = spm_processor(src_model), spm_processor(tgt_model)
    tokens = joint_vocab(sp_src, sp_tgt, src_lines, tgt_lines)
    if vocab_size is not None:
        assert vocab_size >= len(tokens)
        tokens += [f"▁dummy{i:05d}" for i in range(vocab_size - len(tokens))]
    os.makedirs(out_dir, exist_ok=True)
    for name, data in (("source.spm", src_model), ("target.spm", tgt_model)):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    vocab_path = os.path.join(out_dir, VOCAB_YML)
    write_vocab_yml(vocab_path, tokens)
    check_vocab_parsers(vocab_path, tokens)
    cfg, cfg_text = write_marian_model(os.path.join(out_dir, MODEL_NPZ), shape, len(tokens), tokens.index("</s>"),
                                       WEIGHT_SEED)
    write_decoder_yml(os.path.join(out_dir, "decoder.yml"), MODEL_NPZ, VOCAB_YML)
    return dict(sp_src=sp_src, sp_tgt=sp_tgt, tokens=tokens, cfg=cfg, cfg_text=cfg_text,
                src_lines=src_lines, tgt_lines=tgt_lines)


def position_notes():
    return {
        "huggingface": "transformers MarianSinusoidalPositionalEmbedding.create_weight: angle(pos, j) = pos / "
                       "10000^(2*(j//2)/d); columns [0, d/2) = sin(angle[:, 0::2]), [d/2, d) = cos(angle[:, 1::2]), "
                       "i.e. inv_freq_i = 10000^(-2i/d), i = 0..d/2-1, sin half then cos half; positions "
                       "start at 0 (encoder and decoder, the decoder-start token is position 0); the table is "
                       "not stored in model.safetensors (_keys_to_ignore_on_save).",
        "ctranslate2": "ctranslate2.converters.marian._make_sinusoidal_position_encodings: identical formula "
                       "(10000^(2*(j//2)/d), sin of even / cos of odd angle columns into the two halves), "
                       "2048 positions, stored in the converted model.",
        "marian": "Marian C++ (SinusoidalPositionEmbeddings, tensors/cpu/tensor_operators.cpp): "
                  "inv_freq_i = exp(-i * ln(10000) / (d/2 - 1)) = 10000^(-i/(d/2-1)), sin half then cos half. "
                  "Only i = 0 agrees with the HF/CTranslate2 formula, so a Marian-exact import would not "
                  "reproduce these references; both references here use 10000^(-2i/d).",
        "embedding_scale": "all three multiply token embeddings by sqrt(d) (HF scale_embedding=True) and add the "
                           "positions; decoding starts from an all-zero embedding (HF: the <pad> row, which the "
                           "converter zeroes; CTranslate2: start_from_zero_embedding; Marian: zero start).",
        "layer_norm_epsilon": "HF nn.LayerNorm eps = 1e-5; CTranslate2 LayerNorm with beta and no "
                              "layer_norm_epsilon in config.json: 1e-5; Marian C++ layerNorm: 1e-6.",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="fixture directory (default tests/fixtures/import)")
    ap.add_argument("--base", metavar="OUTDIR", help="write an OPUS-MT-sized random model to OUTDIR instead")
    args = ap.parse_args()
    self_test_yaml_writer()
    if args.base:
        return make_base(args.base)

    out = args.out
    marian_dir, hf_dir = os.path.join(out, "marian"), os.path.join(out, "hf")
    for d in (marian_dir, hf_dir):
        if os.path.isdir(d):
            shutil.rmtree(d)
    built = build_marian_folder(marian_dir, SMALL)
    sp_src, sp_tgt, tokens = built["sp_src"], built["sp_tgt"], built["tokens"]
    vocab_index = {t: i for i, t in enumerate(tokens)}
    deviations = convert_to_hf(marian_dir, hf_dir)

    hf = hf_references(hf_dir, SOURCES, sp_src, vocab_index)
    ct2 = ct2_references(marian_dir, SOURCES, sp_src, sp_tgt, vocab_index, tokens, vocab_index["</s>"],
                         [g["ids"] for g in hf["outputs"]["greedy"]])
    # the two independent conversions (HF from the npz here, CTranslate2's own) give the same log-probs
    max_lp_diff = max(abs(a - b) for g, c in zip(hf["outputs"]["greedy"], ct2["hf_greedy_scored"])
                      for a, b in zip(g["token_log_probs_without_pad"], c))
    print(f"max |HF - CT2| log-prob (over V, without <pad>) on the HF greedy outputs: {max_lp_diff:.2e}; "
          f"max |float32 - float64| HF logit: {hf['fp64_diff']:.2e}")
    assert max_lp_diff < 1e-3, max_lp_diff

    # summary
    print(f"vocab: {len(tokens)} entries (+<pad> in HF); source spm {sp_src.get_piece_size()}, "
          f"target spm {sp_tgt.get_piece_size()} pieces")
    agree = 0
    for i, text in enumerate(SOURCES):
        g, c = hf["outputs"]["greedy"][i], ct2["outputs"]["greedy"][i]
        same = g["ids"] == c["ids"] or g["ids"] == c["ids"] + [vocab_index["</s>"]]
        agree += same
        # HF's decode turns every ▁ into a space; target.spm leaves ▁ inside pieces it does not know
        # (source-side pieces of the joint vocabulary) as they are: see notes.decode_unknown_target_pieces
        assert not same or g["text"] == c["text"].replace("▁", " ").strip(), (g["text"], c["text"])
        s = hf["stats"][i]
        print(f"[{i:2d}] src {len(hf['source_ids'][i]):2d} tok | greedy len {s['len']:2d} eos={int(s['eos'])} "
              f"distinct {s['distinct']:2d} min/median top2 gap {s['min_gap']:.3f}/{s['median_gap']:.3f} | "
              f"beam lp1 {len(hf['outputs']['beam4_lp1'][i]['ids']):2d} "
              f"lp0 {len(hf['outputs']['beam4_lp0'][i]['ids']):2d}"
              f" | ct2 {'==' if same else '!='} | {g['text'][:60]!r}")
    eos = vocab_index["</s>"]

    def strip_eos(ids):
        return ids[:-1] if ids and ids[-1] == eos else ids

    beams_agree = {lp: sum(strip_eos(hf["outputs"][f"beam4_{lp}"][i]["ids"]) == ct2["outputs"][f"beam4_{lp}"][i]["ids"]
                           for i in range(len(SOURCES))) for lp in ("lp1", "lp0")}

    with open(os.path.join(hf_dir, "config.json"), encoding="utf-8") as f:
        hf_config = json.load(f)
    reference = {
        "schema": SCHEMA,
        "generator": "tools/make_import_fixtures.py",
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "ctranslate2": ctranslate2.__version__,
                     "sentencepiece": spm.__version__, "numpy": np.__version__, "safetensors": safetensors.__version__,
                     "pyyaml": yaml.__version__},
        "model": {
            "marian_config": built["cfg"],
            "vocab_size": len(tokens), "hf_vocab_size": len(tokens) + 1,
            "eos_id": vocab_index["</s>"], "unk_id": vocab_index["<unk>"], "hf_pad_id": len(tokens),
            "hf_decoder_start_id": hf_config["decoder_start_token_id"],
            "hf_config": {k: hf_config[k] for k in (
                "activation_function", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings",
                "scale_embedding", "static_position_embeddings", "normalize_embedding",
                "share_encoder_decoder_embeddings",
                "tie_word_embeddings", "vocab_size", "decoder_vocab_size", "pad_token_id", "eos_token_id",
                "bos_token_id", "forced_eos_token_id", "decoder_start_token_id") if k in hf_config},
            "hf_conversion": "mirrors transformers' convert_marian_to_pytorch.py (not shipped in the wheel); "
                             "deviations: " + "; ".join(deviations),
            "hf_safetensors": safetensors_summary(os.path.join(hf_dir, "model.safetensors")),
            "length_channel": {"rising": length_channel(SMALL["dim"])[0], "flat": length_channel(SMALL["dim"])[1],
                               "note": "see random_marian_weights: these embedding dimensions carry only the "
                                       "position encoding and drive the </s> logit, so output lengths depend on "
                                       "the position formula"},
            "init_gains": GAIN, "text_seed": SEED, "weight_seed": WEIGHT_SEED,
        },
        "notes": {
            "positions": position_notes(),
            "hf_scores": "HF takes log_softmax over all V+1 logits (the <pad> logit is exactly 0: zero embedding row "
                         "and zero bias) and only then applies bad_words_ids [[pad]] (sets it to -inf); "
                         "renormalize_logits is false, so scores are log-probabilities normalized over V+1 "
                         "entries including <pad>. CTranslate2 / Marian normalize over V entries.",
            "hf_length_penalty": "HF beam: finished score = sum of token log-probs / (generated length incl. </s>) "
                                 "** length_penalty; early_stopping False uses HF's heuristic stop (best running score "
                                 "/ current length ** lp cannot beat the worst finished). A hypothesis that reaches "
                                 "max_length without </s> also counts as finished.",
            "ct2_length_penalty": "CTranslate2: score = sum of token log-probs (normalized over the V vocabulary "
                                  "entries) / (length including </s>) ** length_penalty, also for greedy search "
                                  "(length_penalty defaults to 1); checked with score_batch. Its beam search stops "
                                  "once beam_size (x patience 1) hypotheses have finished, so with length_penalty 1 "
                                  "it can return a shorter hypothesis than HF, whose early_stopping=False heuristic "
                                  "keeps searching while a running beam could still win. min_decoding_length defaults "
                                  "to 1 (no empty output). Returned tokens exclude </s>.",
            "hf_overrides": "forced_eos_token_id (0 in the converted config) is overridden to None: it forces </s> "
                            "as the last token when max_length is reached, which plain beam search does not do. "
                            "bad_words_ids [[pad]] is kept (it only keeps the model from emitting <pad>, which "
                            "has no Marian counterpart).",
            "hf_decode": "texts are tokenizer.decode(ids, skip_special_tokens=True, use_source_tokenizer=False); "
                         "transformers 5's MarianTokenizer._decode defaults use_source_tokenizer to "
                         "(not separate_vocabs), i.e. decodes target ids with source.spm unless told otherwise; "
                         "where that default gives a different text it is stored as text_default_decode.",
            "hf_checkpoint": "model.safetensors has no positional tables (transformers ignores them on save; "
                             "older hub checkpoints may still carry model.encoder/decoder.embed_positions.weight) and "
                             "does hold lm_head.weight next to model.shared.weight (equal values; the converter "
                             "assigns the embedding a new tensor and lm_head a copy, so they are saved separately). "
                             f"config.json: activation_function {hf_config['activation_function']}, scale_embedding "
                             f"{str(hf_config['scale_embedding']).lower()}, static_position_embeddings "
                             f"{str(hf_config['static_position_embeddings']).lower()} (sinusoidal, not learned), "
                             f"normalize_embedding {str(hf_config['normalize_embedding']).lower()}, "
                             f"max_position_embeddings {hf_config['max_position_embeddings']}.",
            "decode_unknown_target_pieces": "the joint vocabulary holds source-side pieces that target.spm does not "
                                            "know (e.g. '▁house'); the model may emit them. target.spm's decode "
                                            "(ct2.*.text) keeps such a piece verbatim, ▁ included ('asma▁house...'), "
                                            "while HF's MarianTokenizer.decode replaces every ▁ by a space afterwards "
                                            "(as OPUS-MT's postprocess, sed 's/ //g;s/▁/ /g', does). hf.*.text == "
                                            "ct2.*.text with ▁ -> ' ' and stripped wherever the ids agree.",
            "batching": "every sentence is run alone (batch size 1), HF with attn_implementation=eager, one thread.",
            "vocab_yml": "written like Marian's yaml-cpp emitter (plain scalars where yaml-cpp allows them, so "
                         "`</s>: 0` and `<unk>: 1` are unquoted as in marian-vocab's output; else double quotes with "
                         "\\\" \\\\ \\xNN escapes, e.g. `\",\": 17`), no trailing newline; order as marian-vocab "
                         "(count on the spm-encoded training text, descending; ties by byte order).",
            "unknown_pieces": "source.spm emits characters it never saw as one surface piece (here 'жук' and '漢字', "
                              "after a '▁' piece); vocab.yml lacks them, so they become <unk> = 1. The piece string is "
                              "looked up, never SentencePiece's own id (its <unk> is 0, which is </s> in vocab.yml).",
        },
        "sources": SOURCES,
        "source_ids": hf["source_ids"],
        "hf": {
            "generation_config_file": hf["generation_config_file"],
            "overrides": hf["overrides"],
            "settings": hf["generation_settings"],
            "greedy": hf["outputs"]["greedy"],
            "beam4_lp1": hf["outputs"]["beam4_lp1"],
            "beam4_lp0": hf["outputs"]["beam4_lp0"],
            "beam4_lp1_nbest": hf["outputs"]["beam4_lp1_nbest"],
            "beam4_lp0_nbest": hf["outputs"]["beam4_lp0_nbest"],
            "logits": hf["logits"],
        },
        "ct2": {"settings": ct2["settings"], "converted_config": ct2["config"], **ct2["outputs"]},
        "marian_emulated": hf["marian_emulated"],
        "greedy_agreement": {"hf_vs_ct2": agree, "sentences": len(SOURCES)},
        "hf_vs_ct2_max_log_prob_diff": float(f"{max_lp_diff:.3g}"),
        "hf_fp32_vs_fp64_max_logit_diff": float(f"{hf['fp64_diff']:.3g}"),
        "beam4_agreement": {"lp1": beams_agree["lp1"], "lp0": beams_agree["lp0"], "sentences": len(SOURCES)},
    }
    write_reference(os.path.join(out, "reference.json"), reference)
    write_readme(os.path.join(out, "README.md"), built, len(tokens))
    total = 0
    for root, _, files in os.walk(out):
        for name in sorted(files):
            p = os.path.join(root, name)
            total += os.path.getsize(p)
            print(f"  {os.path.relpath(p, out):40s} {os.path.getsize(p):9d}")
    print(f"  total {total} bytes")
    print(f"HF greedy and CT2 greedy agree on {agree}/{len(SOURCES)} sentences; "
          f"beam 4 agrees on lp1 {beams_agree['lp1']}/{len(SOURCES)}, lp0 {beams_agree['lp0']}/{len(SOURCES)}")


SCHEMA = {
    "sources": "list[str]: the source sentences, as given to the tokenizers",
    "source_ids": "list[list[int]]: HF MarianTokenizer ids (= source.spm pieces looked up in vocab.yml, <unk> "
                  "for pieces not in it, then </s>); the tool asserts both paths agree",
    "hf.generation_config_file": "hf/generation_config.json as loaded (GenerationConfig.to_dict())",
    "hf.settings.<run>": "the full GenerationConfig each run used (file config + max_length, num_beams, "
                         "length_penalty, num_return_sequences, forced_eos_token_id=None, do_sample=False)",
    "hf.greedy[i]": "{ids: generated ids without the decoder-start token (ends with </s>=0 unless max_length hit), "
                    "text, token_log_probs: log_softmax over all V+1 logits of each generated token (teacher-forced "
                    "forward pass), token_log_probs_without_pad: the same over the first V logits (what a model "
                    "without the <pad> row computes), [text_default_decode]}",
    "hf.beam4_lp1[i], hf.beam4_lp0[i]": "{ids, text, score: sequences_scores (length-penalized)}",
    "hf.beam4_lp1_nbest[i], hf.beam4_lp0_nbest[i]": "list of 4 {ids, text, score}, best first",
    "hf.logits[k]": "{sentence: index into sources, decoder_input_ids: [decoder_start] + target_ids, target_ids: "
                    "the HF greedy output, shape: [T, V+1] with T = len(decoder_input_ids), logits: T rows of "
                    "V+1 floats (7 significant digits; row t predicts the token after decoder_input_ids[t]), "
                    "target_log_softmax: log_softmax(logits[t])[target_ids[t]] for t < len(target_ids)}",
    "ct2.settings.<run>": "translate_batch keyword arguments (everything else CTranslate2's defaults)",
    "ct2.converted_config": "config.json of the CTranslate2 conversion, vocabularies left out",
    "ct2.greedy[i], ct2.beam4_lp1[i], ct2.beam4_lp0[i]": "{tokens: target pieces (no </s>), ids: the same in "
                                                         "vocab.yml ids, text: target.spm decode, score}",
    "marian_emulated": "NOT a reference implementation's output: the HF model with Marian C++'s sinusoid rates "
                       "(notes.positions.marian) and layer-norm epsilon 1e-6, i.e. what a Marian-exact import "
                       "(--position-frequencies marian) should compute. greedy[i]: {ids, text, "
                       "token_log_probs_without_pad} with hf.settings.greedy; logits: {sentence, decoder_input_ids, "
                       "shape [T, V+1], logits} for one sentence",
    "model": "the Marian model config (special:model.yml), sizes and special ids, the HF config.json values that "
             "matter for import, how the HF folder was made",
    "notes": "positional-encoding formulas and other behaviour differences found in the references",
    "greedy_agreement": "number of sentences where HF greedy ids == CT2 greedy ids (+ </s>)",
    "hf_fp32_vs_fp64_max_logit_diff": "max |float32 - float64| over the teacher-forced HF logits of all sentences "
                                      "(the model's own float32 noise: a floor for a test's tolerance)",
    "beam4_agreement": "the same for beam 4 with length_penalty 1 and 0 (see notes.ct2_length_penalty)",
    "hf_vs_ct2_max_log_prob_diff": "max |difference| between hf.greedy[i].token_log_probs_without_pad and "
                                   "CTranslate2's score_batch log-probs of the same tokens",
}


def write_reference(path, ref):
    """Compact but diffable: one line per sentence / logits row."""
    text = json.dumps(ref, ensure_ascii=False, indent=1)
    # put numeric lists (ids, logits rows) on one line
    text = re.sub(r"\[\s+([-0-9.eE,\s]+?)\s+\]",
                  lambda m: "[" + ",".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text + "\n")


def write_readme(path, built, vocab_size):
    text = f"""# Import fixtures (OPUS-MT / Marian and Hugging Face MarianMTModel)

Generated by `tools/make_import_fixtures.py` (do not edit by hand):

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_import_fixtures.py

- `marian/`: a random transformer in OPUS-MT's release layout: `model.npz` (Marian weights,
  `special:model.yml` config), `{VOCAB_YML}` (joint vocabulary, {vocab_size} entries),
  `source.spm` / `target.spm` (SentencePiece unigram models), `decoder.yml`.
  d={SMALL['dim']}, {SMALL['heads']} heads, FFN {SMALL['ffn']}, {SMALL['enc_depth']}+{SMALL['dec_depth']} layers,
  swish, post-norm, tied embeddings, sinusoidal positions.
- `hf/`: the same model converted to a Hugging Face `MarianMTModel` folder the way transformers'
  `convert_marian_to_pytorch.py` does it (adds `<pad>` = id {vocab_size} with a zero embedding row and
  zero logit bias; pad is also the decoder start token).
- `reference.json`: token ids, teacher-forced logits, HF `generate()` and CTranslate2 outputs
  (greedy and beam 4); its `schema` and `notes` entries describe every field.

The training text for the SentencePiece models is synthetic (generated by the tool).
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def make_base(out_dir):
    shape = BASE
    if os.path.exists(out_dir):
        sys.exit(f"{out_dir} exists; remove it first")
    built = build_marian_folder(out_dir, shape, vocab_size=shape["vocab"])
    print(f"wrote {out_dir}: vocab {len(built['tokens'])}, d={shape['dim']}")
    convert_to_hf(out_dir, os.path.join(out_dir, "hf"))
    ct2_dir = os.path.join(out_dir, "ct2")
    ctranslate2.converters.OpusMTConverter(out_dir).convert(ct2_dir, quantization=None, force=True)
    translator = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=1)
    for text in SOURCES[:4]:
        r = translator.translate_batch([built["sp_src"].encode(text, out_type=str)], beam_size=1,
                                       max_decoding_length=MAX_LENGTH - 1)[0]
        out = built["sp_tgt"].decode_pieces(r.hypotheses[0])
        print(f"  ct2 greedy {len(r.hypotheses[0]):2d} tokens: {text!r} -> {out[:60]!r}")
    for root, _, files in os.walk(out_dir):
        for name in sorted(files):
            p = os.path.join(root, name)
            print(f"  {os.path.relpath(p, out_dir):40s} {os.path.getsize(p):11d}")


if __name__ == "__main__":
    main()
