"""Runs a test's Python script or titan-compile in a process forked from a
server that has loaded torch already (lit's %python and titan-compile).

usage: forked_process.py python PYTHON SOCKET (SCRIPT | -c CODE) [ARG ...]
       forked_process.py tool TOOL SOCKET [ARG ...]

Importing torch takes about 1.5 s of the build machine's CPU and LibTorch's
static initialization in titan-compile about 0.7 s, most of what a test's
script or compile takes; a run of the suite starts about 850 scripts and
1,000 compiles. The first call starts the server and later calls connect
to it: for `python`, this file (`--serve`: PYTHON imports torch and numpy
and listens on SOCKET); for `tool`, `TOOL --fork-server SOCKET`
(include/titan/Support/ForkServer.h, the same protocol). The client sends
its arguments, working directory, umask and environment, and passes its
stdin, stdout and stderr. The server forks a child which takes them over
and runs the script as `PYTHON SCRIPT ARG ...` would (`__main__`, sys.argv,
sys.path[0] the script's folder, atexit functions), or the tool's main,
and sends back the exit status, which the client exits with. A server
exits once idle for IDLE_SECONDS.

The call runs as it would without the server (PYTHON SCRIPT ARG ..., TOOL
ARG ...) when the server cannot be reached or started, when a Python call
is not a script or `-c` (e.g. `-m`), when TITAN_TEST_FORK=0, and when the
environment differs from the server's in a variable that libraries read
as they load (OMP_*, OPENBLAS_*, PYTHON*, LD_*, ...), which a forked child
could not apply.
"""

import array
import os
import signal
import socket
import struct
import sys

IDLE_SECONDS = 30
# Variables that torch, numpy, OpenBLAS, OpenMP, the C library or Python
# read once, as they load: a child of the server would not see a change
# (the same list as lib/Support/ForkServer.cpp's).
LOAD_TIME_PREFIXES = ("OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "GOTO",
                      "TORCH_", "PYTORCH_", "CUDA_", "NVIDIA_", "PYTHON",
                      "LD_", "MALLOC_", "GLIBC_", "LC_", "LANG", "TZ",
                      "ASAN_", "LSAN_", "UBSAN_", "TSAN_", "MSAN_")


def load_time_environment(environ):
    """The variables of `environ` that libraries read as they load."""
    return {key: value for key, value in environ.items()
            if key.startswith(LOAD_TIME_PREFIXES)}


def send_message(connection, payload: bytes, fds=()):
    header = struct.pack("!I", len(payload))
    if fds:
        connection.sendmsg([header + payload],
                           [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        connection.sendall(header + payload)


def receive_exactly(connection, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        data += chunk
    return data


def receive_message(connection, max_fds=0):
    """A length-prefixed payload and the file descriptors sent with it."""
    fds = array.array("i")
    if max_fds:
        header, ancillary, _, _ = connection.recvmsg(
            4, socket.CMSG_SPACE(max_fds * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        if len(header) < 4:
            header += receive_exactly(connection, 4 - len(header))
    else:
        header = receive_exactly(connection, 4)
    (size,) = struct.unpack("!I", header)
    return receive_exactly(connection, size), list(fds)


def encode(fields):
    return b"\0".join(field.encode("utf-8", "surrogateescape") for field in fields)


def decode(payload: bytes):
    return [field.decode("utf-8", "surrogateescape") for field in payload.split(b"\0")]


# --- client -------------------------------------------------------------


def run_directly(program, arguments):
    os.execv(program, [program] + arguments)


def connect(path: str):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    return connection


def start_server(server, path: str):
    """Starts the server unless another client is starting it (a lock file
    beside the socket), then waits up to 60 s for it to listen."""
    import fcntl
    import subprocess
    import time
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return connect(path)
        except OSError:
            pass
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        # Its own session, no terminal, none of the test's pipes and not
        # the test's folder: it outlives the test that started it.
        subprocess.Popen(server,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True, cwd="/")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                return connect(path)
            except OSError:
                time.sleep(0.02)
    raise OSError("the server did not start")


def client(kind: str, program: str, path: str, arguments) -> int:
    """Runs PROGRAM ARGUMENTS through the server of `kind` at `path`."""
    if kind == "python":
        server = [program, os.path.abspath(__file__), "--serve", path]
        sent = arguments
        forkable = arguments and (arguments[0] == "-c" or not arguments[0].startswith("-"))
    else:
        server = [program, "--fork-server", path]
        sent = [program] + arguments
        forkable = True
    if not forkable or os.environ.get("TITAN_TEST_FORK") == "0":
        run_directly(program, arguments)
    try:
        try:
            connection = connect(path)
        except OSError:
            connection = start_server(server, path)
        umask = os.umask(0)
        os.umask(umask)
        fields = [os.getcwd(), str(umask), str(len(sent)), *sent]
        fields += [f"{key}={value}" for key, value in os.environ.items()]
        send_message(connection, encode(fields), fds=(0, 1, 2))
        connection.settimeout(30)
        answer, _ = receive_message(connection)
        connection.settimeout(None)
    except (OSError, ConnectionError):
        run_directly(program, arguments)
    if answer != b"forked":
        run_directly(program, arguments)
    try:
        status, _ = receive_message(connection)
    except (OSError, ConnectionError):
        sys.stderr.write("forked_process.py: the forked process died\n")
        return 1
    return int(status)


# --- server -------------------------------------------------------------


def run_script(arguments, environment) -> int:
    """Runs `python3 ARGUMENTS` in this (forked) process; its exit status."""
    import atexit
    import runpy
    import traceback
    os.environ.clear()
    os.environ.update(environment)
    status = 0
    try:
        if arguments[0] == "-c":
            sys.argv = ["-c"] + arguments[2:]
            sys.path[0] = ""
            exec(compile(arguments[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            script = arguments[0]
            sys.argv = list(arguments)
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        if exit.code is None:
            status = 0
        elif isinstance(exit.code, int):
            status = exit.code
        else:
            sys.stderr.write(f"{exit.code}\n")
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        status = status or 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    return status & 0xFF


def serve_one(listener, connection, own_environment):
    payload, fds = receive_message(connection, max_fds=3)
    fields = decode(payload)
    cwd, umask, count = fields[0], int(fields[1]), int(fields[2])
    arguments = fields[3:3 + count]
    environment = dict(entry.split("=", 1) for entry in fields[3 + count:] if "=" in entry)
    if len(fds) != 3 or load_time_environment(environment) != own_environment:
        send_message(connection, b"direct")
        for fd in fds:
            os.close(fd)
        return
    send_message(connection, b"forked")
    if os.fork() != 0:
        for fd in fds:
            os.close(fd)
        return
    # The child: the client's streams, folder and umask; its own children
    # are waited for (the server lets the system reap its children).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    listener.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(cwd)
    os.umask(umask)
    status = run_script(arguments, environment)
    try:
        send_message(connection, str(status).encode())
    except OSError:
        pass
    os._exit(status)


def serve(path: str) -> None:
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import torch.nn.functional  # noqa: F401
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    own_environment = load_time_environment(os.environ)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(IDLE_SECONDS)
    idle = False
    while True:
        try:
            connection, _ = listener.accept()
        except (socket.timeout, BlockingIOError):
            if idle:
                return
            # Idle: no new client finds the socket once it is gone; those
            # already waiting in the backlog are still served.
            os.unlink(path)
            listener.setblocking(False)
            idle = True
            continue
        with connection:
            connection.setblocking(True)
            try:
                serve_one(listener, connection, own_environment)
            except (OSError, ConnectionError, ValueError):
                pass


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        sys.exit(client(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
