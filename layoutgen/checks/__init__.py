"""Generation-time checks: everything that can be known before a kernel runs."""

from .bindings import check_binding, check_spec, describe_view

__all__ = ["check_binding", "check_spec", "describe_view"]
