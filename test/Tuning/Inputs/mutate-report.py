"""Writes mutations of a valid hesper-eval report (eval-inputs.test): one
bad value each, as a corrupt or hand-edited report would have."""
import json
import os
import sys

source, out = sys.argv[1], sys.argv[2]
with open(source) as f:
    text = f.read()
report = json.loads(text)


def write(name, data):
    with open(os.path.join(out, name), "w") as f:
        f.write(data)


def mutated(change):
    r = json.loads(text)
    change(r)
    return json.dumps(r)


# json.dumps cannot write 1e400 or a 30-digit integer as such: splice them.
write("huge.json", text.replace('"copy_gbps": 10', '"copy_gbps": 1e400'))
write("digits.json",
      text.replace('"gbps": 5', '"gbps": 123456789012345678901234567890'))
write("empty-name.json",
      mutated(lambda r: r["workloads"][1].update(name="")))
write("nul-name.json",
      mutated(lambda r: r["workloads"][0].update(name="matvec\u0000x")))
write("zero-median.json",
      mutated(lambda r: r["workloads"][0]["latency_us"].update(median=0)))
write("twice.json", mutated(
    lambda r: r["workloads"][1].update(name=r["workloads"][0]["name"])))
