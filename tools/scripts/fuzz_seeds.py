"""Writes the seed corpora of titan's fuzzers (tools/scripts/fuzz.sh) from
the test inputs: one folder per fuzzer under OUT.

  npy            the DCP oracle's reference tensors (test/Checkpoint) and a
                 few more dtypes and shapes
  dcp-metadata   .metadata of a checkpoint PyTorch 1.13 saves, and the same
                 as PyTorch 2.x pickles it
  torch-save     the chunks of that checkpoint (torch.save blobs) and
                 torch.save of strided, offset and 0-d tensors
  pickle         the data.pkl of every torch.save seed, both .metadata files
                 and benign pickles of every protocol
  train-config   the TOML configs under models/ and test/
  mlir           the .mlir tests under test/, split at their `// -----`
                 markers

Usage: fuzz_seeds.py REPO OUT (run with Debian's python3)
"""

import collections
import glob
import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import zipfile


def write(out, kind, name, data):
    os.makedirs(os.path.join(out, kind), exist_ok=True)
    with open(os.path.join(out, kind, name), "wb") as f:
        f.write(data)


def data_pkl(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return next(archive.read(n) for n in archive.namelist()
                    if n.endswith("/data.pkl"))


def checkpoint_seeds(repo, out, tmp):
    oracle = os.path.join(repo, "test", "Checkpoint", "Inputs",
                          "dcp_oracle.py")
    npydir, ckpt = os.path.join(tmp, "npy"), os.path.join(tmp, "ckpt")
    os.makedirs(npydir)
    for command in (["make-npy", npydir], ["torch-save", npydir, ckpt]):
        subprocess.run([sys.executable, oracle, *command], check=True)
    for path in sorted(glob.glob(os.path.join(npydir, "*.npy"))):
        with open(path, "rb") as f:
            write(out, "npy", os.path.basename(path), f.read())

    sys.path.insert(0, os.path.join(repo, "tools", "scripts"))
    import torch113_compat  # noqa: F401
    import torch
    with open(os.path.join(ckpt, ".metadata"), "rb") as f:
        metadata_bytes = f.read()
    metadata = pickle.loads(metadata_bytes)
    write(out, "dcp-metadata", "torch113.metadata", metadata_bytes)
    write(out, "pickle", "torch113.metadata", metadata_bytes)
    for i, info in enumerate(metadata.storage_data.values()):
        with open(os.path.join(ckpt, info.relative_path), "rb") as f:
            f.seek(info.offset)
            blob = f.read(info.length)
        write(out, "torch-save", f"chunk{i}.pt", blob)
        write(out, "pickle", f"chunk{i}.pkl", data_pkl(blob))

    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tensors = {
        "strided": base.t(),
        "offset": base[1:, 2:],
        "scalar": torch.tensor(3.5, dtype=torch.float64),
        "bf16": base.to(torch.bfloat16),
        "f16": base.to(torch.float16),
        "i32": base.to(torch.int32),
        "empty": torch.zeros(0, 3),
    }
    for name, tensor in tensors.items():
        buffer = io.BytesIO()
        torch.save(tensor, buffer)
        write(out, "torch-save", f"{name}.pt", buffer.getvalue())
        write(out, "pickle", f"{name}.pkl", data_pkl(buffer.getvalue()))

    subprocess.run([sys.executable, oracle, "as-torch2", ckpt], check=True)
    with open(os.path.join(ckpt, ".metadata"), "rb") as f:
        metadata_bytes = f.read()
    write(out, "dcp-metadata", "torch2.metadata", metadata_bytes)
    write(out, "pickle", "torch2.metadata", metadata_bytes)


def npy_seeds(out):
    import numpy as np
    arrays = {
        "f64-0d": np.array(2.5),
        "f16": np.ones((2, 3), np.float16),
        "i32-empty": np.zeros((0, 4), np.int32),
        "u2": np.arange(5, dtype=np.uint16),
        "i64-3d": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    }
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, array)
        write(out, "npy", f"{name}.npy", buffer.getvalue())


def pickle_seeds(out):
    shared = [1, 2.5, "s"]
    value = collections.OrderedDict(
        a=(1, -2, 2**40, 2**70), b=[shared, shared], c={"k": b"\x00\xff"},
        d=None, e=True, f=1e300)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        write(out, "pickle", f"benign-p{protocol}.pkl",
              pickle.dumps(value, protocol=protocol))


def text_seeds(repo, out):
    configs = glob.glob(os.path.join(repo, "models", "*", "train_configs",
                                     "*.toml"))
    configs += glob.glob(os.path.join(repo, "test", "**", "*.toml"),
                         recursive=True)
    for path in sorted(configs):
        name = os.path.relpath(path, repo).replace(os.sep, "_")
        with open(path, "rb") as f:
            write(out, "train-config", name, f.read())
    for path in sorted(glob.glob(os.path.join(repo, "test", "**", "*.mlir"),
                                 recursive=True)):
        name = os.path.relpath(path, repo).replace(os.sep, "_")
        with open(path, "rb") as f:
            parts = f.read().split(b"\n// -----")
        for i, part in enumerate(parts):
            write(out, "mlir", f"{name}.{i}", part)


def main(repo, out):
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint_seeds(repo, out, tmp)
    npy_seeds(out)
    pickle_seeds(out)
    text_seeds(repo, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
