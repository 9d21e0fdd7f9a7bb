"""A self-contained HTML page of the kernel graph (inline SVG and CSS: needs nothing to view)."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from .kernel_graph import KernelGraph, Section
from .layout import LINE_HEIGHT, MARGIN, PADDING, Box, layout
from .style import EXTERNAL, TERMINAL_FILL, duration, fill, lines, slowest, shade, terminals

CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1b1f24; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 4px; }
p.note { color: #57606a; margin: 0 0 12px; font-size: 13px; }
svg text { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
svg .edge { fill: none; stroke: #8c959f; stroke-width: 1.3; }
svg .tensor { fill: #57606a; font-size: 10.5px; }
svg .kernel rect { stroke: #424a53; stroke-width: 1.2; }
svg .kernel text.symbol { font-weight: bold; }
svg .byoc { fill: none; stroke: %(external)s; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .byoc-label { fill: %(external)s; font-weight: bold; }
.legend span { display: inline-block; width: 28px; height: 12px; border: 1px solid #888; vertical-align: middle; }
""" % {"external": EXTERNAL}


#: pixels per character of an edge label (10.5px monospace)
TENSOR_CHAR_WIDTH = 6.4


def _text(x: float, y: float, content: str, css: str = "", anchor: str = "start") -> str:
    cls = f' class="{css}"' if css else ""
    end = ' text-anchor="end"' if anchor == "end" else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{cls}{end}>{html.escape(content)}</text>'


def _box(node_id: str, box: Box, text: list[str], fill_colour: str, css: str, tooltip: str) -> str:
    parts = [f'<g class="{css}" id="{html.escape(node_id)}"><title>{html.escape(tooltip)}</title>',
             f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" rx="6" fill="{fill_colour}"/>']
    for k, line in enumerate(text):
        css = "symbol" if k == 0 else "byoc-label" if line.startswith("BYOC: ") else ""
        parts.append(_text(box.x + PADDING, box.y + PADDING / 2 + LINE_HEIGHT * (k + 0.75), line, css))
    parts.append("</g>")
    return "".join(parts)


#: pixels between a detour and the boxes it passes
DETOUR = 16


def _edge_path(source: Box, target: Box, boxes: Iterable[Box], label_at_source: bool) -> tuple[str, tuple[float, float, str]]:
    """An edge's SVG path and where its label goes (x, y, text-anchor). An edge that would
    cross boxes of the rows between its ends goes round them on the right; its label
    stands on the detour. Otherwise one curve, labelled near its target (near its source
    where several edges meet at the target), on the side of the curve away from the others."""
    (x1, y1), (x2, y2) = source.bottom, target.top
    low, high = min(x1, x2) - DETOUR, max(x1, x2) + DETOUR
    between = [b for b in boxes if b.y > y1 and b.y + b.height < y2 and b.x < high and b.x + b.width > low]
    if between:
        side = max(b.x + b.width for b in between) + DETOUR
        top, bottom = min(b.y for b in between), max(b.y + b.height for b in between)
        path = (f"M{x1:.1f},{y1:.1f} C{x1:.1f},{top:.1f} {side:.1f},{y1:.1f} {side:.1f},{top:.1f} "
                f"L{side:.1f},{bottom:.1f} C{side:.1f},{y2:.1f} {x2:.1f},{bottom:.1f} {x2:.1f},{y2:.1f}")
        return path, (side + 5, (top + bottom) / 2, "start")
    bend = (y2 - y1) / 2
    path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"
    x, y = (x1, y1 + 16) if label_at_source else (x2, y2 - 10)
    outer_left = (x2 < x1 - 1) != label_at_source  # beside the curve, away from its neighbours
    return path, ((x - 6, y, "end") if outer_left else (x + 6, y, "start"))


def section_svg(section: Section, top: float) -> tuple[str, float, float]:
    """One section as SVG markup (styled by :data:`CSS`), with its width and height."""
    texts = {k.id: lines(k) for k in section.kernels}
    for node, name, tensor in terminals(section):
        texts[node] = [name, tensor.label]
    boxes, width, height = layout(section, texts)
    left = 0.0
    fan_in = Counter(e.target for e in section.edges)
    for edge in section.edges:  # room for detours and edge labels on either side
        _, (x_label, _, anchor) = _edge_path(boxes[edge.source], boxes[edge.target], boxes.values(), fan_in[edge.target] > 1)
        extent = len(edge.tensor.label) * TENSOR_CHAR_WIDTH
        if anchor == "start":
            width = max(width, x_label + extent + MARGIN)
        else:
            left = max(left, MARGIN - (x_label - extent))
    for box in boxes.values():  # labels that would stand left of the page move it right
        box.x += left
    width += left
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
           '<path d="M0,0 L10,5 L0,10 z" fill="#8c959f"/></marker></defs>']
    for edge in section.edges:
        path, (lx, ly, anchor) = _edge_path(boxes[edge.source], boxes[edge.target], boxes.values(), fan_in[edge.target] > 1)
        out.append(f'<path class="edge" marker-end="url(#arrow)" d="{path}"/>')
        out.append(_text(lx, ly, edge.tensor.label, "tensor", anchor))
    for node, name, tensor in terminals(section):
        out.append(_box(node, boxes[node], texts[node], TERMINAL_FILL, "terminal", f"{name}: {tensor.label}"))
    for kernel in section.kernels:
        box = boxes[kernel.id]
        if kernel.backend:  # a BYOC region: a dashed outline; its first lines name the backend
            out.append(f'<rect class="byoc" x="{box.x - 5:.1f}" y="{box.y - 5:.1f}" width="{box.width + 10:.1f}" height="{box.height + 10:.1f}" rx="9"/>')
        tooltip = f"{kernel.symbol}: {' -> '.join(kernel.ops)}"
        out.append(_box(kernel.id, box, texts[kernel.id], fill(kernel, top), "kernel", tooltip))
    out.append("</svg>")
    return "\n".join(out), width, height


def render_html(graph: KernelGraph, path: Path) -> Path:
    """Write a page that any browser shows without a network or a plug-in."""
    top = slowest(graph)
    count = len(graph.kernels)
    note = f"{count} kernel call{'s' if count != 1 else ''} after optimization; weights folded into the kernels that read them."
    if top > 0:
        note += (f' Shaded by measured time per call: <span class="legend"><span style="background:{shade(0)}"></span> 0 '
                 f'<span style="background:{shade(1)}"></span> {duration(top)}</span>.')
    body = [f"<h1>{html.escape(graph.title)}</h1>", f'<p class="note">{note}</p>']
    for section in graph.sections:
        if len(graph.sections) > 1:
            body.append(f"<h2>{html.escape(section.title)}</h2>")
        body.append(section_svg(section, top)[0])
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(graph.title)} - tensorkiln</title><style>{CSS}</style></head>"
        f"<body>\n{chr(10).join(body)}\n</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


def render_svg(graph: KernelGraph, path: Path) -> Path:
    """Write one SVG file (its style inside) without Graphviz: the sections one below the other."""
    top = slowest(graph)
    parts, y, width = [], 0.0, 0.0
    for section in graph.sections:
        if len(graph.sections) > 1:
            parts.append(f'<text x="20" y="{y + 20:.0f}" style="font-weight:bold">{html.escape(section.title)}</text>')
            y += 28
        markup, w, h = section_svg(section, top)
        parts.append(markup.replace("<svg ", f'<svg x="0" y="{y:.0f}" ', 1))
        y, width = y + h, max(width, w)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" viewBox="0 0 {width:.0f} {y:.0f}">'
        f"<title>{html.escape(graph.title)}</title><style>{html.escape(CSS, quote=False)}</style>\n"
        + "\n".join(parts) + "\n</svg>\n"
    )
    path.write_text(svg, encoding="utf-8")
    return path
