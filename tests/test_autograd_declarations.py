"""Autograd pairs and the torch option of a spec, refused at their declaration (LG220..LG223); no torch needed.

The VSN kernels of examples/vsn are the pair: the forward reads x (a field of the window), W and b and
writes gates and y; the backward reads x, W, gates and grad_y, writes grad_x and adds to grad_W, grad_b.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from examples.vsn import spec as vsn
from layoutgen import Autograd, KernelError, Spec
from layoutgen.codegen.torchmodule import autograd_model, op_model

FWD, BWD = vsn.vsn_fwd, vsn.vsn_bwd
GRADS = {"y": "grad_y", "x": "grad_x", "W": "grad_W", "b": "grad_b"}
SAVES = ["x", "W", "gates"]


def refused(code: str, make: Callable[[], Any]) -> KernelError:
    with pytest.raises(KernelError) as info:
        make()
    assert info.value.code == code, str(info.value)
    return info.value


def test_the_vsn_pair_connects_every_backward_parameter() -> None:
    pair = Autograd(FWD, BWD, saves=SAVES, grads=GRADS)
    assert pair.saves == (("x", "x"), ("W", "W"), ("gates", "gates"))
    assert [(g.forward, g.backward, g.relation) for g in pair.grads] == [
        ("y", "grad_y", "whole"), ("x", "grad_x", "field"), ("W", "grad_W", "whole"), ("b", "grad_b", "whole")]
    # the backward's launcher arguments x, W, gates, grad_y, grad_x, grad_W, grad_b, by the forward's (x W b gates y)
    assert autograd_model(pair).sources == (("saved", 0), ("saved", 1), ("saved", 3), ("grad", 4),
                                            ("result_field", 0), ("result", 1), ("result", 2))


def test_lg221_a_pair_of_one_binding(expect_site: Any) -> None:
    err = refused("LG221", lambda: Autograd(FWD, FWD, saves=[], grads={}))  # site: one
    assert str(err).endswith("error[LG221]: an Autograd pair needs two bindings, got `variable_selection_fwd` as "
                             "both forward and backward")
    expect_site(err, "one")


def test_lg221_a_forward_that_updates_in_place() -> None:
    sgd = vsn.sgd_update.bind(W=vsn.Weights, b=vsn.Bias, grad_W=vsn.Weights, grad_b=vsn.Bias)
    err = refused("LG221", lambda: Autograd(sgd, BWD, saves=[], grads={}))
    assert err.diagnostic.message == ("the forward `sgd_update` of an Autograd pair must not update a parameter in "
                                      "place, got InOut `W`")
    assert err.diagnostic.hint == ("write the result to an Out parameter: a value overwritten in place has no "
                                   "gradient of its own")


def test_lg221_not_a_binding() -> None:
    err = refused("LG221", lambda: Autograd(vsn.variable_selection_fwd, BWD, grads={}))  # type: ignore[arg-type]
    assert err.diagnostic.message == ("the forward of an Autograd pair must be a binding (`kernel.bind(...)`), got "
                                      "<Kernel variable_selection_fwd>")


def test_lg222_a_saved_name_the_forward_lacks() -> None:
    err = refused("LG222", lambda: Autograd(FWD, BWD, saves=["x", "w"], grads=GRADS))
    assert err.diagnostic.message == ("`saves` names `w`, which is no parameter of the forward "
                                      "`variable_selection_fwd` (its parameters: `x`, `W`, `b`, `gates`, `y`)")


def test_lg222_a_saved_value_for_a_parameter_the_backward_writes() -> None:
    err = refused("LG222", lambda: Autograd(FWD, BWD, saves={"grad_x": "x"}, grads=GRADS))
    assert err.diagnostic.message == ("`variable_selection_fwd.x` is saved for `variable_selection_bwd.grad_x`, but "
                                      "the backward has out parameter `grad_x` there: a saved value is read, by an "
                                      "In parameter or a scalar")


def test_lg222_a_saved_tensor_bound_to_another_view() -> None:
    err = refused("LG222", lambda: Autograd(FWD, BWD, saves={"x": "W", "W": "W", "gates": "gates"}, grads=GRADS))
    assert err.diagnostic.message == ("`variable_selection_fwd.W` is bound to `Weights` of Weights [40, 40] but "
                                      "`variable_selection_bwd.x`, which it is saved for, to `Window.snap` of Window "
                                      "[B, K, 56]")


def test_lg223_the_gradient_of_an_input_must_be_written() -> None:
    err = refused("LG223", lambda: Autograd(FWD, BWD, saves=SAVES, grads={**GRADS, "x": "grad_y"}))
    assert err.diagnostic.message == ("`variable_selection_fwd.x` is an input, so its gradient is computed by the "
                                      "backward, but `variable_selection_bwd.grad_y` is In: the backward only reads it")


def test_lg223_the_gradient_of_an_output_must_be_read() -> None:
    err = refused("LG223", lambda: Autograd(FWD, BWD, saves=SAVES, grads={"y": "grad_x"}))
    assert err.diagnostic.message == ("`variable_selection_fwd.y` is an output, so its gradient comes in to the "
                                      "backward, but `variable_selection_bwd.grad_x` is out: the backward writes it")


def test_lg223_a_gradient_of_another_shape() -> None:
    err = refused("LG223", lambda: Autograd(FWD, BWD, saves=SAVES, grads={**GRADS, "b": "grad_W"}))
    assert err.diagnostic.message == ("the gradient of `variable_selection_fwd.b` (`Bias` of Bias [40], elements "
                                      "[40] f32) cannot be `variable_selection_bwd.grad_W` (`Weights` of Weights "
                                      "[40, 40], [40, 40] f32)")


def test_lg223_a_backward_parameter_left_without_a_value() -> None:
    err = refused("LG223", lambda: Autograd(FWD, BWD, saves=["x", "W"], grads=GRADS))
    assert err.diagnostic.message == ("`variable_selection_bwd.gates` gets no value from the pair: it is neither "
                                      "saved nor a gradient (what it reads)")
    assert err.diagnostic.hint == "name it in `saves` (a forward parameter of the same name) or in `grads`"


def test_lg223_a_scalar_has_no_gradient() -> None:
    err = refused("LG223", lambda: Autograd(FWD, BWD, saves=SAVES, grads={**GRADS, "lr": "grad_b"}))
    assert err.diagnostic.message.startswith("`grads` names `lr`, which is no parameter of the forward")


def test_lg220_autograd_without_torch(expect_site: Any) -> None:
    pair = Autograd(FWD, BWD, saves=SAVES, grads=GRADS)  # site: pair
    err = refused("LG220", lambda: Spec("t", kernels=[FWD, BWD], autograd=[pair]))
    assert err.diagnostic.message == ("spec `t` pairs `variable_selection_fwd` with `variable_selection_bwd` for "
                                      "autograd, but generates no torch operators")
    assert err.diagnostic.hint == 'Spec("t", ..., torch=True)'
    expect_site(err, "pair")


def test_lg220_a_pair_of_bindings_the_spec_lacks() -> None:
    pair = Autograd(FWD, BWD, saves=SAVES, grads=GRADS)
    err = refused("LG220", lambda: Spec("t", kernels=[FWD], torch=True, autograd=[pair]))
    assert err.diagnostic.message == ("the Autograd pair of `variable_selection_fwd` names `variable_selection_bwd`, "
                                      "which is not a kernel of spec `t`")


def test_lg220_two_backwards_for_one_forward_and_a_torch_that_is_no_bool() -> None:
    pairs = [Autograd(FWD, BWD, saves=SAVES, grads=GRADS), Autograd(FWD, BWD, saves=SAVES, grads=GRADS)]
    err = refused("LG220", lambda: Spec("t", kernels=[FWD, BWD], torch=True, autograd=pairs))
    assert err.diagnostic.message.startswith("`variable_selection_fwd` is the forward of two Autograd pairs of spec "
                                             "`t` (the other declared at ")
    err = refused("LG220", lambda: Spec("t", kernels=[FWD], torch="yes"))  # type: ignore[arg-type]
    assert err.diagnostic.message == "`torch` of spec `t` must be True or False, got 'yes'"


def test_schemas_mark_what_each_kernel_writes() -> None:
    fwd = op_model(FWD)
    assert fwd.mutating == "(Tensor x, Tensor W, Tensor b, Tensor(a!) gates, Tensor(b!) y) -> ()"
    assert fwd.functional == "(Tensor x, Tensor W, Tensor b) -> (Tensor gates, Tensor y)"
    sgd = op_model(vsn.sgd_update.bind(W=vsn.Weights, b=vsn.Bias, grad_W=vsn.Weights, grad_b=vsn.Bias))
    assert sgd.mutating == "(Tensor(a!) W, Tensor(b!) b, Tensor grad_W, Tensor grad_b, float lr) -> ()"
    assert (sgd.inputs, sgd.outputs) == ((0, 1, 2, 3, 4), (0, 1))  # InOut: in, copied, out
    zero = op_model(vsn.zero_grads.bind(grad_W=vsn.Weights, grad_b=vsn.Bias))
    assert zero.functional == "(Device lg_device) -> (Tensor grad_W, Tensor grad_b)"  # nothing read: told the device
    broadcast = op_model(vsn.context_broadcast.bind(ctx=vsn.Context, dst=vsn.Window.context))
    assert broadcast.functional == "(Tensor ctx, SymInt lg_size_K) -> Tensor dst"  # K: no input has it


def test_make_test_installs_torch_and_the_extra_pins_a_major() -> None:
    import re
    import tomllib
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    extras = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["torch"] == ["torch>=2.5,<3"]
    makefile = (repo / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^TORCH +\?= torch==2\.13\.0$", makefile, flags=re.M)  # the CPU wheel on disk: no CUDA download
    assert "\t$(PY) -m pip install --quiet '$(TORCH)'\n" in makefile
