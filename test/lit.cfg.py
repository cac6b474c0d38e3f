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

def fork_server_socket(name, *versions):
    """The socket of a fork server (test/Inputs/forked_process.py), named
    after the build folder and the versions of what the server loads, so
    that two build folders or a rebuilt tool never share one."""
    import hashlib
    import tempfile
    key = ":".join([config.titan_obj_root] + [
        "%s@%d" % (path, os.stat(path).st_mtime_ns) if os.path.exists(path) else path
        for path in versions])
    return os.path.join(tempfile.gettempdir(), "titan-%s-%d-%s.sock" % (
        name, os.getuid(), hashlib.sha1(key.encode()).hexdigest()[:16]))


forked_process = os.path.join(config.titan_src_root, "test", "Inputs", "forked_process.py")
# %python: each script runs in a process forked from a server that has
# imported torch and numpy (1.5 s of CPU a script otherwise spends
# importing them). -S: the client needs no site packages.
python_command = " ".join([
    config.python_executable, "-S", forked_process, "python", config.python_executable,
    fork_server_socket("python", config.python_executable, forked_process)])
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
# ASAN_OPTIONS and UBSAN_OPTIONS itself); TITAN_TEST_FORK=0 runs every
# %python script and titan-compile in a process of its own
# (test/Inputs/forked_process.py).
llvm_config.with_system_environment(["HOME", "TMPDIR", "OPENBLAS_CORETYPE",
                                     "OPENBLAS_L2_SIZE", "LSAN_OPTIONS",
                                     "TITAN_LINKER", "TITAN_TEST_FORK"])
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



def forked_tool(name):
    """A script in build/test/forked-tools that runs the tool `name` in a
    process forked from the tool's fork server (its --fork-server: LibTorch
    loaded once, not 0.7 s of CPU a start); RUN lines and the scripts that
    find the tool on PATH both run it."""
    tool = os.path.join(config.titan_tools_dir, name)
    folder = os.path.join(config.titan_obj_root, "test", "forked-tools")
    os.makedirs(folder, exist_ok=True)
    wrapper = os.path.join(folder, name)
    text = "#!/bin/sh\nexec %s -S %s tool %s %s \"$@\"\n" % (
        config.python_executable, forked_process, tool,
        fork_server_socket(name.replace("titan-", ""), tool, forked_process))
    if not os.path.exists(wrapper) or open(wrapper).read() != text:
        with open(wrapper + ".tmp", "w") as out:
            out.write(text)
        os.chmod(wrapper + ".tmp", 0o755)
        os.replace(wrapper + ".tmp", wrapper)
    return wrapper


tool_dirs = [config.titan_tools_dir, config.llvm_tools_dir]
tools = [
    "titan-opt",
    "titan-ckpt",
    "titan-eval",
    ToolSubst("titan-compile", forked_tool("titan-compile")),
    "titan-run",
    "titan-calibrate",
    "titan-tune",
    "titan-comm-check",
    ToolSubst("%PYTHON", config.python_executable, unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# titan-tune's compiles go through the fork server too.
config.environment["TITAN_COMPILE"] = forked_tool("titan-compile")
llvm_config.with_environment("PATH", config.titan_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment(
    "PATH", os.path.join(config.titan_obj_root, "test", "forked-tools"), append_path=True)
