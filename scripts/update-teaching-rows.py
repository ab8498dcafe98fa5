#!/usr/bin/env python3
"""Rewrites the quoted rows of tests/e2e/teaching_test.cpp from fresh runs of scenarios/teaching/*.yaml.

Run after a model change that moves the tutorial's numbers (scripts/update-docs.sh regenerates the quoted command
outputs; this script the test's table; the prose numbers of docs/zero-stages.md are edited by hand).
Usage: scripts/update-teaching-rows.py [path/to/zerosim]
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
exe = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/apps/zerosim")
test = root / "tests/e2e/teaching_test.cpp"
text = test.read_text()
row = re.compile(r'\{"([a-z0-9-]+)", "([A-Za-z0-9_.-]+)", (true|false), ([0-9.]+), ([0-9.]+), ([0-9.]+)\}')
GiB = 2.0**30


def step_text(v):
    return f"{v:.4f}" if v >= 1 else f"{v:.4g}"


with tempfile.TemporaryDirectory() as tmp:
    runs = {}
    for scen in sorted({m.group(1) for m in row.finditer(text)}):
        out = pathlib.Path(tmp) / scen
        subprocess.run([exe, "run", str(root / "scenarios/teaching" / f"{scen}.yaml"), "--out", str(out), "--quiet"],
                       check=False, stdout=subprocess.DEVNULL)
        runs[scen] = out

    def fresh(m):
        scen, variant = m.group(1), m.group(2)
        s = json.loads((runs[scen] / variant / "result.json").read_text())["summary"]
        if s["step_time_s"] is None:  # stopped at its OOM: no step time (teaching scenarios use on_oom: continue)
            sys.exit(f"{scen}/{variant}: no step time (the run stopped at its OOM); give the scenario "
                     "simulation.on_oom: continue")
        return (f'{{"{scen}", "{variant}", {"true" if s["fits"] else "false"}, {s["peak_allocated_bytes"] / GiB:.3f}, '
                f'{s["peak_reserved_bytes"] / GiB:.3f}, {step_text(s["step_time_s"])}}}')

    new = row.sub(fresh, text)
test.write_text(new)
changed = sum(1 for a, b in zip(text.splitlines(), new.splitlines()) if a != b)
print(f"{test.relative_to(root)}: {changed} rows changed")
