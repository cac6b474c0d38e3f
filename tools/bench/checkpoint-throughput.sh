#!/usr/bin/env bash
# Benchmark: save and load throughput of a ~2 GiB checkpoint (Llama-shaped,
# dim 1024, LAYERS layers; parameters and both AdamW moments in float32)
# against the disk's sequential write speed measured in the same run.
#
#   save   4 concurrent `titan-ckpt save --plan FSDP2xTP2 --rank R`
#          processes, then `--finish` (.metadata); every file is synced to
#          disk before a process exits, so it compares with dd's fdatasync.
#   load   `titan-ckpt load --plan PLAN` of the whole state in one process,
#          and 4 concurrent `titan-ckpt load --plan PLAN --rank R` processes
#          (each writing the boxes its rank holds, as runtime ranks load),
#          under the saved layout and under FSDP4, from disk: the
#          checkpoint's pages are dropped from the page cache first
#          (posix_fadvise DONTNEED of its synced files). Loading writes the
#          tensors as .npy files, not synced.
#   dd     dd if=/dev/zero of=FILE bs=1M count=2048 conv=fdatasync (what a
#          save compares with: buffered writes, synced at the end), and
#          dd ... bs=8M count=256 oflag=direct (the device's direct write
#          speed, which saves approach by bypassing the page cache).
#
# GB/s is 10^9 bytes of the state's tensor data (the .npy payload) per
# second of wall time, each command's start to end (process start and .npy
# mapping included). Every load is checked byte for byte against the state.
#   usage: tools/bench/checkpoint-throughput.sh [BUILD_DIR] [LAYERS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
layers=${2:-9}
ckpt=$build/bin/titan-ckpt
python=/usr/bin/python3
work=$(mktemp -d /tmp/titan-ckpt-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

bytes=$($python "$root/tools/bench/checkpoint_state.py" "$work" "$layers")
sync

now() { date +%s.%N; }
row() { # what seconds
  $python -c "import sys; s = float(sys.argv[2]); \
print(f'{sys.argv[1]:<34} {s:8.2f} {int(sys.argv[3]) / s / 1e9:8.2f}')" \
    "$1" "$2" "$3"
}
uncache() { # drop a directory's (synced) files from the page cache
  $python -c "import os, sys
for name in os.listdir(sys.argv[1]):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)" "$1"
}

on_ranks() { # titan-ckpt ARGS... --rank R for ranks 0-3 at once; {rank} in
  # an argument becomes R
  local pids=() rank pid
  for rank in 0 1 2 3; do
    "$ckpt" "${@//\{rank\}/$rank}" --rank "$rank" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}

printf "state: %s bytes (%s layers)\n" "$bytes" "$layers"
printf "%-34s %8s %8s\n" "step" "wall (s)" "GB/s"

start=$(now)
dd if=/dev/zero of="$work/dd.bin" bs=1M count=2048 conv=fdatasync status=none
row "dd 2 GiB, conv=fdatasync" "$(echo "$(now) - $start" | bc)" $((2048 << 20))
rm "$work/dd.bin"
start=$(now)
dd if=/dev/zero of="$work/dd.bin" bs=8M count=256 oflag=direct conv=fdatasync \
  status=none
row "dd 2 GiB, oflag=direct" "$(echo "$(now) - $start" | bc)" $((2048 << 20))
rm "$work/dd.bin"

start=$(now)
on_ranks save --plan "$work/fsdp2tp2.plan" --from "$work/state" \
  --to "$work/ckpt"
"$ckpt" save --plan "$work/fsdp2tp2.plan" --finish --to "$work/ckpt"
row "save: 4 rank processes + finish" "$(echo "$(now) - $start" | bc)" "$bytes"

for plan in fsdp2tp2 fsdp4; do
  uncache "$work/ckpt"
  start=$(now)
  "$ckpt" load --plan "$work/$plan.plan" --from "$work/ckpt" --to "$work/$plan"
  row "load under $plan (cold cache)" "$(echo "$(now) - $start" | bc)" "$bytes"
  $python "$root/test/Checkpoint/Inputs/plan_state.py" compare \
    "$work/state" "$work/$plan" > /dev/null
  rm -rf "${work:?}/$plan"

  uncache "$work/ckpt"
  start=$(now)
  on_ranks load --plan "$work/$plan.plan" --from "$work/ckpt" \
    --to "$work/$plan/{rank}"
  row "load $plan: 4 rank processes" "$(echo "$(now) - $start" | bc)" "$bytes"
  for rank in 0 1 2 3; do
    $python "$root/test/Checkpoint/Inputs/plan_state.py" rank \
      "$work/$plan.plan" "$work/state" "$rank" "$work/$plan/$rank" > /dev/null
  done
  rm -rf "${work:?}/$plan"
done
