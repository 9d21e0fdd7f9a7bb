"""tk.visualize and the kernel graph: real compiled models drawn as SVG (Graphviz and our
own layout) and HTML, parsed back and checked to name every kernel; the HTML page
rendered in headless Chromium where it is installed."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.examples.models import mlp, small_cnn
from tensorkiln.frontends.control_flow import if_
from tensorkiln.tools.visualize import dot_available, graph_of
from tensorkiln.tools.visualize.html_page import render_svg
from tensorkiln.tools.visualize.kernel_graph import ops_of_kernel
from tensorkiln.tools.visualize.style import HOT, shade

SVG = "{http://www.w3.org/2000/svg}"


def _svg_text(path: Path) -> str:
    """Every text of an SVG file (parsed as XML: a malformed file fails here)."""
    root = ET.parse(path).getroot()
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


@pytest.fixture(scope="module")
def cnn():
    module, inputs = small_cnn()
    return tk.build(module), inputs


def test_kernel_names_split_into_graph_ops():
    assert ops_of_kernel("conv2d_relu_0") == ["conv2d", "relu"]
    assert ops_of_kernel("adaptive_avg_pool2d_12") == ["adaptive_avg_pool2d"]
    assert ops_of_kernel("reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul_add_3") == [
        "reduce_mean", "sub", "mul", "reduce_mean", "add", "rsqrt", "mul", "mul", "add",
    ]
    assert ops_of_kernel("copy_2") == ["copy"]  # not a graph op: kept as it is


def test_graph_of_a_cnn_has_each_kernel_call_and_its_tensors(cnn):
    lib, _ = cnn
    graph = graph_of(lib)
    (section,) = graph.sections
    assert [k.symbol for k in section.kernels] == [n.kernel for n in lib.graph_program.nodes]
    conv = next(k for k in section.kernels if k.symbol.startswith("conv2d_relu"))
    assert conv.ops == ["conv2d", "relu"] and conv.weights == 2  # weight and bias folded in
    # a chain: input -> 8 kernels -> output, each edge one tensor; no weight is an edge
    assert len(section.edges) == len(section.kernels) + 1
    assert all(e.tensor.dtype == "float32" for e in section.edges)
    labels = {e.tensor.label for e in section.edges}
    assert "float32[1, 3, 32, 32]" in labels and "float32[1, 10]" in labels


def test_own_svg_parses_and_names_every_kernel(cnn, tmp_path):
    lib, _ = cnn
    path = render_svg(graph_of(lib), tmp_path / "cnn.svg")
    text = _svg_text(path)
    for node in lib.graph_program.nodes:
        assert node.kernel in text
    assert "conv2d → relu" in text and "float32[1, 16, 16, 32]" in text


@pytest.mark.skipif(not dot_available(), reason="Graphviz's dot program or the graphviz package is not installed")
def test_graphviz_svg_of_a_zoo_model_names_every_kernel(tmp_path):
    torch = pytest.importorskip("torch")
    from tensorkiln.examples.torch_zoo import ZOO, random_inputs
    from tensorkiln.frontends.torch import from_exported_program

    entry = ZOO["resnet18"]
    x = random_inputs(entry, seed=0)
    lib = tk.build(from_exported_program(torch.export.export(entry.build(), x)))
    path = tk.visualize(lib, tmp_path / "resnet18.svg")
    text = _svg_text(path)
    kernels = {n.kernel for n in lib.graph_program.nodes}
    assert len(kernels) > 10
    missing = [k for k in kernels if k not in text]
    assert not missing
    # a residual block: some kernel reads two tensors made by other kernels
    graph = graph_of(lib)
    fan_in = {}
    for e in graph.sections[0].edges:
        fan_in[e.target] = fan_in.get(e.target, 0) + 1
    assert max(fan_in.values()) >= 2


def test_byoc_region_is_outlined_with_its_backend(tmp_path):
    module, inputs = mlp()
    lib = tk.build(tk.byoc.partition_for(module, "example_npu"))
    graph = graph_of(lib)
    (kernel,) = graph.kernels
    assert kernel.backend == "example_npu"
    path = tk.visualize(lib, tmp_path / "npu.html")
    page = path.read_text()
    assert 'class="byoc"' in page and "BYOC: example_npu" in page


def test_profile_shades_the_slowest_kernel_hottest(cnn, tmp_path):
    lib, inputs = cnn
    profile = lib.profile(*inputs, runs=3)
    graph = graph_of(lib, profile)
    times = {k.symbol: k.seconds for k in graph.kernels}
    assert all(t is not None and t > 0 for t in times.values())
    slowest = max(times, key=times.get)
    svg = render_svg(graph, tmp_path / "timed.svg")
    root = ET.parse(svg).getroot()
    fills = {g.get("id"): g.find(f"{SVG}rect").get("fill") for g in root.iter(f"{SVG}g") if g.get("class") == "kernel"}
    by_symbol = {k.symbol: fills[k.id] for k in graph.kernels}
    assert by_symbol[slowest] == shade(1.0) == "#{:02x}{:02x}{:02x}".format(*HOT)
    assert len(set(by_symbol.values())) > 1


def test_vm_model_is_one_section_per_compiled_function(tmp_path):
    b = tk.GraphBuilder()
    x = b.input("x", ("n", 5))
    pred = b.compare(b.reduce_sum(x, [0, 1], False), 0.0, "gt")
    (y,) = if_(b, pred, [x], then_fn=lambda b, x: [b.mul(b.relu(x), 2.0)], else_fn=lambda b, x: [b.neg(x)])
    module = b.finish(b.add(y, 1.0))
    graph = graph_of(tk.build(module))
    assert len(graph.sections) > 1
    text = _svg_text(render_svg(graph, tmp_path / "vm.svg"))
    for kernel in graph.kernels:
        assert kernel.symbol in text


def test_exported_artifact_draws_like_the_library(cnn, tmp_path):
    lib, _ = cnn
    lib.export_library(tmp_path / "cnn.tk")
    from_disk = graph_of(str(tmp_path / "cnn.tk"))
    assert [k.symbol for k in from_disk.kernels] == [k.symbol for k in graph_of(lib).kernels]


def test_graph_module_is_built_then_drawn(tmp_path):
    module, _ = mlp(sizes=(12, 7, 5))
    text = _svg_text(render_svg(graph_of(module), tmp_path / "m.svg"))
    assert "dense" in text and "float32[1, 12]" in text


def test_unknown_picture_type_is_refused_by_name(cnn, tmp_path):
    lib, _ = cnn
    with pytest.raises(ValueError, match=r"unknown picture type '\.jpg'"):
        tk.visualize(lib, tmp_path / "graph.jpg")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_html_page_renders_in_headless_chromium(cnn, tmp_path):
    lib, inputs = cnn
    page = tk.visualize(lib, tmp_path / "cnn.html", profile=lib.profile(*inputs, runs=3))
    shot = tmp_path / "cnn.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--hide-scrollbars", "--window-size=900,1300", f"--screenshot={shot}", page.resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    image = pytest.importorskip("PIL.Image")  # Pillow: matplotlib's dependency
    pixels = np.asarray(image.open(shot).convert("RGB"))
    hot = np.array(HOT)
    # the slowest kernel's box is drawn in the hot colour, and the page is not blank
    assert (np.abs(pixels.astype(int) - hot).max(axis=-1) <= 8).sum() > 500
    assert (pixels < 100).all(axis=-1).sum() > 500  # text
