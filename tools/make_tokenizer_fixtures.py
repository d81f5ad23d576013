"""Writes the Hugging Face tokenizer fixtures that tests/hf/tokenizer_test.cc compares with.

Run with the virtualenv that has PyPI's transformers, tokenizers and sentencepiece (no network):

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_tokenizer_fixtures.py \
        --data ../shared/data --out tests/fixtures/hf/tokenizers

It trains small tokenizers (vocabularies of about 2000) on the Multi30k training sets (English and
German) the way the real checkpoints' tokenizers are built, and saves each with save_pretrained of
the transformers class a real checkpoint uses, into OUT/NAME/:

  bert-uncased  WordPiece (tokenizers' trainer), BertTokenizerFast, lowercase + strip accents;
                also vocab.txt, BERT's slow-tokenizer vocabulary
  bert-cased    the same, cased (do_lower_case false)
  gpt2          byte-level BPE, GPT2TokenizerFast
  llama3        Llama 3's Split regex + ByteLevel(use_regex false), ignore_merges, a
                <|begin_of_text|> template; PreTrainedTokenizerFast
  qwen2         Qwen2's regex, NFC normalizer, Qwen2TokenizerFast
  llama2        a SentencePiece BPE with byte fallback (the sentencepiece trainer), converted by
                LlamaTokenizerFast from tokenizer.model (kept beside it): Metaspace pre-tokenizer
  mistral       the same model with the older layout of Llama 2's and Mistral's tokenizer.json
                (normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer)
  bert-keep-accents  bert-uncased's pieces, lowercased without stripping accents
  qwen2-added   qwen2 with added tokens that exercise their matching (normalized, overlapping,
                single_word, lstrip/rstrip)
  llama2-unk    llama2 without byte fallback: <unk> for unknown characters, fused
  wordpiece-mix, bpe-mix  the bert-uncased and llama2 models behind the remaining components:
                normalizers, pre-tokenizers and split behaviors, post-processors and decoders
                that no checkpoint above uses

OUT/hostile.json.gz is a list of hostile texts (combining marks, emoji with ZWJ and skin tones,
RTL, CJK, NUL and controls, runs of spaces, 10,000-character words, special-token strings, invalid
UTF-8 given as hex bytes, with the text Python's errors="replace" makes of them). OUT/NAME/expected.json.gz holds what the `tokenizers` library's
Tokenizer (loaded from the saved tokenizer.json) computes for every line of the Multi30k test sets
(read from --data at test time, never copied) and every hostile text: the ids without special
tokens; with them, when they differ from the constant prefix + ids + suffix; and
decode(ids with special tokens, skip_special_tokens=True) when it differs from the text, and for the
hostile texts skip_special_tokens=False too, when it differs from that.
The last five are checked on the hostile texts only; their tokenizer.json is stored gzip'd
(tokenizer.json.gz), as its vocabulary is its base's. Each file also holds "decode": random id lists
(special and byte tokens included) with decode(ids, skip_special_tokens=True) and (=False); and
"pre_tokenized": the pre-tokenizer's pieces of each normalized hostile text (the regexes' splits).
mistral's file says `"same_as": "llama2"` and has null for the ids equal to llama2's.
Invalid UTF-8 is decoded with Python's errors="replace" (U+FFFD) before encoding, the policy the
C++ tokenizer follows. Training is single-threaded and seeded: a rerun writes the same files.
"""
import argparse
import gzip
import json
import os
import random
import shutil
import tempfile

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import sentencepiece as spm  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

SETS = {lang: f"multi30k/raw/test_2016_flickr.{lang}" for lang in ("en", "de", "fr", "cs")}
TRAIN = ["multi30k/raw/train.en", "multi30k/raw/train.de"]
VOCAB = 1000
HOSTILE_ONLY = ["bert-keep-accents", "qwen2-added", "llama2-unk", "wordpiece-mix", "bpe-mix"]  # variants checked on the hostile texts alone
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def canonical_ids(vocab):
    """The WordPiece trainer numbers its alphabet in hash order: specials, then the characters and
    the ##characters, then the learned pieces, each sorted (ties of the trainer's counts come out in
    either order; WordPiece's cuts do not depend on the ids)."""
    def key(kv):
        token, i = kv
        if i < 5:
            return (0, i, "")
        plain = token[2:] if token.startswith("##") else token
        if len(plain) == 1:
            return (1 + token.startswith("##"), 0, token)
        return (3, 0, token)
    return {t: i for i, (t, _) in enumerate(sorted(vocab.items(), key=key))}


def bert(out, train, lowercase):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train(train, trainers.WordPieceTrainer(vocab_size=VOCAB, show_progress=False,
                                               special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    vocab = canonical_ids(tok.get_vocab())
    hf = transformers.BertTokenizerFast(vocab=vocab, do_lower_case=lowercase)
    hf.save_pretrained(out)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        for piece, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
            f.write(piece + "\n")


def byte_level_bpe(train, split_regex, normalizer, ignore_merges):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.normalizer = normalizer
    if split_regex is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train(train, trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def vocab_and_merges(tok):
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]


def gpt2(out, train):
    vocab, merges = vocab_and_merges(byte_level_bpe(train, None, None, False))
    vocab["<|endoftext|>"] = len(vocab)
    transformers.GPT2TokenizerFast(vocab=vocab, merges=merges).save_pretrained(out)


def llama3(out, train):
    tok = byte_level_bpe(train, LLAMA3_REGEX, None, True)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    tok.add_special_tokens(specials)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])])
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                         eos_token="<|end_of_text|>").save_pretrained(out)


def qwen2(out, train):
    vocab, merges = vocab_and_merges(byte_level_bpe(train, QWEN2_REGEX, normalizers.NFC(), False))
    for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        vocab[t] = len(vocab)
    hf = transformers.Qwen2TokenizerFast(vocab=vocab, merges=merges, additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    hf.save_pretrained(out)


def llama2(out, data, work):
    text = os.path.join(work, "train.txt")
    with open(text, "w", encoding="utf-8") as f:
        for p in TRAIN:
            f.write(open(os.path.join(data, p), encoding="utf-8").read())
    spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(work, "sp"), vocab_size=VOCAB,
                                   model_type="bpe", byte_fallback=True, character_coverage=0.9995,
                                   num_threads=1, split_digits=True, allow_whitespace_only_pieces=True,
                                   remove_extra_whitespaces=False, normalization_rule_name="identity",
                                   unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    folder = os.path.join(work, "slow")
    os.makedirs(folder)
    shutil.copy(os.path.join(work, "sp.model"), os.path.join(folder, "tokenizer.model"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizer", "legacy": False, "add_bos_token": True, "add_eos_token": False}, f)
    hf = transformers.LlamaTokenizerFast.from_pretrained(folder)
    hf.save_pretrained(out)
    shutil.copy(os.path.join(work, "sp.model"), os.path.join(out, "tokenizer.model"))
    return hf


def bert_keep_accents(out, cased_from):
    """BERT lowercasing without stripping accents (strip_accents false), over bert-uncased's pieces."""
    vocab = json.load(open(os.path.join(cased_from, "tokenizer.json"), encoding="utf-8"))["model"]["vocab"]
    transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True, strip_accents=False).save_pretrained(out)
    shutil.copy(os.path.join(cased_from, "vocab.txt"), os.path.join(out, "vocab.txt"))


def qwen2_added(out, qwen2_folder):
    """qwen2 with added tokens that exercise their matching: normalized ones (found in the NFC
    text), one the prefix of another (the longest wins), single_word, lstrip and rstrip."""
    from tokenizers import AddedToken
    hf = transformers.AutoTokenizer.from_pretrained(qwen2_folder)
    hf.add_tokens([AddedToken("New York", normalized=True), AddedToken("New York City", normalized=True),
                   AddedToken("dog", single_word=True, normalized=True), AddedToken("cafe\u0301", normalized=True)])
    hf.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>",
                                                         AddedToken("<mask>", lstrip=True, rstrip=True, normalized=False)]})
    hf.save_pretrained(out)


def llama2_unk(out, llama):
    """llama2's model without byte fallback: unknown characters become <unk>, runs of them fused."""
    spec = json.loads(llama.backend_tokenizer.to_str())
    spec["model"].update(unk_token="<unk>", byte_fallback=False, fuse_unk=True)
    tok = Tokenizer.from_str(json.dumps(spec))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                         unk_token="<unk>").save_pretrained(out)


def wordpiece_mix(out, bert_folder):
    """bert-uncased's pieces behind the components no checkpoint above has: NFKD, StripAccents,
    Lowercase, Replace (Regex), Strip, NFKC; Whitespace, Punctuation, Digits; BertProcessing."""
    tok = Tokenizer.from_file(os.path.join(bert_folder, "tokenizer.json"))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase(),
        normalizers.Replace(Regex(r"[0-9]{2,}"), "#"), normalizers.Strip(left=True, right=True), normalizers.NFKC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation(behavior="contiguous"),
        pre_tokenizers.Digits(individual_digits=True)])
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(out)


def bpe_mix(out, llama):
    """llama2's model behind the other split behaviors, invert, WhitespaceSplit, NFD, Metaspace
    (always, split), RobertaProcessing and the Metaspace, Replace (Regex) and BPEDecoder decoders."""
    tok = Tokenizer.from_str(llama.backend_tokenizer.to_str())
    tok.normalizer = normalizers.NFD()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"[.,!?]"), behavior="merged_with_previous"),
        pre_tokenizers.Split("-", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[0-9]"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[^()\[\]]+"), behavior="removed", invert=True),
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1))
    tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="always"),
                                     decoders.Replace(Regex(r"e+"), "E"), decoders.BPEDecoder(suffix="s")])
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                         unk_token="<unk>").save_pretrained(out)


def mistral(out, llama):
    tok = Tokenizer.from_str(llama.backend_tokenizer.to_str())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                         unk_token="<unk>").save_pretrained(out)


def hostile_texts():
    rng = random.Random(49)
    letters = "abcdefghijklmnopqrstuvwxyz"
    texts = [
        "", " ", "\t", "\n\n\n", "   leading", "trailing   ", "  multiple    spaces   here  ",
        "e\u0301 Cafe\u0301 naïve Ångström Øresund façade", "a\u0300\u0301\u0302\u0303 \u0301lone mark",
        "Z\u0351\u0364\u036b\u0308a\u0304l\u0342g\u0310o", "ÀÉÎÕÜ àéîõü ŒœßẞİıĲ",
        "ΟΔΥΣΣΕΥΣ Σίσυφος ΣΑΣ", "\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family",
        "\U0001F44D\U0001F3FD thumbs \U0001F3F3\ufe0f\u200d\U0001F308 flag", "I \u2764\ufe0f NY \U0001F1E9\U0001F1EA\U0001F1EB\U0001F1F7",
        "مرحبا بالعالم", "שָׁלוֹם עולם", "abc مرحبا 123 שלום. def", "日本語のテキスト。中文字符，한국어 텍스트",
        "全角ＡＢＣ１２３ ㍿ ﬁ ligature ½ ²", "a\x00b", "\x00", "tab\there", "line\nbreak\r\nwindows\r",
        "\x07bell\x1b[0m \x7f del", "\u200b zero width \u200d joiner \ufeff bom \u00ad soft",
        "\u00a0nbsp\u2003emspace\u3000ideographic", "vertical\x0btab\x0cform\x85nel\u2028ls\u2029ps",
        "I'm he's they'RE WE'LL it'S don't O'Neil", "numbers 1234567 12,345.67 ٣٤٥ ५६ ①②",
        "punctuation!!! ??? ... --- (a) [b] {c} «d» „e“ ‘f’ @#$%^&*_+=~`|\\/<>",
        "http://example.com/path?q=1&r=2#frag user@mail.org", "   \n  \t  mixed \n\n whitespace \t",
        "[CLS] hello [SEP] world [MASK] [PAD] [UNK]", "[CLS][SEP][MASK]x[cls] lowercase [Mask]",
        "hello[MASK]world  [SEP]  spaced", "<s>hello</s> <unk> < s >", "<|endoftext|>text<|endoftext|> again",
        "<|begin_of_text|>hi<|end_of_text|> <|eot_id|>", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>",
        "▁already ▁metaspace▁ chars", "ĠĊ byte-level-looking chars ĉ",
        "v \x0b\x0b w \x85\x85 z\x0b \u2028 y \x0c\x0c", "İstanbul İI ıi",
        "New York City and New York <mask>  end", "a  <mask>  b<mask>c", "dog dogs hotdog dog. _dog",
        "cafe\u0301 café CAFÉ",
        "a" * 10000, "".join(rng.choice(letters) for _ in range(10000)),
        "".join(rng.choice("0123456789") for _ in range(10000)),
        "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(3000)),
        "e\u0301" * 5000, "ab " * 3000,
    ]
    out = [{"text": t} for t in texts]
    for b in (b"lone \x80 continuation", b"\xff\xfe bad start", b"truncated \xe2\x82", b"overlong \xc0\xaf x",
              b"surrogate \xed\xa0\x80 y", b"\xf4\x90\x80\x80 above max", b"mixed \xc3\xa9 ok \xc3 cut"):
        out.append({"hex": b.hex(), "replaced": b.decode("utf-8", errors="replace")})
    return out


def item_text(item):
    return item["text"] if "text" in item else bytes.fromhex(item["hex"]).decode("utf-8", errors="replace")


def decode_checks(tok, name):
    """decode() of random id lists (special and byte tokens included), both ways."""
    rng = random.Random(name)
    size = tok.get_vocab_size(with_added_tokens=True)
    out = []
    for _ in range(30):
        ids = [rng.randrange(size) for _ in range(rng.randrange(1, 13))]
        out.append([ids, tok.decode(ids, skip_special_tokens=True), tok.decode(ids, skip_special_tokens=False)])
    return out


def expected(folder, data, hostile, corpora=True):
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    empty_with = tok.encode("", add_special_tokens=True).ids
    probe = tok.encode("a", add_special_tokens=False).ids
    probe_with = tok.encode("a", add_special_tokens=True).ids
    start = probe_with.index(probe[0]) if probe else 0
    prefix, suffix = probe_with[:start], probe_with[start + len(probe):]
    assert empty_with == prefix + suffix or not probe

    def run(lines, keep_all):
        ids, withs, dec, keep = [], {}, {}, {}
        for i, text in enumerate(lines):
            a = tok.encode(text, add_special_tokens=False).ids
            w = tok.encode(text, add_special_tokens=True).ids
            ids.append(a)
            if w != prefix + a + suffix:
                withs[str(i)] = w
            d, k = tok.decode(w, skip_special_tokens=True), tok.decode(w, skip_special_tokens=False)
            if d != text:
                dec[str(i)] = d
            if keep_all and k != d:
                keep[str(i)] = k
        return {"ids": ids, "with": withs, "decoded": dec, "decoded_keep": keep}

    sets = {}
    for lang, path in (SETS.items() if corpora else ()):
        lines = open(os.path.join(data, path), encoding="utf-8").read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        sets[lang] = dict(file=path, lines=len(lines), **run(lines, False))
    sets["hostile"] = dict(file="hostile.json", lines=len(hostile), **run([item_text(h) for h in hostile], True))
    return {"prefix": prefix, "suffix": suffix, "sets": sets, "decode": decode_checks(tok, os.path.basename(folder)),
            "pre_tokenized": pre_tokenized(tok, [item_text(h) for h in hostile])}


def pre_tokenized(tok, texts):
    """The pre-tokenizer's pieces of each normalized hostile text under 1000 characters (null
    for the others and for a tokenizer without pre-tokenizer)."""
    if tok.pre_tokenizer is None:
        return None
    out = []
    for text in texts:
        if len(text) >= 1000:
            out.append(None)
            continue
        normalized = tok.normalizer.normalize_str(text) if tok.normalizer else text
        out.append([piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(normalized)])
    return out


def same_as(doc, base, base_name):
    out = json.loads(json.dumps(doc))
    out["same_as"] = base_name
    for name, s in out["sets"].items():
        s["ids"] = [None if a == b else a for a, b in zip(s["ids"], base["sets"][name]["ids"])]
    return out


def check_transformers_agrees(folder, name, doc):
    hf = transformers.AutoTokenizer.from_pretrained(folder)
    lines = open(os.path.join(doc, SETS["en"]), encoding="utf-8").read().split("\n")[:50]
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    for line in lines:
        assert hf(line)["input_ids"] == tok.encode(line).ids, (name, line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default="tests/fixtures/hf/tokenizers")
    args = ap.parse_args()
    train = [os.path.join(args.data, p) for p in TRAIN]
    os.makedirs(args.out, exist_ok=True)
    hostile = hostile_texts()
    with gzip.GzipFile(os.path.join(args.out, "hostile.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(hostile, ensure_ascii=False, indent=0).encode("utf-8"))
    builders = {
        "bert-uncased": lambda o: bert(o, train, True),
        "bert-cased": lambda o: bert(o, train, False),
        "gpt2": lambda o: gpt2(o, train),
        "llama3": lambda o: llama3(o, train),
        "qwen2": lambda o: qwen2(o, train),
    }
    for name, build in builders.items():
        build(os.path.join(args.out, name))
    # A fixed folder: the SentencePiece model records its training file's path.
    work = os.path.join(tempfile.gettempdir(), "make_tokenizer_fixtures")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    llama = llama2(os.path.join(args.out, "llama2"), args.data, work)
    shutil.rmtree(work)
    mistral(os.path.join(args.out, "mistral"), llama)
    bert_keep_accents(os.path.join(args.out, "bert-keep-accents"), os.path.join(args.out, "bert-uncased"))
    qwen2_added(os.path.join(args.out, "qwen2-added"), os.path.join(args.out, "qwen2"))
    llama2_unk(os.path.join(args.out, "llama2-unk"), llama)
    wordpiece_mix(os.path.join(args.out, "wordpiece-mix"), os.path.join(args.out, "bert-uncased"))
    bpe_mix(os.path.join(args.out, "bpe-mix"), llama)
    docs = {}
    for name in list(builders) + ["llama2", "mistral"] + HOSTILE_ONLY:
        folder = os.path.join(args.out, name)
        check_transformers_agrees(folder, name, args.data)
        doc = docs[name] = expected(folder, args.data, hostile, name not in HOSTILE_ONLY)
        if name == "mistral":  # the same model as llama2's: only the ids that differ are stored
            doc = same_as(doc, docs["llama2"], "llama2")
        with gzip.GzipFile(os.path.join(folder, "expected.json.gz"), "wb", mtime=0) as f:
            f.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if name in HOSTILE_ONLY:  # a variant's vocabulary repeats its base's: kept compressed
            path = os.path.join(folder, "tokenizer.json")
            with open(path, "rb") as f, gzip.GzipFile(path + ".gz", "wb", mtime=0) as g:
                g.write(f.read())
            os.remove(path)
        print(name, "written")


if __name__ == "__main__":
    main()
