"""Checks a pipeline's --summary-json (test/TrainStep/recompute-pipeline.test)."""
import json
import sys

summary = json.load(open(sys.argv[1]))
budget = float(sys.argv[2]) * 2**30
mesh, memory, predicted = summary["mesh"], summary["memory"], summary["predicted"]
totals = memory["pipeline_rank_total_bytes"]
print("mesh pp", mesh["pp"], "fsdp", mesh["fsdp"], "world", summary["world_size"])
print("ranks", len(totals),
      "largest", memory["total_bytes"] == max(totals) == totals[memory["pipeline_rank"]],
      "fits", all(t <= budget for t in totals))
print("schedule", predicted["schedule"],
      "bubble", 0 < predicted["bubble_fraction"] < 1,
      "recomputes", 0 < predicted["recompute_seconds"] < predicted["compute_seconds"] < predicted["step_seconds"])
print("tokens/s", predicted["tokens_per_second_per_rank"] > 0,
      "mfu", 0 < predicted["mfu"] < 1)
