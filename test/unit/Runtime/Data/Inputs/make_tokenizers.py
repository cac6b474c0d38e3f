#!/usr/bin/python3
"""Writes the tokenizer.json fixtures of TokenizerTest.

  /usr/bin/python3 make_tokenizers.py models/data/corpus.txt OUT_DIR

Trains byte-level BPE merges on the corpus (the most frequent pair first,
ties to the smallest pair) and writes them in Hugging Face's tokenizer.json
format, in the three forms titan reads:
  gpt2.json         ByteLevel pre-tokenizer (its own GPT-2 regex), merges as
                    "a b" strings
  llama3.json       Sequence[Split(Llama 3 regex), ByteLevel(use_regex
                    false)], merges as [a, b] pairs, ignore_merges, and two
                    vocabulary words that no merge reaches
  qwen2/            NFC, Sequence[Split(Qwen2 regex), ByteLevel], with a
                    tokenizer_config.json (bos_token null, eos <|im_end|>)
each with added tokens <|begin_of_text|> and <|end_of_text|> (and Qwen2's).
"""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_reference as ref  # noqa: E402

NUM_MERGES = 400


def train(text, pattern):
    enc = ref.bytes_to_unicode()
    words = collections.Counter()
    for piece in ref.split_isolated(pattern, text):
        words["".join(enc[b] for b in piece.encode("utf-8"))] += 1
    vocab = {enc[b]: i for i, b in enumerate(range(256))}
    split = {w: list(w) for w in words}
    merges = []
    for _ in range(NUM_MERGES):
        pairs = collections.Counter()
        for w, n in words.items():
            s = split[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], tuple(-ord(c) for c in kv[0][0] + "\0" + kv[0][1])))
        (a, b), count = best
        if count < 2:
            break
        merges.append((a, b))
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
        for w in words:
            s = split[w]
            i = 0
            out = []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            split[w] = out
    return vocab, merges


def added(names, first_id):
    return [{"id": first_id + i, "content": n, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False,
             "special": True} for i, n in enumerate(names)]


def tokenizer_json(vocab, merges, pre_tokenizer, added_tokens,
                   normalizer=None, pair_merges=False, ignore_merges=False):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                           "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                    "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": vocab,
            "merges": [[a, b] for a, b in merges] if pair_merges
            else [f"{a} {b}" for a, b in merges],
        },
    }


def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    corpus_path, out = sys.argv[1:3]
    with open(corpus_path, encoding="utf-8") as f:
        text = f.read()
    special = ["<|begin_of_text|>", "<|end_of_text|>"]

    vocab, merges = train(text, ref.GPT2)
    write(os.path.join(out, "gpt2.json"), tokenizer_json(
        vocab, merges,
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": True},
        added(special, len(vocab))))

    vocab, merges = train(text, ref.LLAMA3)
    # Words in the vocabulary that no merge builds: with ignore_merges a
    # pre-token equal to one is that one token.
    for word in ["Ġlighthouse", "Ġkeeper"]:
        vocab.setdefault(word, len(vocab))
    write(os.path.join(out, "llama3.json"), tokenizer_json(
        vocab, merges,
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": ref.LLAMA3},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": True, "use_regex": False}]},
        added(special + ["<|reserved_special_token_0|>", "<|eot_id|>"],
              len(vocab)),
        pair_merges=True, ignore_merges=True))

    vocab, merges = train(text, ref.QWEN2)
    write(os.path.join(out, "qwen2", "tokenizer.json"), tokenizer_json(
        vocab, merges,
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": ref.QWEN2},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": False, "use_regex": False}]},
        added(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], len(vocab)),
        normalizer={"type": "NFC"}))
    write(os.path.join(out, "qwen2", "tokenizer_config.json"), {
        "bos_token": None,
        "eos_token": {"__type": "AddedToken", "content": "<|im_end|>",
                      "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False},
        "model_max_length": 32768,
    })


if __name__ == "__main__":
    main()
