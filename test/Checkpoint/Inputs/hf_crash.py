"""Kills a Hugging Face export over an older one at every point that changes
a file (the fault-injection library's events), one run per point, and checks
that the output folder then holds the whole old model or the whole new one,
byte for byte, never a mix, and that an export after the crash completes.

Usage: hf_crash.py TITAN_CKPT FAULT_LIB DCP MAPPING CONFIG WORK
"""

import os
import shutil
import subprocess
import sys


def snapshot(folder):
    if not os.path.isdir(folder):
        return None
    return {name: open(os.path.join(folder, name), "rb").read()
            for name in sorted(os.listdir(folder))}


def main():
    tool, fault, dcp, mapping, config, work = sys.argv[1:]
    common = ["--mapping", mapping, "--hf-config", config]
    old_args = common + ["--dtype", "bfloat16", "--max-shard-size", "20KB"]
    new_args = common + ["--dtype", "float32"]

    def export(out, args, env=None):
        return subprocess.run([tool, "hf-export", dcp, out] + args, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    ref_old, ref_new = os.path.join(work, "old"), os.path.join(work, "new")
    assert export(ref_old, old_args) == 0 and export(ref_new, new_args) == 0
    old, new = snapshot(ref_old), snapshot(ref_new)
    assert old != new and len(old) > 2
    out = os.path.join(work, "out")
    counts = {"old": 0, "new": 0}
    point = 0
    while True:
        point += 1
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(out + ".titan-partial", ignore_errors=True)
        shutil.copytree(ref_old, out)
        env = dict(os.environ, LD_PRELOAD=fault, TITAN_FAULT_KILL_AT=str(point))
        code = export(out, new_args, env)
        state = snapshot(out)
        if code == 0:
            assert state == new, "a complete export left another folder"
            break
        assert code == -9, f"point {point}: exit {code}, not killed"
        if state == old:
            counts["old"] += 1
        elif state == new:
            counts["new"] += 1
        else:
            sys.exit(f"point {point}: the folder is neither the old model nor the new one: "
                     f"{sorted(state) if state else state}")
        # An export after the crash completes and leaves no staging folder.
        assert export(out, new_args) == 0 and snapshot(out) == new, point
        assert not os.path.exists(out + ".titan-partial"), point
    print(f"kill: {point - 1} points, {counts['old']} left the old model, "
          f"{counts['new']} the new one, every export after them complete")


if __name__ == "__main__":
    main()
