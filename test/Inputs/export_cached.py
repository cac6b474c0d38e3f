#!/usr/bin/env python3
"""models/export.py for the regression tests, each distinct export made once.

Takes export.py's arguments. The first test to ask for an export (the same
arguments but --out, the same sources under models/, the same torch) runs
export.py into a cache folder and renames it into place when complete; the
tests after it copy that folder to their --out. Its output is replayed, so
a test sees what export.py printed. About a hundred tests export one of
~25 distinct models; each export costs ~2 s of CPU (importing torch,
tracing, saving).

The cache folder is the first argument: export_cached.py CACHE ARGS...
An entry is named by the digest of models/ and of the rest; making one
removes those of other models/ sources, which no test asks for again.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")


def sources_digest() -> str:
    """A digest of every Python source under models/ (export.py and the
    model definitions it imports)."""
    digest = hashlib.sha256()
    for folder, subfolders, files in sorted(os.walk(MODELS)):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, MODELS).encode())
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()


def torch_digest() -> str:
    """torch's version file (read, not imported: importing takes ~1 s)."""
    spec = importlib.util.find_spec("torch")
    path = os.path.join(os.path.dirname(spec.origin), "version.py") if spec and spec.origin else ""
    if not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def split_out(args: list[str]) -> tuple[list[str], str]:
    """export.py's arguments without --out, and --out's value."""
    rest, out = [], None
    i = 0
    while i < len(args):
        if args[i] == "--out" and i + 1 < len(args):
            out = args[i + 1]
            i += 2
        elif args[i].startswith("--out="):
            out = args[i][len("--out="):]
            i += 1
        else:
            rest.append(args[i])
            i += 1
    if out is None:
        sys.exit("export_cached.py: export.py needs --out DIR")
    return rest, out


def main() -> None:
    cache, args = sys.argv[1], sys.argv[2:]
    rest, out = split_out(args)
    sources = sources_digest()[:16]
    export = hashlib.sha256("\0".join([torch_digest(), sys.version] + rest).encode()).hexdigest()[:16]
    entry = os.path.join(cache, sources + "-" + export)
    if not os.path.isdir(entry):
        os.makedirs(cache, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=os.path.basename(entry) + ".", dir=cache)
        model = os.path.join(staging, "model")
        done = subprocess.run([sys.executable, os.path.join(MODELS, "export.py"), *rest, "--out", model],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            # Not cached: the test sees the failure as export.py reported it.
            shutil.rmtree(staging, ignore_errors=True)
            sys.stdout.write(done.stdout)
            sys.stderr.write(done.stderr)
            sys.exit(done.returncode)
        with open(os.path.join(staging, "stdout"), "w") as f:
            f.write(done.stdout.replace(model, "{out}"))
        try:
            os.rename(staging, entry)
        except OSError:
            # Another test made the same export at the same time.
            shutil.rmtree(staging, ignore_errors=True)
        # Exports (and unfinished ones) of models/ sources that changed
        # since are never used again.
        for name in os.listdir(cache):
            if not name.startswith(sources + "-"):
                shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
    shutil.copytree(os.path.join(entry, "model"), out, dirs_exist_ok=True)
    with open(os.path.join(entry, "stdout")) as f:
        sys.stdout.write(f.read().replace("{out}", out))


if __name__ == "__main__":
    main()
