"""PyTorch 1.13 oracle for titan's DCP tests (run with Debian's python3).

Subcommands:
  make-npy NPYDIR            write the reference tensors as .npy files
  torch-save NPYDIR CKPT     write the reference tensors and a non-tensor
                             value as a DCP checkpoint
  as-torch2 CKPT             rewrite CKPT/.metadata as PyTorch 2.x pickles it
                             (2.x module paths and fields, with stand-ins
                             for the 2.x classes, which 1.13 lacks)
  load-full CKPT NPYDIR      load every tensor whole, compare with NPYDIR
  load-resharded CKPT NPYDIR load every tensor as a 3-per-dimension grid of
                             boxes, compare with NPYDIR
  compare NPYDIR EXPECTED    compare two directories of .npy files
  structure CKPT FLAVOR      check the .metadata pickle's classes and fields
                             without importing torch.distributed

bfloat16 tensors are .npy files of dtype uint16 holding the raw bits.
"""

import itertools
import os
import pickle
import pickletools
import sys

import numpy as np

# Lets torch 1.13 import torch.distributed under Python 3.11 (before torch).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tools", "scripts"))
import torch113_compat  # noqa: E402,F401


def reference():
    rng = np.random.default_rng(0)
    return {
        "tok_embeddings.weight": rng.standard_normal((10, 6)).astype(np.float32),
        "layers.0.attention.wq.weight":
            (rng.standard_normal((7, 5)).astype(np.float32).view(np.uint32) >> 16)
            .astype(np.uint16),
        "layers.0.ffn_norm.weight": rng.standard_normal(5).astype(np.float16),
        "optimizer.state.norm.weight.step": np.array(12, dtype=np.int64),
        "norm.weight": rng.standard_normal(4).astype(np.float64),
    }


def to_torch(array):
    import torch
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def to_numpy(tensor):
    import torch
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.numpy()


def expect_equal(name, actual, expected):
    if actual.dtype != expected.dtype or actual.shape != expected.shape \
            or not (actual == expected).all():
        sys.exit(f"MISMATCH {name}: {actual.dtype}{actual.shape} vs "
                 f"{expected.dtype}{expected.shape}")


def make_npy(npydir):
    for fqn, array in reference().items():
        np.save(f"{npydir}/{fqn}.npy", array)


def torch_save(npydir, ckpt):
    import torch.distributed._shard.checkpoint as dcp
    state = {fqn: to_torch(np.load(f"{npydir}/{fqn}.npy"))
             for fqn in reference()}
    state["train_state"] = {"step": 12, "lr": 0.5}
    dcp.save_state_dict(state, dcp.FileSystemWriter(ckpt), no_dist=True)


def as_torch2(ckpt):
    import enum
    import pathlib
    import types
    import torch.distributed._shard.checkpoint as dcp
    old = dcp.FileSystemReader(ckpt).read_metadata()

    modules = {}
    for name in ["torch.distributed.checkpoint",
                 "torch.distributed.checkpoint.metadata",
                 "torch.distributed.checkpoint.filesystem"]:
        modules[name] = sys.modules[name] = types.ModuleType(name)
    metadata_module = modules["torch.distributed.checkpoint.metadata"]

    def stand_in(module, name, **members):
        cls = type(name, (), {"__module__": module, **members})
        setattr(modules[module], name, cls)
        return cls

    def make(cls, **fields):
        obj = cls.__new__(cls)
        obj.__dict__.update(fields)
        return obj

    mem_format = enum.Enum("_MEM_FORMAT_ENCODING",
                           [("TORCH_CONTIGUOUS_FORMAT", 0)],
                           module=metadata_module.__name__)
    metadata_module._MEM_FORMAT_ENCODING = mem_format
    md = "torch.distributed.checkpoint.metadata"
    properties_cls = stand_in(md, "TensorProperties", __getstate__=lambda self: (
        self.dtype, torch.strided, False, mem_format.TORCH_CONTIGUOUS_FORMAT,
        False))
    tensor_cls = stand_in(md, "TensorStorageMetadata")
    chunk_cls = stand_in(md, "ChunkStorageMetadata")
    bytes_cls = stand_in(md, "BytesStorageMetadata")
    index_cls = stand_in(md, "MetadataIndex")
    storage_meta_cls = stand_in(md, "StorageMeta")
    metadata_cls = stand_in(md, "Metadata")
    info_cls = stand_in("torch.distributed.checkpoint.filesystem",
                        "_StorageInfo")

    import torch
    state_dict_metadata = {}
    for fqn, entry in old.state_dict_metadata.items():
        if not hasattr(entry, "chunks"):
            state_dict_metadata[fqn] = bytes_cls()
            continue
        properties = make(properties_cls, dtype=entry.properties.dtype)
        state_dict_metadata[fqn] = make(
            tensor_cls, properties=properties, size=entry.size,
            chunks=[make(chunk_cls, offsets=c.offsets, sizes=c.sizes)
                    for c in entry.chunks])
    storage_data = {}
    for index, info in old.storage_data.items():
        fields = {"fqn": index.fqn, "index": index.index}
        if index.offset is not None:
            fields["offset"] = index.offset
        storage_data[make(index_cls, **fields)] = make(
            info_cls, relative_path=info.relative_path, offset=info.offset,
            length=info.length, transform_descriptors=None)
    new = make(metadata_cls, state_dict_metadata=state_dict_metadata,
               planner_data=None, storage_data=storage_data,
               storage_meta=make(storage_meta_cls,
                                 checkpoint_id=pathlib.PosixPath(ckpt),
                                 save_id="0", load_id=None, modules=[]),
               version="1.0.0")
    with open(f"{ckpt}/.metadata", "wb") as f:
        pickle.dump(new, f)


def load_full(ckpt, npydir):
    import torch
    import torch.distributed._shard.checkpoint as dcp
    metadata = dcp.FileSystemReader(ckpt).read_metadata()
    # A bytes entry (BytesStorageMetadata) loads as the object torch.save
    # stored; its placeholder here is replaced.
    state = {fqn: torch.zeros(md.size, dtype=md.properties.dtype)
             if hasattr(md, "size") else None
             for fqn, md in metadata.state_dict_metadata.items()}
    dcp.load_state_dict(state, dcp.FileSystemReader(ckpt), no_dist=True)
    for fqn, value in sorted(state.items()):
        expected = np.load(f"{npydir}/{fqn}.npy")
        if not isinstance(value, torch.Tensor):
            if type(value) is not int or value != expected:
                sys.exit(f"MISMATCH {fqn}: {value!r} vs {expected}")
            print(f"full {fqn} int {value} ok")
            continue
        expect_equal(fqn, to_numpy(value), expected)
        print(f"full {fqn} {tuple(value.shape)} {value.dtype} ok")


def load_resharded(ckpt, npydir):
    import torch
    import torch.distributed._shard.checkpoint as dcp
    from torch.distributed._shard.checkpoint.default_planner import \
        DefaultLoadPlanner
    from torch.distributed._shard.checkpoint.planner import LoadPlan
    from torch.distributed._shard.checkpoint.planner_helpers import \
        _create_sharded_read_items
    from torch.distributed._shard.metadata import ShardMetadata
    from torch.distributed._shard.sharded_tensor import Shard

    class BoxPlanner(DefaultLoadPlanner):
        """Loads each tensor into a list of boxes (the shards of a rank)."""

        def __init__(self, shards):
            self.shards = shards

        def create_local_plan(self):
            items = []
            for fqn, shards in self.shards.items():
                items += _create_sharded_read_items(
                    fqn, self.metadata.state_dict_metadata[fqn], shards)
            return LoadPlan(items)

        def lookup_tensor(self, index):
            return self.shards[index.fqn][index.index].tensor

    metadata = dcp.FileSystemReader(ckpt).read_metadata()
    shards = {}
    for fqn, md in metadata.state_dict_metadata.items():
        if not hasattr(md, "size"):
            continue  # A bytes entry has no boxes.
        per_dim = []
        for n in md.size:
            step = -(-n // 3)
            per_dim.append([(o, min(step, n - o)) for o in range(0, n, step)])
        shards[fqn] = [
            Shard(torch.zeros([s for _, s in cell], dtype=md.properties.dtype),
                  ShardMetadata([o for o, _ in cell], [s for _, s in cell],
                                "rank:0/cpu"))
            for cell in itertools.product(*per_dim)]
    dcp.load_state_dict({fqn: None for fqn in shards},
                        dcp.FileSystemReader(ckpt), no_dist=True,
                        planner=BoxPlanner(shards))
    for fqn, boxes in sorted(shards.items()):
        expected = np.load(f"{npydir}/{fqn}.npy")
        for shard in boxes:
            md = shard.metadata
            region = tuple(slice(o, o + n) for o, n in
                           zip(md.shard_offsets, md.shard_sizes))
            expect_equal(f"{fqn}{list(md.shard_offsets)}",
                         to_numpy(shard.tensor), expected[region])
        print(f"resharded {fqn} into {len(boxes)} boxes ok")


def compare(npydir, expected_dir):
    for fqn, array in sorted(reference().items()):
        expect_equal(fqn, np.load(f"{npydir}/{fqn}.npy"),
                     np.load(f"{expected_dir}/{fqn}.npy"))
        print(f"same {fqn}")


class Record:
    """Stands for any object of a pickle: its class, call args and state."""

    def __init__(self, qualname, args=()):
        self.qualname, self.args, self.state = qualname, args, None

    def __setstate__(self, state):
        self.state = state


class Global:
    """Stands for a global reference of a pickle (a class, function, dtype)."""

    def __init__(self, qualname):
        self.qualname = qualname


class RecordingUnpickler(pickle.Unpickler):
    """Unpickles without importing anything: each global becomes a class
    standing for it (a Global subclass with its qualname), and calling it
    records a Record."""

    def find_class(self, module, name):
        qualname = f"{module}.{name}"

        class StandIn(Global):
            def __new__(cls, *args):
                return Record(qualname, args)

        StandIn.qualname = qualname
        return StandIn


def structure(ckpt, flavor):
    data = open(f"{ckpt}/.metadata", "rb").read()
    prefix = {"torch2": "torch.distributed.checkpoint",
              "torch1.13": "torch.distributed._shard.checkpoint"}[flavor]
    globals_ = set()
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL":
            globals_.add(arg.replace(" ", "."))
    print("globals:", " ".join(sorted(globals_)))
    metadata = RecordingUnpickler(__import__("io").BytesIO(data)).load()
    assert metadata.qualname == f"{prefix}.metadata.Metadata", metadata.qualname
    assert sorted(metadata.state) == ["planner_data", "state_dict_metadata",
                                      "storage_data"], metadata.state
    for fqn, md in sorted(metadata.state["state_dict_metadata"].items()):
        if md.qualname == f"{prefix}.metadata.BytesStorageMetadata":
            print(f"bytes {fqn}")
            continue
        assert md.qualname == f"{prefix}.metadata.TensorStorageMetadata"
        assert sorted(md.state) == ["chunks", "properties", "size"]
        props = md.state["properties"]
        assert props.qualname == \
            "torch.distributed._shard.sharded_tensor.metadata.TensorProperties"
        dtype, layout, requires_grad, memory_format, pin_memory = props.state
        size = md.state["size"]
        assert size.qualname == "torch.Size"
        chunks = []
        for chunk in md.state["chunks"]:
            assert chunk.qualname == f"{prefix}.metadata.ChunkStorageMetadata"
            assert sorted(chunk.state) == ["offsets", "sizes"]
            chunks.append((list(chunk.state["offsets"].args[0]),
                           list(chunk.state["sizes"].args[0])))
        print(f"tensor {fqn} {dtype.qualname} {list(size.args[0])} "
              f"layout={layout.qualname}{layout.args} "
              f"memory_format={memory_format.args[0].qualname}."
              f"{memory_format.args[1]} chunks={chunks}")
    for index, info in metadata.state["storage_data"].items():
        assert index.qualname == f"{prefix}.metadata.MetadataIndex"
        assert info.qualname == f"{prefix}.filesystem._StorageInfo"
        assert sorted(info.state) == ["length", "offset", "relative_path"]
        offset = index.state.get("offset")
        print(f"storage {index.state['fqn']} "
              f"{list(offset.args[0]) if offset else None} "
              f"index={index.state['index']} -> "
              f"{info.state['relative_path']}")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"make-npy": make_npy, "torch-save": torch_save, "as-torch2": as_torch2, "load-full": load_full,
     "load-resharded": load_resharded, "compare": compare,
     "structure": structure}[command](*args)
