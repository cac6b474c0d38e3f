"""Kills (or stops) one rank of a running job and reports how the job ended.

usage: kill_rank.py --executable PATH --rank R --after FILE [--timeout S]
       [--signal NAME] -- CMD...

Runs CMD (a launcher), waits until FILE exists (e.g. the job's --metrics:
a step has run), finds the process running PATH whose environment has
RANK=R, sends it SIGKILL (or --signal, e.g. STOP: a rank that hangs), and
waits for CMD to end. Prints
"exit=S after T s" (T rounded up to whole seconds) or "timed out after S s"
(then kills CMD's process group), and the pids of the job's other rank
processes still alive ("alive: none" when they are all gone).
"""

import argparse
import math
import os
import signal
import subprocess
import sys
import time


def rank_processes(executable: str):
    """{pid: rank} of the processes running `executable`."""
    found = {}
    real = os.path.realpath(executable)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != real:
                continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # a zombie has ended
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
            found[int(pid)] = int(env.get(b"RANK", b"-1"))
        except (OSError, ValueError):
            continue
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executable", required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--signal", default="KILL")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    job = subprocess.Popen(command, start_new_session=True)
    deadline = time.time() + 120
    while not os.path.exists(args.after):
        if time.time() > deadline or job.poll() is not None:
            print("the job never got to its first step")
            return 1
        time.sleep(0.05)
    victims = [pid for pid, rank in rank_processes(args.executable).items() if rank == args.rank]
    if len(victims) != 1:
        print(f"expected one process of rank {args.rank}, found {victims}")
        return 1
    os.kill(victims[0], getattr(signal, "SIG" + args.signal))
    killed = time.time()
    try:
        status = job.wait(timeout=args.timeout)
        print(f"exit={status} after {math.ceil(time.time() - killed)} s")
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        print(f"timed out after {args.timeout:g} s")
    time.sleep(0.5)
    alive = sorted(rank_processes(args.executable))
    print("alive: " + (" ".join(map(str, alive)) if alive else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
