"""Rewrites a checkpoint's .metadata with another pickle protocol.

Usage:
  repickle.py CKPT OUT PROTOCOL   copy CKPT to OUT with its .metadata
                                  pickled again by Python with PROTOCOL
  repickle.py hostile OUT         OUT/.metadata: a protocol-0 pickle that
                                  calls os.system, and OUT/odd/.metadata:
                                  one that calls copyreg._reconstructor
                                  with another base than object
"""

import os
import pickle
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "tools", "scripts"))
import torch113_compat  # noqa: F401,E402
import torch.distributed._shard.checkpoint  # noqa: F401,E402


def main():
    if sys.argv[1] == "hostile":
        out = sys.argv[2]
        os.makedirs(os.path.join(out, "odd"), exist_ok=True)
        with open(os.path.join(out, ".metadata"), "wb") as f:
            f.write(b"cos\nsystem\n(S'echo owned'\ntR.")
        with open(os.path.join(out, "odd", ".metadata"), "wb") as f:
            f.write(b"ccopy_reg\n_reconstructor\n(ctorch\nSize\nctorch\nSize\n"
                    b"Ntp0\nRp1\n.")
        return
    ckpt, out, protocol = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shutil.copytree(ckpt, out)
    with open(os.path.join(ckpt, ".metadata"), "rb") as f:
        metadata = pickle.load(f)
    with open(os.path.join(out, ".metadata"), "wb") as f:
        pickle.dump(metadata, f, protocol=protocol)


if __name__ == "__main__":
    main()
