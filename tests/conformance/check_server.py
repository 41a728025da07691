#!/usr/bin/env python3
"""Guard against a server check that cannot fail: after the suite's server run
against `clat serve --http`, every server scenario the suite lists for the
requirement set (`conformance list --server --requirements REVISION`, saved to
LIST_FILE; scored ones only) must have run; those not in the baseline must
have produced at least one SUCCESS and no FAILURE; each one the baseline names
must still be listed by the suite.

usage: check_server.py OUT_DIR LIST_FILE BASELINE
"""
import json
import pathlib
import re
import sys


def scored_server_scenarios(list_file: pathlib.Path):
    scenarios, section = [], None
    for line in list_file.read_text().splitlines():
        if line.startswith("Server scenarios"):
            section = "server"
        elif line.startswith(("Client scenarios", "Run and reported")):
            section = None
        match = re.match(r"^\s+- (\S+)$", line)
        if match and section == "server":
            scenarios.append(match.group(1))
    return scenarios


def baseline(path: pathlib.Path):
    return [m.group(1) for m in re.finditer(r"^\s+- (\S+)\s*$", path.read_text(), re.M)]


def main() -> int:
    out, list_file, baseline_file = (pathlib.Path(a) for a in sys.argv[1:4])
    listed, expected_failures = scored_server_scenarios(list_file), baseline(baseline_file)
    problems = []
    if not listed:
        problems.append(f"no server scenarios could be read from {list_file}")
    for scenario in expected_failures:
        if scenario not in listed:
            problems.append(f"{scenario}: in the baseline but the suite no longer lists it")
    for scenario in listed:
        runs = sorted(out.glob(f"server-{scenario}-20*/checks.json"))
        if not runs:
            problems.append(f"{scenario}: no checks.json (the scenario did not run)")
            continue
        checks = json.loads(runs[-1].read_text())
        passed = sum(1 for c in checks if c["status"] == "SUCCESS")
        failed = [c for c in checks if c["status"] == "FAILURE"]
        if scenario in expected_failures:
            print(f"server {scenario}: expected failure ({passed} passed, {len(failed)} failed)")
            continue
        for c in failed:
            problems.append(f"{scenario}: {c['id']} FAILURE: {c.get('errorMessage', '')}")
        if passed == 0:
            problems.append(f"{scenario}: no check passed")
        print(f"server {scenario}: {passed} checks passed")
    for p in problems:
        print(f"conformance: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
