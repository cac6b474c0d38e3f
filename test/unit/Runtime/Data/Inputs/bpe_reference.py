#!/usr/bin/python3
"""A reference byte-level BPE tokenizer for TokenizerTest.

Written independently of runtime/data/Tokenizer.cpp, from the published
algorithms, as plainly as possible:
  - pre-tokenizer regexes run by Python's `re`, with \\p{L}, \\p{N} and \\s
    spelled out as character classes built from `unicodedata` (the `regex`
    module is not installed);
  - GPT-2's encoder.py: bytes_to_unicode, get_pairs, merging the pair of
    lowest rank until none is left;
  - Hugging Face's order of steps: added tokens, NFC, pre-tokenizer, BPE.

  bpe_reference.py encode TOKENIZER.json TEXTS.json  -> JSON list of id lists
  bpe_reference.py split NAME TEXTS.json             -> JSON list of pieces
"""

import json
import re
import sys
import unicodedata

# Unicode's White_Space property (what Oniguruma's \s matches); Python's own
# \s also matches U+001C..U+001F, which are not White_Space.
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0),
               (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
               (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]


def category_ranges(prefix):
    out = []
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)).startswith(prefix):
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
    return out


def class_body(ranges):
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_CLASSES = None


def classes():
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = {
            "L": class_body(category_ranges("L")),
            "N": class_body(category_ranges("N")),
            "s": class_body(WHITE_SPACE),
        }
    return _CLASSES


def translate(pattern):
    """Rewrites \\p{L}, \\p{N}, \\s and \\S for Python's re."""
    c = classes()
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            two = pattern[i:i + 2]
            if pattern.startswith("\\p{L}", i) or pattern.startswith("\\p{N}", i):
                body = c[pattern[i + 3]]
                out.append(body if in_class else "[" + body + "]")
                i += 5
                continue
            if two == "\\s":
                out.append(c["s"] if in_class else "[" + c["s"] + "]")
                i += 2
                continue
            if two == "\\S":
                assert not in_class
                out.append("[^" + c["s"] + "]")
                i += 2
                continue
            out.append(two)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
PATTERNS = {"gpt2": GPT2, "llama3": LLAMA3, "qwen2": QWEN2}
_COMPILED = {}


def compiled(pattern):
    if pattern not in _COMPILED:
        _COMPILED[pattern] = re.compile(translate(pattern))
    return _COMPILED[pattern]


def split_isolated(pattern, text):
    """Split(pattern, Isolated): the matches and the text between them."""
    pieces = []
    last = 0
    for m in compiled(pattern).finditer(text):
        if m.start() > last:
            pieces.append(text[last:m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        last = m.end()
    if last < len(text):
        pieces.append(text[last:])
    return pieces


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def get_pairs(word):
    return {(word[i], word[i + 1]) for i in range(len(word) - 1)}


class Reference:
    def __init__(self, path, config_path=None):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        model = tj["model"]
        assert model["type"] == "BPE"
        self.vocab = model["vocab"]
        self.ignore_merges = model.get("ignore_merges", False)
        self.ranks = {}
        for rank, m in enumerate(model["merges"]):
            a, b = m.split(" ", 1) if isinstance(m, str) else m
            self.ranks[(a, b)] = rank
        norm = tj.get("normalizer")
        self.nfc = norm is not None and norm["type"] == "NFC"
        pre = tj["pre_tokenizer"]
        items = pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]
        self.steps = []  # ("split", pattern) or ("bytelevel", prefix, regex)
        for p in items:
            if p["type"] == "Split":
                self.steps.append(("split", p["pattern"]["Regex"]))
            else:
                assert p["type"] == "ByteLevel"
                self.steps.append(("bytelevel", p.get("add_prefix_space", True),
                                   p.get("use_regex", True)))
        self.added = [(t["content"], t["id"], t.get("normalized", not t.get("special", False)))
                      for t in tj.get("added_tokens", [])]
        self.byte_encoder = bytes_to_unicode()
        self.cache = {}

    def split_added(self, text, normalized):
        """Leftmost-longest matches of the added tokens of one kind."""
        tokens = [(c, i) for c, i, n in self.added if n == normalized]
        out = []
        pos = 0
        start = 0
        while pos < len(text):
            best = None
            for content, tid in tokens:
                if text.startswith(content, pos) and (best is None or len(content) > len(best[0])):
                    best = (content, tid)
            if best is None:
                pos += 1
                continue
            if start < pos:
                out.append((text[start:pos], None))
            out.append((best[0], best[1]))
            pos += len(best[0])
            start = pos
        if start < len(text):
            out.append((text[start:], None))
        return out

    def bpe(self, token):
        if self.ignore_merges and token in self.vocab:
            return [token]
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = get_pairs(word)
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = new_word
        self.cache[token] = word
        return word

    def pre_tokenize(self, text):
        pieces = [text]
        for step in self.steps:
            nxt = []
            for piece in pieces:
                if step[0] == "split":
                    nxt.extend(split_isolated(step[1], piece))
                    continue
                _, prefix, use_regex = step
                if prefix and not piece.startswith(" "):
                    piece = " " + piece
                if use_regex:
                    nxt.extend(split_isolated(GPT2, piece))
                else:
                    nxt.append(piece)
            pieces = [p for p in nxt if p]
        return pieces

    def encode(self, text):
        ids = []
        for piece, tid in self.split_added(text, False):
            if tid is not None:
                ids.append(tid)
                continue
            if self.nfc:
                piece = unicodedata.normalize("NFC", piece)
            for sub, tid2 in self.split_added(piece, True):
                if tid2 is not None:
                    ids.append(tid2)
                    continue
                for word in self.pre_tokenize(sub):
                    mapped = "".join(self.byte_encoder[b] for b in word.encode("utf-8"))
                    ids.extend(self.vocab[t] for t in self.bpe(mapped))
        return ids


def main():
    mode, arg, texts_path = sys.argv[1:4]
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    if mode == "encode":
        ref = Reference(arg)
        result = [ref.encode(t) for t in texts]
    elif mode == "split":
        result = [split_isolated(PATTERNS[arg], t) for t in texts]
    else:
        raise SystemExit("usage: bpe_reference.py encode|split ARG TEXTS.json")
    json.dump(result, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
