"""PyTorch's validation loss of a titan job's checkpoints, as torchtitan's
Validator computes it, against the losses the job logged.

usage: validation_oracle.py METRICS.jsonl IDS.npy BATCH SEQ BATCHES
       STEP=STATE_DIR... [--model MODEL.pt] [--rtol R]

The model is make_dropout_lm.DropoutLM (its dropout p = 0.25), or with
--model the model of an export of models/export.py (built from its class
with the arguments its export.json records): its parameters loaded from
STATE_DIR (titan-ckpt load's global .npy files of the checkpoint of step
STEP) and run under model.eval() and torch.no_grad(). The validation data IDS.npy is a 1-d array of token ids cut
as titan's data loader cuts a dataset: windows of SEQ + 1 ids without
overlap, BATCH windows per batch, batch b starting at window b * BATCH
(tokens: a window's first SEQ ids, labels: its last SEQ; a last batch
holds the whole windows left). The loss of each
step is the mean over BATCHES batches of each batch's mean token
cross-entropy. The job's metrics line with that step's `validation_loss`
must agree to --rtol, and where the model has dropout, the model in
training mode must not (a validation that kept dropout would fail); prints
both and "match" or "MISMATCH".
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools", "scripts"))
from make_dropout_lm import DropoutLM  # noqa: E402
from torch_reads_checkpoint import build_eager  # noqa: E402


def validation_loss(model, ids, batch, seq, batches) -> float:
    window = seq + 1
    losses = []
    with torch.no_grad():
        for b in range(batches):
            rows = [ids[(b * batch + r) * window:(b * batch + r + 1) * window] for r in range(batch)]
            # A last batch of a pass over the data holds the whole windows left.
            rows = [row for row in rows if len(row) == window]
            data = torch.from_numpy(np.stack(rows).astype(np.int64))
            logits = model(data[:, :seq])
            losses.append(F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                          data[:, 1:].reshape(-1)).item())
    return sum(losses) / len(losses)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("ids")
    parser.add_argument("batch", type=int)
    parser.add_argument("seq", type=int)
    parser.add_argument("batches", type=int)
    parser.add_argument("states", nargs="+")
    parser.add_argument("--model")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    logged = {}
    with open(args.metrics) as f:
        for line in f:
            record = json.loads(line)
            if "validation_loss" in record:
                logged[record["step"]] = record["validation_loss"]
    ids = np.load(args.ids)
    ok = True
    for spec in args.states:
        step, folder = spec.split("=", 1)
        model = build_eager(args.model) if args.model else DropoutLM()
        state = model.state_dict()
        for name, _ in model.named_parameters():
            state[name] = torch.from_numpy(np.load(os.path.join(folder, name + ".npy")))
        model.load_state_dict(state)
        model.eval()
        expected = validation_loss(model, ids, args.batch, args.seq, args.batches)
        has_dropout = any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())
        model.train()
        torch.manual_seed(0)
        with_dropout = validation_loss(model, ids, args.batch, args.seq, args.batches)
        got = logged.get(int(step))
        if got is None:
            print(f"step {step}: the job logged no validation loss")
            ok = False
            continue
        error = abs(got - expected) / abs(expected)
        dropout_error = abs(with_dropout - expected) / abs(expected)
        good = error <= args.rtol and (not has_dropout or args.rtol < dropout_error)
        ok = ok and good
        print(f"step {step}: titan {got:.6f} PyTorch {expected:.6f} "
              f"(relative error {error:.1e}"
              f"{f'; {dropout_error:.1e} with dropout' if has_dropout else ''}) "
              f"{'match' if good else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
