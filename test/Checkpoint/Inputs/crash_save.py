"""Saves a checkpoint over another one while killing the save or filling the
disk under it (with the LD_PRELOAD library FaultInjection.cpp), and checks
that the folder always loads one whole checkpoint: the old one until the new
.metadata is in place, the new one after.

Usage: crash_save.py TITAN_CKPT FAULT_LIB PLAN OLD_STATE NEW_STATE WORK
  OLD_STATE, NEW_STATE: folders of .npy files (titan-ckpt save --from).

Prints one line per part:
  kill: N points, A loaded the old checkpoint, B the new one, ...
  no space: ...
"""

import os
import shutil
import subprocess
import sys

import numpy as np


def run(args, env=None):
    return subprocess.run(args, env=env, capture_output=True, text=True)


def loads_as(ckpt_tool, plan, ckpt, work, states):
    """The name of the state in `states` that `ckpt` loads as, or None."""
    out = os.path.join(work, "loaded")
    shutil.rmtree(out, ignore_errors=True)
    result = run([ckpt_tool, "load", "--plan", plan, "--from", ckpt,
                  "--to", out])
    if result.returncode != 0:
        return "unloadable: " + result.stderr.strip()
    for name, folder in states.items():
        if all(
            np.load(os.path.join(folder, f)).tobytes()
            == np.load(os.path.join(out, f)).tobytes()
            for f in os.listdir(out)
        ):
            return name
    return "mixed"


def files_of(ckpt):
    return sorted(os.listdir(ckpt))


def main():
    ckpt_tool, fault_lib, plan, old, new, work = sys.argv[1:7]
    states = {"old": old, "new": new}
    base = os.path.join(work, "base")
    save = [ckpt_tool, "save", "--plan", plan, "--to"]
    result = run(save + [base, "--from", old])
    assert result.returncode == 0, result.stderr
    base_files = files_of(base)
    ckpt = os.path.join(work, "ckpt")

    def fresh_copy():
        shutil.rmtree(ckpt, ignore_errors=True)
        shutil.copytree(base, ckpt)

    # Kill the save at every event, until one runs to the end.
    outcomes = {"old": 0, "new": 0}
    clean_after = 0
    point = 0
    while True:
        point += 1
        fresh_copy()
        env = dict(os.environ, LD_PRELOAD=fault_lib,
                   TITAN_FAULT_KILL_AT=str(point))
        result = run(save + [ckpt, "--from", new], env)
        if result.returncode == 0:
            break
        if result.returncode != -9:
            sys.exit(f"kill at {point}: exit {result.returncode}: "
                     f"{result.stderr}")
        state = loads_as(ckpt_tool, plan, ckpt, work, states)
        if state not in outcomes:
            sys.exit(f"kill at {point}: the folder loads {state}")
        outcomes[state] += 1
        # A save after the crash commits and clears what the crash left.
        result = run(save + [ckpt, "--from", new])
        if result.returncode != 0:
            sys.exit(f"save after the kill at {point}: {result.stderr}")
        if loads_as(ckpt_tool, plan, ckpt, work, states) != "new":
            sys.exit(f"save after the kill at {point} does not load")
        if len(files_of(ckpt)) == len(base_files):
            clean_after += 1
    killed = point - 1
    print(f"kill: {killed} points, {outcomes['old']} loaded the old "
          f"checkpoint, {outcomes['new']} the new one, {clean_after} saves "
          f"after them left no stale file")

    # Fill the disk at several sizes: the save fails, naming the cause, and
    # leaves the old checkpoint as it was.
    total = sum(os.path.getsize(os.path.join(base, f)) for f in base_files)
    failed = 0
    for space in (0, 1000, total // 3, total - 100):
        fresh_copy()
        env = dict(os.environ, LD_PRELOAD=fault_lib,
                   TITAN_FAULT_NO_SPACE_AFTER=str(space))
        result = run(save + [ckpt, "--from", new], env)
        if result.returncode == 0 or "No space left on device" not in (
                result.stderr):
            sys.exit(f"no space after {space} bytes: exit "
                     f"{result.returncode}: {result.stderr}")
        state = loads_as(ckpt_tool, plan, ckpt, work, states)
        if state != "old" or files_of(ckpt) != base_files:
            sys.exit(f"no space after {space} bytes: the folder loads "
                     f"{state}, holds {files_of(ckpt)}")
        failed += 1
    print(f"no space: {failed} saves failed, each leaving the old "
          f"checkpoint as it was")


if __name__ == "__main__":
    main()
