"""Summarizes a Chrome trace a titan rank wrote ([profiling]).

usage: check_trace.py TRACE.json

Checks that it is valid JSON in Chrome's trace format, then prints the
process name, each distinct event name with its count (sorted), and how
much of the step the events of the compute and communication tracks cover
("coverage: ok" when at least 90% and the events lie inside the step).
"""

import collections
import json
import sys


def main() -> int:
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    for event in events:
        if event["ph"] == "M" and event["name"] == "process_name":
            print("process:", event["args"]["name"])
    spans = [e for e in events if e["ph"] == "X"]
    steps = [e for e in spans if e["cat"] == "step"]
    assert len(steps) == 1, steps
    step = steps[0]
    print("step:", step["name"])
    counts = collections.Counter(e["name"] for e in spans if e["cat"] != "step")
    for name in sorted(counts):
        print(f"event: {name} x{counts[name]}")
    # The main thread's tracks (compute, communication); the communication
    # threads' asynchronous collectives (tid 2 and up) overlap them.
    covered = sum(e["dur"] for e in spans if e["cat"] != "step" and e["tid"] <= 1)
    inside = all(step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1
                 for e in spans)
    ratio = covered / step["dur"]
    print("coverage:", "ok" if ratio >= 0.9 and inside and ratio <= 1.01 else f"BAD {ratio:.3f} inside={inside}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
