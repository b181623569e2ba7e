"""The Jinja templates layoutgen ships: file skeletons and kernel bodies (field copies)."""

from pathlib import Path

#: The folder holding the templates.
DIRECTORY = Path(__file__).resolve().parent
