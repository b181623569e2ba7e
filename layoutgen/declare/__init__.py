"""The declaration language above the schema: kernels and their parameters,
grids, symbol unification, programs, field copies and the ``Spec`` that
gathers them. Imports the schema only; the public names are re-exported from
:mod:`layoutgen`.
"""
