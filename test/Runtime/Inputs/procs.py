"""Process helpers of the test/Runtime lit tests (standard library only).

  procs.py launch --world N [--ranks R,R...] [--timeout S] -- CMD...
      Starts ranks of a WORLD_SIZE=N job as srun or mpirun would: RANK,
      WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a
      free MASTER_PORT, no TORCHELASTIC_* (so rank 0 hosts the store). Waits
      for all (killing them after S seconds), then prints, rank by rank, its
      stdout lines as "[rank R] ...", its stderr lines as "[rank R stderr]
      ..." and "rank R exited S" or "rank R was killed by SIGNAME".
  procs.py torchrun --nproc N [--c10d] [--timeout S] -- CMD...
      Runs Debian's torchrun (python3 -m torch.distributed.run, which needs
      --redirects and --tee with Python 3.11) on a free port: the static
      rendezvous, whose agent hosts the store (TORCHELASTIC_USE_AGENT_STORE),
      or with --c10d the c10d one, where rank 0 hosts it. Passes the output
      through and prints "torchrun exited S".
  procs.py bounded --timeout S -- CMD...
      Runs CMD, passing its output through, then prints "exit=S", or
      "timed out after S s" (and kills it).
  procs.py signal --when FILE... --signal NAME --timeout S -- CMD...
      Runs CMD, sends it SIGNAME once every FILE exists, then prints
      "exit=S" as bounded does.
  procs.py alive PIDFILE...
      Prints "gone" for the process of each file once it ended (a zombie
      counts as gone), or "alive" if it still runs after 10 s.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def describe_exit(code):
    if code < 0:
        return "was killed by " + signal.Signals(-code).name
    return "exited %d" % code


def launch(args):
    port = free_port()
    ranks = ([int(rank) for rank in args.ranks.split(",")]
             if args.ranks else range(args.world))
    processes = {}
    for rank in ranks:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TORCHELASTIC_")}
        env.update(RANK=str(rank), WORLD_SIZE=str(args.world),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(args.world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        processes[rank] = subprocess.Popen(
            args.command, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + args.timeout
    outputs = {}
    for rank, process in processes.items():
        try:
            outputs[rank] = process.communicate(
                timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes.values():
                other.kill()
            print("timed out after %s s" % args.timeout)
            return 1
    for rank, (out, err) in outputs.items():
        for line in out.splitlines():
            print("[rank %d] %s" % (rank, line))
        for line in err.splitlines():
            print("[rank %d stderr] %s" % (rank, line))
        print("rank %d %s" % (rank, describe_exit(processes[rank].returncode)))
    return 0


def torchrun(args):
    command = [sys.executable, "-m", "torch.distributed.run",
               "--nproc_per_node", str(args.nproc),
               "--redirects", "2", "--tee", "2"]
    if args.c10d:
        command += ["--rdzv_backend", "c10d",
                    "--rdzv_endpoint", "127.0.0.1:%d" % free_port()]
    else:
        command += ["--master_port", str(free_port())]
    command += ["--no_python"] + args.command
    try:
        code = subprocess.run(command, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        print("timed out after %s s" % args.timeout)
        return 1
    print("torchrun exited %d" % code, flush=True)
    return 0


def wait_bounded(process, timeout):
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        print("timed out after %s s" % timeout, flush=True)
        return 1
    print("exit=%d" % code, flush=True)
    return 0


def bounded(args):
    return wait_bounded(subprocess.Popen(args.command), args.timeout)


def send_signal(args):
    process = subprocess.Popen(args.command)
    deadline = time.monotonic() + args.timeout
    while not all(os.path.exists(path) for path in args.when):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            print("the files never appeared", flush=True)
            return 1
        time.sleep(0.05)
    process.send_signal(signal.Signals["SIG" + args.signal])
    return wait_bounded(process, max(0.1, deadline - time.monotonic()))


def is_running(pid):
    """Whether `pid` runs; a zombie (dead, not yet reaped) does not."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def alive(args):
    # A process killed a moment ago may take a moment to go.
    deadline = time.monotonic() + 10
    for path in args.pidfiles:
        with open(path) as pidfile:
            pid = int(pidfile.read())
        while is_running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        print("alive" if is_running(pid) else "gone")
    return 0


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="mode", required=True)
    sub = commands.add_parser("launch")
    sub.add_argument("--world", type=int, required=True)
    sub.add_argument("--ranks")
    sub.add_argument("--timeout", type=float, default=120)
    sub.add_argument("command", nargs=argparse.REMAINDER)
    sub.set_defaults(run=launch)
    sub = commands.add_parser("torchrun")
    sub.add_argument("--nproc", type=int, required=True)
    sub.add_argument("--c10d", action="store_true")
    sub.add_argument("--timeout", type=float, default=180)
    sub.add_argument("command", nargs=argparse.REMAINDER)
    sub.set_defaults(run=torchrun)
    sub = commands.add_parser("bounded")
    sub.add_argument("--timeout", type=float, required=True)
    sub.add_argument("command", nargs=argparse.REMAINDER)
    sub.set_defaults(run=bounded)
    sub = commands.add_parser("signal")
    sub.add_argument("--when", nargs="+", required=True)
    sub.add_argument("--signal", required=True)
    sub.add_argument("--timeout", type=float, required=True)
    sub.add_argument("command", nargs=argparse.REMAINDER)
    sub.set_defaults(run=send_signal)
    sub = commands.add_parser("alive")
    sub.add_argument("pidfiles", nargs="+")
    sub.set_defaults(run=alive)
    args = parser.parse_args()
    if getattr(args, "command", None) and args.command[0] == "--":
        args.command = args.command[1:]
    sys.exit(args.run(args))


if __name__ == "__main__":
    main()
