"""Shared helpers of the schema tests: where a diagnostic must point."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from layoutgen.schema import LayoutError, Site


def marker_line(path: str, marker: str) -> int:
    """The 1-based line of ``path`` that ends with the comment ``# site: <marker>``; exactly one must."""
    tag = f"# site: {marker}"
    lines = [n for n, text in enumerate(Path(path).read_text().splitlines(), 1) if text.rstrip().endswith(tag)]
    assert len(lines) == 1, f"marker {tag!r} found on lines {lines} of {path}"
    return lines[0]


@pytest.fixture
def site_of(request: pytest.FixtureRequest) -> Callable[[str], Site]:
    """The site of the line of this test module marked ``# site: <marker>``."""
    path = request.module.__file__
    return lambda marker: Site(path, marker_line(path, marker))


@pytest.fixture
def expect_site(site_of: Callable[[str], Site]) -> Callable[[LayoutError, str], None]:
    """Assert that an error points at this test module, at the line marked ``# site: <marker>``."""

    def check(err: LayoutError, marker: str) -> None:
        assert err.site is not None, f"{err.code} has no site: {err}"
        assert err.site == site_of(marker), str(err)

    return check
