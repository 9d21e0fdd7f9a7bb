"""The ONNX frontend: from_onnx's API (paths, bytes, external data, symbolic dims, shape=,
keep_params_as_input, bind=), its errors (unsupported ops listed at once, malformed models
naming the node), converter selection by opset, shape arithmetic folded at import, control
flow, and the ONNX Backend API. Numerics against onnx's own reference evaluator on fresh
random inputs."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.frontends.onnx import (  # noqa: E402
    OnnxImportError,
    OnnxInputValuesNeeded,
    OnnxUnsupportedError,
    from_onnx,
    from_onnx_with_values,
    unsupported_nodes,
)
from tensorkiln.frontends.onnx.registry import find_converter  # noqa: E402

RNG = np.random.default_rng(34)


def _model(nodes, inputs, outputs, initializers=(), opset=17, **kwargs):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)


def _tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _reference(model, **inputs):
    return ReferenceEvaluator(model).run(None, inputs)


def _small_cnn():
    """Conv -> Relu -> MaxPool -> Flatten -> Gemm, with odd sizes and a symbolic batch."""
    w = RNG.standard_normal((5, 3, 3, 3)).astype("f4")
    b = RNG.standard_normal(5).astype("f4")
    fc = RNG.standard_normal((7, 5 * 4 * 3)).astype("f4")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
    ]
    inits = [_init("w", w), _init("b", b), _init("fc", fc), _init("fb", RNG.standard_normal(7).astype("f4"))]
    return _model(nodes, [_tensor("x", TensorProto.FLOAT, ["batch", 3, 9, 7])], [_tensor("y", TensorProto.FLOAT, ["batch", 7])], inits)


def test_symbolic_batch_compiled_once():
    model = _small_cnn()
    module = from_onnx(model)
    assert "#graph.dims<batch" in str(module)
    lib = tk.build(module)
    for n in (1, 3):
        x = RNG.standard_normal((n, 3, 9, 7)).astype("f4")
        np.testing.assert_allclose(lib(x), _reference(model, x=x)[0], rtol=1e-4, atol=1e-4)


def test_shape_pins_dim_params_and_inputs():
    model = _small_cnn()
    assert "?x" not in str(from_onnx(model, shape={"batch": 2}))
    assert "tensor<4x3x9x7xf32>" in str(from_onnx(model, shape={"x": (4, 3, 9, 7)}))
    with pytest.raises(OnnxImportError, match="neither inputs of the model nor dim_params"):
        from_onnx(model, shape={"nope": 3})


def test_path_bytes_and_external_data(tmp_path):
    model = _small_cnn()
    x = RNG.standard_normal((2, 3, 9, 7)).astype("f4")
    expected = _reference(model, x=x)[0]
    path = tmp_path / "cnn.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    for source, base_dir in ((str(path), None), (path, None), (path.read_bytes(), tmp_path), (onnx.load(path, load_external_data=False), tmp_path)):
        np.testing.assert_allclose(tk.build(from_onnx(source, base_dir=base_dir))(x), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(OnnxImportError, match="weights.bin"):
        from_onnx(path.read_bytes())  # (its external data cannot be found without base_dir)


def test_keep_params_as_input():
    model = _small_cnn()
    module, params = from_onnx(model, keep_params_as_input=True)
    assert set(params) == {"w", "b", "fc", "fb"}
    x = RNG.standard_normal((2, 3, 9, 7)).astype("f4")
    y = tk.build(module)(x, *params.values())
    np.testing.assert_allclose(y, _reference(model, x=x)[0], rtol=1e-4, atol=1e-4)


def test_one_error_lists_every_unsupported_op():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Frobnicate", ["a"], ["b"], domain="com.example", name="frob1"),
        helper.make_node("Frobnicate", ["b"], ["c"], domain="com.example", name="frob2"),
        helper.make_node("StringNormalizer", ["s"], ["t"], name="strings"),
    ]
    model = _model(
        nodes,
        [_tensor("x", TensorProto.FLOAT, [3]), _tensor("s", TensorProto.STRING, [2])],
        [_tensor("c", TensorProto.FLOAT, [3]), _tensor("t", TensorProto.STRING, [2])],
    )
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    assert unsupported_nodes(model) == {
        ("com.example", "Frobnicate", 1): ["frob1", "frob2"],
        ("ai.onnx", "StringNormalizer", 17): ["strings"],
    }
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    message = str(info.value)
    assert "2 unsupported ONNX operators (3 nodes)" in message
    assert "com.example.Frobnicate (opset 1) x2 (frob1, frob2)" in message
    assert "ai.onnx.StringNormalizer (opset 17) x1 (strings)" in message


def test_unsupported_dtype_refused_by_name():
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [_tensor("x", TensorProto.COMPLEX64, [4])], [_tensor("y", TensorProto.COMPLEX64, [4])])
    with pytest.raises(UnsupportedOperatorError, match="input 'x': element type complex64 is not supported"):
        from_onnx(model)


def test_held_types_through_the_backend():
    """uint32 is held as int64 (results wrapped to 32 bits), float8 as float32 values of
    the format (casts round to nearest even, saturating): the backend converts at the call."""
    import ml_dtypes

    import tensorkiln.tools.onnx_backend as backend

    nodes = [helper.make_node("Sub", ["a", "b"], ["d"]), helper.make_node("Mul", ["d", "b"], ["p"])]
    model = _model(nodes, [_tensor("a", TensorProto.UINT32, [5]), _tensor("b", TensorProto.UINT32, [5])], [_tensor("p", TensorProto.UINT32, [5])])
    a = RNG.integers(0, 2**32, 5, dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2**32, 5, dtype=np.uint64).astype(np.uint32)
    (p,) = backend.prepare(model).run([a, b])
    assert p.dtype == np.uint32
    np.testing.assert_array_equal(p, (a - b) * b)  # numpy's uint32 arithmetic wraps the same way
    cast = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN)], [_tensor("x", TensorProto.FLOAT, [9])], [_tensor("y", TensorProto.FLOAT8E4M3FN, [9])])
    x = np.array([0.3, -1.0625, 1.1875, 448.0, 460.0, 470.0, 1e6, -np.inf, np.nan], np.float32)
    (y,) = backend.prepare(cast).run([x])
    assert y.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(y.astype(np.float32), onnx.numpy_helper.saturate_cast(x, ml_dtypes.float8_e4m3fn).astype(np.float32))


def test_malformed_models_name_the_node():
    dangling = _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")], [_tensor("x", TensorProto.FLOAT, [3])], [_tensor("y", TensorProto.FLOAT, [3])])
    with pytest.raises(OnnxImportError, match="adder|ghost"):
        from_onnx(dangling)
    short = _init("w", np.zeros(3, "f4"))
    short.dims[:] = [4]  # claims 4 elements, holds 3
    bad_init = _model([helper.make_node("Add", ["x", "w"], ["y"])], [_tensor("x", TensorProto.FLOAT, [4])], [_tensor("y", TensorProto.FLOAT, [4])], [short])
    with pytest.raises(OnnxImportError, match="tensor name: w.*12 bytes"):
        from_onnx(bad_init)
    two_inputs = _model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu1")], [_tensor("x", TensorProto.FLOAT, [3])], [_tensor("y", TensorProto.FLOAT, [3])])
    with pytest.raises(OnnxImportError, match=r"onnx.checker.*relu1.*input size 2"):
        from_onnx(two_inputs)
    bad_perm = _model([helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=[0, 0])], [_tensor("x", TensorProto.FLOAT, [3, 2])], [_tensor("y", TensorProto.FLOAT, [2, 3])])
    with pytest.raises(OnnxImportError, match=r"node 'tr' \(Transpose\).*not a permutation"):
        from_onnx(bad_perm)
    with pytest.raises(OnnxImportError, match="not a readable ONNX model"):
        from_onnx(b"\x00not a model\xff" * 3)
    conv_mismatch = _model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv1")],
        [_tensor("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [_tensor("y", TensorProto.FLOAT, [1, 4, 6, 6])],
        [_init("w", np.zeros((4, 5, 3, 3), "f4"))],
    )
    with pytest.raises(OnnxImportError, match="conv1.*input channels"):
        from_onnx(conv_mismatch)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_converter_chosen_by_opset(opset):
    """Split takes its sizes as an attribute before opset 13, as an input from 13; opset 18
    adds num_outputs."""
    x = RNG.standard_normal((7, 4)).astype("f4")
    if opset < 13:
        node = helper.make_node("Split", ["x"], ["a", "b"], axis=0, split=[3, 4])
        inits = []
    else:
        node = helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=0)
        inits = [_init("sizes", np.array([3, 4], np.int64))]
    model = _model([node], [_tensor("x", TensorProto.FLOAT, [7, 4])], [_tensor("a", TensorProto.FLOAT, [3, 4]), _tensor("b", TensorProto.FLOAT, [4, 4])], inits, opset=opset)
    a, b = tk.build(from_onnx(model))(x)
    np.testing.assert_array_equal(a, x[:3])
    np.testing.assert_array_equal(b, x[3:])
    assert find_converter("", "Split", opset).since == (2 if opset < 13 else 13)


def test_shape_arithmetic_folds_at_import():
    """Shape -> Gather -> Concat -> Reshape: constants with static shapes, symbolic dims
    followed with a symbolic batch; no shape op reaches the compiled module."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = [_init("zero", np.array(0, np.int64)), _init("axes", np.array([0], np.int64)), _init("minus1", np.array([-1], np.int64))]
    for batch in (3, "n"):
        model = _model(nodes, [_tensor("x", TensorProto.FLOAT, [batch, 4, 5])], [_tensor("y", TensorProto.FLOAT, [batch, 20])], inits)
        module = from_onnx(model)
        reshapes = [op for op in module.walk() if op.name == "graph.reshape" and op.operands[0].type.element_type != tk_i64()]
        assert len(reshapes) == 1
        x = RNG.standard_normal((3, 4, 5)).astype("f4")
        np.testing.assert_array_equal(tk.build(module)(x), x.reshape(3, 20))
        if batch == 3:
            assert not any(op.name in ("graph.concat", "graph.take") for op in module.walk())


def tk_i64():
    from xdsl.dialects.builtin import i64

    return i64


def test_graph_inputs_used_as_axes_are_bound():
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    model = _model([node], [_tensor("x", TensorProto.FLOAT, [3, 4, 5]), _tensor("axes", TensorProto.INT64, [1])], [_tensor("y", TensorProto.FLOAT, [3, 5])])
    with pytest.raises(OnnxInputValuesNeeded, match="graph input 'axes'") as info:
        from_onnx(model)
    assert info.value.inputs == ["axes"]
    x = RNG.standard_normal((3, 4, 5)).astype("f4")
    module, bound = from_onnx_with_values(model, {"x": x, "axes": np.array([1])})
    assert list(bound) == ["axes"]
    np.testing.assert_allclose(tk.build(module)(x), x.sum(axis=1), rtol=1e-5)


def test_if_on_run_time_condition_and_loop():
    then_graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [], [_tensor("t", TensorProto.FLOAT, [3])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_tensor("e", TensorProto.FLOAT, [3])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph),
    ]
    model = _model(nodes, [_tensor("x", TensorProto.FLOAT, [3])], [_tensor("y", TensorProto.FLOAT, [3])], [_init("two", np.float32(2)), _init("zero", np.float32(0))])
    module = from_onnx(model)
    assert any(op.name == "graph.if" for op in module.walk())
    lib = tk.build(module)
    for x in (np.array([1, 2, -1], "f4"), np.array([-5, 2, 1], "f4")):
        np.testing.assert_allclose(lib(x), _reference(model, x=x)[0])
    # a loop whose trip count is an input: graph.while
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Mul", ["v_in", "x"], ["v_out"])],
        "body",
        [_tensor("i", TensorProto.INT64, []), _tensor("cond_in", TensorProto.BOOL, []), _tensor("v_in", TensorProto.FLOAT, [3])],
        [_tensor("cond_out", TensorProto.BOOL, []), _tensor("v_out", TensorProto.FLOAT, [3])],
    )
    loop = _model(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
        [_tensor("n", TensorProto.INT64, []), _tensor("x", TensorProto.FLOAT, [3])],
        [_tensor("y", TensorProto.FLOAT, [3])],
    )
    module = from_onnx(loop)
    assert any(op.name == "graph.while" for op in module.walk())
    lib = tk.build(module)
    x = np.array([1.5, -2, 0.5], "f4")
    for n in (0, 1, 4):
        np.testing.assert_allclose(lib(np.array(n), x), x ** (n + 1), rtol=1e-6)


def test_function_ops_expand_to_their_body():
    """Ops ONNX defines as functions (no converter here: Celu's body) convert as their body;
    the model's own functions too."""
    x = RNG.standard_normal((4, 5)).astype("f4")
    model = _model([helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[1])], [_tensor("x", TensorProto.FLOAT, [4, 5])], [_tensor("y", TensorProto.FLOAT, [4, 5])])
    np.testing.assert_allclose(tk.build(from_onnx(model))(x), _reference(model, x=x)[0], rtol=1e-4, atol=1e-5)
    double = helper.make_function("local", "Double", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])], [helper.make_opsetid("", 17)])
    model = _model([helper.make_node("Double", ["x"], ["y"], domain="local")], [_tensor("x", TensorProto.FLOAT, [4, 5])], [_tensor("y", TensorProto.FLOAT, [4, 5])], functions=[double])
    model.opset_import.append(helper.make_opsetid("local", 1))
    np.testing.assert_allclose(tk.build(from_onnx(model))(x), 2 * x)


def test_refusal_names_the_node_and_attribute():
    model = _model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode="mirror-ish", name="padder")],
        [_tensor("x", TensorProto.FLOAT, [3, 4])],
        [_tensor("y", TensorProto.FLOAT, [5, 6])],
        [_init("pads", np.array([1, 1, 1, 1], np.int64))],
    )
    with pytest.raises(OnnxUnsupportedError, match="padder.*Pad.*mode 'mirror-ish'"):
        from_onnx(model)


def test_backend_api():
    from onnx.backend.base import Backend

    import tensorkiln.tools.onnx_backend as backend

    assert issubclass(backend.TensorkilnBackend, Backend)
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    model = _small_cnn()
    x = RNG.standard_normal((2, 3, 9, 7)).astype("f4")
    rep = backend.prepare(model)
    np.testing.assert_allclose(rep.run([x])[0], _reference(model, x=x)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rep.run({"x": x})[0], _reference(model, x=x)[0], rtol=1e-4, atol=1e-4)
    (y,) = backend.run_node(helper.make_node("Relu", ["a"], ["b"]), [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    # axes given as an input: compiled at run for each distinct value
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1)
    reduce_model = _model([node], [_tensor("x", TensorProto.FLOAT, [3, 4, 5]), _tensor("axes", TensorProto.INT64, [1])], [_tensor("y", TensorProto.FLOAT, ["a", "b", "c"])], opset=18)
    rep = backend.prepare(reduce_model)
    v = RNG.standard_normal((3, 4, 5)).astype("f4")
    for axis in (0, 2, 0):
        np.testing.assert_array_equal(rep.run([v, np.array([axis])])[0], v.max(axis=axis, keepdims=True))


def test_onnx_backend_test_runner_at_the_documented_path():
    """ONNX's own backend test runner (``onnx.backend.test.BackendTest``) runs against
    ``tensorkiln.frontends.onnx.backend`` (a few node cases here; the whole node suite is
    ``benchmarks/onnx_conformance.py``)."""
    import unittest

    import onnx.backend.test

    import tensorkiln.frontends.onnx.backend as tk_backend
    import tensorkiln.tools.onnx_backend as implementation

    assert tk_backend.prepare == implementation.prepare and tk_backend.TensorkilnBackend is implementation.TensorkilnBackend
    runner = onnx.backend.test.BackendTest(tk_backend, "tk_onnx_runner")
    for name in ("test_relu", "test_gemm_default_matrix_bias", "test_conv_with_strides_padding", "test_reduce_sum_keepdims_random"):
        runner.include(rf"^{name}_cpu$")
    suite = unittest.TestSuite()
    for case in runner.test_cases.values():
        suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(case))
    result = unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(suite)  # noqa: SIM115
    assert result.testsRun - len(result.skipped) == 4  # (the rest: skipped, "no matched include pattern")
    assert result.wasSuccessful(), [str(e) for _, e in result.failures + result.errors]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_batched_qlinear_matmul_matches_the_reference(dtype):
    """QLinearMatMul of two batched operands (graph.qmatmul takes a matrix right operand):
    an int32 product requantized as ONNX's reference does; per-column b scales and zero
    points, odd sizes, fresh random inputs: exactly equal."""
    info = np.iinfo(dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
    model = _model(
        [helper.make_node("QLinearMatMul", inputs, ["y"], name="qmm")],
        [_tensor("a", elem, [3, 5, 7]), _tensor("b", elem, [3, 7, 6])],
        [_tensor("y", elem, [3, 5, 6])],
        [
            _init("a_scale", np.array([0.02], np.float32)), _init("a_zero_point", np.array([3 if dtype == np.int8 else 131], dtype)),
            _init("b_scale", RNG.uniform(0.01, 0.05, 6).astype(np.float32)), _init("b_zero_point", RNG.integers(-4, 5, 6).astype(dtype) if dtype == np.int8 else RNG.integers(120, 136, 6).astype(dtype)),
            _init("y_scale", np.array([0.2], np.float32)), _init("y_zero_point", np.array([1 if dtype == np.int8 else 127], dtype)),  # (few saturate)
        ],
        opset=21,
    )  # fmt: skip
    lib = tk.build(from_onnx(model))
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        a = rng.integers(info.min, info.max, (3, 5, 7), endpoint=True).astype(dtype)
        b = rng.integers(info.min, info.max, (3, 7, 6), endpoint=True).astype(dtype)
        expected = _reference(model, a=a, b=b)[0]
        assert np.isin(expected, [info.min, info.max]).mean() < 0.2  # (a product, not saturation, is compared)
        np.testing.assert_array_equal(lib(a, b), expected)


@pytest.mark.parametrize(
    ("source", "target"),
    [(np.float32, np.uint32), (np.uint32, np.float32), (np.int16, np.uint16), (np.uint64, np.float64), (np.bool_, np.uint8)],
)
def test_bitcast_through_held_types(source, target):
    """ONNX's BitCast (opset 26) to and from types held in wider graph types (uint16, uint32,
    uint64): the bits of numpy's ``view``, on fresh random bits."""
    import tensorkiln.frontends.onnx.backend as tk_backend

    to = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    model = _model(
        [helper.make_node("BitCast", ["x"], ["y"], to=to, name="bits")],
        [_tensor("x", helper.np_dtype_to_tensor_dtype(np.dtype(source)), [4, 5])], [_tensor("y", to, [4, 5])], opset=26,
    )  # fmt: skip
    raw = RNG.integers(0, 256, (4, 5, np.dtype(source).itemsize), dtype=np.uint8)
    x = (raw[..., 0] & 1).astype(np.bool_) if source is np.bool_ else np.ascontiguousarray(raw).view(source).reshape(4, 5)
    if source is np.uint64:
        x = x & np.uint64(2**63 - 1)  # (uint64 is held as int64: values from 2**63 on are refused at the call)
    (y,) = tk_backend.prepare(model).run([x])
    assert y.dtype == np.dtype(target)
    expected = x.astype(np.uint8) if source is np.bool_ else x.view(target)
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))


def test_mel_weight_matrix_matches_the_reference_and_names_bad_edges():
    def model(high):
        names = ["bins", "length", "rate", "low", "high"]
        values = [np.int64(7), np.int64(33), np.int64(8000), np.float32(50.0), np.float32(high)]
        return _model([helper.make_node("MelWeightMatrix", names, ["w"], name="mel")], [], [_tensor("w", TensorProto.FLOAT, [17, 7])],
                      [_init(n, v) for n, v in zip(names, values)], opset=17)  # fmt: skip

    np.testing.assert_allclose(tk.build(from_onnx(model(3900.0)))(), _reference(model(3900.0))[0], rtol=1e-6)
    with pytest.raises(OnnxImportError, match="mel.*MelWeightMatrix.*Nyquist"):
        from_onnx(model(6000.0))


@pytest.mark.parametrize(
    "attrs",
    [
        {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "output_padding": [1, 0, 1]},
        {"strides": [1, 2, 1], "dilations": [2, 1, 1], "group": 2},
        {"strides": [3, 2, 2], "auto_pad": "SAME_UPPER"},
    ],
)
def test_conv_transpose_3d_matches_the_reference(attrs):
    """3-d ConvTranspose (depth taps of 2-d ones, spread over the output depth): strides,
    dilations, pads, output_padding, groups, auto_pad; odd sizes, fresh random inputs."""
    groups = attrs.get("group", 1)
    w = RNG.standard_normal((4, 3, 3, 2, 3)).astype("f4")
    b = RNG.standard_normal(3 * groups).astype("f4")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="deconv3d", **attrs)
    x = RNG.standard_normal((2, 4, 3, 5, 4)).astype("f4")

    def reference(x, w, b):  # (the reference evaluator takes one group: groups run one by one)
        ungrouped = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **{k: v for k, v in attrs.items() if k != "group"})
        probe = _model([ungrouped], [_tensor("x", TensorProto.FLOAT, list(x.shape))], [_tensor("y", TensorProto.FLOAT, None)], [_init("w", w), _init("b", b)])
        return _reference(probe, x=x)[0]

    c, m = 4 // groups, 3
    expected = np.concatenate([reference(x[:, k * c : (k + 1) * c], w[k * c : (k + 1) * c], b[k * m : (k + 1) * m]) for k in range(groups)], axis=1)
    model = _model([node], [_tensor("x", TensorProto.FLOAT, [2, 4, 3, 5, 4])], [_tensor("y", TensorProto.FLOAT, expected.shape)], [_init("w", w), _init("b", b)])
    got = tk.build(from_onnx(model))(x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_scan_8_runs_per_batch_element():
    """Scan of opset 8 (a leading batch axis, scanned along axis 1, ``directions``): a running
    sum forward and a reversed scan input; odd sizes, fresh random inputs, numpy expected."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Mul", ["s_out", "r_t"], ["y_t"])],
        "body",
        [_tensor("s_in", TensorProto.FLOAT, [3]), _tensor("x_t", TensorProto.FLOAT, [3]), _tensor("r_t", TensorProto.FLOAT, [3])],
        [_tensor("s_out", TensorProto.FLOAT, [3]), _tensor("y_t", TensorProto.FLOAT, [3])],
    )
    node = helper.make_node("Scan", ["", "s0", "x", "r"], ["s", "y"], num_scan_inputs=2, directions=[0, 1], body=body, name="scan8")
    model = _model(
        [node],
        [_tensor("s0", TensorProto.FLOAT, [2, 3]), _tensor("x", TensorProto.FLOAT, [2, 5, 3]), _tensor("r", TensorProto.FLOAT, [2, 5, 3])],
        [_tensor("s", TensorProto.FLOAT, [2, 3]), _tensor("y", TensorProto.FLOAT, [2, 5, 3])],
        opset=8,
    )
    s0, x, r = (RNG.standard_normal(shape).astype("f4") for shape in ((2, 3), (2, 5, 3), (2, 5, 3)))
    sums = s0[:, None, :] + np.cumsum(x, axis=1)
    s, y = tk.build(from_onnx(model))(s0, x, r)
    np.testing.assert_allclose(s, sums[:, -1], rtol=1e-5)
    np.testing.assert_allclose(y, sums * r[:, ::-1], rtol=1e-5)


@pytest.mark.parametrize(
    ("zero_point", "attrs"),
    [
        (np.array([3, -2, 0, 5], ml_dtypes.int4), {"axis": 1}),
        (np.array(40000, np.uint16), {}),
        (np.array(-7, np.int16), {}),
        (np.tile(np.array([[1], [3]], np.uint8), (3, 1, 4)).astype(ml_dtypes.uint2), {"axis": 1, "block_size": 3}),
        (np.array(0, ml_dtypes.float8_e4m3fn), {}),
        (np.array(0, ml_dtypes.float8_e5m2), {"saturate": 0}),
    ],
    ids=["int4-per-axis", "uint16", "int16", "uint2-blocked", "float8e4m3fn", "float8e5m2-unsaturated"],
)
def test_quantize_dequantize_of_wide_and_narrow_types(zero_point, attrs):
    """QuantizeLinear then DequantizeLinear (opset 21) to types graph.quantize lacks (16-, 4-,
    2-bit, float8: held in wider graph types) and blocked scales, against ONNX's reference on
    fresh random inputs spanning the range (saturation included)."""
    import tensorkiln.frontends.onnx.backend as tk_backend

    shape = (3, 4, 5) if "block_size" not in attrs else (3, 5, 4)
    # (blocked: a scale and zero point per 3 elements of axis 1: 5 -> 2 blocks, the last one cut)
    scale = (RNG.uniform(0.01, 0.2, zero_point.shape) if zero_point.ndim else np.array(0.05)).astype(np.float32)
    elem = onnx.helper.np_dtype_to_tensor_dtype(zero_point.dtype)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"], name="quant", **attrs),
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["y"], name="dequant", **{k: v for k, v in attrs.items() if k != "saturate"}),
    ]
    model = _model(nodes, [_tensor("x", TensorProto.FLOAT, list(shape))], [_tensor("q", elem, list(shape)), _tensor("y", TensorProto.FLOAT, list(shape))],
                   [_init("scale", scale), numpy_helper.from_array(zero_point, "zp")], opset=21)  # fmt: skip
    info = ml_dtypes.finfo(zero_point.dtype) if "float" in zero_point.dtype.name else ml_dtypes.iinfo(zero_point.dtype)
    spread = (float(info.max) - float(info.min)) / 4  # (most values inside the range, some saturating)
    x = (RNG.standard_normal(shape) * float(scale.mean()) * spread).astype("f4")
    q, y = tk_backend.prepare(model).run([x])
    q_ref, y_ref = _reference(model, x=x)
    assert q.dtype == q_ref.dtype
    assert len(np.unique(q_ref.astype(np.float64))) > 3  # (not all saturated)
    np.testing.assert_array_equal(q.astype(np.float64), q_ref.astype(np.float64))
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)


def test_optionals_of_tensors():
    """OptionalHasElement of a tensor is true, of a left-out input false; OptionalGetElement
    of a tensor is the tensor; an optional-typed graph input is refused by name."""
    x = RNG.standard_normal((2, 3)).astype("f4")
    nodes = [
        helper.make_node("OptionalHasElement", ["x"], ["has"]),
        helper.make_node("OptionalHasElement", [""], ["empty"]),
        helper.make_node("OptionalGetElement", ["x"], ["same"]),
    ]
    model = _model(nodes, [_tensor("x", TensorProto.FLOAT, [2, 3])],
                   [_tensor("has", TensorProto.BOOL, []), _tensor("empty", TensorProto.BOOL, []), _tensor("same", TensorProto.FLOAT, [2, 3])], opset=18)  # fmt: skip
    has, empty, same = tk.build(from_onnx(model))(x)
    assert has.dtype == np.bool_ and bool(has) and not bool(empty)
    np.testing.assert_array_equal(same, x)
    optional_input = helper.make_value_info("opt", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
    refused = _model([helper.make_node("OptionalHasElement", ["opt"], ["h"])], [optional_input], [_tensor("h", TensorProto.BOOL, [])], opset=18)
    with pytest.raises(OnnxUnsupportedError, match="'opt' is of optional type"):
        from_onnx(refused)
