#!/usr/bin/env bash
# Regenerates the generated part of docs/scenario-reference.md (the key table) from the key table in the code, and
# docs/outputs.md's field tables from analysis/output_fields.cpp,
# then the quoted outputs of the tutorials (docs/tutorials/*.md, docs/zero-stages.md, docs/sweeps-and-planning.md)
# and every picture in docs/images/: tests/e2e/tutorials_test.cpp runs every command of each tutorial and, with
# ZEROSIM_UPDATE_DOCS=1, rewrites each ```text block from what the command prints now and copies the pictures its
# `zerosim plot` commands drew to the docs/images/ files its `<!-- picture: SRC DST -->` lines name, and rewrites
# every number of their prose and hand tables marked `NUMBER<!-- value: EXPR -->` from the run output EXPR names, at
# the printed precision (the convention: docs/tutorials/README.md "How they are kept correct"; the same test checks
# them in ctest). Review the diff: the sentences around the numbers are not rewritten, and unmarked prose numbers are
# neither checked nor rewritten. scripts/update-teaching-rows.py rewrites docs/zero-stages.md's result tables, which
# tests/e2e/teaching_test.cpp reads, and the test's rows for the variants quoted in prose.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --target zerosim e2e_tests >/dev/null
doc=docs/scenario-reference.md
head=$(awk '/^\| key \| type/ {exit} {print}' "$doc")
{ printf '%s\n' "$head"; ./build/apps/zerosim list --keys; } > "$doc.tmp" && mv "$doc.tmp" "$doc"
# docs/outputs.md: everything after its "generated" line is the output field table in the code (zerosim list --outputs).
doc=docs/outputs.md
head=$(awk '{print} /^<!-- generated: / {exit}' "$doc")
{ printf '%s\n\n' "$head"; ./build/apps/zerosim list --outputs; } > "$doc.tmp" && mv "$doc.tmp" "$doc"
# docs/validation.md's Results section: the summary line and table `zerosim validate --markdown` prints, and the
# counts of the "From the N claims below (...)" line of its summary, taken from that line (prose elsewhere in the page
# quotes some of its numbers: review the diff).
# Exit 1 (a failing claim) still gives the table, which then shows the FAIL; anything else stops here.
./build/apps/zerosim validate --markdown > docs/validation.md.results || [ $? -eq 1 ]
python3 - docs/validation.md docs/validation.md.results <<'PY'
import sys
doc, res = sys.argv[1], sys.argv[2]
text, table = open(doc).read(), open(res).read()
if " claims: " not in table.split("\n", 1)[0] or "\n| claim |" not in table:
    sys.exit("update-docs.sh: zerosim validate --markdown printed no results table; docs/validation.md left as is")
start = text.index("## Results\n\n") + len("## Results\n\n")
end = text.index("\n## ", start)
text = text[:start] + table + text[end:]
# "73 claims: 47 pass, 26 known gap, 0 fail; ..." -> "From the 73 claims below (47 pass, 26 known gaps, 0 fail"
import re
m = re.match(r"(\d+) claims: (\d+) pass, (\d+) known gaps?, (\d+) fail", table)
if not m:
    sys.exit("update-docs.sh: zerosim validate --markdown's summary line has changed; update the counts by hand")
claims, passed, gaps, failed = m.groups()
text, n = re.subn(r"From the \d+ claims below \(\d+ pass, \d+ known gaps?, \d+ fail",
                  "From the %s claims below (%s pass, %s known %s, %s fail"
                  % (claims, passed, gaps, "gap" if gaps == "1" else "gaps", failed), text)
if n != 1:
    sys.exit("update-docs.sh: docs/validation.md has no 'From the N claims below (...)' line to update")
open(doc, "w").write(text)
PY
rm docs/validation.md.results
ZEROSIM_UPDATE_DOCS=1 ./build/tests/e2e/e2e_tests "*runs as written"
