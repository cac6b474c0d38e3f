"""Oracle of the Hugging Face weights tests (numpy + torch 1.13, no safetensors
or transformers package: the safetensors reader below follows the format's
specification).

Subcommands:
  make-npy MODEL NPY            write every parameter of MODEL/model.pt (an
                                export of models/export.py) as NPY/<fqn>.npy
  config MODEL OUT.json         write the Hugging Face config.json of MODEL's
                                flavor (LlamaConfig's keys)
  check HF MODEL DTYPE          read the safetensors model in HF (one file, or
                                the index and its shards), check its layout
                                (header, offsets, alignment, index), that its
                                names are Hugging Face's Llama names, that
                                un-permuting q_proj/k_proj (for the complex
                                RoPE; stored as they are for rotate_half)
                                gives MODEL's
                                parameters rounded to DTYPE bit for bit, and
                                that a Hugging Face style Llama forward
                                (rotate-half RoPE on the stored weights)
                                computes MODEL's logits on MODEL/tokens.npy
  compare A B [bfloat16]        every B/*.npy equals A/<same>.npy bit for bit
                                (with bfloat16: A rounded to bfloat16, then
                                widened to float32)
  hostile OUT                   write broken and hostile safetensors files
                                into OUT/<case>/model.safetensors
"""

import json
import math
import os
import struct
import sys

import numpy as np

# torch is imported by the subcommands that need it (it takes seconds).
torch = None


def import_torch():
    global torch
    import torch as module
    torch = module

DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (None, 2),
          "F64": (np.float64, 8), "I64": (np.int64, 8), "I32": (np.int32, 4)}


def read_safetensors_file(path):
    """{name: torch tensor} and the metadata of one file, checked strictly."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), f"{path}: header past the end"
    assert (8 + n) % 8 == 0, f"{path}: data not 8-byte aligned"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    spans = []
    tensors = {}
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, (name, info)
        np_dtype, size = DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        assert end - begin == count * size, (name, info)
        assert begin % size == 0, f"{name}: misaligned for {info['dtype']}"
        raw = np.frombuffer(data[begin:end], dtype=np.uint16 if np_dtype is None else np_dtype)
        if np_dtype is None:  # bf16: the upper halves of float32
            t = torch.from_numpy(raw.astype(np.int32) << 16).view(torch.float32)
            t = t.to(torch.bfloat16)
        else:
            t = torch.from_numpy(raw.copy())
        tensors[name] = t.reshape(info["shape"])
        spans.append((begin, end))
    spans.sort()
    at = 0
    for begin, end in spans:
        assert begin == at, f"{path}: gap or overlap at {begin}"
        at = end
    assert at == len(data), f"{path}: trailing bytes"
    return tensors, metadata


def read_safetensors(folder):
    index_path = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index_path):
        tensors, metadata = read_safetensors_file(os.path.join(folder, "model.safetensors"))
        return tensors, metadata, None
    with open(index_path) as f:
        index = json.load(f)
    tensors = {}
    files = sorted(set(index["weight_map"].values()))
    total = 0
    for name in files:
        part, metadata = read_safetensors_file(os.path.join(folder, name))
        for key, t in part.items():
            assert index["weight_map"][key] == name, key
            assert key not in tensors
            tensors[key] = t
            total += t.numel() * t.element_size()
    assert set(tensors) == set(index["weight_map"]), "index and files disagree"
    assert index["metadata"]["total_size"] == total, "total_size"
    return tensors, metadata, files


def load_args(model_dir):
    with open(os.path.join(model_dir, "export.json")) as f:
        return json.load(f)["args"]


def load_model(model_dir):
    import_torch()
    module = torch.jit.load(os.path.join(model_dir, "model.pt"))
    with open(os.path.join(model_dir, "export.json")) as f:
        args = json.load(f)["args"]
    return module, args


def make_npy(model_dir, out):
    module, _ = load_model(model_dir)
    os.makedirs(out, exist_ok=True)
    for name, p in module.named_parameters():
        np.save(os.path.join(out, name + ".npy"), p.detach().numpy())


def config(model_dir, out):
    args = load_args(model_dir)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
           "hidden_size": args["dim"], "intermediate_size": args["ffn_hidden_dim"],
           "num_hidden_layers": args["n_layers"], "num_attention_heads": args["n_heads"],
           "num_key_value_heads": args["n_kv_heads"], "vocab_size": args["vocab_size"],
           "rms_norm_eps": args["norm_eps"], "rope_theta": args["rope_theta"],
           "max_position_embeddings": args["max_seq_len"], "hidden_act": "silu",
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    with open(out, "w") as f:
        json.dump(cfg, f, indent=2)


HF_NAMES = {
    "tok_embeddings.weight": "model.embed_tokens.weight",
    "norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.o_proj.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight",
    "feed_forward.w2.weight": "mlp.down_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}


def hf_name(fqn):
    if fqn in HF_NAMES:
        return HF_NAMES[fqn]
    _, layer, rest = fqn.split(".", 2)
    return f"model.layers.{layer}.{HF_NAMES[rest]}"


def unpermute(w, heads):
    """Hugging Face's rotate-half row order back to the interleaved one: the
    inverse of transformers' convert_llama_weights_to_hf permute."""
    rows, cols = w.shape
    return w.view(heads, 2, rows // heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def hf_forward(t, args, tokens):
    """LlamaForCausalLM's forward as Hugging Face computes it, in float32, on
    the stored (permuted) weights: rotate-half RoPE, repeat_kv, causal
    softmax attention, SwiGLU, RMSNorm."""
    t = {k: v.float() for k, v in t.items()}
    heads, kv_heads = args["n_heads"], args["n_kv_heads"]
    head_dim = args["dim"] // heads
    eps = args["norm_eps"]
    b, s = tokens.shape

    def rms(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rotate_half(x):
        x1, x2 = x[..., :head_dim // 2], x[..., head_dim // 2:]
        return torch.cat((-x2, x1), dim=-1)

    inv_freq = 1.0 / (args["rope_theta"] ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    mask = torch.full((s, s), float("-inf")).triu(1)
    h = t["model.embed_tokens.weight"][tokens]
    for i in range(args["n_layers"]):
        p = f"model.layers.{i}."
        x = rms(h, t[p + "input_layernorm.weight"])
        q = (x @ t[p + "self_attn.q_proj.weight"].T).view(b, s, heads, head_dim).transpose(1, 2)
        k = (x @ t[p + "self_attn.k_proj.weight"].T).view(b, s, kv_heads, head_dim).transpose(1, 2)
        v = (x @ t[p + "self_attn.v_proj.weight"].T).view(b, s, kv_heads, head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
        scores = q @ k.transpose(2, 3) / math.sqrt(head_dim) + mask
        attn = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        h = h + attn @ t[p + "self_attn.o_proj.weight"].T
        x = rms(h, t[p + "post_attention_layernorm.weight"])
        gate = x @ t[p + "mlp.gate_proj.weight"].T
        up = x @ t[p + "mlp.up_proj.weight"].T
        h = h + (torch.nn.functional.silu(gate) * up) @ t[p + "mlp.down_proj.weight"].T
    return rms(h, t["model.norm.weight"]) @ t["lm_head.weight"].T


def check(hf_dir, model_dir, dtype):
    module, args = load_model(model_dir)
    tensors, metadata, files = read_safetensors(hf_dir)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    params = dict(module.named_parameters())
    assert set(tensors) == {hf_name(n) for n in params}, sorted(set(tensors) ^ {hf_name(n) for n in params})
    mismatched = []
    for fqn, p in params.items():
        stored = tensors[hf_name(fqn)]
        assert stored.dtype == torch_dtype, (fqn, stored.dtype)
        if args["rope_style"] != "complex":
            pass
        elif fqn.endswith("attention.wq.weight"):
            stored = unpermute(stored, args["n_heads"])
        elif fqn.endswith("attention.wk.weight"):
            stored = unpermute(stored, args["n_kv_heads"])
        want = p.detach().to(torch_dtype)
        if not torch.equal(stored.view(torch.int16 if dtype == "bfloat16" else torch.int32),
                           want.view(torch.int16 if dtype == "bfloat16" else torch.int32)):
            mismatched.append(fqn)
    print(f"files: {files if files else 'model.safetensors'}")
    print(f"metadata: {metadata}")
    print(f"tensors: {len(tensors)}, un-permuted {'equal' if not mismatched else 'DIFFER: ' + ', '.join(mismatched)}")
    tokens = torch.from_numpy(np.load(os.path.join(model_dir, "tokens.npy")))
    with torch.no_grad():
        # The oracle: the PyTorch model itself, with its weights rounded as
        # the safetensors store them.
        for p in module.parameters():
            p.copy_(p.to(torch_dtype).float())
        want = module(tokens)
        got = hf_forward(tensors, args, tokens)
    err = (got - want).abs().max().item()
    print(f"hf forward vs model logits: max abs diff {err:.1e} {'ok' if err < 1e-4 else 'BAD'}")
    if dtype == "float32":
        exported = torch.from_numpy(np.load(os.path.join(model_dir, "logits.npy")))
        err = (got - exported).abs().max().item()
        print(f"hf forward vs exported logits: {'ok' if err < 1e-4 else 'BAD %g' % err}")
    # The permutation matters: the stored q_proj as if it were titan's wq
    # gives other logits.
    if args["rope_style"] == "complex":
        swapped = dict(tensors)
        for i in range(args["n_layers"]):
            name = f"model.layers.{i}.self_attn.q_proj.weight"
            swapped[name] = unpermute(tensors[name], args["n_heads"])
        with torch.no_grad():
            err = (hf_forward(swapped, args, tokens) - want).abs().max().item()
        print(f"without the permutation: {'differs' if err > 1e-3 else 'SAME (test cannot fail)'}")


def compare(a_dir, b_dir, dtype=None):
    names = sorted(n for n in os.listdir(b_dir) if n.endswith(".npy"))
    assert names and names == sorted(n for n in os.listdir(a_dir) if n.endswith(".npy")), "names differ"
    for name in names:
        a = np.load(os.path.join(a_dir, name))
        b = np.load(os.path.join(b_dir, name))
        if dtype == "bfloat16":  # round to nearest even, as torch does
            bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
            a = bits.astype(np.uint32).view(np.float32)
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            sys.exit(f"MISMATCH {name}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    print(f"identical: {len(names)} tensors")


def write_file(path, header, data, raw_header=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def hostile(out):
    good = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}
    data = np.arange(4, dtype=np.float32).tobytes()
    write_file(f"{out}/good/model.safetensors", good, data)
    # The file ends inside tensor b's data.
    write_file(f"{out}/truncated/model.safetensors", good, data[:12])
    # b starts inside a.
    overlap = dict(good, b={"dtype": "F32", "shape": [2], "data_offsets": [4, 12]})
    write_file(f"{out}/overlap/model.safetensors", overlap, data[:12])
    # A dtype titan does not read.
    bad = dict(good, b={"dtype": "F8_E4M3", "shape": [8], "data_offsets": [8, 16]})
    write_file(f"{out}/dtype/model.safetensors", bad, data)
    # Offsets past the end of the file.
    past = dict(good, b={"dtype": "F32", "shape": [2], "data_offsets": [8, 1 << 40]})
    write_file(f"{out}/past-end/model.safetensors", past, data)
    # A header length far larger than the file.
    os.makedirs(f"{out}/huge-header", exist_ok=True)
    with open(f"{out}/huge-header/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", 1 << 62) + b"{}")
    # Deeply nested JSON (llvm::json's parser recurses per level).
    write_file(f"{out}/deep/model.safetensors", None, b"", raw_header=b"{\"x\":" + b"[" * 100000 + b"]" * 100000 + b"}")
    # A key twice (JSON parsers keep one silently).
    dup = b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}'
    write_file(f"{out}/duplicate/model.safetensors", None, data, raw_header=dup)
    # An index that points outside its folder.
    os.makedirs(f"{out}/escape", exist_ok=True)
    with open(f"{out}/escape/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {}, "weight_map": {"a": "../good/model.safetensors"}}, f)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"make-npy": make_npy, "config": config, "check": check, "compare": compare,
     "hostile": hostile}[cmd](*args)


if __name__ == "__main__":
    main()
