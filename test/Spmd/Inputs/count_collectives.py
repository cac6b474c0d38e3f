"""Counts the collectives of a per-rank program by kind, mesh axes and
whether titan-schedule-overlap made them asynchronous.

usage: count_collectives.py PROGRAM.mlir

Prints one line per (kind, axes, async|sync), sorted: "<count> <kind> <axes> <mode>".
"""

import re, sys, collections
c = collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r'titan\.(\w+) %\S+ on @mesh (\[[^\]]*\])', line)
    if m:
        c[(m.group(1), m.group(2).replace(' ', ''), 'async' if 'titan.async' in line else 'sync')] += 1
for k in sorted(c): print(c[k], *k)
