#!/usr/bin/env bash
# Benchmark: the predicted step of Llama 3 405B under pipeline parallelism
# (titan-compile --plan-report: lib/Report/PipelineReport.cpp simulates the
# schedule on the cost model's stage costs) for 1F1B, Interleaved1F1B and
# ZBVZeroBubble, on torchtitan's published 405B pipeline layout
# (benchmarks/llama3_h100_202412_torchtitan.md, Table 5: 512 H100s as
# FSDP 8 x TP 8 x PP 8, local batch 32, full activation checkpointing; its
# microbatch size is torchtitan's default 1, so 32 microbatches) with
# models/llama3/train_configs/llama3_405b.toml's other settings (seq 8192,
# bf16 mixed precision), on h100-sxm nodes of 8. Shape-only export; every
# pp rank's program is built (for its state), written to a scratch folder
# and removed. Prints one row per schedule: step time, bubble, the largest
# peak of activations and of activations + state over the pp ranks,
# tokens/s per device, MFU, and titan-compile's wall time and peak RSS.
#   usage: tools/bench/pp-405b.sh [BUILD_DIR] [LAYERS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
layers=${2:-126}
work=$(mktemp -d /tmp/titan-bench-pp405b.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/models/export.py" --model llama3 --flavor 405B \
  --n-layers "$layers" --out "$work/model" > /dev/null
printf "%-16s %6s %10s %7s %17s %20s %9s %6s %9s %9s\n" schedule stages step \
  bubble "peak activations" "activations + state" tokens/s MFU compile RSS
for schedule in 1F1B Interleaved1F1B ZBVZeroBubble; do
  mkdir "$work/$schedule"
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/bin/titan-compile" \
    "$work/model/model.pt" \
    --config "$root/models/llama3/train_configs/llama3_405b.toml" \
    --set hardware.device=h100-sxm --set hardware.ranks_per_node=8 \
    --set training.local_batch_size=32 \
    --set parallelism.data_parallel_shard_degree=8 \
    --set parallelism.tensor_parallel_degree=8 \
    --set parallelism.pipeline_parallel_degree=8 \
    --set parallelism.pipeline_parallel_microbatch_size=1 \
    --set "parallelism.pipeline_parallel_schedule=$schedule" \
    --set activation_checkpoint.mode=full \
    --emit=spmd --plan-report "$work/$schedule.txt" \
    -o "$work/$schedule/step.mlir" 2> "$work/$schedule.log" ||
    { cat "$work/$schedule.log" >&2; exit 1; }
  read -r seconds kbytes < "$work/time"
  rm -rf "$work/$schedule"
  /usr/bin/python3 - "$work/$schedule.txt" "$seconds" "$kbytes" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
def gib(value):
    number, unit = value.split()
    return float(number) * units[unit] / 2**30
stages = re.search(r"^== Pipeline schedule \S+: (\d+) stages", text, re.M)
row = re.search(r"^  (\S+) \(configured\) +(\S+ \S+) +(\S+%) +(\S+ \S+) +(.+?) +(\S+%)$",
                text, re.M)
ranks = re.findall(r"^ +\d+  [\d, ]+ +\S+ \S+ +\S+% +(\S+ \S+) +(\S+ \S+) +(\S+ \S+)$",
                   text, re.M)
name, step, bubble, _, tokens, mfu = row.groups()
activations = max(gib(rank[0]) for rank in ranks)
total = max(gib(rank[2]) for rank in ranks)
print(f"{name:<16} {stages.group(1):>6} {step:>10} {bubble:>7} "
      f"{activations:>13.2f} GiB {total:>16.2f} GiB {tokens:>9} {mfu:>6} "
      f"{sys.argv[2]:>7} s {int(sys.argv[3]) // 1024:>5} MiB")
EOF
done
