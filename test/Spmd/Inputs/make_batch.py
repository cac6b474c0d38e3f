"""Writes a deterministic batch into a training-state directory.

usage: make_batch.py STATE_DIR BATCH SEQ VOCAB [--seed S]

tokens.npy and labels.npy (int64 [BATCH, SEQ]); labels are the next token,
and the last position of every other row is ignored (-100), so ranks that
hold different rows count different numbers of labels.
"""

import argparse
import os
from typing import List, Optional

import numpy as np


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("state")
    parser.add_argument("batch", type=int)
    parser.add_argument("seq", type=int)
    parser.add_argument("vocab", type=int)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.RandomState(args.seed)
    tokens = rng.randint(0, args.vocab, size=(args.batch, args.seq)).astype(np.int64)
    labels = np.roll(tokens, -1, axis=1)
    labels[::2, -1] = -100
    np.save(os.path.join(args.state, "tokens.npy"), tokens)
    np.save(os.path.join(args.state, "labels.npy"), labels)


if __name__ == "__main__":
    main()
