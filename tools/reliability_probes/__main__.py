"""``python -m tensorkiln.tools.reliability_probes [--quick] [--only a,b] [--seed N]``:
run the probe families (see the package docstring) and print a table of how the probes
ended, then every failure. Exit status 1 when any probe failed (wrong, unclear, crash,
hang)."""

from __future__ import annotations

import argparse
import sys

from .runner import EXTRA_FAMILIES, FAMILIES, run_family, table, work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensorkiln.tools.reliability_probes", description=__doc__)
    parser.add_argument("--only", default=",".join(FAMILIES), help=f"families, comma-separated (default: all: {', '.join(FAMILIES)})")
    parser.add_argument("--quick", action="store_true", help="fewer probes per family (a minute or two in all)")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a probe may take before it counts as a hang")
    parser.add_argument("--show", default="wrong,unclear,crash,hang",
                        help="list the probes that ended so (comma-separated verdicts; default: the failures)")
    parser.add_argument("--worker", metavar="FAMILY", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        work(args.worker, args.start, args.seed, args.quick)
        return 0
    families = [f.strip() for f in args.only.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES and f not in EXTRA_FAMILIES]
    if unknown:
        parser.error(f"unknown families {unknown} (known: {', '.join(FAMILIES)})")
    results = []
    for family in families:
        print(f"{family} ...", file=sys.stderr, flush=True)
        results.append(run_family(family, args.seed, args.quick, args.timeout, log=lambda s: print(s, file=sys.stderr)))
    print(table(results))
    shown = {v.strip() for v in args.show.split(",")}
    for r in results:
        for record in r.records:
            if record["verdict"] in shown:
                print(f"- {r.family}: {record['name']}: {record['verdict']}: {record['detail']}")
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
