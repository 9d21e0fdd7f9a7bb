"""ONNX's backend node test suite through tensorkiln: every case imported with ``from_onnx``,
built with ``tk.build`` (default target) and run on the case's inputs; each output is
compared with the case's expected output (``rtol``/``atol`` of the case: 1e-3 / 1e-7 by
default, NaNs equal).

Each case ends as one of:

- ``pass``: every output matches;
- ``refused``: tensorkiln raised an ``UnsupportedOperatorError`` (an unsupported op,
  dtype or attribute, named in the message);
- ``fail``: a wrong answer, a wrong shape or dtype, any other exception, or a crash of
  the process (cases run in worker subprocesses, chunk by chunk, so a crash is counted,
  not fatal).

::

    .venv/bin/python benchmarks/onnx_conformance.py [-j 2] [--only test_add,test_relu] [--match conv]
        [--write-expected] [--no-report] [--show fail] [--json runs.json] [--from-json runs.json]

Writes the per-op table to BENCHMARKS.md (section ``onnx-conformance``) and, with
``--write-expected``, the status of every case to ``onnx_conformance_expected.json``
beside this file (what ``tests/test_onnx_conformance.py`` holds the suite to).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
EXPECTED_FILE = HERE / "onnx_conformance_expected.json"
#: cases a worker runs before the next worker process takes over (bounds leaks and crash cost)
CHUNK = 40
#: seconds a chunk may run
CHUNK_TIMEOUT = 900


def load_cases() -> list[Any]:
    """ONNX's node test cases, in a fixed order (by name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = collect_testcases()
    return sorted(cases, key=lambda c: c.name)


def op_types(case: Any) -> str:
    """The op a case tests: its single node's op, else the op named by the case."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    return "(expanded) " + case.name.removeprefix("test_").split("_expanded")[0] if "_expanded" in case.name else "(model) " + case.name


def stratum(case: Any) -> str:
    """The group a case is sliced in (``tests/test_onnx_conformance.py`` runs every N-th case
    of each): its op, or ``(expanded)`` for every function case expanded into its body."""
    op = op_types(case)
    return "(expanded)" if op.startswith("(expanded)") else op


def _tolerance(dtype: np.dtype, rtol: float) -> float:
    """The relative tolerance for an output of ``dtype``: the case's, but at least two units
    in the last place of a 16-bit float (ONNX's reference rounds every intermediate result
    to 16 bits; tensorkiln computes them in float32 and rounds once)."""
    if dtype.itemsize == 2 and (dtype.kind == "f" or dtype.name == "bfloat16"):  # (not float8: held values are exact)
        import ml_dtypes

        return max(rtol, 2 * float(ml_dtypes.finfo(dtype).eps))
    return rtol


#: cases whose expected outputs carry their generator's float32 rounding error beyond the
#: case's atol, where the exact result is 0 (numpy 2's ``ifft`` of a complex64 array computes
#: in single precision: 1.9e-7 where 0 is exact, with atol 1e-7): their outputs are compared
#: with an atol of two float32 ulps of the largest expected magnitude instead
FLOAT32_NOISE_IN_REFERENCE = {
    "test_dft_inverse": "numpy.fft.ifft of complex64 (single precision)",
    "test_dft_inverse_opset19": "numpy.fft.ifft of complex64 (single precision)",
}


def reference_noise(name: str, expected: list[np.ndarray], atol: float) -> float:
    """The atol for case ``name``: its own, or for a case of ``FLOAT32_NOISE_IN_REFERENCE``
    two float32 ulps of its largest expected value."""
    if name not in FLOAT32_NOISE_IN_REFERENCE:
        return atol
    largest = max(float(np.abs(as_array(e)).max()) for e in expected)
    return max(atol, 2 * float(np.finfo(np.float32).eps) * largest)


def compare(expected: list[np.ndarray], got: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``expected``, else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for k, (e, g) in enumerate(zip(expected, got)):
        e, g = as_array(e), np.asarray(g)
        if e.dtype != g.dtype:
            return f"output {k}: dtype {g.dtype}, expected {e.dtype}"
        if e.shape != g.shape:
            return f"output {k}: shape {g.shape}, expected {e.shape}"
        if e.dtype.kind in "fc" or e.dtype.name.startswith(("float", "bfloat")):  # (ml_dtypes' floats: kind "V")
            e64, g64 = e.astype(np.float64), g.astype(np.float64)
            close = np.isclose(g64, e64, rtol=_tolerance(e.dtype, rtol), atol=atol, equal_nan=True)
            if not close.all():
                bad = tuple(int(i) for i in np.argwhere(~close)[0])
                return f"output {k}: {int((~close).sum())} of {e.size} elements differ (at {bad}: {g64[bad]} vs {e64[bad]})"
        elif not np.array_equal(e, g):
            return f"output {k}: {int((e != g).sum())} of {e.size} elements differ"
    return None


def as_array(value: Any) -> np.ndarray | list:
    """A test's input or output as numpy (types numpy lacks, bfloat16, are stored as TensorProto)."""
    import onnx

    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, list | tuple):  # a sequence (from_onnx refuses sequence inputs by name)
        return value
    return np.asarray(value)


def run_case(case: Any) -> tuple[str, str]:
    """(status, detail) of one case (module docstring). Graph inputs the model uses as
    shapes, axes or sizes are bound at import to the data set's values
    (``from_onnx_with_values``): the detail says which."""
    import tensorkiln as tk
    from tensorkiln.errors import UnsupportedOperatorError
    from tensorkiln.frontends.onnx import from_onnx_with_values
    from tensorkiln.frontends.onnx.held import boundary, from_held, to_held

    names = [i.name for i in case.model.graph.input if i.name not in {t.name for t in case.model.graph.initializer}]
    bound_names: set[str] = set()
    held_inputs, held_outputs = boundary(case.model)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for inputs, outputs in case.data_sets:
                values = dict(zip(names, (as_array(v) for v in inputs)))
                # inputs of types the graph holds in another (uint32, float8, int4: held.py) converted at the call
                values = {n: to_held(v, held_inputs[n], n) if n in held_inputs else v for n, v in values.items()}
                module, bound = from_onnx_with_values(case.model, values)
                bound_names |= set(bound)
                lib = tk.build(module)
                got = lib(*(v for n, v in values.items() if n not in bound))
                got = list(got) if isinstance(got, list | tuple) else [got]
                got = [from_held(g, h) if h is not None else g for g, h in zip(got, held_outputs)]
                problem = compare(outputs, got, case.rtol, reference_noise(case.name, outputs, case.atol))
                if problem:
                    return "fail", f"wrong answer: {problem}"
    except UnsupportedOperatorError as e:
        return "refused", f"{type(e).__name__}: {_one_line(str(e))}"
    except Exception as e:  # noqa: BLE001  (every other error is a failure of the case)
        where = traceback.extract_tb(e.__traceback__)[-1]
        return "fail", f"{type(e).__name__}: {_one_line(str(e))} [{Path(where.filename).name}:{where.lineno}]"
    return "pass", f"bound at import: {', '.join(sorted(bound_names))}" if bound_names else ""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------
# workers


def worker(names: list[str], out: Path) -> None:
    """Run the named cases, appending one JSON line per case to ``out`` as each ends."""
    cases = {c.name: c for c in load_cases()}
    with out.open("a") as f:
        for name in names:
            f.write(json.dumps({"name": name, "started": True}) + "\n")
            f.flush()
            start = time.perf_counter()
            status, detail = run_case(cases[name])
            record = {"name": name, "status": status, "detail": detail, "seconds": round(time.perf_counter() - start, 2)}
            f.write(json.dumps(record) + "\n")
            f.flush()


def _read_records(path: Path) -> tuple[dict[str, dict], str | None]:
    """Finished records, and the case that started without finishing (a crash)."""
    done: dict[str, dict] = {}
    started = None
    if path.exists():
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("started"):
                started = record["name"]
            else:
                done[record["name"]] = record
                started = None
    return done, started


def run_chunk(names: list[str]) -> dict[str, dict]:
    """Run ``names`` in worker processes; a case that kills its worker is a failure and
    the rest of the chunk goes on in a new worker."""
    results: dict[str, dict] = {}
    remaining = list(names)
    with tempfile.TemporaryDirectory() as tmp:
        while remaining:
            out = Path(tmp) / f"chunk{len(results)}.jsonl"
            command = [sys.executable, __file__, "--worker", ",".join(remaining), "--out", str(out)]
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=CHUNK_TIMEOUT)
                died = proc.returncode != 0
                reason = f"the worker process exited with {proc.returncode}: {_one_line(proc.stderr[-400:])}"
            except subprocess.TimeoutExpired:
                died, reason = True, f"timed out (chunk over {CHUNK_TIMEOUT} s)"
            done, started = _read_records(out)
            results.update(done)
            if started is not None:
                results[started] = {"name": started, "status": "fail", "detail": f"crash: {reason}", "seconds": None}
            elif died and not done:
                for name in remaining:
                    results[name] = {"name": name, "status": "fail", "detail": f"crash: {reason}", "seconds": None}
            remaining = [n for n in remaining if n not in results]
    return results


def run_all(names: list[str], jobs: int) -> dict[str, dict]:
    from concurrent.futures import ThreadPoolExecutor

    chunks = [names[k : k + CHUNK] for k in range(0, len(names), CHUNK)]
    results: dict[str, dict] = {}
    with ThreadPoolExecutor(jobs) as pool:
        for k, done in enumerate(pool.map(run_chunk, chunks)):
            results.update(done)
            counts = Counter(r["status"] for r in results.values())
            print(f"[{len(results)}/{len(names)}] {dict(counts)}", file=sys.stderr, flush=True)
    return results


# ---------------------------------------------------------------------------
# report


def table(cases: list[Any], results: dict[str, dict], seconds: float) -> str:
    by_op: dict[str, Counter] = defaultdict(Counter)
    for case in cases:
        if case.name in results:
            by_op[op_types(case)][results[case.name]["status"]] += 1
    totals = Counter(r["status"] for r in results.values())
    bound = sum(1 for r in results.values() if r["status"] == "pass" and r["detail"].startswith("bound"))
    import onnx

    lines = [
        "## ONNX backend node suite: tensorkiln conformance",
        "",
        f"`benchmarks/onnx_conformance.py`: every case of `onnx.backend.test.case.node.collect_testcases()` "
        f"(onnx {onnx.__version__}, {len(results)} cases) through `from_onnx` + `tk.build` (default target), outputs "
        "compared with the case's rtol/atol (1e-3/1e-7 by default). *refused*: an `UnsupportedOperatorError` naming "
        "the op, dtype or attribute; *fail*: a wrong answer or any other error. "
        f"Run on a shared 2-core AMD EPYC (Zen 4), {seconds / 60:.0f} min.",
        "",
        f"**{totals['pass']} pass, {totals['refused']} refused by name, {totals['fail']} fail** (of {len(results)}). "
        f"{bound} of the passes use graph inputs as shapes, axes or sizes (a `Reshape`'s target, `ReduceSum`'s axes, "
        "`Pad`'s pads): those are bound at import to the case's values (`from_onnx_with_values`), the module compiled "
        "for them, as the backend's `run` does per distinct value. 16-bit float outputs are compared at no less than "
        "two units in the last place (ONNX's reference rounds every intermediate to 16 bits); the outputs of "
        f"{', '.join(sorted(FLOAT32_NOISE_IN_REFERENCE))} (computed by single-precision numpy.fft: 1.9e-7 where 0 is exact, "
        "above the case's atol of 1e-7) at an atol of two float32 ulps of their largest value.",
        "",
        "| op | cases | pass | refused | fail |",
        "|---|---:|---:|---:|---:|",
    ]
    single = sorted((op, c) for op, c in by_op.items() if not op.startswith("("))
    grouped = Counter()
    for op, c in by_op.items():
        if op.startswith("("):
            grouped.update({("expanded functions" if op.startswith("(expanded") else "models", s): n for s, n in c.items()})
    for op, c in single:
        lines.append(f"| {op} | {sum(c.values())} | {c['pass']} | {c['refused']} | {c['fail']} |")
    for kind in ("expanded functions", "models"):
        c = Counter({s: grouped[(k, s)] for k, s in grouped if k == kind})
        if c:
            lines.append(f"| *{kind}* | {sum(c.values())} | {c['pass']} | {c['refused']} | {c['fail']} |")
    reasons = Counter(_reason(r["detail"]) for r in results.values() if r["status"] == "refused")
    lines += ["", "Most common refusals:", ""]
    lines += [f"- {n} x {reason}" for reason, n in reasons.most_common(12)]
    return "\n".join(lines) + "\n"


def _reason(detail: str) -> str:
    """A refusal's message without the node's name, to group alike ones."""
    import re

    text = re.sub(r"node '[^']*' ", "", detail.split(": ", 1)[-1])
    text = re.sub(r"input '[^']*'", "input", text)
    text = re.sub(r"\(([^()]*?)\) x\d+ \([^)]*\)", r"(\1)", text)
    return _one_line(text, 140)


def write_expected(expected: dict[str, dict[str, str]]) -> None:
    """``EXPECTED_FILE``: the onnx version whose suite ran, and the cases, one a line
    (``"test_abs": {"status": "pass", "stratum": "Abs"}``)."""
    import onnx

    lines = [f"{json.dumps(name)}: {json.dumps(expected[name], sort_keys=True)}" for name in sorted(expected)]
    EXPECTED_FILE.write_text(f'{{"onnx": "{onnx.__version__}", "cases": {{\n' + ",\n".join(lines) + "\n}}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--match", default="", help="run the cases whose name contains this")
    parser.add_argument("--write-expected", action="store_true")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--show", default="fail", help="list the cases of these statuses (comma-separated)")
    parser.add_argument("--json", default="", help="write every case's record to this file")
    parser.add_argument("--from-json", default="", help="report (and --write-expected) from the records a full --json run wrote, running nothing")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker.split(","), Path(args.out))
        return
    cases = load_cases()
    names = [c.name for c in cases]
    if args.only:
        names = [n for n in names if n in set(args.only.split(","))]
    if args.match:
        names = [n for n in names if args.match in n]
    start = time.perf_counter()
    if args.from_json:
        recorded = json.loads(Path(args.from_json).read_text())
        results, seconds = recorded["records"], recorded["seconds"]
        names = [n for n in names if n in results]
    else:
        results = run_all(names, args.jobs)
        seconds = time.perf_counter() - start
    shown = set(args.show.split(","))
    for name in names:
        r = results[name]
        if r["status"] in shown:
            print(f"{r['status']:8} {name}: {r['detail']}")
    totals = Counter(r["status"] for r in results.values())
    print(f"{totals['pass']} pass, {totals['refused']} refused, {totals['fail']} fail of {len(results)} ({seconds:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": seconds, "records": results}, indent=1, sort_keys=True))
    full = len(names) == len(cases)
    if args.write_expected and full:
        write_expected({c.name: {"status": results[c.name]["status"], "stratum": stratum(c)} for c in cases})
    if not args.no_report and full:
        sys.path.insert(0, str(HERE))
        from report import write_section

        write_section("onnx-conformance", table(cases, results, seconds))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
