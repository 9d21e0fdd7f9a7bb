"""What both renderers (Graphviz, HTML) draw the same way: box text, time shading, colours."""

from __future__ import annotations

from .kernel_graph import Kernel, KernelGraph, Section, Tensor

#: a kernel box's fill: white (no time, or none measured) to this colour (the slowest kernel)
HOT = (228, 87, 46)
#: BYOC regions: outline colour
EXTERNAL = "#1f6feb"
#: model inputs and outputs
TERMINAL_FILL = "#eef2f7"


def shade(fraction: float | None) -> str:
    """``#rrggbb`` between white (0 or unmeasured) and :data:`HOT` (1)."""
    if fraction is None:
        return "#ffffff"
    f = min(max(fraction, 0.0), 1.0)
    r, g, b = (round(255 + (c - 255) * f) for c in HOT)
    return f"#{r:02x}{g:02x}{b:02x}"


def slowest(graph: KernelGraph) -> float:
    return max((k.seconds for k in graph.kernels if k.seconds is not None), default=0.0)


def fill(kernel: Kernel, top: float) -> str:
    return shade(None if kernel.seconds is None or top <= 0 else kernel.seconds / top)


def lines(kernel: Kernel) -> list[str]:
    """The box's text: the kernel symbol, its ops (one arrow chain, wrapped), weights, time."""
    text = [kernel.symbol]
    if kernel.backend:
        text.append(f"BYOC: {kernel.backend}")
    else:
        chain, row = [], ""
        for op in kernel.ops:
            piece = op if not row else f"{row} → {op}"
            if row and len(piece) > 40:
                chain.append(row + " →")
                piece = op
            row = piece
        chain.append(row)
        text += chain
    extras = []
    if kernel.weights:
        extras.append(f"{kernel.weights} weight{'s' if kernel.weights > 1 else ''}")
    if kernel.seconds is not None:
        extras.append(duration(kernel.seconds))
    if extras:
        text.append(" · ".join(extras))
    return text


def duration(seconds: float) -> str:
    """``0.42 µs``, ``65.1 µs``, ``1.234 ms``: three significant digits or so."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e3:.4g} ms"


def terminals(section: Section) -> list[tuple[str, str, Tensor]]:
    """``(node id, "input x" / "output y", tensor)`` for the section's inputs and outputs."""
    return [(node, f"input {t.name}", t) for node, t in section.inputs] + [
        (node, f"output {t.name}", t) for node, t in section.outputs
    ]
