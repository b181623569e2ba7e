"""A torch operator's plain call is its functional form, for every shape of kernel (issue 29, item 7).

``ops.<kernel>(...)`` is resolved by torch among the overloads of one operator, trying each in turn; when the
mutating form was an overload of the same operator and took the same arguments (a kernel whose arrays are all
``In`` and ``InOut``), the plain call wrote its inputs in place and returned None. The mutating form is now an
operator of its own (``lg_mutating_<kernel>``, also ``ops.<kernel>.mutating``), so the plain call has only the
functional overload to resolve to.

Specs are made here, rendered by the project's own renderer into a temporary folder and imported: fixed ones
covering each kernel shape (written arrays only ``Out``, only ``InOut``, both, ``InOut`` with nothing else read,
scalars first and between arrays, a size no input has, a written field narrower than its array, nothing read),
and random ones (hypothesis). For each, on the CPU build of torch (tensors that read as CUDA tensors, launches
recorded by the stand-in device): the plain call returns new tensors, launches once with the returned tensors
as the written arrays, leaves every input as it was, and ``make_fx`` traces the functional overload;
``.mutating`` writes the arrays given and traces as the mutating operator.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from layoutgen import Field, In, InOut, Kernel, Layout, Out, Scalar, Spec, bool_, f32, i32  # noqa: E402
from layoutgen.checks import check_spec  # noqa: E402
from layoutgen.codegen.render import render_spec  # noqa: E402
from layoutgen.declare.kernels import Param  # noqa: E402
from layoutgen.schema.diagnostics import Severity  # noqa: E402
from tests.helpers.launch import launched  # noqa: E402,F401  (the fixture: launches recorded, none made)
from tests.helpers.torch_fakes import OnDevice, cpu_as_cuda, on_gpu  # noqa: E402,F401  (fixtures)

SIZES = {"B": 3, "M": 2}

ROWS = Layout("Rows", ["B"], f32, width=4, doc="rows of 4")
WIDE = Layout("Wide", ["B"], f32, [Field("a", 4), Field("ctx", 2)], doc="rows of 6: a field of 4 and one of 2")
GRID = Layout("Grid", ["B", "M"], f32, width=4, doc="M: only an output brings it")
TABLE = Layout("Table", [3], f32, width=4, doc="static")
INTS = Layout("Ints", ["B"], i32, width=2, doc="another dtype")

#: what a parameter of each shape may be bound to
VIEWS = {"rows": [ROWS, WIDE.a], "pair": [WIDE.ctx, INTS], "grid": [GRID], "table": [TABLE]}
SHAPES = {"rows": ["B", 4], "pair": ["B", 2], "grid": ["B", "M", 4], "table": [3, 4]}
SCALAR_VALUES = {"float": 0.25, "int": 3, "bool": True}

_specs = itertools.count()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("torch_shapes")
    (folder / "k.cu.j2").write_text("// the body does nothing: launches are recorded, not made\n")
    return folder


def layout_of(bound: Any) -> Any:
    """The layout of what a parameter is bound to: a layout, or a view of one."""
    return bound if isinstance(bound, Layout) else bound.layout


def operators(root: Path, params: Sequence[Param | Scalar], bound: dict[str, Any],
              drawn: bool = False) -> tuple[str, str, Any]:
    """A spec of one kernel ``k`` of ``params`` bound as ``bound``, rendered into ``root`` and imported: its
    namespace, kernel name and ``ops``. A ``drawn`` kernel the checks refuse is skipped."""
    name = f"shapes{next(_specs)}"
    kernel = Kernel("k", "k.cu.j2", list(params), template_root=root)
    spec = Spec(name, kernels=[kernel.bind(**bound)], torch=True)
    errors = [str(d) for d in check_spec(spec) if d.severity is Severity.ERROR]
    if drawn:
        assume(not errors)
    assert not errors
    rendered = render_spec(spec, root, "spec.py")
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    for path, text in rendered.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    package = f"_lg_test_{name}"
    made = importlib.util.spec_from_file_location(package, root / name / "__init__.py",
                                                  submodule_search_locations=[str(root / name)])
    assert made is not None and made.loader is not None
    module = importlib.util.module_from_spec(made)
    sys.modules[package] = module
    made.loader.exec_module(module)
    return f"layoutgen_{name}", "k", importlib.import_module(f"{package}.torch_ops").ops


def tensor(view: Any, fill: float) -> Any:
    """An array of ``view``'s whole layout with the sizes of SIZES, as a CUDA tensor would read."""
    lay = layout_of(view)
    shape = [SIZES[d.name] if d.size is None else d.size for d in lay.dims] + [lay.width]
    dtype = torch.int32 if lay.dtype.name == "i32" else torch.float32
    return (torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape) + fill).to(dtype)


def expected_schema(params: Sequence[Param | Scalar], bound: dict[str, Any]) -> list[str]:
    """The functional form's arguments, as docs/torch.md says: what the kernel reads (arrays and scalars, in
    declaration order), a size for each symbol only the outputs have, and the device where no array is read."""
    read = [p for p in params if isinstance(p, Scalar) or p.reads]
    given = {d.name for p in read if isinstance(p, Param) for d in layout_of(bound[p.name]).dims if d.size is None}
    sizes = dict.fromkeys(d.name for p in params if isinstance(p, Param) and p.writes
                          for d in layout_of(bound[p.name]).dims if d.size is None and d.name not in given)
    device = [] if any(isinstance(p, Param) for p in read) else ["lg_device"]
    return [p.name for p in read] + [f"lg_size_{s}" for s in sizes] + device


def assert_plain_call_is_functional(namespace: str, name: str, ops: Any, params: Sequence[Param | Scalar],
                                    bound: dict[str, Any], launched: list[Any]) -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    packet = getattr(ops, name)
    assert packet.overloads() == ["default"]  # the plain call resolves among these: the functional form alone
    schema = packet.default._schema
    assert [a.name for a in schema.arguments] == expected_schema(params, bound)
    assert not any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    assert str(packet.mutating._schema).startswith(f"{namespace}::lg_mutating_{name}(")

    arrays = [p for p in params if isinstance(p, Param)]
    inputs = {p.name: tensor(bound[p.name], n).as_subclass(OnDevice) for n, p in enumerate(arrays) if p.reads}

    def argument(arg: Any) -> Any:
        if arg.name in inputs:
            return inputs[arg.name]
        if arg.name.startswith("lg_size_"):
            return SIZES[arg.name.removeprefix("lg_size_")]
        if arg.name == "lg_device":
            return "cpu"  # read as CUDA device 0 by the fixture
        return SCALAR_VALUES[str(arg.type).lower()]

    args = [argument(a) for a in schema.arguments]
    before = {k: (t.clone(), t._version, t.data_ptr()) for k, t in inputs.items()}
    launched.clear()
    result = packet(*args)
    written = [p for p in arrays if p.writes]
    returned = list(result) if isinstance(result, tuple) else [] if result is None and not written else [result]
    assert len(returned) == len(written) and all(isinstance(t, torch.Tensor) for t in returned), result
    for k, t in inputs.items():  # the inputs: as they were, never written
        value, version, pointer = before[k]
        assert torch.equal(t, value) and t._version == version and t.data_ptr() == pointer, k
    assert [launch[0] for launch in launched] == [name]
    pointers = launched[0][2][: len(arrays)]  # the kernel's array pointers, in declaration order
    out = iter(returned)
    for p, pointer in zip(arrays, pointers):
        if p.writes:  # the kernel writes the returned tensor, which is new memory
            t = next(out)
            assert pointer == t.data_ptr() and pointer not in {v[2] for v in before.values()}, p.name
        else:
            assert pointer == inputs[p.name].data_ptr(), p.name

    plain = [a.as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in args]
    for mode in ("fake", "symbolic"):
        graph = make_fx(lambda *a: packet(*a), tracing_mode=mode)(*plain).graph
        called = [str(n.target) for n in graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)]
        assert called == [f"{namespace}.{name}.default"], (mode, called)

    every = [inputs[p.name] if p.name in inputs else tensor(bound[p.name], 0).as_subclass(OnDevice)
             if isinstance(p, Param) else SCALAR_VALUES[p.dtype.kind if p.dtype.kind != "uint" else "int"]
             for p in params]
    launched.clear()
    assert packet.mutating(*every) is None
    assert [launch[0] for launch in launched] == [name]
    for p, t in zip(params, every):
        if isinstance(p, Param) and p.writes:  # written in place: the version counter says so
            assert t._version == 1, p.name
    plain_every = [a.as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in every]
    graph = make_fx(lambda *a: packet.mutating(*a), tracing_mode="fake")(*plain_every).graph
    called = [str(n.target) for n in graph.nodes if n.op == "call_function"]
    assert called == [f"{namespace}.lg_mutating_{name}.default"]


#: Each shape of kernel: its parameters and what each array is bound to.
CASES: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "only Out": ([In("x", ["B", 4]), Out("y", ["B", 4])], {"x": ROWS, "y": ROWS}),
    "only InOut": ([InOut("w", ["B", 4]), In("g", ["B", 4])], {"w": ROWS, "g": ROWS}),
    "InOut alone": ([InOut("w", ["B", 4])], {"w": ROWS}),
    "Out and InOut": ([In("x", ["B", 4]), Out("y", ["B", 4]), InOut("acc", [3, 4])],
                      {"x": ROWS, "y": ROWS, "acc": TABLE}),
    "InOut with scalars": ([Scalar("first", i32), InOut("w", ["B", 4]), Scalar("lr", f32), In("g", ["B", 4]),
                            Scalar("on", bool_)], {"w": ROWS, "g": ROWS}),
    "a size no input has": ([In("c", ["B", 4]), Scalar("s", f32), Out("dst", ["B", "M", 4])],
                            {"c": ROWS, "dst": GRID}),
    "a written field": ([In("x", ["B", 4]), Out("ctx", ["B", 2]), InOut("w", ["B", 4])],
                        {"x": ROWS, "ctx": WIDE.ctx, "w": WIDE.a}),
    "nothing written": ([In("x", ["B", 4]), Scalar("s", f32)], {"x": ROWS}),
    "nothing read": ([Out("y", ["B", 4]), Scalar("s", f32), Out("t", [3, 4])], {"y": ROWS, "t": TABLE}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plain_call_is_the_functional_form(root: Path, cpu_as_cuda: list[Any], case: str) -> None:
    params, bound = CASES[case]
    namespace, name, ops = operators(root, params, bound)
    assert_plain_call_is_functional(namespace, name, ops, params, bound, cpu_as_cuda)


def test_a_written_field_is_returned_with_zeros_around_it(root: Path, cpu_as_cuda: list[Any]) -> None:
    params, bound = CASES["a written field"]
    _, name, ops = operators(root, params, bound)
    ctx, w = getattr(ops, name)(tensor(ROWS, 1).as_subclass(OnDevice), tensor(WIDE, 2).as_subclass(OnDevice))
    assert ctx.shape == (3, 6) and not ctx.any()  # allocated as zeros: the recorded kernel wrote nothing
    assert torch.equal(w, tensor(WIDE, 2))  # the InOut: a copy of what was given


def test_nothing_read_allocates_on_the_device_given(root: Path) -> None:
    params, bound = CASES["nothing read"]
    _, name, ops = operators(root, params, bound)
    y, t = getattr(ops, name)(0.5, 3, "meta")  # s, then the size of B, then the device: on meta, no launch
    assert (y.shape, y.device.type, t.shape, t.dtype) == ((3, 4), "meta", (3, 4), torch.float32)


@st.composite
def kernels(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    params: list[Any] = []
    bound: dict[str, Any] = {}
    for i in range(draw(st.integers(1, 4))):
        shape = draw(st.sampled_from(sorted(SHAPES)))
        make = draw(st.sampled_from([In, Out, InOut]))
        params.append(make(f"p{i}", SHAPES[shape]))
        bound[f"p{i}"] = draw(st.sampled_from(VIEWS[shape]))
    for n, kind in enumerate(draw(st.lists(st.sampled_from([f32, i32, bool_]), max_size=3))):
        params.insert(draw(st.integers(0, len(params))), Scalar(f"s{n}", kind))
    return params, bound


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kernel=kernels())
def test_random_kernels_plain_call_is_functional(root: Path, cpu_as_cuda: list[Any],
                                                 kernel: tuple[list[Any], dict[str, Any]]) -> None:
    params, bound = kernel
    namespace, name, ops = operators(root, params, bound, drawn=True)
    assert_plain_call_is_functional(namespace, name, ops, params, bound, cpu_as_cuda)


# -- issue 33, item 4: what a functional call allocates is kept per its inputs' shapes --------------------------


def _vsn_op(binding: Any) -> Any:
    """A fresh operator object of a binding of examples/vsn, on the generated launcher: no key seen yet."""
    import generated.vsn as vsn
    from layoutgen.codegen.torchmodule import op_model
    from layoutgen.runtime import torch_ops

    m = op_model(binding)
    spec = torch_ops.TorchOpSpec(m.name, getattr(vsn, m.launcher), m.mutating, m.order, m.functional,
                                 inputs=m.inputs, outputs=m.outputs, sizes=m.sizes)
    return torch_ops._Op(torch, spec)


def _outcome(call: Any, launched: list[Any]) -> Any:
    """What a call did: the error it raised, or the arrays it returned (shape, strides, dtype) and the launch
    (its name, blocks and values but the pointers)."""
    from layoutgen.runtime.errors import LaunchError

    launched.clear()
    try:
        result = call()
    except LaunchError as exc:
        return ("refused", str(exc))
    outs = result if isinstance(result, tuple) else (result,)
    return ([(tuple(t.shape), t.stride(), t.dtype) for t in outs], [(n, blocks) for n, blocks, _ in launched])


SHAPES_OF_X = st.sampled_from([(1, 1, 56), (2, 3, 56), (3, 1, 56), (2, 56), (2, 3, 40), (2, 3, 1, 56)])
SHAPES_OF_W = st.sampled_from([(40, 40), (40, 40), (40,), (41, 40)])
SHAPES_OF_B = st.sampled_from([(40,), (40,), (39,), (1, 40)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(SHAPES_OF_X, SHAPES_OF_W, SHAPES_OF_B, st.sampled_from([torch.float32, torch.float64]),
                                st.integers(-1, 3)), min_size=2, max_size=8))
def test_a_warm_functional_call_does_what_a_cold_one_does(cpu_as_cuda: list[Any],
                                                           calls: list[tuple[Any, ...]]) -> None:
    """The same operator object called again and again (its keys warm) allocates, launches and refuses exactly
    as a new one does on each call: a kept key never stands for a check of something else."""
    from examples.vsn import spec as vsn_spec

    forward, broadcast = _vsn_op(vsn_spec.vsn_fwd), _vsn_op(
        vsn_spec.context_broadcast.bind(ctx=vsn_spec.Context, dst=vsn_spec.Window.context))
    for x_shape, w_shape, b_shape, dtype, k in calls:
        x = torch.randn(x_shape, dtype=dtype).as_subclass(OnDevice)
        W, b = torch.randn(w_shape).as_subclass(OnDevice), torch.randn(b_shape).as_subclass(OnDevice)
        ctx = torch.randn((x_shape[0], 16) if len(x_shape) > 1 else (16,), dtype=dtype).as_subclass(OnDevice)
        for warm, args in ((forward, (x, W, b)), (broadcast, (ctx, k))):
            cold = _vsn_op(vsn_spec.vsn_fwd if warm is forward else
                           vsn_spec.context_broadcast.bind(ctx=vsn_spec.Context, dst=vsn_spec.Window.context))
            assert _outcome(lambda: warm.functional(*args), cpu_as_cuda) == \
                _outcome(lambda: cold.functional(*args), cpu_as_cuda), args


def test_compile_records_the_plain_call_as_functional_and_mutating_as_its_own_operator() -> None:
    """Dynamo reads `ops.sgd_update.mutating` as the mutating operator, with no graph break; the plain call of
    the same arguments is the functional one (on meta tensors: the fake implementations)."""
    import generated.vsn.torch_ops as vsn_torch

    ops = vsn_torch.ops

    def step(W: Any, b: Any, gW: Any, gb: Any) -> Any:
        new_W, new_b = ops.sgd_update(W, b, gW, gb, 0.5)
        ops.sgd_update.mutating(new_W, new_b, gW, gb, 0.5)
        return new_W, new_b

    args = [torch.empty(*shape, device="meta") for shape in ((40, 40), (40,), (40, 40), (40,))]
    explained = torch._dynamo.explain(step)(*args)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    called = [str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"
              and "getitem" not in str(n.target)]
    # Dynamo records the plain call as the operator (its packet), resolved among its overloads when the graph
    # runs: which is why the functional operator has the one overload
    assert called == ["layoutgen_vsn.sgd_update", "layoutgen_vsn.lg_mutating_sgd_update.default"]
    assert ops.sgd_update.overloads() == ["default"]
    new_W, new_b = torch.compile(step, backend="aot_eager", fullgraph=True)(*args)
    assert (new_W.shape, new_b.shape) == ((40, 40), (40,))
