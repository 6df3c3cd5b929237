# Checks hesper-run --bench --bench-output=json (read from stdin) against
# the tests asked: argv is "PROMPTS GENS DEPTHS REPS", comma-separated
# lists. Prints "bench json: ok" or exits non-zero with what is wrong.
import json
import math
import sys

prompts, gens, depths = ([int(x) for x in a.split(",")] for a in sys.argv[1:4])
reps = int(sys.argv[4])
data = json.load(sys.stdin)
want = [(p, 0, d) for d in depths for p in prompts if p] + \
       [(0, g, d) for d in depths for g in gens if g]
got = sorted((e["n_prompt"], e["n_gen"], e["n_depth"]) for e in data)
assert got == sorted(want), f"tests {got}, expected {sorted(want)}"
for e in data:
    n = e["n_prompt"] or e["n_gen"]
    ns, ts = e["samples_ns"], e["samples_ts"]
    assert len(ns) == reps and len(ts) == reps, f"{len(ns)} samples: {e}"
    for a, b in zip(ns, ts):
        assert a > 0 and math.isclose(b, n / (a * 1e-9), rel_tol=1e-6), e
    mean = sum(ts) / reps
    assert math.isclose(e["avg_ts"], mean, rel_tol=1e-9), e
    sd = math.sqrt(sum((t - mean) ** 2 for t in ts) / (reps - 1)) \
        if reps > 1 else 0.0
    assert math.isclose(e["stddev_ts"], sd, rel_tol=1e-9, abs_tol=1e-9), e
    assert abs(e["avg_ns"] - sum(ns) / reps) <= 1, e
    assert e["backend"] == "cpu" and e["model_n_params"] > 0, e
    assert e["model_size"] > 0 and e["n_ctx"] >= n + e["n_depth"], e
print("bench json: ok")
