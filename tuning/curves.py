"""``tk.tuning.plot(log)``: best-so-far GFLOP/s vs trials, one line per task (matplotlib,
an optional extra: ``pip install tensorkiln[tuning]``).

(Named ``curves``, not ``plot``: a submodule ``tuning.plot`` would replace the function
``tk.tuning.plot`` with itself once imported.)"""

from __future__ import annotations

from pathlib import Path

from .record import CONFIRM_TUNER, load_records


def curves(log_file: str | Path) -> dict[str, list[float]]:
    """Per task (name, or key when unnamed): best-so-far GFLOP/s after each search
    trial (the confirmation round's re-measurements are not trials)."""
    out: dict[str, list[float]] = {}
    for r in load_records(log_file):
        if r.tuner == CONFIRM_TUNER:
            continue
        name = r.task or r.key
        line = out.setdefault(name, [])
        line.append(max(line[-1] if line else 0.0, r.gflops))
    return out


def plot(log_file: str | Path, path: str | Path | None = None) -> str:
    """Save a PNG of best-so-far GFLOP/s vs trials, a line per task of the log (needs
    matplotlib), and return its path: ``path`` if given, else the log's path with
    ``.png`` for its suffix, next to the log (``tune.jsonl`` -> ``tune.png``).

    Example::

        png = tk.tuning.plot("runs/tune.jsonl")     # writes and returns 'runs/tune.png'
        tk.tuning.plot("runs/tune.jsonl", "curves.png")
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("tk.tuning.plot needs matplotlib (pip install 'tensorkiln[tuning]')") from error
    path = Path(path) if path is not None else Path(log_file).with_suffix(".png")
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, line in curves(log_file).items():
        ax.plot(range(1, len(line) + 1), line, label=name[:60])
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
