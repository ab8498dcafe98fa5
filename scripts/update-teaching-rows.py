#!/usr/bin/env python3
"""Rewrites the teaching numbers from fresh runs of scenarios/teaching/*.yaml: the cells of docs/zero-stages.md's five
result tables (which tests/e2e/teaching_test.cpp reads from the page) and the rows of tests/e2e/teaching_test.cpp that
the page quotes in prose only.

Run after a model change that moves the tutorial's numbers (scripts/update-docs.sh regenerates the quoted command
outputs; this script the tables and the test's rows; the prose numbers of docs/zero-stages.md marked `<!-- value: -->` are
rewritten by scripts/update-docs.sh, the sentences around them are edited by hand, and a fits verdict that flips is
reported, not rewritten).
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
page = root / "docs/zero-stages.md"
text = test.read_text()
doc = page.read_text()
row = re.compile(r'\{"([a-z0-9-]+)", "([A-Za-z0-9_.-]+)", (true|false), ([0-9.]+), ([0-9.]+), ([0-9.]+)\}')
num = re.compile(r"[0-9]+(?:\.[0-9]+)?")
GiB = 2.0**30

# docs/zero-stages.md tables, told apart by their header as teaching_test.cpp's doc_rows() does:
# header -> (scenario, variant directory of a row label, {column: field}).
TABLES = {
    ("variant", "peak allocated GiB"): ("stages-one-gpu", lambda l: l.replace(" ", "-"),
                                        {1: "peak", 2: "reserved", 3: "fits", 4: "step"}),
    ("reduce_bucket_size", "peak allocated GiB"): ("bucket-size",
                                                   lambda l: f"reduce_bucket_size-{int(float(l.split()[0]))}",
                                                   {1: "peak", 2: "reserved", 3: "fits", 4: "step"}),
    ("activation_checkpointing", "peak allocated GiB"): ("activation-checkpointing",
                                                         lambda l: f"activation_checkpointing-{l}",
                                                         {1: "peak", 2: "reserved", 3: "fits", 4: "step"}),
    ("stage", "step time"): ("stage3-host-bound", lambda l: f"stage-{l}", {1: "step", 2: "peak", 3: "reserved"}),
}
TRANSPOSED = ("tag at the peak (GiB)", "stages-8gpu-node",
              {"**peak allocated**": "peak", "reserved": "reserved", "step time (s)": "step"})


def step_text(v):
    return f"{v:.4f}" if v >= 1 else f"{v:.4g}"


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def scenarios_in_doc():
    out = set()
    for line in doc.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            c = cells(line)
            if c[0] == TRANSPOSED[0]:
                out.add(TRANSPOSED[1])
            elif tuple(c[:2]) in TABLES:
                out.add(TABLES[tuple(c[:2])][0])
    return out


with tempfile.TemporaryDirectory() as tmp:
    runs = {}
    for scen in sorted({m.group(1) for m in row.finditer(text)} | scenarios_in_doc()):
        out = pathlib.Path(tmp) / scen
        subprocess.run([exe, "run", str(root / "scenarios/teaching" / f"{scen}.yaml"), "--out", str(out), "--quiet"],
                       check=False, stdout=subprocess.DEVNULL)
        runs[scen] = out

    def summary(scen, variant):
        s = json.loads((runs[scen] / variant / "result.json").read_text())["summary"]
        if s["step_time_s"] is None:  # stopped at its OOM: no step time (teaching scenarios use on_oom: continue)
            sys.exit(f"{scen}/{variant}: no step time (the run stopped at its OOM); give the scenario "
                     "simulation.on_oom: continue")
        return s

    def fresh(m):
        scen, variant = m.group(1), m.group(2)
        s = summary(scen, variant)
        return (f'{{"{scen}", "{variant}", {"true" if s["fits"] else "false"}, {s["peak_allocated_bytes"] / GiB:.3f}, '
                f'{s["peak_reserved_bytes"] / GiB:.3f}, {step_text(s["step_time_s"])}}}')

    warnings = []

    def cell(old, field, s, where):
        """The cell with its leading number replaced at the same number of decimals; a fits cell is checked only."""
        if field == "fits":
            if ("yes" in old) != s["fits"]:
                warnings.append(f"{where}: fits is now {s['fits']}: edit '{old}' and the prose by hand")
            return old
        value = {"peak": s["peak_allocated_bytes"] / GiB, "reserved": s["peak_reserved_bytes"] / GiB,
                 "step": s["step_time_s"]}[field]
        m = num.search(old)
        decimals = len(m.group(0).split(".")[1]) if "." in m.group(0) else 0
        return old[:m.start()] + f"{value:.{decimals}f}" + old[m.end():]

    lines = doc.splitlines(keepends=True)
    header = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        if line.startswith("|---"):
            continue
        c = cells(line)
        if header is None:
            header = c
            continue
        where = f"{page.relative_to(root)}:{i + 1}"
        if header[0] == TRANSPOSED[0]:
            field = TRANSPOSED[2].get(c[0])
            if field is None:
                continue
            for j in range(1, len(header)):
                s = summary(TRANSPOSED[1], header[j].replace(" ", "-"))
                if field == "peak" and ("OOM" not in c[j]) != s["fits"]:
                    warnings.append(f"{where}: {header[j]} fits is now {s['fits']}: edit the OOM mark by hand")
                c[j] = cell(c[j], field, s, where)
        elif tuple(header[:2]) in TABLES:
            scen, dir_of, cols = TABLES[tuple(header[:2])]
            s = summary(scen, dir_of(c[0]))
            for j, field in cols.items():
                c[j] = cell(c[j], field, s, where)
        else:
            continue
        lines[i] = "| " + " | ".join(c) + " |\n"
    new_doc = "".join(lines)
    new = row.sub(fresh, text)
test.write_text(new)
page.write_text(new_doc)
changed = sum(1 for a, b in zip(text.splitlines(), new.splitlines()) if a != b)
changed_doc = sum(1 for a, b in zip(doc.splitlines(), new_doc.splitlines()) if a != b)
print(f"{test.relative_to(root)}: {changed} rows changed; {page.relative_to(root)}: {changed_doc} table rows changed")
for w in warnings:
    print("warning:", w)
