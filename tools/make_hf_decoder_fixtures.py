"""Writes the Hugging Face decoder fixtures of tests/hf/decoder_test.cc and tests/cli/hf_decoder_test.sh.

Run from the repository root, in a virtualenv with PyPI's transformers, torch and tokenizers:

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_hf_decoder_fixtures.py

For each of GPT2LMHeadModel, LlamaForCausalLM (grouped-query: 4 heads, 2 key/value heads),
Qwen2ForCausalLM (tied embeddings, biases on q, k, v) and MistralForCausalLM (a sliding window of 4
tokens, prompts and outputs longer than it) it builds a tiny model with random weights from a fixed
seed and a byte-level BPE tokenizer trained on Multi30k's first English lines (../shared/data), and
writes them with save_pretrained into tests/fixtures/hf/<name>/, as a user's checkpoint folder looks,
with reference.json beside the files: the prompts' ids, their teacher-forced logits, and
generate()'s greedy and beam-4 continuations (do_sample False, max_new_tokens 12, length_penalty
1.0, early_stopping False). The Llama model is also written in float16 (llama_f16/) and bfloat16
(llama_bf16/), whose reference.json holds the logits of that folder loaded in float32,
and in shards (llama_sharded/, model.safetensors.index.json). Two Llama models with scaled rotary
rates, on longer prompts: llama_rope_llama3/ (rope_parameters of type "llama3", Llama 3.1's rule,
with parameters that keep some rates, divide some and interpolate the others at its head width 16)
and llama_rope_linear/ (type "linear", factor 2); their reference.json also holds "inv_freq",
transformers' rotary rates computed in float64 by its own function, and "inv_freq_float32", the
model's buffer. llama_stops/ is the Llama model whose
generation_config.json lists three end-of-sequence ids, as instruct checkpoints do ([2, a, b]:
</s> and two ids chosen among the tokens the model predicts early, so that generate()'s greedy and
beam-4 continuations of every prompt end at a or b); its reference.json also records, under
"ends", the id each continuation ended at (null: at max_new_tokens). A rerun with the same
versions writes the same files. Names as arguments (gpt2 llama qwen2 mistral llama_stops llama_rope_llama3
llama_rope_linear) make
only those folders.
"""
import copy
import json
import math
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "hf"
CORPUS = ROOT.parent / "shared" / "data" / "multi30k" / "raw" / "train.en"
MAX_NEW = 12
PROMPTS = ["Two young men", "A dog", "People are walking down the"]
# Long enough (46 and 37 tokens) that the rates' scaling turns the pairs of slow rates by angles
# that matter.
LONG_PROMPTS = ["Several men in hard hats are operating a giant pulley system",
                "A little girl climbing into a wooden playhouse"]


def corpus_lines(n=400):
    with open(CORPUS, encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def byte_bpe(specials, vocab_size, bos=None):
    """A byte-level BPE tokenizer; with `bos`, its post-processor puts that token before the text."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
    if bos is None:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    else:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, tok.token_to_id(bos))])
    return tok


def randomize(model, seed):
    """Every parameter random (norm weights near 1, biases near 0 but not 0), so that a parameter
    mapped to the wrong place changes the logits; large enough that the output distributions are
    peaked and the searches' choices are far from ties."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if "norm" in name or ".ln_" in name or name.startswith("ln_"):
                p.copy_(1.0 + 0.2 * noise if name.endswith("weight") else 0.2 * noise)
            elif name.endswith("bias"):
                p.copy_(0.2 * noise)
            else:
                p.copy_(0.25 * noise)
    model.tie_weights()


def reference(model, prompt_ids, eos):
    """The prompts' teacher-forced logits and generate()'s greedy and beam-4 continuations (each
    prompt alone, so that no padding is involved)."""
    out = {"prompts": prompt_ids, "logits": [], "greedy": [], "beam4": [], "max_new_tokens": MAX_NEW}
    with torch.no_grad():
        for ids in prompt_ids:
            x = torch.tensor([ids])
            logits = model(x).logits[0].float()
            out["logits"].append([[round(float(v), 5) for v in row] for row in logits])
            for key, beams in (("greedy", 1), ("beam4", 4)):
                y = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, num_beams=beams,
                                   max_new_tokens=MAX_NEW, length_penalty=1.0, early_stopping=False,
                                   eos_token_id=eos, pad_token_id=eos)[0, len(ids):].tolist()
                if eos in y:
                    y = y[:y.index(eos)]
                out[key].append(y)
    return out


def save(name, model, tokenizer, bos_text, texts=PROMPTS, extra=None):
    folder = OUT / name
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    prompts = [tokenizer(p)["input_ids"] for p in texts]
    if bos_text is not None:
        assert all(p[0] == tokenizer.convert_tokens_to_ids(bos_text) for p in prompts), "the tokenizer adds no BOS"
    ref = reference(model, prompts, model.config.eos_token_id)
    ref["transformers"] = transformers.__version__
    ref["torch"] = torch.__version__.split("+")[0]
    ref.update(extra or {})
    (folder / "reference.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
    return ref


def fast_tokenizer(tok, **specials):
    return PreTrainedTokenizerFast(tokenizer_object=tok, **specials)


def gpt2():
    tok = byte_bpe(["<|endoftext|>"], 280)
    eos = tok.token_to_id("<|endoftext|>")
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=24, n_layer=2, n_head=4,
                                     bos_token_id=eos, eos_token_id=eos, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0)
    torch.manual_seed(1)
    model = transformers.GPT2LMHeadModel(config).eval()
    randomize(model, 11)
    t = fast_tokenizer(tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    return save("gpt2", model, t, None)


def llama_tokenizer():
    tok = byte_bpe(["<unk>", "<s>", "</s>"], 280, bos="<s>")
    return tok, fast_tokenizer(tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def llama_model(tok):
    config = transformers.LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=24, intermediate_size=48,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                                      rope_theta=500.0, tie_word_embeddings=False)
    torch.manual_seed(2)
    model = transformers.LlamaForCausalLM(config).eval()
    randomize(model, 12)
    return model


def llama():
    tok, t = llama_tokenizer()
    model = llama_model(tok)
    ref = save("llama", model, t, "<s>")
    # The same model in shards of a few kilobytes (model.safetensors.index.json).
    shutil.rmtree(OUT / "llama_sharded", ignore_errors=True)
    model.save_pretrained(OUT / "llama_sharded", max_shard_size="40KB")
    assert (OUT / "llama_sharded" / "model.safetensors.index.json").exists()
    # Its weights rounded to float16 and bfloat16; their logits computed in float32.
    for suffix, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        folder = OUT / f"llama_{suffix}"
        shutil.rmtree(folder, ignore_errors=True)
        copy.deepcopy(model).to(dtype).save_pretrained(folder)
        # Loaded as a user would, in float32: the rotary frequencies computed afresh, not rounded.
        rounded = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        out = {"prompts": ref["prompts"], "logits": []}
        with torch.no_grad():
            for ids in ref["prompts"]:
                logits = rounded(torch.tensor([ids])).logits[0]
                out["logits"].append([[round(float(v), 5) for v in row] for row in logits])
        (folder / "reference.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")


def continuation(model, ids, beams, eos):
    """generate()'s continuation of one prompt (do_sample False, as reference()), up to and with
    its end: (tokens before the end, the end's id or None at max_new_tokens)."""
    x = torch.tensor([ids])
    kwargs = {} if eos is None else {"eos_token_id": eos}
    with torch.no_grad():
        y = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, num_beams=beams,
                           max_new_tokens=MAX_NEW, length_penalty=1.0, early_stopping=False, pad_token_id=2,
                           **kwargs)[0, len(ids):].tolist()
    ends = set(model.generation_config.eos_token_id if eos is None else eos)
    for i, v in enumerate(y):
        if v in ends:
            return y[:i], v
    return y, None


def pick_stops(model, prompts):
    """Two ids besides </s> at which generate()'s greedy and beam-4 continuations of every prompt
    end: the first pair, in a fixed order, of tokens the model predicts early (the first 4 tokens
    of each continuation ended by </s> alone) that ends them all."""
    early = []
    for ids in prompts:
        for beams in (1, 4):
            for v in continuation(model, ids, beams, [2])[0][1:4]:
                if v > 2 and v not in early:
                    early.append(v)
    for i, a in enumerate(early):
        for b in early[i + 1:]:
            ends = [continuation(model, ids, beams, [2, a, b])[1] for ids in prompts for beams in (1, 4)]
            if all(e in (a, b) for e in ends):
                return [a, b]
    raise AssertionError(f"no pair of {early} ends every greedy and beam-4 continuation")


def llama_stops():
    tok, t = llama_tokenizer()
    model = llama_model(tok)
    prompts = [t(p)["input_ids"] for p in PROMPTS]
    stops = pick_stops(model, prompts)
    model.generation_config = transformers.GenerationConfig(bos_token_id=1, eos_token_id=[2] + stops)
    folder = OUT / "llama_stops"
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    t.save_pretrained(folder)
    # The folder as a user loads it: generate() ends where its generation_config.json says.
    loaded = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert loaded.generation_config.eos_token_id == [2] + stops, loaded.generation_config.eos_token_id
    assert json.loads((folder / "config.json").read_text())["eos_token_id"] == 2, "config.json names one id"
    ref = {"prompts": prompts, "logits": [], "greedy": [], "beam4": [], "max_new_tokens": MAX_NEW,
           "eos_token_id": [2] + stops, "ends": {"greedy": [], "beam4": []}}
    with torch.no_grad():
        for ids in prompts:
            logits = loaded(torch.tensor([ids])).logits[0]
            ref["logits"].append([[round(float(v), 5) for v in row] for row in logits])
            for key, beams in (("greedy", 1), ("beam4", 4)):
                y, end = continuation(loaded, ids, beams, None)
                assert end in stops, f"{key} of {ids} ended at {end}, not at a further end-of-sequence id"
                ref[key].append(y)
                ref["ends"][key].append(end)
    ref["transformers"] = transformers.__version__
    ref["torch"] = torch.__version__.split("+")[0]
    (folder / "reference.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
    return ref


def rates_in_float64(config):
    """transformers' own rotary rates for `config` computed in float64: its rope functions build
    the rates in torch.float, here float64 for the duration of the call."""
    from transformers import modeling_rope_utils
    rope_type = config.rope_parameters["rope_type"]
    saved = torch.float
    torch.float = torch.float64
    try:
        rates, attention_factor = modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")
    finally:
        torch.float = saved
    assert rates.dtype == torch.float64 and attention_factor == 1.0
    return rates


def rope_branches(config, rates):
    """Which branch of Llama 3.1's rule each rate took, by its unscaled wavelength."""
    p = config.rope_parameters
    dim = config.head_dim
    L = p["original_max_position_embeddings"]
    out = []
    for i in range(len(rates)):
        wavelength = 2 * math.pi * p["rope_theta"] ** (2 * i / dim)
        out.append("kept" if wavelength < L / p["high_freq_factor"] else
                   "divided" if wavelength > L / p["low_freq_factor"] else "interpolated")
    return out


def llama_rope(name, rope_parameters, seed):
    tok, t = llama_tokenizer()
    config = transformers.LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                      max_position_embeddings=2048, rms_norm_eps=1e-5, bos_token_id=1,
                                      eos_token_id=2, rope_parameters=dict(rope_parameters),
                                      tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    randomize(model, 10 + seed)
    rates = rates_in_float64(model.config)
    buffer = model.model.rotary_emb.inv_freq
    assert torch.allclose(rates, buffer.double(), rtol=1e-6, atol=0), "float32 rates far from float64 ones"
    print(name, "rates", [f"{float(r):.6g}" for r in rates], file=sys.stderr)
    if rope_parameters["rope_type"] == "llama3":
        branches = rope_branches(model.config, rates)
        print(name, "branches", branches, file=sys.stderr)
        assert {"kept", "divided", "interpolated"} <= set(branches), "a branch of the rule is not exercised"
    extra = {"inv_freq": [float(r) for r in rates], "inv_freq_float32": [float(r) for r in buffer]}
    return save(name, model, t, "<s>", LONG_PROMPTS, extra)


def llama_rope_llama3():
    return llama_rope("llama_rope_llama3", {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 16.0,
                                            "original_max_position_embeddings": 256}, 5)


def llama_rope_linear():
    return llama_rope("llama_rope_linear", {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}, 6)


def qwen2():
    tok = byte_bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], 280)
    eos = tok.token_to_id("<|endoftext|>")
    config = transformers.Qwen2Config(vocab_size=tok.get_vocab_size(), hidden_size=24, intermediate_size=48,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64, rms_norm_eps=1e-6, bos_token_id=eos,
                                      eos_token_id=eos, rope_theta=10000.0, tie_word_embeddings=True,
                                      use_sliding_window=False)
    torch.manual_seed(3)
    model = transformers.Qwen2ForCausalLM(config).eval()
    randomize(model, 13)
    t = fast_tokenizer(tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    return save("qwen2", model, t, None)


def mistral():
    tok = byte_bpe(["<unk>", "<s>", "</s>"], 280, bos="<s>")
    config = transformers.MistralConfig(vocab_size=tok.get_vocab_size(), hidden_size=24, intermediate_size=48,
                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=1,
                                        eos_token_id=2, rope_theta=10000.0, sliding_window=4,
                                        tie_word_embeddings=False)
    torch.manual_seed(4)
    model = transformers.MistralForCausalLM(config).eval()
    randomize(model, 14)
    t = fast_tokenizer(tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    return save("mistral", model, t, "<s>")


def main():
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    makers = {f.__name__: f for f in (gpt2, llama, qwen2, mistral, llama_stops, llama_rope_llama3, llama_rope_linear)}
    unknown = [n for n in sys.argv[1:] if n not in makers]
    assert not unknown, f"unknown fixtures {unknown}; known: {list(makers)}"
    for name in sys.argv[1:] or makers:
        make = makers[name]
        ref = make()
        if ref is not None:
            print(make.__name__, "greedy", ref["greedy"], "beam4", ref["beam4"], file=sys.stderr)


if __name__ == "__main__":
    main()
