"""What the tests share: one module per concept, imported by test modules (a test module imports no other one).

``cli``         the ``layoutgen`` command, run as a subprocess or in-process; whether NVRTC is here
``docs``        the documentation pages read as data: sections by code, fenced blocks
``golden``      repository specs rendered as ``layoutgen generate`` renders them; golden files compared
``rendering``   spec objects rendered into a temporary folder; a generated module imported; NVRTC compiles
``host``        generated kernels built for the CPU with the C++ compiler (layoutgen's lg/host/runtime.h)
``aot``         the ahead-of-time example project and its launchers
``diagram``     ink boxes of the text of a rendered SVG diagram
``strategies``  hypothesis strategies of layouts
``grids``       the grid kinds' example spec and a device that records what each launch would start
``launch``      fake device arrays, the generated VSN launchers and program buffers, launches recorded
``compiled``    the compiled launch path beside the Python path: a fake device, launches replayed, CuPy/torch arrays
``torch_fakes`` CPU tensors read as CUDA ones, launches recorded and none made
``gpu_program`` the VSN training step's data on a GPU (tests/gpu)
``debug_fault`` a debug build's fault record, built from the runtime's description of its words
``fastlaunch_build`` the compiled launch path built with its test hooks

Fixtures live here too where only some modules use them: a test module imports a fixture by name (``# noqa:
F401  (the fixture)``), as it would a helper; fixtures every module uses belong in tests/conftest.py.
"""
