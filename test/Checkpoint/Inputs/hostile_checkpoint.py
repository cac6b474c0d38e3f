"""Hostile inputs for the tests of what titan-ckpt refuses (run with
Debian's python3; needs no torch).

  hostile_checkpoint.py npy FILE DESCR SHAPE BYTES
      writes an .npy file whose header says DESCR and SHAPE (e.g.
      "(2, 3)"), followed by BYTES zero bytes
  hostile_checkpoint.py corrupt FILE
      flips the last byte of the chunk data of 7.0s in a data file
  hostile_checkpoint.py KIND CKPT
      rewrites a checkpoint titan wrote into a hostile variant

CKPT holds one float32 tensor 'w' of shape [2, 4], saved whole. KIND:
  huge-shape    .metadata claims 'w' is [10000000000, 4] (one chunk)
  wrap-bytes    'w' is [2^61+1, 2], stored in a blob that claims that shape
                over 8 bytes of storage: 4 * (2^62+2) bytes wrap to 8
  negative-dim  'w' has shape [0, -5] and no chunks
  complex       'w' has dtype torch.complex64
  dag           one list of 2000 chunks shared by 2000 tensor entries (a
                pickle DAG of ~100 KB that expands to 4 million chunks)
"""

import io
import pickle
import struct
import sys
import types
import zipfile


from dcp_oracle import Global, Record, RecordingUnpickler  # noqa: E402


_globals = {}


def global_object(qualname):
    """An object that pickles as GLOBAL `qualname`: the real one where the
    module exists here (builtins, collections), else a stand-in class in a
    stand-in module."""
    module, name = qualname.rsplit(".", 1)
    if module in ("builtins", "collections"):
        return getattr(sys.modules[module], name)
    if qualname not in _globals:
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]),
                                   types.ModuleType(".".join(parts[:i])))
        cls = type(name, (), {"__module__": module, "__qualname__": name})
        setattr(sys.modules[module], name, cls)
        _globals[qualname] = cls
    return _globals[qualname]


class Repickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, type) and issubclass(obj, Global):
            return NotImplemented
        if isinstance(obj, Record):
            # REDUCE (then BUILD with the state), which titan reads as it
            # reads NEWOBJ.
            return global_object(obj.qualname), tuple(obj.args), obj.state
        return NotImplemented

    def persistent_id(self, obj):
        return obj.id if isinstance(obj, Storage) else None


class Storage:
    def __init__(self, id_):
        self.id = id_


def dumps(root):
    """Pickles a tree of Records (protocol 2), globals as stand-ins."""

    def convert(value, seen):
        # Replace recorded global classes by their stand-in objects.
        if id(value) in seen:
            return seen[id(value)]
        if isinstance(value, type) and issubclass(value, Global):
            result = global_object(value.qualname)
        elif isinstance(value, Global):
            result = global_object(value.qualname)
        elif isinstance(value, Record):
            result = Record(value.qualname)
            seen[id(value)] = result
            result.args = tuple(convert(a, seen) for a in value.args)
            result.state = (None if value.state is None
                            else convert(value.state, seen))
            return result
        elif isinstance(value, list):
            result = []
            seen[id(value)] = result
            result.extend(convert(v, seen) for v in value)
            return result
        elif isinstance(value, tuple):
            result = tuple(convert(v, seen) for v in value)
        elif isinstance(value, dict):
            result = {}
            seen[id(value)] = result
            for k, v in value.items():
                result[convert(k, seen)] = convert(v, seen)
            return result
        else:
            return value
        seen[id(value)] = result
        return result

    out = io.BytesIO()
    Repickler(out, protocol=2, fix_imports=False).dump(convert(root, {}))
    return out.getvalue()


def size(values):
    return Record("torch.Size", (tuple(values),))


def main(kind, ckpt):
    with open(f"{ckpt}/.metadata", "rb") as f:
        metadata = RecordingUnpickler(f).load()
    state_dict = metadata.state["state_dict_metadata"]
    storage = metadata.state["storage_data"]
    w = state_dict["w"]
    chunk = w.state["chunks"][0]
    if kind == "huge-shape":
        w.state["size"] = size([10000000000, 4])
        chunk.state["sizes"] = size([10000000000, 4])
    elif kind == "wrap-bytes":
        shape = [2**61 + 1, 2]
        w.state["size"] = size(shape)
        chunk.state["sizes"] = size(shape)
        # A torch.save blob of that shape over 8 bytes of storage.
        rebuild = Record("torch._utils._rebuild_tensor_v2",
                         (Storage(("storage",
                                   global_object("torch.FloatStorage"), "0",
                                   "cpu", shape[0] * shape[1])),
                          0, tuple(shape), (2, 1), False,
                          Record("collections.OrderedDict")))
        blob = io.BytesIO()
        with zipfile.ZipFile(blob, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", dumps(rebuild))
            z.writestr("archive/data/0", b"\0" * 8)
            z.writestr("archive/version", "3\n")
        with open(f"{ckpt}/__9_0.distcp", "wb") as f:
            f.write(blob.getvalue())
        for info in storage.values():
            info.state["relative_path"] = "__9_0.distcp"
            info.state["offset"] = 0
            info.state["length"] = len(blob.getvalue())
    elif kind == "negative-dim":
        w.state["size"] = size([0, -5])
        w.state["chunks"] = []
        storage.clear()
    elif kind == "complex":
        w.state["properties"].state = (
            Global("torch.complex64"),) + w.state["properties"].state[1:]
    elif kind == "dag":
        chunks = [Record(chunk.qualname) for _ in range(2000)]
        for i, c in enumerate(chunks):
            c.state = {"offsets": size([i, 0]), "sizes": size([1, 4])}
        for i in range(2000):
            entry = Record(w.qualname)
            entry.state = dict(w.state, chunks=chunks)
            state_dict[f"w{i}"] = entry
    else:
        sys.exit(f"unknown kind {kind}")
    data = dumps(metadata)
    with open(f"{ckpt}/.metadata", "wb") as f:
        f.write(data)


def npy(path, descr, shape, data_bytes):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                header.encode() + b"\0" * int(data_bytes))


def corrupt(path):
    data = bytearray(open(path, "rb").read())
    sevens = struct.pack("<f", 7.0) * 4
    at = data.find(sevens)
    assert at >= 0, "no chunk of 7.0s"
    data[at + len(sevens) - 1] ^= 0xff
    open(path, "wb").write(bytes(data))


if __name__ == "__main__":
    if sys.argv[1] == "npy":
        npy(*sys.argv[2:])
    elif sys.argv[1] == "corrupt":
        corrupt(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
