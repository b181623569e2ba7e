"""``python -m layoutgen``: the same as the ``layoutgen`` command."""

from .cli import main

raise SystemExit(main())
