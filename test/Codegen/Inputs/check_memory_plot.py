"""Checks a memory section of the plan report against its memory plot.

usage: check_memory_plot.py REPORT.txt PLOT.svg

The breakdown at the peak adds up to its total; the plot is well-formed
SVG with one area per kind of buffer, and marks the same peak op as the
report.
"""
import re
import sys
import xml.etree.ElementTree as ElementTree

report = open(sys.argv[1]).read()
section = report[report.index("at the peak, op #"):]
peak_op = int(re.match(r"at the peak, op #(\d+)", section).group(1))
lines = re.findall(r"^    (\S[\w ]*?)\s+(\d+) B", section, re.M)
parts = {name: int(value) for name, value in lines}
total = parts.pop("total")
assert sum(parts.values()) == total, (parts, total)

svg = ElementTree.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
areas = [p.find(ns + "title").text for p in svg.iter(ns + "polygon")]
kinds = ["gathered parameters", "saved activations", "gradients",
         "collective buffers", "kernel scratch", "transient"]
assert areas == kinds, areas
texts = [t.text or "" for t in svg.iter(ns + "text")]
peak = [t for t in texts if t.startswith("peak ")]
assert len(peak) == 1 and f"at op #{peak_op} " in peak[0], (peak, peak_op)
print(f"ok: {len(parts)} parts add up to {total} bytes; peak at op #{peak_op}")
