"""Programs and their dataflow checks (LG301-LG305), without a GPU.

The four small specs in ``tests/specs/dataflow`` each hold one mistake, marked
``# <-`` on the line the diagnostic must name; `layoutgen check` runs on them
as users run it. The VSN training step of ``examples/vsn`` is then broken the
three ways issue 6 names, and the box arithmetic under the checks is compared
with numpy masks on random boxes.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.vsn import spec as vsn
from layoutgen import Buffer, In, Kernel, Launch, Out, Program, ProgramError, Spec, dims
from layoutgen.checks import check_spec
from layoutgen.checks.dataflow import Box, check_program, uncovered
from layoutgen.schema.diagnostics import Severity
from tests.helpers.cli import layoutgen

DATAFLOW = Path(__file__).resolve().parent / "specs" / "dataflow"
N, T, R, C = dims("N T R C")


def marked_line(spec: str) -> int:
    """The line of ``spec`` that carries the ``# <-`` marker."""
    lines = (DATAFLOW / spec).read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, start=1) if "  # <-" in text]
    return line


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding the dataflow specs, generated once so that drift checks stay quiet."""
    root = tmp_path_factory.mktemp("dataflow")
    shutil.copytree(DATAFLOW, root / "specs", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/unread.py"]\nout = "generated"\n')
    generated = layoutgen("generate", cwd=root)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    return root


@pytest.mark.parametrize("spec, code, exit_code, words", [
    ("unwritten.py", "LG301", 1, ["`read_tail.src` reads columns 8..16 of `row` (Row.tail)", "no earlier launch"]),
    ("overlap.py", "LG302", 1, ["`fill_all.dst` writes columns 0..8 of `row` (Row.head)",
                                "`fill_head.dst` (launch 1, specs/overlap.py:15) already wrote", "overwrites="]),
    ("unread.py", "LG303", 0, ["`fill_tail.dst` writes columns 8..16 of `row` (Row.tail)", "no later launch",
                               "output=True"]),
    ("wrong_layout.py", "LG304", 1, ["`fill_head.src` is bound to Half", "buffer `src` of layout Full"]),
])
def test_layoutgen_check_reports_each_dataflow_problem_at_the_users_line(
    project: Path, spec: str, code: str, exit_code: int, words: list[str]
) -> None:
    result = layoutgen("check", f"specs/{spec}", cwd=project)
    severity = "warning" if code == "LG303" else "error"
    expected = f"specs/{spec}:{marked_line(spec)}: {severity}[{code}]: "
    lines = [line for line in result.stdout.splitlines() if f"[{code}]" in line]
    assert lines and lines[0].startswith(expected), result.stdout
    for word in words:
        assert word in result.stdout, (word, result.stdout)
    if code != "LG303":  # the check fails; a warning alone does not fail it
        assert "LG502" not in result.stdout  # errors stop before generation: no drift noise
    assert result.returncode == exit_code, result.stdout + result.stderr


def test_the_unread_spec_fails_nothing_but_warns_in_the_summary(project: Path) -> None:
    result = layoutgen("check", cwd=project)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().splitlines()[-1] == "Found no errors, 1 warning in 1 spec."


# -- the VSN training step ------------------------------------------------------------


def _step(*launches: Launch) -> list[str]:
    """The codes and messages `layoutgen check` gives for the VSN step made of ``launches``."""
    program = Program("vsn_step", list(launches))
    return [f"{d.code} {d.message}" for d in check_spec(Spec("variant", programs=[program]))]


def _launches() -> dict[str, Launch]:
    return {launch.binding.kernel.name: launch for launch in vsn.vsn_step.launches}


def test_the_vsn_step_is_clean() -> None:
    assert check_spec(vsn.spec) == []
    assert [launch.binding.name for launch in vsn.vsn_step.launches] == [
        "snap_feature_assemble", "context_broadcast", "variable_selection_fwd", "mse_grad", "zero_grads",
        "variable_selection_bwd", "sgd_update",
    ]


def test_removing_the_context_broadcast_leaves_window_context_unwritten() -> None:
    kept = [launch for name, launch in _launches().items() if name != "context_broadcast"]
    found = _step(*kept)
    assert found == ["LG301 program `vsn_step` returns columns 40..56 of `window` (Window.context), which no launch "
                     "writes"]


def test_widening_the_broadcast_over_snap_is_an_overlapping_write() -> None:
    launches = _launches()
    wide_ctx = Buffer("wide_ctx", vsn.Layout("WideContext", [vsn.B], vsn.f32, width=56), input=True)
    widened = Launch(vsn.context_broadcast, name="context_broadcast_wide", ctx=wide_ctx, dst=vsn.window)
    order = [widened if name == "context_broadcast" else launch for name, launch in launches.items()]
    found = _step(*order)
    assert len(found) == 1 and found[0].startswith(
        "LG302 `context_broadcast_wide.dst` writes columns 0..40 of `window` (Window.snap), which "
        "`snap_feature_assemble.snap` (launch 1,"), found


def test_an_unread_gradient_is_listed_as_a_warning() -> None:
    launches = _launches()
    unread = Buffer("grad_x", vsn.Features)  # not an output, and nothing after the backward reads it
    bwd = launches["variable_selection_bwd"]
    args = {a.param: (unread if a.param == "grad_x" else a.buffer[a.view.path] if a.view.path else a.buffer)
            for a in bwd.args}
    replaced = [Launch(vsn.variable_selection_bwd, **args) if name == "variable_selection_bwd" else launch
                for name, launch in launches.items()]
    program = Program("vsn_step", replaced)
    diags = check_program(program)
    assert [(d.code, d.severity) for d in diags] == [("LG303", Severity.WARNING)]
    assert diags[0].message.startswith("`variable_selection_bwd.grad_x` writes columns 0..40 of `grad_x` (Features)")


def test_an_inout_update_after_a_write_is_not_an_overlap() -> None:
    # zero_grads writes grad_W (Out), the backward accumulates into it (InOut): deliberate, so no LG302.
    assert not [d for d in check_program(vsn.vsn_step) if d.code == "LG302"]


def test_overwrites_declares_a_replacing_write() -> None:
    launches = list(_launches().values())
    again = Launch(vsn.mse_grad, y=vsn.y, target=vsn.target, grad_y=vsn.grad_y, overwrites=["grad_y"])
    assert [d.code for d in check_program(Program("p", [*launches[:4], again, *launches[4:]]))] == ["LG303"]
    plain = Launch(vsn.mse_grad, y=vsn.y, target=vsn.target, grad_y=vsn.grad_y)
    assert [d.code for d in check_program(Program("p", [*launches[:4], plain, *launches[4:]]))] == [
        "LG302", "LG303"]


# -- declarations -----------------------------------------------------------------------


def test_malformed_programs_are_refused_at_the_users_line() -> None:
    line = 0

    def here() -> int:
        import inspect

        frame = inspect.currentframe()
        assert frame is not None and frame.f_back is not None
        return frame.f_back.f_lineno

    with pytest.raises(ProgramError) as err:
        line = here(); Launch(vsn.mse_grad, y=vsn.y, target="target", grad_y=vsn.grad_y)  # noqa: E702
    assert err.value.code == "LG305" and err.value.site is not None and err.value.site.line == line
    assert "`mse_grad.target` must be given a buffer" in str(err.value)
    with pytest.raises(ProgramError, match="`overwrites` names `y`, which is not an Out parameter"):
        Launch(vsn.mse_grad, y=vsn.y, target=vsn.target, grad_y=vsn.grad_y, overwrites=["y"])
    with pytest.raises(ProgramError, match="two buffers named `y`"):
        Program("p", [Launch(vsn.mse_grad, y=Buffer("y", vsn.Features), target=vsn.target, grad_y=vsn.grad_y),
                      Launch(vsn.mse_grad, y=vsn.y, target=vsn.target, grad_y=vsn.grad_y)])
    with pytest.raises(ProgramError, match="needs a non-empty list of launches"):
        Program("p", [])
    with pytest.raises(ProgramError, match="a buffer name"):
        Buffer("not a name", vsn.Features)
    binding = vsn.spec.kernels[0]
    with pytest.raises(ProgramError, match="missing: snap"):
        Launch(binding, raw=vsn.raw, mean=vsn.stats.mean, inv_std=vsn.stats.inv_std)


def test_a_buffer_field_outside_the_binding_is_a_layout_mismatch() -> None:
    binding = next(b for b in vsn.spec.kernels if b.name == "variable_selection_fwd")
    launch = Launch(binding, x=vsn.window.context, W=vsn.W, b=vsn.b, gates=vsn.gates, y=vsn.y)
    (diag,) = check_program(Program("p", [launch]))
    assert diag.code == "LG304"
    assert diag.message == ("`variable_selection_fwd.x` is bound to Window.snap (columns 0..40) but program `p` gives it "
                            "`window.context` (columns 40..56)")


def test_lg304_hints_the_columns_the_binding_was_made_for_and_the_launch_that_binds_itself() -> None:
    binding = next(b for b in vsn.spec.kernels if b.name == "variable_selection_fwd")
    launch = Launch(binding, x=vsn.window.context, W=vsn.W, b=vsn.b, gates=vsn.gates, y=vsn.y)
    (diag,) = check_program(Program("p", [launch]))
    assert diag.hint == ("give `window.snap`, the columns `variable_selection_fwd` was bound to, or launch the kernel "
                         "itself (`Launch(variable_selection_fwd, ...)`) so that it is bound to `window.context`")
    whole = copy_kernel().bind(name="copy_rows", src=vsn.Window, dst=vsn.Window)
    window = Buffer("window", vsn.Window, input=True, output=True)
    (diag,) = check_program(Program("p", [Launch(whole, src=window.snap, dst=window)]))
    assert diag.hint == ("give the whole buffer `window`, as `copy_rows` was bound to all of Window, or launch the "
                         "kernel itself (`Launch(copy, ...)`) so that it is bound to `window.snap`")


def test_lg209_for_a_kernel_launched_twice_hints_the_launch_s_name() -> None:
    """A kernel launched twice on other views makes two bindings of one name: the fix is `Launch(..., name=)`."""
    window = Buffer("window", vsn.Window, input=True, output=True)
    twice = Program("p", [Launch(copy_kernel(), src=window.snap, dst=window.snap),
                          Launch(copy_kernel(), src=window.context, dst=window.context)])
    (diag,) = [d for d in check_spec(Spec("s", programs=[twice])) if d.code == "LG209"]
    assert diag.hint == 'name each launch of it: Launch(copy, name="...", ...)'
    bound = copy_kernel().bind(src=vsn.Window.snap, dst=vsn.Window.snap)
    (diag,) = [d for d in check_spec(Spec("s", kernels=[bound, copy_kernel().bind(
        src=vsn.Window.context, dst=vsn.Window.context)])) if d.code == "LG209"]
    assert diag.hint == 'name each binding: copy.bind(name="...", ...)'


def copy_kernel() -> Kernel:
    return Kernel("copy", "unused.cu.j2", [In("src", ["B", "K", "C"]), Out("dst", ["B", "K", "C"])])


def test_generated_module_runs_programs_and_captures_them() -> None:
    import generated.vsn as module

    assert callable(module.vsn_step) and callable(module.capture_vsn_step)
    doc = module.vsn_step.__doc__ or ""
    assert "1. snap_feature_assemble(raw=raw, mean=stats.mean, inv_std=stats.inv_std, snap=window.snap)" in doc
    assert "7. sgd_update(W=W, b=b, grad_W=grad_W, grad_b=grad_b, lr=lr)" in doc
    runner = module._lg_program_vsn_step
    assert [b.name for b in runner.spec.buffers] == [
        "raw", "stats", "window", "ctx", "W", "b", "gates", "y", "target", "grad_y", "grad_W", "grad_b", "grad_x"]
    assert [v.name for v in runner.spec.values] == ["lr"]  # a scalar, given each run
    access = {b.name: b.access for b in runner.spec.buffers}
    assert access["raw"] == "in" and access["window"] == "inout" and access["grad_x"] == "out"


# -- boxes ------------------------------------------------------------------------------


def _mask(box: Box, shape: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(shape, bool)
    mask[tuple(slice(lo, hi) for lo, hi in box)] = True
    return mask


_interval = st.tuples(st.integers(0, 6), st.integers(1, 7)).filter(lambda iv: iv[0] < iv[1])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3).flatmap(lambda rank: st.tuples(
    st.tuples(*[_interval] * rank), st.lists(st.tuples(*[_interval] * rank), max_size=4))))
def test_uncovered_is_exactly_the_box_minus_the_covers(case: tuple[Box, list[Box]]) -> None:
    box, covers = case
    shape = (7,) * len(box)
    expected = _mask(box, shape) & ~np.logical_or.reduce([_mask(c, shape) for c in covers] + [np.zeros(shape, bool)])
    left = uncovered(box, covers)
    got = np.zeros(shape, bool)
    for piece in left:
        assert not (got & _mask(piece, shape)).any()  # the pieces do not overlap
        got |= _mask(piece, shape)
    assert (got == expected).all()


def test_uncovered_merges_touching_pieces() -> None:
    assert uncovered(((0, 4), (0, 56)), [((0, 4), (0, 40))]) == [((0, 4), (40, 56))]
    assert uncovered(((0, 4), (0, 56)), [((0, 4), (10, 20)), ((0, 4), (30, 40))]) == [
        ((0, 4), (0, 10)), ((0, 4), (20, 30)), ((0, 4), (40, 56))]
    assert uncovered(((0, 2),), [((0, 1),), ((1, 2),)]) == []
    assert list(itertools.chain(uncovered(((0, 8), (0, 8)), []))) == [((0, 8), (0, 8))]


def test_a_program_may_not_take_a_name_the_generated_module_uses() -> None:
    with pytest.raises(ProgramError, match="would define `variable_selection_fwd` in the generated module, the name "
                                           "of a kernel"):
        Spec("x", programs=[Program("variable_selection_fwd", list(vsn.vsn_step.launches))])
    step = Program("step", list(vsn.vsn_step.launches))
    with pytest.raises(ProgramError, match="would define `capture_step`"):
        Spec("x", kernels=[vsn.variable_selection_fwd.bind(name="capture_step", x=vsn.Window.snap, W=vsn.Weights,
                                                             b=vsn.Bias, gates=vsn.Features, y=vsn.Features)],
             programs=[step])


# -- review fixes: named ranges, padding, races, reserved names ---------------------------


def _ranges() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parent / "specs" / "ranges" / "spec.py"
    module_spec = importlib.util.spec_from_file_location("ranges_spec_for_dataflow", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_another_named_range_is_another_kernel_and_another_view() -> None:
    r = _ranges()
    obs = Buffer("obs", r.Obs, input=True, output=True)
    t1 = r.scale_rows.bind(x=r.Obs.t1.x)
    # A launch over t2 is not the t1 kernel: it needs its own binding (and name).
    found = check_spec(Spec("s", kernels=[t1], programs=[Program("p", [Launch(r.scale_rows, x=obs.t2.x)])]))
    assert [d.code for d in found] == ["LG209"]
    (diag,) = check_program(Program("p", [Launch(t1, x=obs.t2.x)]))
    assert diag.code == "LG304" and diag.message == (
        "`scale_rows.x` is bound to Obs.t1.x (elements [:, 0..3, :, 0..30]) but program `p` gives it `obs.t2.x` "
        "(elements [:, 3..8, :, 0..30])")


def test_padding_is_neither_read_nor_owed() -> None:
    r = _ranges()
    src = Buffer("src", r.Obs, input=True)
    obs = Buffer("obs", r.Obs, output=True)
    copy_all = Kernel("copy_all", "unused.cu.j2", [In("src", [N, T, R, C]), Out("dst", [N, T, R, C])])
    # Every x written (all 8 terms, columns 0..30): only padding is left (columns 30..32), and it is owed nothing.
    assert check_program(Program("p", [Launch(copy_all, src=src.x, dst=obs.x)])) == []
    # Reading the whole rows of what was written skips the padding too.
    scratch = Buffer("scratch", r.Obs)
    found = check_program(Program("p", [Launch(copy_all, src=src.x, dst=scratch.x),
                                        Launch(copy_all, name="again", src=scratch.whole, dst=obs.whole)]))
    assert [d.code for d in found] == []


def test_reading_what_the_same_launch_writes_is_a_race() -> None:
    found = check_program(Program("p", [
        Launch(vsn.mse_grad, y=vsn.y, target=vsn.target, grad_y=vsn.grad_y),
        Launch(vsn.mse_grad, name="mse_in_place", y=vsn.grad_y, target=vsn.target, grad_y=vsn.grad_y,
               overwrites=["grad_y"]),
    ]))
    race = [d for d in found if d.code == "LG302"]
    assert len(race) == 1 and race[0].message.startswith(
        "`mse_in_place.y` reads columns 0..40 of `grad_y` (Features), which `mse_in_place.grad_y` of the same launch "
        "writes: the kernel's threads race on them")


def test_only_a_buffer_named_like_the_runners_own_argument_is_refused() -> None:
    # `stream` is an argument of every generated runner, beside the buffers: it cannot be made safe.
    with pytest.raises(ProgramError, match="a buffer may not be named `stream`"):
        Buffer("stream", vsn.Features)
    # The generated module's own names are prefixed (`_lg_...`), so user names that used to replace them
    # (a program `unwrap`, a layout `Path`) now declare cleanly.
    assert Spec("x", programs=[Program("unwrap", list(vsn.vsn_step.launches))]).programs[0].name == "unwrap"
    assert Spec("x", layouts=[vsn.Layout("Path", [vsn.B], vsn.f32, width=4)]).layouts[0].name == "Path"
