"""Writes text_reference.json beside the Hugging Face decoder fixtures (tests/fixtures/hf/<name>/):
what transformers computes from text, for python/tests/test_hf_import.py to compare `transformer
import hf` with end to end (tokenizer, model, search and decoding together).

Run from the repository root after tools/make_hf_decoder_fixtures.py, in the same virtualenv:

    HF_HUB_OFFLINE=1 /tmp/hf-venv/bin/python tools/make_hf_text_fixtures.py

For each of gpt2, llama, qwen2 and mistral it loads the saved folder with AutoTokenizer and
AutoModelForCausalLM and records, for each prompt text: the ids tokenizer(text) gives (special
tokens as the tokenizer adds them) and the greedy continuation of generate() (max_new_tokens 8,
do_sample False) decoded with skip_special_tokens=True. A rerun writes the same files.
"""
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
MAX_NEW = 8
PROMPTS = ["Two young men", "A dog runs", "Ein Mann, der Café trinkt", "Über 3 Brücken 😀 gehen"]


def reference(name):
    folder = FIXTURES / name
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    cases = []
    for text in PROMPTS:
        ids = tok(text)["input_ids"]
        x = torch.tensor([ids])
        with torch.no_grad():
            y = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, num_beams=1,
                               max_new_tokens=MAX_NEW, pad_token_id=model.config.eos_token_id)
        new = y[0, len(ids):].tolist()
        cases.append({"prompt": text, "prompt_ids": ids, "continuation_ids": new,
                      "continuation": tok.decode(new, skip_special_tokens=True)})
    return {"max_new_tokens": MAX_NEW, "cases": cases}


def main():
    for name in ["gpt2", "llama", "qwen2", "mistral"]:
        path = FIXTURES / name / "text_reference.json"
        path.write_text(json.dumps(reference(name), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print("wrote", path)


if __name__ == "__main__":
    main()
