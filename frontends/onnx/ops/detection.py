"""Object detection: NonMaxSuppression, RoiAlign (regions known at import).

Per batch entry and class, boxes are taken in descending score order (ties: the lower
index first); a box is kept when its score passes the threshold, fewer than
``max_output_boxes_per_class`` are kept already, and no kept box overlaps it with an IoU
above the threshold. The greedy pass is unrolled over the (static) box count, all batch
entries and classes at once: each step reads one column of the pairwise IoU test. How
many boxes are kept is read from the data (``graph.data_size``, run by the VM).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from ..context import OnnxContext, OnnxNode, refuse
from ..registry import converter
from .indexing import true_positions

_INT64 = np.dtype(np.int64)
#: the greedy pass is unrolled over the boxes: at most this many
MAX_BOXES = 512


def _corners(ctx: OnnxContext, boxes: SSAValue, center: bool) -> tuple[SSAValue, ...]:
    """(y_min, x_min, y_max, x_max) of (B, N, 4) boxes, each (B, N)."""
    g = ctx.b
    b, n, _ = ctx.shape(boxes)
    parts = [g.reshape(g.slice(boxes, [k], [k + 1], [2]), (b, n)) for k in range(4)]
    if center:  # (x_center, y_center, width, height)
        x, y, w, h = parts
        half = ctx.scalar(0.5, x)
        return g.sub(y, g.mul(h, half)), g.sub(x, g.mul(w, half)), g.add(y, g.mul(h, half)), g.add(x, g.mul(w, half))
    y0, x0, y1, x1 = parts  # corners in either order
    return g.min(y0, y1), g.min(x0, x1), g.max(y0, y1), g.max(x0, x1)


def _suppresses(ctx: OnnxContext, corners: tuple[SSAValue, ...], threshold: float) -> SSAValue:
    """(B, N, N) booleans: box j suppresses box i (IoU above ``threshold``; no overlap or
    an empty box never suppresses)."""
    g = ctx.b
    b, n = ctx.shape(corners[0])
    rows = [g.reshape(c, (b, n, 1)) for c in corners]
    cols = [g.reshape(c, (b, 1, n)) for c in corners]
    top, left = g.max(rows[0], cols[0]), g.max(rows[1], cols[1])
    bottom, right = g.min(rows[2], cols[2]), g.min(rows[3], cols[3])
    zero = ctx.scalar(0, top)
    height, width = g.sub(bottom, top), g.sub(right, left)
    overlap = g.mul(height, width)
    area_r = g.mul(g.sub(rows[2], rows[0]), g.sub(rows[3], rows[1]))
    area_c = g.mul(g.sub(cols[2], cols[0]), g.sub(cols[3], cols[1]))
    union = g.sub(g.add(area_r, area_c), overlap)
    valid = g.bitwise_and(g.compare(height, zero, "gt"), g.compare(width, zero, "gt"))
    valid = g.bitwise_and(valid, g.bitwise_and(g.compare(area_r, zero, "gt"), g.compare(area_c, zero, "gt")))
    valid = g.bitwise_and(valid, g.compare(union, zero, "gt"))
    safe = g.where(valid, union, ctx.scalar(1, union))
    return g.bitwise_and(valid, g.compare(g.div(overlap, safe), ctx.scalar(threshold, overlap), "gt"))


def _optional_scalar(ctx: OnnxContext, node: OnnxNode, k: int, what: str, default: float) -> float:
    value = node.input(k)
    if value is None or 0 in ctx.shape(value):
        return default
    return ctx.need_const(node, k, what).reshape(-1)[0].item()


@converter("NonMaxSuppression", since=10)
def non_max_suppression(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    g = ctx.b
    boxes, scores = node.input(0), node.input(1)
    batch, classes, n = ctx.shape(scores)
    if not all(isinstance(d, int) for d in (batch, classes, n)):
        raise refuse("symbolic box or class counts")
    if n > MAX_BOXES:
        raise refuse(f"{n} boxes (the greedy pass is unrolled: at most {MAX_BOXES})")
    limit = int(_optional_scalar(ctx, node, 2, "max_output_boxes_per_class", 0))
    iou = float(_optional_scalar(ctx, node, 3, "iou_threshold", 0.0))
    has_score_threshold = node.input(4) is not None and 0 not in ctx.shape(node.input(4))
    score_threshold = float(_optional_scalar(ctx, node, 4, "score_threshold", 0.0))
    # boxes and scores in descending score order per (batch, class): (B, C, N)
    order = g.argsort(scores, 2, True)
    sorted_scores = g.gather(scores, order, 2)
    corners = _corners(ctx, boxes, bool(node.attr("center_point_box", 0)))
    per_class = [g.reshape(g.gather(g.broadcast_to(g.reshape(c, (batch, 1, n)), (batch, classes, n)), order, 2), (batch * classes, n)) for c in corners]
    suppresses = _suppresses(ctx, tuple(per_class), iou)  # (B*C, N, N): [j, i]
    candidate = g.reshape(g.compare(sorted_scores, ctx.scalar(score_threshold, sorted_scores), "gt"), (batch * classes, n)) if has_score_threshold else None
    keep = ctx.constant(np.zeros((batch * classes, n), np.bool_))
    kept = ctx.constant(np.zeros((batch * classes, 1), np.int64))
    positions = ctx.constant(np.arange(n, dtype=np.int64).reshape(1, n))
    for i in range(n if limit > 0 else 0):
        column = g.reshape(g.slice(suppresses, [i], [i + 1], [2]), (batch * classes, n))
        hit = g.reduce_max(ctx.cast(g.bitwise_and(keep, column), np.uint8), [1], True)
        take = g.bitwise_and(g.compare(hit, ctx.constant(np.uint8(0)), "eq"), g.compare(kept, ctx.scalar(limit, kept), "lt"))
        if candidate is not None:
            take = g.bitwise_and(take, g.slice(candidate, [i], [i + 1], [1]))
        keep = g.where(g.bitwise_and(g.compare(positions, ctx.scalar(i, positions), "eq"), take), ctx.constant(np.asarray(True)), keep)
        kept = g.add(kept, ctx.cast(take, np.int64))
    flat = true_positions(ctx, g.reshape(keep, (batch * classes * n,)))
    batch_index = g.div(flat, ctx.scalar(classes * n, flat))
    class_index = g.fmod(g.div(flat, ctx.scalar(n, flat)), ctx.scalar(classes, flat))
    box_index = g.take(g.reshape(order, (batch * classes * n,)), flat, 0)
    columns = [g.reshape(v, (*ctx.shape(flat), 1)) for v in (batch_index, class_index, box_index)]
    return g.concat(columns, 1)


def _roi_samples(shape: tuple[int, ...], rois: np.ndarray, batches: np.ndarray, node: OnnxNode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RoiAlign's bilinear taps, as ONNX's reference places them: for each roi, output cell,
    sample and corner, the flat position in the (N*H*W) plane and the weight (R, PH, PW, S, 4);
    and each roi's sample count."""
    _, _, height, width = shape
    ph, pw = node.attr("output_height", 1), node.attr("output_width", 1)
    ratio, scale = node.attr("sampling_ratio", 0), node.attr("spatial_scale", 1.0)
    half_pixel = node.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    offset = 0.5 if half_pixel else 0.0
    grids = []
    for roi in rois:
        x0, y0, x1, y1 = roi * scale - offset
        h, w = y1 - y0, x1 - x0
        if not half_pixel:
            h, w = max(h, 1.0), max(w, 1.0)
        gh = int(ratio) if ratio > 0 else int(np.ceil(h / ph))
        gw = int(ratio) if ratio > 0 else int(np.ceil(w / pw))
        grids.append((y0, x0, h / ph, w / pw, gh, gw))
    samples = max(gh * gw for *_, gh, gw in grids) or 1
    positions = np.zeros((len(rois), ph, pw, samples, 4), np.int64)
    weights = np.zeros((len(rois), ph, pw, samples, 4), np.float64)
    counts = np.ones(len(rois), np.float64)
    for r, ((y0, x0, bh, bw, gh, gw), batch) in enumerate(zip(grids, batches)):
        counts[r] = max(gh * gw, 1)
        plane = int(batch) * height * width
        for i, j, iy, ix in np.ndindex(ph, pw, max(gh, 1), max(gw, 1)):
            if gh == 0 or gw == 0:
                continue
            y = y0 + i * bh + (iy + 0.5) * bh / gh
            x = x0 + j * bw + (ix + 0.5) * bw / gw
            if y < -1.0 or y > height or x < -1.0 or x > width:
                continue
            y, x = max(y, 0.0), max(x, 0.0)
            yl, xl = int(y), int(x)
            yh, xh = (yl + 1, xl + 1)
            if yl >= height - 1:
                yl = yh = height - 1
                y = yl
            if xl >= width - 1:
                xl = xh = width - 1
                x = xl
            ly, lx = y - yl, x - xl
            k = iy * max(gw, 1) + ix
            positions[r, i, j, k] = [plane + yl * width + xl, plane + yl * width + xh, plane + yh * width + xl, plane + yh * width + xh]
            weights[r, i, j, k] = [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx]
    return positions, weights, counts


@converter("RoiAlign", since=10)
def roi_align(ctx: OnnxContext, node: OnnxNode) -> SSAValue:
    """Regions of interest pooled by bilinear samples. The regions must be known at import
    (constants, or graph inputs bound: ``from_onnx(..., bind=)``): the taps are placed then."""
    g, x = ctx.b, node.input(0)
    rois = ctx.need_const(node, 1, "rois").astype(np.float64)
    batches = ctx.need_const(node, 2, "batch_indices").reshape(-1)
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise refuse("a symbolic input shape")
    n, channels, height, width = shape
    positions, weights, counts = _roi_samples(shape, rois.reshape(-1, 4), batches, node)
    r, ph, pw, samples, _ = positions.shape
    planes = g.transpose(g.reshape(x, (n, channels, height * width)), [1, 0, 2])
    flat = g.reshape(planes, (channels, n * height * width))
    taps = g.take(flat, ctx.constant(positions.reshape(-1)), 1)  # (C, R*PH*PW*S*4)
    weighted = g.mul(taps, ctx.constant(weights.reshape(1, -1).astype(ctx.dtype(x))))
    weighted = g.reshape(weighted, (channels, r, ph, pw, samples, 4))
    mode = node.attr("mode", "avg")
    if mode == "avg":
        pooled = g.div(g.reduce_sum(weighted, [4, 5]), ctx.constant(counts.reshape(1, r, 1, 1).astype(ctx.dtype(x))))
    elif mode == "max":
        real = np.zeros((r, samples), bool)
        for k, c in enumerate(counts):
            real[k, : int(c)] = True
        corners = g.reduce_max(weighted, [5])  # (C, R, PH, PW, S): ONNX's max of the weighted corners
        lowest = ctx.scalar(-np.inf, corners)
        pooled = g.reduce_max(g.where(ctx.constant(real.reshape(1, r, 1, 1, samples)), corners, lowest), [4])
    else:
        raise refuse(f"mode '{mode}'")
    return g.transpose(pooled, [1, 0, 2, 3])
