"""``python -m layoutgen.runtime``: which launch path launchers take here (compiled or Python), and why.

Where torch is installed it also says how the compiled path reads torch tensors, building the C++ reader
first where it is not built yet (:mod:`.torch_cxx_reader`): run it once to build it ahead of a first launch.
"""

from __future__ import annotations

import importlib.util

from .fastpath import launch_path_text, use_torch

if importlib.util.find_spec("torch") is not None:
    import torch  # noqa: F401  (use_torch gives the extension what an imported torch offers)

    use_torch()
print(launch_path_text())
