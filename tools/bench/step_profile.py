#!/usr/bin/env python3
"""Where a titan training step's time goes, from the runtime's trace.

    step_profile.py TRACE.json [--out FILE]

TRACE.json is a rank's Chrome trace of one profiled step (bin/train
--profiling.enable_profiling true --profiling.profile_freq N writes
DUMP/traces/iteration_N/rankR_trace.json). On a GPU, run the step with
CUDA_LAUNCH_BLOCKING=1 so that each call's span is its own device time
(tools/bench/gpu.sh does). Prints, per kind of work (the trace's category
and name), the calls and their total time, then the longest runs of the
compiler's kernels with the call before them (where in the step they are:
the run after the embedding's backward is the optimizer).
"""

import argparse
import collections
import json
import sys


def load_spans(path):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])


def summarize(spans):
    lines = []
    steps = [s for s in spans if s.get("cat") == "step"]
    work = [s for s in spans if s.get("cat") != "step"]
    step_ms = sum(s["dur"] for s in steps) / 1e3
    totals = collections.defaultdict(lambda: [0, 0.0])
    for span in work:
        entry = totals[(span.get("cat", ""), span["name"])]
        entry[0] += 1
        entry[1] += span["dur"] / 1e3
    lines.append(f"step: {step_ms:.2f} ms ({len(steps)} step spans)")
    lines.append(f"{'category':<12} {'name':<32} {'calls':>6} {'ms':>9} {'share':>6}")
    for (category, name), (calls, ms) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        share = f"{100 * ms / step_ms:.1f}%" if step_ms else "-"
        lines.append(f"{category:<12} {name:<32} {calls:>6} {ms:>9.2f} {share:>6}")
    kernels = [(i, s) for i, s in enumerate(work) if s["name"] == "compiled kernels"]
    if kernels:
        lines.append("longest runs of compiled kernels (after which call):")
        for i, span in sorted(kernels, key=lambda item: -item[1]["dur"])[:5]:
            before = work[i - 1]["name"] if i > 0 else "(start of the step)"
            lines.append(f"  {span['dur'] / 1e3:9.2f} ms after {before}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--out", help="also write the summary to this file")
    args = parser.parse_args()
    try:
        spans = load_spans(args.trace)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"step_profile.py: cannot read {args.trace}: {error}")
    if not spans:
        sys.exit(f"step_profile.py: {args.trace} holds no spans")
    text = "\n".join(summarize(spans)) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
