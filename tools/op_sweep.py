"""Survey of torch ops beyond our tests: every op of torch's OpInfo database, its sample
inputs exported, imported, built and compared with torch eager.

    pip install expecttest   # torch's OpInfo database imports it
    python -m tensorkiln.tools.op_sweep --samples 0:2 --dtype float32 [--ops sum,mode] > sweep.txt

One line per sample: ``op.variant[k] STATUS detail`` with STATUS one of ``ok``,
``mismatch`` (values, shapes or dtypes differ), ``unsupported`` (UnsupportedOperatorError:
the missing ATen ops), ``error`` (any other failure: the message and where it was
raised), ``export_fail`` (torch.export itself failed: not ours), ``timeout``. A summary
by status ends the run. Complex results are compared as ``view_as_real`` pairs (a model
may not return complex tensors). Ops with uninitialised results (``empty*``) and random ops
(``rand*``, ``normal``, ``bernoulli``, ...: our generator is not torch's) always mismatch.
"""

from __future__ import annotations

import argparse
import signal
import traceback
import warnings
from collections import Counter
from typing import Any

import numpy as np


class _Timeout(Exception):
    pass


def _raise_timeout(*_: Any) -> None:
    raise _Timeout()


def _module(op: Any, sample: Any) -> tuple[Any, list[Any]]:
    """A module calling ``op`` on the sample, its tensors as inputs (the rest closed over)."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    class Sample(torch.nn.Module):
        def forward(self, *tensors: Any) -> Any:
            filled = list(leaves)
            for k, t in zip(positions, tensors):
                filled[k] = t
            inp, args, kwargs = tree_unflatten(filled, spec)
            # a model returns real tensors: complex results as (..., 2) pairs
            return tree_map(lambda t: torch.view_as_real(t) if t.is_complex() else t, op(inp, *args, **kwargs))

    return Sample(), [leaves[k].clone() for k in positions]


def _compare(expected: Any, got: Any, float64: bool) -> str | None:
    """None where ``got`` matches torch's ``expected``, else what differs."""
    import torch
    from torch.utils._pytree import tree_flatten

    wanted = [e for e in tree_flatten(expected)[0] if isinstance(e, torch.Tensor)]
    got = list(got) if isinstance(got, list | tuple) else [got]
    if len(wanted) != len(got):
        return f"{len(got)} outputs, torch {len(wanted)}"
    rtol, atol = (1e-9, 1e-10) if float64 else (1e-3, 1e-4)
    for k, (e, g) in enumerate(zip(wanted, got)):
        e, g = e.detach().resolve_neg().resolve_conj(), np.asarray(g)
        if e.dtype == torch.bfloat16:  # numpy has no bfloat16 of torch's: compare as float32
            e, g = e.float(), g.astype(np.float32)
        e = e.numpy()
        if e.shape != g.shape or e.dtype != g.dtype:
            return f"output {k}: {g.shape} {g.dtype}, torch {e.shape} {e.dtype}"
        same = np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True) if e.dtype.kind in "fc" else np.array_equal(g, e)
        if not same:
            return f"output {k}: values differ (max |diff| {np.nanmax(np.abs(g.astype('f8') - e.astype('f8')))})"
    return None


def sweep(dtype_name: str, first: int, last: int, only: set[str] | None, timeout: int) -> Counter:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import tensorkiln as tk
    from tensorkiln.frontends.torch import from_exported_program

    dtype = getattr(torch, dtype_name)
    signal.signal(signal.SIGALRM, _raise_timeout)
    counts: Counter = Counter()

    def report(info: Any, k: int, status: str, detail: str = "") -> None:
        counts[status] += 1
        print(f"{info.name}.{info.variant_test_name}[{k}] {status} {detail[:300]}".rstrip(), flush=True)

    for info in op_db:
        if (only and info.name not in only) or dtype not in info.supported_dtypes("cpu"):
            continue
        try:
            samples = list(info.sample_inputs("cpu", dtype, requires_grad=False))[first:last]
        except Exception:  # noqa: BLE001 - a sample generator torch cannot run here
            continue
        for k, sample in enumerate(samples, first):
            model, tensors = _module(info.op, sample)
            try:
                expected = model(*[t.clone() for t in tensors])
            except Exception:  # noqa: BLE001 - torch itself refuses the sample
                continue
            try:
                signal.alarm(timeout)
                program = torch.export.export(model, tuple(tensors))
            except Exception as e:  # noqa: BLE001
                report(info, k, "export_fail", repr(e).replace("\n", " "))
                continue
            finally:
                signal.alarm(0)
            try:
                signal.alarm(timeout)
                got = tk.build(from_exported_program(program))(*[t.numpy() for t in tensors])
            except tk.UnsupportedOperatorError as e:
                report(info, k, "unsupported", str(e).replace("\n", " "))
                continue
            except _Timeout:
                report(info, k, "timeout")
                continue
            except Exception as e:  # noqa: BLE001
                where = traceback.extract_tb(e.__traceback__)[-1]
                report(info, k, "error", f"{type(e).__name__}: {e} @ {where.filename}:{where.lineno}".replace("\n", " "))
                continue
            finally:
                signal.alarm(0)
            difference = _compare(expected, got, dtype == torch.float64)
            report(info, k, "mismatch" if difference else "ok", difference or "")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--samples", default="0:2", help="first:last sample of each op (default 0:2)")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per export and per build")
    args = parser.parse_args()
    first, last = (int(v) for v in args.samples.split(":"))
    warnings.filterwarnings("ignore")
    counts = sweep(args.dtype, first, last, set(args.ops.split(",")) if args.ops else None, args.timeout)
    print("summary:", ", ".join(f"{status} {n}" for status, n in counts.most_common()))


if __name__ == "__main__":
    main()
