#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in one run (docs/cuda-backend.md, "On a
# GPU machine"): builds what it needs, checks every kernel against its CPU
# reference, runs titan's training step of a Llama 3 ~1B proxy (compiled on
# the build machine by tools/bench/gpu-bundle.sh and carried in .gpu-bundle)
# and PyTorch's step of the same model, runs the CUDA and NCCL unit tests,
# times titan's GEMMs and kernels at the proxy's shapes (titan-cuda-bench)
# and the same operations in PyTorch eager and under torch.compile on the
# same GPU (gpu_torch_baseline.py), and prints one table of titan against
# PyTorch.
#
#   usage: bash tools/bench/gpu.sh      (from anywhere; nothing to pass)
#
# Made for a machine lent for minutes: a bare image with the CUDA toolkit,
# CMake, ninja and python3 with PyTorch, 16 cores, one H200. It should take
# 5 to 7 minutes (estimated: it has not run on a GPU yet) and ends by about
# TITAN_GPU_BUDGET_S (420 s) plus the final table's few seconds. Every step
# has its own time limit, a failed step prints a FAILED line and the next
# step runs, and the script exits 0. Results go to $OUT (default
# ./gpu-results), at most 8 files:
#   gpu.log            everything printed
#   summary.txt        one line per step (ok / FAILED / SKIPPED) and the table
#   kernel-check.txt   titan-cuda-kernel-check's comparisons
#   titan-bench.json   titan-cuda-bench's measurements
#   torch-baseline.json  PyTorch's
#   comparison.txt, comparison.md  the table (Markdown for docs/benchmarks.md)
#   step-profile.txt   where titan's step goes (tools/bench/step_profile.py)
#
# The build: the CUDA checks that tools/bench/gpu-bundle.sh built on the
# build machine and carried in .gpu-bundle/bin (titan-cuda-kernel-check,
# titan-cuda-bench, CudaBackendTest) run as they are when their libraries
# load here, which saves the GPU machine a build. Otherwise, or with
# TITAN_GPU_BUILD_MODE other than auto or bundle: when the whole project can
# be configured (MLIR 22 and the other
# dependencies installed) it is, in $TITAN_GPU_BUILD_DIR/full; otherwise
# runtime/cuda/standalone, which needs only the CUDA toolkit, builds the
# CUDA targets in $TITAN_GPU_BUILD_DIR/standalone (NcclTest and
# CudaCollectivesTest need the whole project: they are skipped there).
# GoogleTest comes from the system, else from a source tree:
# $TITAN_GTEST_SOURCE_DIR, .gpu-deps/googletest in the checkout (carried to
# the machine), or /usr/src/googletest.
#
# Settings (environment): TITAN_GPU_BUDGET_S (420), TITAN_GPU_JOBS (16),
# TITAN_GPU_BUILD_DIR (<checkout>/build-gpu), TITAN_GPU_BUILD_MODE
# (auto|bundle|full|standalone), TITAN_GPU_SHAPES (1x2048,1x4096,4x2048,4x4096:
# batch x sequence), TITAN_GPU_COMPILE_SHAPES (the shapes torch.compile
# runs, in order, while the budget lasts: 4x4096,1x4096,4x2048,1x2048),
# TITAN_GPU_ITERS (20 timed calls per operation), TITAN_GPU_PARTS (what to
# run, comma-separated: step (titan's executables and PyTorch's step),
# kernels (the kernel check and unit tests), bench (the operations against
# PyTorch's); default all three: a rerun after a fix can take one part),
# TITAN_CUDNN_DIR (the folder of libcudnn.so.9: found in the toolkit, else
# in the Python environment's nvidia-cudnn; empty: titan's attention),
# PYTHON (python3).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$PWD/gpu-results}
budget=${TITAN_GPU_BUDGET_S:-420}
jobs=${TITAN_GPU_JOBS:-16}
build_root=${TITAN_GPU_BUILD_DIR:-$root/build-gpu}
build_mode=${TITAN_GPU_BUILD_MODE:-auto}
shapes=${TITAN_GPU_SHAPES:-1x2048,1x4096,4x2048,4x4096}
compile_shapes=${TITAN_GPU_COMPILE_SHAPES:-4x4096,1x4096,4x2048,1x2048}
iters=${TITAN_GPU_ITERS:-20}
parts=${TITAN_GPU_PARTS:-step,kernels,bench}
python=${PYTHON:-python3}
baseline=$root/tools/bench/gpu_torch_baseline.py
self=$root/tools/bench/gpu.sh
start=$SECONDS
results=()

mkdir -p "$out" || exit 0
summary=$out/summary.txt

section() {
  printf '\n==== %s (at %d s) ====\n' "$1" $((SECONDS - start))
}

# record LINE: one line of the summary.
record() {
  results+=("$1")
  printf '%s\n' "$1"
}

# wants PART: whether TITAN_GPU_PARTS names PART.
wants() {
  [[ ,$parts, == *,$1,* ]]
}

remaining() {
  echo $((budget - (SECONDS - start)))
}

# run_step NAME LIMIT [--log FILE] [--always] COMMAND...: runs COMMAND under
# `timeout` for at most LIMIT seconds, copying its output to FILE if given,
# and records the outcome. Unless --always, the limit shrinks to what is
# left of the budget, and the step is skipped when that is spent. Returns
# COMMAND's exit status (124 after a timeout).
run_step() {
  local name=$1 limit=$2 log="" always=""
  shift 2
  while [[ ${1:-} == --log || ${1:-} == --always ]]; do
    if [[ $1 == --log ]]; then
      log=$2
      shift 2
    else
      always=1
      shift
    fi
  done
  local left
  left=$(remaining)
  if [[ -z $always ]]; then
    if ((left < 20)); then
      record "SKIPPED $name (the ${budget} s budget is spent)"
      return 125
    fi
    ((limit > left - 10)) && limit=$((left - 10))
  fi
  section "$name"
  local began=$SECONDS rc
  if [[ -n $log ]]; then
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    timeout --kill-after=10 "$limit" "$@"
    rc=$?
  fi
  local took=$((SECONDS - began))
  if ((rc == 0)); then
    record "ok      $name (${took} s)"
  elif ((rc == 124 || rc == 137)); then
    record "FAILED  $name (timed out after ${limit} s)"
  else
    record "FAILED  $name (exit $rc after ${took} s)"
  fi
  return "$rc"
}

# has_torch_cuda: whether $python has PyTorch with a CUDA device.
has_torch_cuda() {
  timeout 120 "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null
}

# has_target DIR TARGET: whether the build in DIR defines TARGET.
has_target() {
  grep -q "^build $2:" "$1/build.ninja" 2>/dev/null
}

gpu_info() {
  echo "checkout: $root ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
  echo "host: $(hostname), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
  if ! command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi: not found"
    return 1
  fi
  nvidia-smi -L || return 1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv || true
  # The header of nvidia-smi's table names the CUDA version the driver supports.
  nvidia-smi | sed -n '1,4p' || true
  echo "CUDA libraries: $(ls /usr/local/cuda/lib64/libcudart.so.* /usr/local/cuda/lib64/libcublasLt.so.* 2>/dev/null | tr '\n' ' ')"
  echo "cuDNN: ${cudnn_dir:-not found}$([[ -n $cudnn_dir ]] && ls "$cudnn_dir" | grep -m1 -o 'libcudnn.so.9[.0-9]*' | sed 's/^/ (/; s/$/)/')"
  if command -v nvcc >/dev/null; then
    nvcc --version | tail -n 2
  else
    echo "nvcc: not found"
  fi
}

gtest_source() {
  local candidate
  for candidate in "${TITAN_GTEST_SOURCE_DIR:-}" "$root/.gpu-deps/googletest" /usr/src/googletest; do
    if [[ -n $candidate && -f $candidate/CMakeLists.txt ]]; then
      echo "$candidate"
      return
    fi
  done
}

# configure: sets $build to a configured build directory, or fails.
build=""
configure() {
  local generator=(-G Ninja)
  if [[ $build_mode != standalone && -d /usr/lib/llvm-22/lib/cmake/mlir ]] ||
    [[ $build_mode == full ]]; then
    echo "configuring the whole project in $build_root/full"
    if cmake "${generator[@]}" -S "$root" -B "$build_root/full" \
      -DCMAKE_BUILD_TYPE=Release -DTITAN_ENABLE_CUDA=ON; then
      build=$build_root/full
      return 0
    fi
    echo "the whole project does not configure here: building the CUDA targets alone"
  fi
  local gtest=() source
  source=$(gtest_source)
  [[ -n $source ]] && gtest=(-DTITAN_GTEST_SOURCE_DIR="$source")
  echo "configuring runtime/cuda/standalone in $build_root/standalone"
  if ! cmake "${generator[@]}" -S "$root/runtime/cuda/standalone" \
    -B "$build_root/standalone" -DCMAKE_BUILD_TYPE=Release "${gtest[@]}"; then
    echo "what the toolkit has: nvcc $(command -v nvcc || echo 'not on PATH')"
    local library
    for library in /usr/local/cuda/lib*/libcublas* /usr/local/cuda/lib*/libcudart*; do
      [[ -e $library ]] && echo "$library"
    done
    return 1
  fi
  build=$build_root/standalone
}

build_targets() {
  local targets=(titan-cuda-kernel-check titan-cuda-bench) test
  for test in CudaBackendTest NcclTest CudaCollectivesTest; do
    if has_target "$build" "$test"; then
      targets+=("$test")
    else
      echo "$test: not part of this build"
    fi
  done
  echo "building ${targets[*]} in $build"
  # -k 0: a target that fails to build does not stop the others.
  ninja -C "$build" -k 0 -j "$jobs" "${targets[@]}"
}

# build_and_check: the CUDA checks (carried or built here), then what
# TITAN_GPU_PARTS asks for: the kernel check and unit tests (kernels), and
# titan's operations timed against PyTorch's (bench).
build_and_check() {
  # The carried checks, or a build here. Without either nothing below is
  # found (and each step says so).
  local bin tests carried=() test
  if [[ $build_mode == auto || $build_mode == bundle ]] && carried_checks_load; then
    record "ok      the carried CUDA checks load here ($bundle/bin, built by gpu-bundle.sh): no build"
    bin=$bundle/bin tests=$bundle/bin build=$bundle
    carried=(env "LD_LIBRARY_PATH=$(bundle_library_path)")
  else
    if run_step "configure ($build_mode)" 180 bash "$self" configure; then
      build=$(cat "$build_root/.configured")
      run_step "build" 300 bash "$self" build
    fi
    bin=${build:-$build_root/none}/bin tests=${build:-$build_root/none}/unittests
  fi

  if wants kernels; then
    if [[ -x $bin/titan-cuda-kernel-check ]]; then
      run_step "titan-cuda-kernel-check: every kernel against its CPU reference" 180 \
        --log "$out/kernel-check.txt" "${carried[@]}" "$bin/titan-cuda-kernel-check"
    else
      record "FAILED  titan-cuda-kernel-check (not built)"
    fi

    for test in CudaBackendTest NcclTest CudaCollectivesTest; do
      if [[ -x $tests/$test ]]; then
        run_step "$test" 120 "${carried[@]}" "$tests/$test" --gtest_color=no
      elif [[ $test != CudaBackendTest && ($build == */standalone || $build == "$bundle") ]]; then
        record "SKIPPED $test (not carried, not built here: it needs the whole project's build (Gloo, MLIR) and runs in the CPU suite, it needs no GPU)"
      else
        record "FAILED  $test (not built)"
      fi
    done
  fi

  wants bench || return 0
  if [[ -x $bin/titan-cuda-bench ]]; then
    run_step "titan-cuda-bench: titan's GEMMs and kernels" 240 \
      "${carried[@]}" "$bin/titan-cuda-bench" --shapes "$shapes" --iters "$iters" \
      --json "$out/titan-bench.json"
  else
    record "FAILED  titan-cuda-bench (not built)"
  fi

  section "PyTorch"
  local left budget_s
  left=$(remaining)
  if ((left < 60)); then
    record "SKIPPED PyTorch baseline (the ${budget} s budget is spent)"
  elif has_torch_cuda; then
    # torch.compile starts no operation after budget_s; the one in progress
    # may take up to the step's limit, which leaves the table 30 s.
    left=$(remaining)
    budget_s=$((left - 90))
    ((budget_s < 0)) && budget_s=0
    run_step "PyTorch eager and torch.compile on the same operations" \
      $((left - 30 < 420 ? left - 30 : 420)) --always \
      "$python" "$baseline" measure --json "$out/torch-baseline.json" \
      --shapes "$shapes" --compile-shapes "$compile_shapes" \
      --iters "$iters" --budget-s "$budget_s"
  else
    record "SKIPPED PyTorch baseline (no $python with torch and a CUDA device)"
  fi
}

main() {
  local part
  for part in ${parts//,/ }; do
    if [[ $part != step && $part != kernels && $part != bench ]]; then
      echo "gpu.sh: TITAN_GPU_PARTS names '$part': the parts are step, kernels and bench" >&2
      return 2
    fi
  done
  echo "tools/bench/gpu.sh: results in $out; budget ${budget} s"
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  export PYTHONUNBUFFERED=1

  mkdir -p "$build_root"
  run_step "GPU and toolkit" 60 bash "$self" gpu-info

  # First what needs no build here: titan's CUDA executables, compiled on
  # the build machine (tools/bench/gpu-bundle.sh) and carried here (the
  # numerics check, then the ~1B proxy's training step), and PyTorch's step
  # of the same model on the same batch.
  local bundle=$root/.gpu-bundle
  if ! wants step; then
    record "SKIPPED titan's and PyTorch's training steps (TITAN_GPU_PARTS=$parts)"
  elif [[ -x $bundle/proxy/bin/train ]]; then
    if [[ -x $bundle/check/debug/bin/train ]]; then
      run_step "titan's CUDA executable against the CPU backend's losses" 90 \
        bash "$self" titan-check
    fi
    if [[ -x $bundle/check/debug-bf16/bin/train ]]; then
      run_step "titan's CUDA executable against the CPU backend's losses, bf16" 90 \
        bash "$self" titan-check bf16
    fi
    if [[ -x $bundle/check/debug-gpt2/bin/train ]]; then
      run_step "titan's CUDA executable against the CPU backend's losses, GPT-2" 90 \
        bash "$self" titan-check gpt2
    fi
    run_step "titan's training step (the ~1B proxy, $(cat "$bundle/shape"), bf16)" 180 \
      bash "$self" titan-step proxy
    # The same with titan's attention kernels instead of cuDNN's (the
    # default where cuDNN loads).
    run_step "titan's training step, titan's attention kernels (TITAN_CUDA_ATTENTION=titan)" 120 \
      env TITAN_CUDA_ATTENTION=titan bash "$self" titan-step proxy proxy-titan-attention
    # RMSNorm, the loss and AdamW as compiled kernels (--runtime-ops=none):
    # which of the two the CUDA backend should default to.
    if [[ -x $bundle/proxy-compiled/bin/train ]]; then
      run_step "titan's training step, RMSNorm, the loss and AdamW compiled" 120 \
        bash "$self" titan-step proxy-compiled
    fi
    # Pure bf16 (training.dtype = "bfloat16"): bf16 parameters and AdamW
    # moments, against PyTorch's eager step of the same below.
    if [[ -x $bundle/proxy-bf16/bin/train ]]; then
      run_step "titan's training step in pure bf16" 90 \
        bash "$self" titan-step proxy-bf16
    fi
    run_step "where titan's step goes (launches blocking, the runtime's trace)" 90 \
      --log "$out/step-profile.txt" bash "$self" titan-profile
  else
    record "SKIPPED titan's training step (no .gpu-bundle: run tools/bench/gpu-bundle.sh on the build machine and carry .gpu-bundle)"
  fi
  if wants step && [[ -f $bundle/shape ]] && has_torch_cuda; then
    local step_shape
    step_shape=$(cat "$bundle/shape")
    run_step "PyTorch's training step (eager and torch.compile)" 240 \
      "$python" "$baseline" step --json "$build_root/torch-step.json" \
      --batch "${step_shape%x*}" --seq "${step_shape#*x}"
    if [[ -f $build_root/titan-step-proxy-bf16.json ]]; then
      run_step "PyTorch's training step in pure bf16 (eager)" 90 \
        "$python" "$baseline" step --json "$build_root/torch-step-bf16.json" \
        --precision bf16 --modes eager \
        --batch "${step_shape%x*}" --seq "${step_shape#*x}"
    fi
  fi
  # Both again at the larger batch, where the optimizer's fixed cost per
  # step weighs less.
  if wants step && [[ -x $bundle/proxy-large/bin/train ]]; then
    local large_shape
    large_shape=$(cat "$bundle/proxy-large/shape")
    run_step "titan's training step at $large_shape" 120 \
      bash "$self" titan-step proxy-large
    if has_torch_cuda; then
      run_step "PyTorch's training step at $large_shape" 180 \
        "$python" "$baseline" step --json "$build_root/torch-step-large.json" \
        --batch "${large_shape%x*}" --seq "${large_shape#*x}"
    fi
  fi

  if wants kernels || wants bench; then
    build_and_check
  else
    record "SKIPPED the CUDA checks and benchmark (TITAN_GPU_PARTS=$parts)"
  fi

  if [[ -f $out/titan-bench.json || -f $build_root/titan-step-proxy.json ]]; then
    # The table needs only python3's standard library, and a few seconds:
    # it runs whatever is left of the budget.
    # A training-step table per shape: titan's step and PyTorch's in pairs
    # ("" where PyTorch's did not run), the compiled variant's row in the
    # first shape's.
    local steps=() variant torch_json
    for variant in proxy proxy-large; do
      [[ -f $build_root/titan-step-$variant.json ]] || continue
      torch_json=$build_root/torch-step${variant#proxy}.json
      [[ -f $torch_json ]] || torch_json=""
      steps+=(--titan-step "$build_root/titan-step-$variant.json" --torch-step "$torch_json")
    done
    [[ -f $build_root/titan-step-proxy.json && -f $build_root/titan-step-proxy-compiled.json ]] &&
      steps+=(--titan-step-compiled "$build_root/titan-step-proxy-compiled.json")
    [[ -f $build_root/titan-step-proxy.json && -f $build_root/titan-step-proxy-bf16.json ]] &&
      steps+=(--titan-step-bf16 "$build_root/titan-step-proxy-bf16.json")
    [[ -f $build_root/titan-step-proxy.json && -f $build_root/torch-step-bf16.json ]] &&
      steps+=(--torch-step-bf16 "$build_root/torch-step-bf16.json")
    run_step "titan against PyTorch" 60 --log "$out/comparison.txt" --always \
      "$python" "$baseline" compare --titan-json "$out/titan-bench.json" \
      --torch-json "$out/torch-baseline.json" --markdown "$out/comparison.md" \
      "${steps[@]}"
  else
    record "SKIPPED titan against PyTorch (no titan-bench.json or titan-step-proxy.json)"
  fi

  section "summary ($((SECONDS - start)) s)"
  {
    printf '%s\n' "${results[@]}"
    if [[ -f $out/comparison.txt ]]; then
      echo
      cat "$out/comparison.txt"
    fi
  } >"$summary"
  printf '%s\n' "${results[@]}"
  echo "results in $out: $(cd "$out" && printf '%s ' *)"
}

# The carried executables' libraries: the bundle's, then the toolkit's,
# then cuDNN's (which the CUDA backend loads for attention, where it finds
# it: the toolkit's, else the one of PyTorch's Python environment).
bundle_library_path() {
  echo "$root/.gpu-bundle/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${cudnn_dir:+:$cudnn_dir}:${LD_LIBRARY_PATH:-}"
}

# cudnn_library_dir: the folder of a libcudnn.so.9, or nothing.
cudnn_library_dir() {
  local dir
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    [[ -e $dir/libcudnn.so.9 ]] && { echo "$dir"; return; }
  done
  "$python" -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' \
    2>/dev/null
}

# carried_checks_load: whether .gpu-bundle/bin holds the CUDA checks and
# every library they link is found here.
carried_checks_load() {
  local tool missing
  for tool in titan-cuda-kernel-check titan-cuda-bench CudaBackendTest; do
    [[ -x $root/.gpu-bundle/bin/$tool ]] || return 1
    missing=$(LD_LIBRARY_PATH=$(bundle_library_path) ldd "$root/.gpu-bundle/bin/$tool" 2>&1 |
      grep 'not found')
    if [[ -n $missing ]]; then
      echo "$tool: $missing: building the checks here instead"
      return 1
    fi
  done
}

# titan-check [bf16|gpt2]: the debugmodel's 5 steps on the GPU (or GPT-2
# tiny's, f32), each loss within 1e-3 (relative; 2e-2 in bf16, where the
# GPU's and the CPU's matmuls and exponentials round differently) of what
# the CPU backend computed for the same job on the build machine
# (cpu-losses*.txt); in f32 the validation losses after steps 1 and 5 too.
titan_check() {
  local suffix= tolerance=1e-3
  case ${1:-} in
  bf16) suffix=-bf16 tolerance=2e-2 ;;
  gpt2) suffix=-gpt2 ;;
  esac
  local check=$root/.gpu-bundle/check work=$build_root/titan-check$suffix
  local data=$check/data
  [[ -d $check/data$suffix ]] && data=$check/data$suffix
  rm -rf "$work" && mkdir -p "$work"
  LD_LIBRARY_PATH=$(bundle_library_path) "$check/debug$suffix/bin/train" \
    --data "$data" --job.dump_folder "$work" \
    --validation.dataset_path "$check/val.npy" >"$work/run.txt" 2>&1
  local rc=$?
  cat "$work/run.txt"
  ((rc == 0)) || return "$rc"
  "$python" - "$check/cpu-losses$suffix.txt" "$work/run.txt" "$tolerance" <<'PY'
import re, sys
# The steps' losses and the validations' ("validate step N | loss X"), in
# the order printed.
cpu, gpu = ([float(x) for x in re.findall(r"^(?:validate )?step \d+ \| loss ([0-9.]+)", open(f).read(), re.M)]
            for f in sys.argv[1:3])
tolerance = float(sys.argv[3])
print("CPU losses:", cpu)
print("GPU losses:", gpu)
ok = len(cpu) == len(gpu) >= 5 and all(abs(a - b) <= tolerance * abs(a) for a, b in zip(cpu, gpu))
if cpu and gpu:
    print("largest relative difference: %.3g" % max(abs(a - b) / abs(a) for a, b in zip(cpu, gpu)))
print(f"match within {tolerance}" if ok else "DIFFER")
sys.exit(0 if ok else 1)
PY
}

# titan-profile: 6 steps of the carried proxy with every launch blocking
# (CUDA_LAUNCH_BLOCKING=1, so a call's span in the runtime's trace is its
# device time), the 5th traced; step_profile.py sums the trace by kind of
# work (GEMMs, attention, the compiler's kernels, ...).
titan_profile() {
  local bundle=$root/.gpu-bundle work=$build_root/titan-profile
  rm -rf "$work" && mkdir -p "$work"
  CUDA_LAUNCH_BLOCKING=1 LD_LIBRARY_PATH=$(bundle_library_path) \
    "$bundle/proxy/bin/train" --data "$bundle/data" --steps 6 \
    --job.dump_folder "$work" --profiling.enable_profiling true \
    --profiling.profile_freq 5 --profiling.save_traces_folder traces | tail -n 1 || return
  "$python" "$root/tools/bench/step_profile.py" "$work/traces/iteration_5/rank0_trace.json"
}

# titan-step VARIANT [NAME]: runs the carried executable (warm-up steps,
# then timed ones) and writes $build_root/titan-step-NAME.json (NAME is
# VARIANT by default; what gpu_torch_baseline.py compare --titan-step
# reads) from its metrics: the median over the steps after the
# third of the step time, tokens/s and MFU, the planned memory, and the
# GPU's memory in use after the last step (cudaMemGetInfo).
titan_step() {
  local variant=${1:-proxy}
  local name=${2:-$variant}
  local bundle=$root/.gpu-bundle work=$build_root/titan-step-$name
  # A variant of its own shape carries its batch (proxy-large).
  local data=$bundle/data shape=$bundle/shape
  [[ -f $bundle/$variant/shape ]] && data=$bundle/$variant/data shape=$bundle/$variant/shape
  rm -rf "$work" && mkdir -p "$work"
  LD_LIBRARY_PATH=$(bundle_library_path) "$bundle/$variant/bin/train" --data "$data" --steps 13 \
    --job.dump_folder "$work" --metrics "$work/metrics.jsonl" || return
  "$python" - "$work/metrics.jsonl" "$shape" "$bundle/$variant/memory" \
    "$build_root/titan-step-$name.json" <<'PY'
import json, re, statistics, sys
metrics, shape, memory, out = sys.argv[1:]
steps = [json.loads(line) for line in open(metrics) if line.strip()][3:]
batch, seq = (int(x) for x in open(shape).read().split("x"))
tps = statistics.median(s["tokens_per_second_per_device"] for s in steps)
regions = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", open(memory).read())}
summary = {
    "batch": batch,
    "seq": seq,
    "steps_timed": len(steps),
    "ms_per_step_median": 1e3 * batch * seq / tps,
    "tokens_per_second": tps,
    "mfu": statistics.median(s["mfu_percent"] for s in steps) / 100,
    "memory_bytes": sum(regions.values()),
    "memory_measured_bytes": steps[-1].get("device_memory_bytes") if steps else None,
    "regions": regions,
    "losses": [s["loss"] for s in steps],
}
json.dump(summary, open(out, "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
}

# cuDNN's folder, found once and passed on to the steps (TITAN_CUDNN_DIR
# names another).
cudnn_dir=${TITAN_CUDNN_DIR-$(cudnn_library_dir)}
export TITAN_CUDNN_DIR=$cudnn_dir

# The steps that are shell functions run under `timeout` as this script
# with the step's name.
case "${1:-}" in
gpu-info)
  gpu_info
  exit
  ;;
configure)
  mkdir -p "$build_root" && configure && echo "$build" >"$build_root/.configured"
  exit
  ;;
build)
  build=$(cat "$build_root/.configured") && build_targets
  exit
  ;;
titan-step)
  titan_step "${2:-proxy}" "${3:-}"
  exit
  ;;
titan-profile)
  titan_profile
  exit
  ;;
titan-check)
  titan_check "${2:-}"
  exit
  ;;
"") ;;
*)
  echo "usage: tools/bench/gpu.sh (no arguments; settings in the environment)" >&2
  exit 2
  ;;
esac

main 2>&1 | tee "$out/gpu.log"
exit 0
