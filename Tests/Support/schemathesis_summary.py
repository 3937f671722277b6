#!/usr/bin/env python3
"""The verdict of ops/schemathesis from schemathesis' JSON run report (issue 44).

    schemathesis_summary.py --spec openapi.json --report report.json [--stats stats.json]

Prints one line, `ops/schemathesis: operations tested: N of N; ...`, and exits 1 unless every
operation of the document was tested, none answered a 5xx or anything the document does not
describe (status, content type, body schema), and every operation that documents a success got
one for a positive test case at least once (schemathesis' `valid_rates`: past its 401, 404 and
400 branches). GET and POST /connect/authorize document no success (there is no browser flow):
for them being tested is enough. The per-operation status counts of the hooks (--stats) are
printed for an operation that never got past its refusals.
"""
import argparse
import json
import sys

METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--stats")
    a = parser.parse_args()
    spec = json.load(open(a.spec))
    report = json.load(open(a.report))
    documented = {}
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                codes = operation.get("responses", {}).keys()
                documented[f"{method.upper()} {path}"] = any(c.startswith(("2", "3")) for c in codes)
    operations = report.get("operations") or {}
    failures = report.get("failures") or []
    errors = report.get("errors") or []
    server = [f for f in failures if "server" in (f.get("type", "") + f.get("title", "")).lower()]
    conformance = [f for f in failures if f not in server]
    rates = report.get("valid_rates") or {}
    accepted = {op for op, phases in rates.items() if any(p.get("accepted", 0) for p in phases.values())}
    can_succeed = sorted(op for op, ok in documented.items() if ok)
    unreached = [op for op in can_succeed if op not in accepted]
    never = sorted(op for op, ok in documented.items() if not ok)
    tested, total = operations.get("tested", 0), len(documented)
    cases = (report.get("test_cases") or {}).get("generated", 0)
    print(f"ops/schemathesis: operations tested: {tested} of {total}; past their 401/404/400 branches: "
          f"{len(can_succeed) - len(unreached)} of {len(can_succeed)} (no documented success: {', '.join(never) or 'none'}); "
          f"{len(server)} server errors; {len(conformance)} conformance failures; {len(errors)} errors; "
          f"{cases} test cases in {report.get('running_time', 0):.0f} s")
    stats = json.load(open(a.stats)) if a.stats else {}
    for op in unreached:
        print(f"ops/schemathesis: never past its refusals: {op} {stats.get(op, {})}")
    for f in failures:
        print(f"ops/schemathesis: {f.get('title')} ({f.get('code')}, {f.get('count')}x): {', '.join(f.get('operations', []))}")
    for e in errors:
        print(f"ops/schemathesis: error: {json.dumps(e)[:500]}")
    ok = (report.get("complete") and operations.get("total") == total and tested == total and not operations.get("errored")
          and not failures and not errors and not unreached)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
