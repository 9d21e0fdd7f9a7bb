"""A small layered layout for the HTML page (no Graphviz): rows by longest path from the
inputs, each row ordered by where its predecessors stand, boxes sized by their text."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .kernel_graph import Section

#: pixels: text metrics of the page's 12px monospace font, gaps between boxes and rows
CHAR_WIDTH, LINE_HEIGHT, PADDING = 7.3, 16, 10
COLUMN_GAP, ROW_GAP, MARGIN = 28, 56, 20


@dataclass
class Box:
    """A node's rectangle (top-left corner, size) on the page."""

    x: float
    y: float
    width: float
    height: float

    @property
    def top(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y

    @property
    def bottom(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height


def box_size(text: list[str]) -> tuple[float, float]:
    return max(len(t) for t in text) * CHAR_WIDTH + 2 * PADDING, len(text) * LINE_HEIGHT + PADDING


def layout(section: Section, texts: dict[str, list[str]]) -> tuple[dict[str, Box], float, float]:
    """Boxes for every node of ``section`` (``texts``: each node's lines) and the page size."""
    order = [node for node, _ in section.inputs] + [k.id for k in section.kernels] + [node for node, _ in section.outputs]
    predecessors: dict[str, list[str]] = defaultdict(list)
    for edge in section.edges:
        predecessors[edge.target].append(edge.source)
    row: dict[str, int] = {}
    for node in order:  # the program's order is a topological one
        row[node] = 1 + max((row[p] for p in predecessors[node] if p in row), default=-1)
    last = max(row.values(), default=0)
    for node, _ in section.outputs:  # outputs on the bottom row
        row[node] = max(row[node], last)
    rows: dict[int, list[str]] = defaultdict(list)
    for node in order:
        rows[row[node]].append(node)
    boxes: dict[str, Box] = {}
    y = MARGIN
    widths = []
    for r in sorted(rows):
        members = rows[r]
        # barycentre of the predecessors' centres; the program order breaks ties
        def centre(node: str) -> float:
            xs = [boxes[p].x + boxes[p].width / 2 for p in predecessors[node] if p in boxes]
            return sum(xs) / len(xs) if xs else 0.0

        members.sort(key=centre)
        sizes = [box_size(texts[n]) for n in members]
        x = MARGIN
        for node, (w, h) in zip(members, sizes):
            boxes[node] = Box(x, y, w, h)
            x += w + COLUMN_GAP
        widths.append(x - COLUMN_GAP + MARGIN)
        y += max(h for _, h in sizes) + ROW_GAP
    width = max(widths, default=2 * MARGIN)
    for r in rows:  # centre each row
        members = rows[r]
        used = boxes[members[-1]].x + boxes[members[-1]].width - boxes[members[0]].x
        shift = (width - used) / 2 - boxes[members[0]].x
        for node in members:
            boxes[node].x += shift
    return boxes, width, y - ROW_GAP + MARGIN
