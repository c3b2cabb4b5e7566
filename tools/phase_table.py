"""The closing table of ``./dev test``: each phase's tests, passed/failed/skipped and minutes.

    python3 tools/phase_table.py PHASES_FILE TOTAL_SECONDS

PHASES_FILE has one tab-separated line per phase: name, status, seconds, JUnit XML path (may be
empty). The counts come from the JUnit XML that pytest wrote. The last line is the run's totals
in the form CI reads ("total: N passed, N failed, N skipped"; a phase that failed with no failing
test, a sanitizer report say, counts as one failure). Exits 1 if a phase failed.
Runs on the machine's python3 (standard library only).
"""
from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET


def counts(xml_path):
    """(tests, passed, failed, skipped) from a JUnit XML file, or None when there is none."""
    if not xml_path or not os.path.exists(xml_path):
        return None
    tests = failed = skipped = 0
    for suite in ET.parse(xml_path).getroot().iter("testsuite"):
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return tests, tests - failed - skipped, failed, skipped


def main(argv):
    phases_file, total_seconds = argv[1], int(argv[2])
    rows = []
    with open(phases_file) as fh:
        for line in fh:
            name, status, seconds, xml_path = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
            rows.append((name, status, int(seconds or 0), counts(xml_path)))
    width = max([len("phase")] + [len(r[0]) for r in rows])
    print("== Summary")
    print("%-*s  %7s  %7s  %7s  %7s  %7s  %s" % (width, "phase", "tests", "passed", "failed", "skipped",
                                               "minutes", "status"))
    total = [0, 0, 0, 0]
    any_failed = False
    for name, status, seconds, found in rows:
        if found is None:
            cells = ("", "", "", "")
        else:
            cells = tuple(str(v) for v in found)
            total = [a + b for a, b in zip(total, found)]
        if status.startswith("FAILED"):
            any_failed = True
            if found is None or found[2] == 0:
                total[2] += 1   # a phase that failed with no failing test (setup, a sanitizer report)
        print("%-*s  %7s  %7s  %7s  %7s  %7.1f  %s" % ((width, name) + cells + (seconds / 60.0, status)))
    print("%-*s  %7d  %7d  %7d  %7d  %7.1f  %s" % (width, "all", total[0], total[1], total[2], total[3],
                                                 total_seconds / 60.0, "FAILED" if any_failed else "passed"))
    print("total: %d passed, %d failed, %d skipped" % (total[1], total[2], total[3]))
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
