"""The compiled launch path, built at install (pyproject.toml holds everything else).

``layoutgen.runtime._fastlaunch`` needs only a C compiler and Python's headers
(libcuda is loaded at run time). ``optional=True``: where it cannot be built,
the install goes on with a warning and launchers take the Python path
(``python -m layoutgen.runtime`` says which one is active).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "layoutgen.runtime._fastlaunch",
            ["layoutgen/runtime/_fastlaunch.c"],
            libraries=["dl"] if sys.platform.startswith("linux") else [],  # dlopen: libc itself from glibc 2.34
            optional=True,
        ),
    ],
)
