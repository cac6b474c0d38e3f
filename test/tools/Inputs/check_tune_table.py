"""Checks titan-tune ac's table: along the given policies, recomputing more
needs less memory and more time; the chosen policy is the fastest of the
table that fits.

usage: check_tune_table.py TABLE.txt POLICY... (policies of the table, from
the one that recomputes least to the one that recomputes most)
       check_tune_table.py TABLE.txt --no-worse A B (A needs no more memory
and no more recomputation than B)
"""
import re
import sys

table = open(sys.argv[1]).read()
units = {"MiB": 2**20, "GiB": 2**30}
rows = {}
for match in re.finditer(
        r"^(\S.*?)\s+([\d.]+) (MiB|GiB)\s+(yes|no)\s+([\d.]+) ms\s+([\d.]+) ms",
        table, re.M):
    name, memory, unit, fits, step, recompute = match.groups()
    rows[name] = (float(memory) * units[unit], fits == "yes", float(step),
                  float(recompute))
if sys.argv[2] == "--no-worse":
    a, b = sys.argv[3:5]
    assert rows[a][0] <= rows[b][0], f"{a} needs more memory than {b}"
    assert rows[a][3] <= rows[b][3], f"{a} recomputes more than {b}"
    print(f"ok: {a} needs no more memory and recomputes no more than {b}")
    sys.exit(0)
order = sys.argv[2:]
assert set(order) <= set(rows), (rows, order)
for less, more in zip(order, order[1:]):
    assert rows[less][0] > rows[more][0], f"{more} should need less memory"
    assert rows[less][2] < rows[more][2], f"{more} should take longer"
    assert rows[less][3] <= rows[more][3], f"{more} should recompute as much"
fitting = [name for name in rows if rows[name][1]]
chosen = re.search(r"^chosen: (.*?) \(", table, re.M)
if fitting:
    fastest = min(fitting, key=lambda name: rows[name][2])
    assert chosen and chosen.group(1) == fastest, (chosen, fastest)
else:
    assert not chosen
print(f"ok: {len(rows)} policies;", ", ".join(order))
