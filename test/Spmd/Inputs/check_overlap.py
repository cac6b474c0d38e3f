"""Checks the plan report's communication overlap section and its trace.

usage: check_overlap.py hidden REPORT.txt
       check_overlap.py axes REPORT.txt AXES
       check_overlap.py trace TRACE.json REPORT.txt

hidden: the exposed communication after titan-schedule-overlap is less than
before it. axes: the row of mesh axes AXES ("tp"): how many of its
collectives run asynchronously and how much of its exposed time stays.
trace: the Chrome trace (titan-compile --overlap-trace) is JSON with a
compute thread and one communication thread per communicator; spans on a
thread never overlap (a communicator runs one collective at a time), and
the compute thread's exposed spans add up to the report's "after" (with
titan-schedule-overlap off, to its only exposed time).
"""
import json
import re
import sys

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
SECONDS = r"([0-9.]+) (s|ms|us)"


def seconds(value, unit):
    return float(value) * UNITS[unit]


def section(path):
    report = open(path).read()
    start = report.index("== Communication overlap (titan-schedule-overlap")
    return report[start:]


def exposed(path):
    """The exposed communication before and after the pass, in seconds
    (with the pass off, the step's exposed time twice)."""
    text = section(path)
    match = re.search(r"exposed communication " + SECONDS + " before, " +
                      SECONDS + " after", text)
    if match:
        return seconds(*match.group(1, 2)), seconds(*match.group(3, 4))
    match = re.search(r"^  step +" + SECONDS + " +" + SECONDS + " +" +
                      SECONDS + "$", text, re.M)
    assert match, "no exposed communication"
    return (seconds(*match.group(5, 6)),) * 2


def hidden(path):
    before, after = exposed(path)
    verdict = "less" if after < before else "NOT less"
    print(f"exposed after {after * 1e3:.3f} ms is {verdict} than before "
          f"{before * 1e3:.3f} ms")


def axes(path, name):
    match = re.search(r"^    \[" + re.escape(name) + r"\] +\S+ +(\d+) +(\d+) +" +
                      SECONDS + " +" + SECONDS + " +" + SECONDS + "$",
                      section(path), re.M)
    assert match, f"no row for [{name}]"
    count, asynchronous = int(match.group(1)), int(match.group(2))
    before = seconds(*match.group(5, 6))
    after = seconds(*match.group(7, 8))
    stays = after / before if before else 1.0
    kind = "synchronous" if 2 * asynchronous < count else "asynchronous"
    time = "stays exposed" if stays >= 0.9 else "is hidden"
    print(f"[{name}]: {asynchronous} of {count} asynchronous, "
          f"{100 * stays:.0f}% of the exposed time stays: mostly {kind}, "
          f"most of the time {time}")


def trace(path, report):
    events = json.load(open(path))["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads.get(0) == "compute", threads
    spans = {}
    for e in events:
        if e["ph"] == "X":
            assert e["tid"] in threads, e
            spans.setdefault(e["tid"], []).append(e)
    for tid, thread in spans.items():
        thread.sort(key=lambda e: e["ts"])
        for a, b in zip(thread, thread[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-6, (threads[tid], a, b)
    exposed_us = sum(e["dur"] for e in spans.get(0, [])
                     if e["cat"] == "exposed")
    _, after = exposed(report)
    # The report rounds to 3 or 4 digits.
    assert abs(exposed_us * 1e-6 - after) <= 0.001 * after + 0.05e-6, (
        exposed_us, after)
    print("threads: " + ", ".join(threads[t] for t in sorted(threads)))
    asynchronous = sum(1 for t in spans if t != 0 for e in spans[t]
                       if e["args"].get("async"))
    print(f"no overlapping spans on a thread; {asynchronous} asynchronous "
          f"collectives; exposed spans add up to the report's")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "hidden":
        hidden(sys.argv[2])
    elif mode == "axes":
        axes(sys.argv[2], sys.argv[3])
    elif mode == "trace":
        trace(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")
