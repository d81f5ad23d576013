"""The Hugging Face models that tools/bench_family_ct2.py times: GPT-2, Llama and a MiniLM-shaped BERT,
with random weights from a fixed seed and a tokenizer of exactly the model's vocabulary, saved with
save_pretrained as a user's checkpoint folder looks (transformers, torch and tokenizers from PyPI).

Not run on its own: bench_family_ct2.py calls build(name, shapes, folder, seed). The tokenizers are
made, not trained (the benchmark feeds token ids): a byte-level BPE whose merges are the first pairs
of byte symbols (GPT-2, Llama) and a WordPiece vocabulary of characters and filler words (BERT), so
that a vocabulary of 50,257 or 32,000 entries takes no corpus and the same seed writes the same files.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors  # noqa: E402
from transformers import BertTokenizerFast, PreTrainedTokenizerFast  # noqa: E402
from transformers.pytorch_utils import Conv1D  # noqa: E402

# Real: GPT-2 small; a Llama of about 125M parameters (GQA 12/4, SwiGLU, RoPE, untied output);
# all-MiniLM-L6-v2's BertModel. Tiny: the same architectures in a few hundred kilobytes.
SHAPES = {
    "real": {
        "gpt2": dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12),
        "llama": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                      num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048),
        "minilm": dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                       intermediate_size=1536, max_position_embeddings=512),
    },
    "tiny": {
        "gpt2": dict(vocab_size=300, n_positions=128, n_embd=64, n_layer=2, n_head=4),
        "llama": dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128),
        "minilm": dict(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=64),
    },
}
MODELS = ("gpt2", "llama", "minilm")


def byte_bpe(specials_before, specials_after, size):
    """A byte-level BPE of exactly `size` entries: the specials_before, the 256 byte symbols, merges of
    the first pairs of byte symbols (each merge's result a token), then specials_after."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    n_merges = size - len(specials_before) - len(alphabet) - len(specials_after)
    if n_merges < 0 or n_merges > len(alphabet) ** 2:
        raise SystemExit(f"a byte-level vocabulary of {size} entries cannot be made")
    pairs = [(a, b) for a in alphabet for b in alphabet][:n_merges]
    tokens = specials_before + alphabet + [a + b for a, b in pairs] + specials_after
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials_before + specials_after)
    assert tok.get_vocab_size() == size, (tok.get_vocab_size(), size)
    return tok


def gpt2_tokenizer(size):
    tok = byte_bpe([], ["<|endoftext|>"], size)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>")


def llama_tokenizer(size):
    tok = byte_bpe(["<unk>", "<s>", "</s>"], [], size)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def bert_tokenizer(size):
    """BERT's layout ([CLS] text [SEP], lowercased) over a vocabulary of the specials, the letters and
    digits alone and as continuations ("##a"), then filler words up to `size`."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789")
    pieces = specials + chars + ["##" + c for c in chars]
    pieces += [f"w{i}" for i in range(size - len(pieces))]
    if len(pieces) != size:
        raise SystemExit(f"a WordPiece vocabulary of {size} entries cannot be made")
    vocab = {p: i for i, p in enumerate(pieces)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(specials)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.decoder = decoders.WordPiece(prefix="##")
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True, model_max_length=512)


def randomize(model, seed):
    """Every weight drawn from a seeded generator at a scale that keeps activations of order one
    through the layers (linear weights 1/sqrt(fan-in), embeddings 0.1, norm gains near 1, biases
    near 0), so that the output distributions are peaked enough for greedy choices to be far from
    ties: two engines' rounding then rarely flips a token."""
    g = torch.Generator().manual_seed(seed)

    def draw(p, std, mean=0.0):
        p.copy_(mean + std * torch.randn(p.shape, generator=g))

    with torch.no_grad():
        for _, m in sorted(model.named_modules(), key=lambda kv: kv[0]):
            if isinstance(m, (torch.nn.Linear, Conv1D)):
                draw(m.weight, (m.weight.shape[0] if isinstance(m, Conv1D) else m.weight.shape[1]) ** -0.5)
                if m.bias is not None:
                    draw(m.bias, 0.1)
            elif isinstance(m, torch.nn.Embedding):
                draw(m.weight, 0.1)
            elif type(m).__name__.endswith(("LayerNorm", "RMSNorm")):
                draw(m.weight, 0.1, 1.0)
                if getattr(m, "bias", None) is not None:
                    draw(m.bias, 0.1)
    model.tie_weights()


def make(name, shape):
    """(model, tokenizer) of one architecture at one shape, dropout off."""
    if name == "gpt2":
        tokenizer = gpt2_tokenizer(shape["vocab_size"])
        eos = tokenizer.eos_token_id
        config = transformers.GPT2Config(**shape, bos_token_id=eos, eos_token_id=eos, resid_pdrop=0.0,
                                         embd_pdrop=0.0, attn_pdrop=0.0)
        return transformers.GPT2LMHeadModel(config), tokenizer
    if name == "llama":
        config = transformers.LlamaConfig(**shape, rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1,
                                          eos_token_id=2, tie_word_embeddings=False)
        return transformers.LlamaForCausalLM(config), llama_tokenizer(shape["vocab_size"])
    if name == "minilm":
        # position_embedding_type: transformers 5 dropped the field; CTranslate2's converter still reads it.
        config = transformers.BertConfig(**shape, type_vocab_size=2, pad_token_id=0, hidden_dropout_prob=0.0,
                                         attention_probs_dropout_prob=0.0, position_embedding_type="absolute")
        return transformers.BertModel(config), bert_tokenizer(shape["vocab_size"])
    raise SystemExit(f"unknown model '{name}' (known: {', '.join(MODELS)})")


def build(name, shapes, folder, seed):
    """Writes the model and its tokenizer into `folder` with save_pretrained; returns the parameter count."""
    torch.manual_seed(seed)
    model, tokenizer = make(name, SHAPES[shapes][name])
    randomize(model.eval(), seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters())
