"""Lets Debian's PyTorch 1.13 import torch.distributed under Python 3.11.

Its dataclasses (torch.distributed._shard, .checkpoint) use mutable defaults
(torch.Size() etc.), which Python 3.11 refuses. Importing this module before
torch turns such a default into a default_factory.
"""

import dataclasses

_get_field = dataclasses._get_field


def _patched_get_field(cls, name, type_, *args):
    try:
        return _get_field(cls, name, type_, *args)
    except ValueError:
        default = cls.__dict__.get(name)
        setattr(cls, name, dataclasses.field(default_factory=lambda: default))
        return _get_field(cls, name, type_, *args)


dataclasses._get_field = _patched_get_field
