#!/usr/bin/env bash
# Benchmark: communication behind computation on CPU ranks, measured in one
# run against the same program without it.
#
#   Llama 3 debugmodel (dim 256, 6 layers, vocab 2048), seq 2048, on 2
#   local ranks (titan-run, Gloo over loopback), 1 compute thread per rank,
#   alternating runs of the two variants of LAYOUT:
#   - fsdp (default): FSDP 2, global batch 2;
#     parallelism.overlap_communication = true vs false
#     (titan-schedule-overlap);
#   - tp: TP 2 with sequence parallelism, batch 1, overlap on;
#     parallelism.enable_async_tensor_parallel = true vs false
#     (titan-decompose-collective-matmul, chunks from the cost model);
#   - buckets: FSDP 4 on 4 ranks, seq 256, global batch 4, overlap on;
#     parallelism.bucket_collectives = true vs false
#     (titan-bucket-collectives, buckets the cpu device's model keeps).
#
# Per variant: the median step time over the steps after the first, and the
# exposed communication of a profiled step on rank 0 (the time its main
# thread spent in synchronous collectives and in titan.wait, from the step's
# Chrome trace), next to what the plan report predicted for the same
# program on the machine description `cpu`.
#   usage: tools/bench/overlap-cpu.sh [BUILD_DIR] [STEPS] [ROUNDS] [LAYOUT]
#          [SETTINGS] (more titan-compile options for both variants, e.g.
#          "--set parallelism.async_tensor_parallel_chunks=2")
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
steps=${2:-6}
rounds=${3:-3}
layout=${4:-fsdp}
settings=${5:-}
bin=$build/bin
python=/usr/bin/python3
work=$(mktemp -d /tmp/titan-bench-overlap.XXXXXX)
config=$root/models/llama3/train_configs/debugmodel.toml
seq=2048
ranks=2

case "$layout" in
fsdp)
  mesh="--set parallelism.data_parallel_shard_degree=2"
  batch=2
  switch=parallelism.overlap_communication
  ;;
tp)
  mesh="--set parallelism.data_parallel_shard_degree=1 --set parallelism.tensor_parallel_degree=2"
  batch=1
  switch=parallelism.enable_async_tensor_parallel
  ;;
buckets)
  mesh="--set parallelism.data_parallel_shard_degree=4"
  ranks=4
  seq=256
  batch=4
  switch=parallelism.bucket_collectives
  ;;
*)
  echo "overlap-cpu.sh: LAYOUT must be fsdp, tp or buckets, got '$layout'" >&2
  exit 2
  ;;
esac

"$python" "$root/models/export.py" --model llama3 --flavor debugmodel \
  --out "$work/model" > /dev/null
"$python" "$root/tools/scripts/corpus_batches.py" "$root/models/data/corpus.txt" \
  "$work/data" --steps "$steps" --batch "$batch" --seq "$seq"

for variant in on off; do
  value=true
  [ "$variant" = off ] && value=false
  # shellcheck disable=SC2086 # $mesh and $settings are lists of options.
  "$bin/titan-compile" "$work/model/model.pt" --config "$config" \
    --set training.seq_len=$seq --set training.local_batch_size=1 $mesh $settings \
    --set "$switch=$value" \
    --plan-report "$work/report-$variant.txt" -o "$work/$variant" > /dev/null
done

# Median step seconds of a metrics file (steps after the first).
median() {
  "$python" -c "
import json, statistics, sys
s = [json.loads(l)['seconds'] for l in open(sys.argv[1])][1:]
print(f'{statistics.median(s):.6f}')" "$1"
}
# Exposed communication (seconds) of rank 0's traced step: the main
# thread's synchronous collectives (tid 1) and waits.
exposed() {
  "$python" -c "
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace['traceEvents'] if isinstance(trace, dict) else trace
spans = [e for e in events if e.get('ph') == 'X']
sync = sum(e['dur'] for e in spans if e.get('tid') == 1)
wait = sum(e['dur'] for e in spans if e.get('tid') == 0 and e['name'] == 'wait')
print(f'{(sync + wait) * 1e-6:.6f}')" "$1"
}

for round in $(seq "$rounds"); do
  for variant in on off; do
    rm -rf "$work/dump-$variant"
    "$bin/titan-run" "$work/$variant" --nproc-per-node "$ranks" -- \
      --data "$work/data" --steps "$steps" --threads 1 \
      --metrics "$work/$variant-$round.jsonl" \
      --job.dump_folder "$work/dump-$variant" \
      --profiling.enable_profiling --profiling.profile_freq "$steps" \
      > "$work/$variant-$round.log"
    median "$work/$variant-$round.jsonl" >> "$work/$variant.steps"
    exposed "$work/dump-$variant/profile_traces/iteration_$steps/rank0_trace.json" \
      >> "$work/$variant.exposed"
  done
done

"$python" - "$work" "$switch" <<'EOF'
import re, statistics, sys
work, switch = sys.argv[1:]
def values(name):
    return [float(line) for line in open(f"{work}/{name}")]
def predicted(variant):
    text = open(f"{work}/report-{variant}.txt").read()
    match = re.search(r"^== Communication overlap.*?(?=^== |\Z)", text,
                      re.S | re.M)
    return match.group(0).strip() if match else "(no overlap section)"
print(f"{'':<40}{'step ms':>10}{'exposed comm ms':>18}")
rows = {}
for variant in ("off", "on"):
    step = statistics.median(values(f"{variant}.steps"))
    exposed = statistics.median(values(f"{variant}.exposed"))
    rows[variant] = (step, exposed)
    label = f"{switch.split('.')[-1]} = {'true' if variant == 'on' else 'false'}"
    print(f"{label:<40}{step * 1e3:10.1f}{exposed * 1e3:18.1f}")
print(f"step time ratio off/on: {rows['off'][0] / rows['on'][0]:.3f}; "
      f"exposed communication on/off: {rows['on'][1] / max(rows['off'][1], 1e-12):.3f}")
print(f"\npredicted (plan report, {switch} = true):")
print(predicted("on"))
EOF
rm -rf "$work"
