"""Checks the results of Inputs/collectives.mlir's executable (2 ranks,
--dump-results DUMP) against numpy, for x = arange(48) reshaped [8, 6].

usage: check_collectives.py DUMP
"""

import sys

import numpy as np


def main() -> int:
    dump = sys.argv[1]
    x = np.arange(48, dtype=np.float32).reshape(8, 6)
    shards = [x[:4], x[4:]]
    expected = lambda r: {
        "gathered": np.concatenate(shards, axis=1),
        "scattered": (shards[0] + shards[1])[:, 3 * r:3 * r + 3],
        "max": np.maximum(shards[0], shards[1]),
        "index": np.array(r, dtype=np.int64),
        "exchanged": np.concatenate([s[:, 3 * r:3 * r + 3] for s in shards]),
        "root1": shards[1],
    }
    for rank in range(2):
        for name, value in expected(rank).items():
            actual = np.load(f"{dump}/rank{rank}/{name}.npy")
            if not np.array_equal(actual, value):
                print(f"MISMATCH rank {rank} {name}:\n{actual}\nexpected\n{value}")
                return 1
            print(f"rank {rank} {name} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
