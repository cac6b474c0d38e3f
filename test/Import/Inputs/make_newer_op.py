"""Saves a scripted model whose code calls an operator of a newer PyTorch
than the linked LibTorch has (torch._grouped_mm, PyTorch 2.8), as a
model saved by that PyTorch would: the module is scripted with a call to
torch.relu, and the saved code's call is renamed.

usage: make_newer_op.py OUT.pt
"""

import sys
import zipfile

import torch


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 2


def main() -> None:
    out = sys.argv[1]
    torch.jit.script(Model()).save(out + ".tmp")
    with zipfile.ZipFile(out + ".tmp") as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename.endswith("code/__torch__.py"):
                assert b"torch.relu(" in data
                data = data.replace(b"torch.relu(", b"torch._grouped_mm(")
            target.writestr(item, data)


if __name__ == "__main__":
    main()
