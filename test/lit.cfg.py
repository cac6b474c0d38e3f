# -*- Python -*-
# lit configuration of titan's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "titan"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".py", ".test", ".toml"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.titan_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%titan_src", config.titan_src_root))
config.substitutions.append(("%titan_obj", config.titan_obj_root))

def forked_python_command():
    """%python: test/Inputs/forked_python.py, which runs each script in a
    process forked from a server that has imported torch and numpy (1.5 s
    of CPU a script otherwise spends importing them). The server's socket
    is named after the build folder and the script's version, so that two
    build folders or an edited script never share one."""
    import hashlib
    import tempfile
    script = os.path.join(config.titan_src_root, "test", "Inputs", "forked_python.py")
    key = "%s:%s:%d" % (config.titan_obj_root, config.python_executable,
                        os.stat(script).st_mtime_ns)
    socket_path = os.path.join(
        tempfile.gettempdir(),
        "titan-python-%d-%s.sock" % (os.getuid(), hashlib.sha1(key.encode()).hexdigest()[:16]))
    # -S: the client needs no site packages; the scripts run in the server's
    # children, or, where they cannot, in PYTHON itself.
    return " ".join([config.python_executable, "-S", script,
                     config.python_executable, socket_path])


python_command = forked_python_command()
config.substitutions.append(("%python", python_command))
# models/export.py with each distinct export made once per build folder
# (test/Inputs/export_cached.py); test/models/ runs export.py itself.
config.substitutions.append(
    ("%export_model", " ".join([
        python_command,
        os.path.join(config.titan_src_root, "test", "Inputs", "export_cached.py"),
        os.path.join(config.titan_obj_root, "test", "model-exports")])))
# The LD_PRELOAD library that kills saves and fills the disk under them.
config.substitutions.append(
    ("%fault_injection",
     os.path.join(config.titan_obj_root, "lib", "libtitan-fault-injection.so")))

# LSAN_OPTIONS and TITAN_LINKER: tools/scripts/sanitize.sh (lit passes
# ASAN_OPTIONS and UBSAN_OPTIONS itself); TITAN_TEST_FORK_PYTHON=0 runs
# every %python script in a Python of its own (test/Inputs/forked_python.py).
llvm_config.with_system_environment(["HOME", "TMPDIR", "OPENBLAS_CORETYPE",
                                     "OPENBLAS_L2_SIZE", "LSAN_OPTIONS",
                                     "TITAN_LINKER", "TITAN_TEST_FORK_PYTHON"])
llvm_config.use_default_substitutions()

if config.titan_enable_cuda:
    config.available_features.add("cuda")
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("gpu")


def has_cuda_device():
    """Whether `nvidia-smi -L` succeeds and lists a GPU."""
    import shutil
    import subprocess
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True,
                                timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


# The CUDA backend's GPU tests (test/Runtime/Cuda) need its build and a GPU.
if config.titan_enable_cuda and has_cuda_device():
    config.available_features.add("cuda-device")

tool_dirs = [config.titan_tools_dir, config.llvm_tools_dir]
tools = [
    "titan-opt",
    "titan-ckpt",
    "titan-eval",
    "titan-compile",
    "titan-run",
    "titan-calibrate",
    "titan-tune",
    "titan-comm-check",
    ToolSubst("%PYTHON", config.python_executable, unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.titan_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
