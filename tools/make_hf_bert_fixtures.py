#!/usr/bin/env python3
"""Builds tiny random BERT models and a sentence-transformers folder, and writes the reference
outputs that the BERT import tests (tests/hf/bert_test.cc, tests/cli/hf_bert_test.sh) compare with.

Run it (no network is touched; everything is built locally from fixed seeds):

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_hf_bert_fixtures.py

torch, transformers, tokenizers and sentence-transformers come from PyPI, in a virtualenv; only
this script needs them: the C++ build and its tests read the committed files. A rerun with the same
package versions writes the same files.

What it writes into tests/fixtures/hf/:

  bert/        a BertModel (hidden 32, 2 layers, 4 heads, intermediate 64, 64 learned positions,
               2 token types, its pooler) saved with save_pretrained, with a WordPiece tokenizer
               (BertTokenizerFast) whose 400 pieces come from the first lines of Multi30k's English
               training text (../shared/data/multi30k/raw/train.en)
  bert-mlm/    a BertForMaskedLM of the same shape and tokenizer (the masked-LM head, its decoder
               tied to the word embeddings), with hidden_act gelu_new and layer_norm_eps 1e-3
  Weights are drawn larger than BERT's initialization (randomize()), so that the checks see the
  activation and the epsilons.
  minilm/      a sentence-transformers folder (SentenceTransformer.save): the Transformer module
               (bert/'s model) at the root, 1_Pooling (mean) and 2_Normalize
  */reference.json  token ids of a few sentences (alone and as a padded batch) and what Hugging
               Face computes from them: the last hidden states (bert, bert-mlm), the masked-LM
               logits (bert-mlm), and sentence-transformers' encode() with each pooling, normalized
               and not (minilm). Numbers are rounded to 8 significant digits.
"""
import json
import os
import pathlib
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors  # noqa: E402
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers import models as st_models  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "hf"
CORPUS = ROOT.parent / "shared" / "data" / "multi30k" / "raw" / "train.en"
SENTENCES = [
    "A man in an orange hat starring at something.",
    "Two dogs play in the snow.",
    "A group of people stand in front of an igloo!",
    "Zebras?",
]


def rounded(t):
    """A tensor as nested lists of floats with 8 significant digits."""
    return json.loads(json.dumps(t.tolist(), default=float), parse_float=lambda s: float(f"{float(s):.8g}"))


def wordpiece_vocabulary(lines, size):
    """A WordPiece vocabulary built deterministically (the tokenizers library's WordPieceTrainer
    orders ties differently from run to run): the specials, every character seen alone and as a
    continuation ("##x"), a few suffixes, then the most frequent words (ties alphabetically)."""
    normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True)
    splitter = pre_tokenizers.BertPreTokenizer()
    counts = {}
    for line in lines:
        for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(line)):
            counts[word] = counts.get(word, 0) + 1
    chars = sorted({c for word in counts for c in word})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    vocab += [s for s in ["##ing", "##ed", "##er"] if s not in vocab]
    for word, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(vocab) >= size:
            break
        if word not in vocab:
            vocab.append(word)
    assert len(set(vocab)) == len(vocab) == size, (len(set(vocab)), len(vocab))
    return {piece: i for i, piece in enumerate(vocab)}


def build_tokenizer(directory):
    """A WordPiece tokenizer as BERT's (lowercasing, accents stripped, [CLS] text [SEP]) whose
    vocabulary comes from the corpus's first 400 lines, saved as a BertTokenizerFast folder."""
    with open(CORPUS, encoding="utf-8") as f:
        lines = [next(f).strip() for _ in range(400)]
    vocab = wordpiece_vocabulary(lines, 400)
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece(prefix="##")
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True, model_max_length=64)
    fast.save_pretrained(directory)
    return fast


def bert_config(vocab_size, pad_id, **changes):
    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64, type_vocab_size=2, pad_token_id=pad_id,
                      **changes)


def randomize(model):
    """Weights larger than BERT's initialization (std 0.02, norms 1 and 0), so that the activations
    reach the range where gelu and its tanh approximation, or two layer norm epsilons, differ by
    more than the tests' tolerance; every norm's gain and bias random too."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("LayerNorm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * (1.0 if "embeddings" in name else 2.0 / p.shape[-1] ** 0.5))


def ids_of(tokenizer):
    """Each sentence's ids alone, and the padded batch with its attention mask."""
    alone = [tokenizer(s)["input_ids"] for s in SENTENCES]
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    return alone, batch


def hidden_per_sentence(model, batch):
    """The last hidden states of the padded batch, each sentence's real tokens only."""
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    hidden = out.hidden_states[-1]
    lengths = batch["attention_mask"].sum(1).tolist()
    return [rounded(hidden[i, :n]) for i, n in enumerate(lengths)], out, lengths


def write_model(name, model_class, seed, tokenizer, **changes):
    directory = OUT / name
    shutil.rmtree(directory, ignore_errors=True)
    torch.manual_seed(seed)
    model = model_class(bert_config(len(tokenizer), tokenizer.pad_token_id, **changes)).eval()
    randomize(model)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    alone, batch = ids_of(tokenizer)
    hidden, out, lengths = hidden_per_sentence(model, batch)
    reference = {
        "schema": "sentences; ids: each alone ([CLS] ... [SEP]); batch_ids/batch_mask: the padded batch; "
                  "hidden: each sentence's last hidden states [L, D] in the padded batch"
                  + ("; logits: each sentence's masked-LM logits [L, V]" if name == "bert-mlm" else ""),
        "sentences": SENTENCES, "ids": alone, "batch_ids": batch["input_ids"].tolist(),
        "batch_mask": batch["attention_mask"].tolist(), "hidden": hidden,
    }
    if name == "bert-mlm":
        reference["logits"] = [rounded(out.logits[i, :n]) for i, n in enumerate(lengths)]
    (directory / "reference.json").write_text(json.dumps(reference) + "\n")
    return directory


def encodings(transformer_dir, tokenizer):
    """sentence-transformers' encode() of the sentences with each pooling, normalized and not."""
    out = {}
    for mode in ["cls", "mean", "max", "lasttoken"]:
        for normalize in [False, True]:
            word = st_models.Transformer(str(transformer_dir))
            pooling = st_models.Pooling(word.get_embedding_dimension(), pooling_mode=mode)
            modules = [word, pooling] + ([st_models.Normalize()] if normalize else [])
            st = SentenceTransformer(modules=modules, device="cpu")
            vectors = st.encode(SENTENCES, batch_size=len(SENTENCES), convert_to_tensor=True)
            out[f"{mode}{'_normalized' if normalize else ''}"] = rounded(vectors)
    return out


def write_sentence_transformers(transformer_dir, tokenizer):
    directory = OUT / "minilm"
    shutil.rmtree(directory, ignore_errors=True)
    word = st_models.Transformer(str(transformer_dir))
    pooling = st_models.Pooling(word.get_embedding_dimension(), pooling_mode="mean")
    st = SentenceTransformer(modules=[word, pooling, st_models.Normalize()], device="cpu")
    st.save(str(directory))
    alone, _ = ids_of(tokenizer)
    reference = {
        "schema": "sentences; ids: each alone; embeddings: encode() of all at once, per pooling mode "
                  "(cls, mean, max, lasttoken) and with _normalized a Normalize module after it; the saved "
                  "folder pools by mean and normalizes",
        "sentences": SENTENCES, "ids": alone, "embeddings": encodings(transformer_dir, tokenizer),
    }
    (directory / "reference.json").write_text(json.dumps(reference) + "\n")


def main():
    if not CORPUS.exists():
        sys.exit(f"{CORPUS} is missing (the Multi30k English training text)")
    scratch = OUT / "bert-tokenizer.tmp"
    tokenizer = build_tokenizer(scratch)
    tokenizer = BertTokenizerFast.from_pretrained(scratch)
    shutil.rmtree(scratch)
    bert = write_model("bert", BertModel, 1234, tokenizer)
    write_model("bert-mlm", BertForMaskedLM, 5678, tokenizer, hidden_act="gelu_new", layer_norm_eps=1e-3)
    write_sentence_transformers(bert, tokenizer)


if __name__ == "__main__":
    main()
