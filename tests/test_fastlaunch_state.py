"""The compiled launch path's extension keeps its state per module object and ships no test hooks.

Its state is one struct in module state (multi-phase init), so two module objects made from one library
share nothing: a hook, a configuration or a kind one of them learnt is not the other's. Before, ~40 C
globals were the state of every module object a process made from the library (a second import of a
single-phase module copies the first one's globals). The shipped build's method table has none of the
hooks the tests use (``set_hook``, ``get_hook``, ``read_cost``, ``kinds``): those are the test build's
(``tests/helpers/fastlaunch_build.py``).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.runtime import fastpath
from tests.helpers.fastlaunch_build import build

HOOKS = ("set_hook", "get_hook", "read_cost", "kinds", "type_lookup")
RUNTIME = Path(fastpath.__file__).parent


def fresh_module(library: Path) -> Any:
    """A new module object of the extension made from ``library`` (not put in sys.modules)."""
    spec = importlib.util.spec_from_file_location(fastpath.EXTENSION, library)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_module_objects_of_one_library_share_no_state() -> None:
    library = build()
    one, other = fresh_module(library), fresh_module(library)
    hook = print
    one.set_hook(hook)
    try:
        assert (one.get_hook(), other.get_hook()) == (hook, None)
        assert one.Launcher is not other.Launcher and one.Steps is not other.Steps
        assert one.Launcher.__module__ == "layoutgen.runtime._fastlaunch"
    finally:
        one.set_hook(None)


def test_the_shipped_build_has_no_test_hooks() -> None:
    found = importlib.machinery.PathFinder.find_spec("_fastlaunch", [str(RUNTIME)])
    if found is None or found.origin is None:
        pytest.skip("the extension is not built in place here (pip install -e . builds it)")
    shipped = fresh_module(Path(found.origin))
    assert [name for name in HOOKS if hasattr(shipped, name)] == []
    assert all(hasattr(shipped, name) for name in ("configure", "use_torch", "use_torch_reader", "read", "Launcher"))
    assert all(hasattr(fresh_module(build()), name) for name in HOOKS)


def python_lookup(cls: type, name: str) -> Any:
    """What an instance's attribute lookup finds for ``name`` in ``cls``'s MRO: each class's own dict in turn."""
    return next((vars(base)[name] for base in cls.__mro__ if name in vars(base)), None)


#: Bases a drawn class may have: C types (static, builtin or not) and Python ones, with and without the names.
class Plain:
    pass


class Redefines(Plain):
    is_neg = staticmethod(lambda: True)
    requires_grad = property(lambda self: True)


def _bases() -> list[type]:
    found: list[type] = [object, int, Exception, Plain, Redefines]
    try:
        import torch

        found += [torch.Tensor, torch._C.TensorBase, torch.nn.Parameter]
    except ImportError:
        pass
    return found


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_c_type_lookup_finds_what_python_attribute_lookup_finds(data: st.DataObject) -> None:
    """Replacing CPython's private ``_PyType_Lookup`` (is a tensor type's ``is_neg`` still torch's own?) by a walk
    of the MRO's dicts: on random class hierarchies over C and Python bases, each class defining, or not, the
    names (a function, a property, None), and a class changed after it was made, the walk finds the very object
    Python's lookup finds."""
    module = fresh_module(build())
    bases = _bases()
    classes: list[type] = []
    for n in range(data.draw(st.integers(1, 4))):
        pool = bases + classes
        chosen = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
        names = data.draw(st.dictionaries(st.sampled_from(["is_neg", "requires_grad", "shape"]),
                                          st.sampled_from([None, len, property(len)]), max_size=2))
        try:
            classes.append(type(f"Drawn{n}", tuple(chosen), dict(names)))
        except (TypeError, RuntimeError):  # no consistent MRO, layouts that conflict, TensorBase: refused
            continue
    if classes and data.draw(st.booleans()):
        setattr(data.draw(st.sampled_from(classes)), "is_neg", staticmethod(len))  # changed after it was made
    for cls in bases + classes:
        for name in ("is_neg", "requires_grad", "shape", "__init__", "missing"):
            assert module.type_lookup(cls, name) is python_lookup(cls, name), (cls.__mro__, name)
