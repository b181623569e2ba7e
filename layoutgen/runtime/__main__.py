"""``python -m layoutgen.runtime``: which launch path launchers take here (compiled or Python), and why."""

from __future__ import annotations

from .fastpath import launch_path_text

print(launch_path_text())
