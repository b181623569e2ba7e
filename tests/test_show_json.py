"""``layoutgen show --format json`` (issue 18, item 6): the examples' documents follow the schema in the package.

The schema is layoutgen/project/show.schema.json, documented in docs/show-json.md; it is checked here by a
small reader of the JSON Schema keywords it uses (layoutgen depends on no validator).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest

from layoutgen.cli import main
from layoutgen.project.show_json import FORMAT, SCHEMA_PATH

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
SPECS = ["examples/vsn/spec.py", "examples/qkv/spec.py", "tests/specs/ranges/spec.py", "tests/specs/scalars/spec.py",
         "tests/specs/grids/spec.py"]

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def problems(value: object, schema: dict[str, object], where: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``: the keywords show.schema.json uses, and nothing it does not."""
    known = {"$schema", "$id", "$defs", "title", "description", "type", "required", "additionalProperties",
             "properties", "items", "enum", "const", "$ref", "anyOf"}
    assert set(schema) <= known, f"{where}: the checker does not read {set(schema) - known}"
    if "$ref" in schema:
        ref = str(schema["$ref"])
        assert ref.startswith("#/$defs/"), ref
        return problems(value, SCHEMA["$defs"][ref.removeprefix("#/$defs/")], where)
    if "anyOf" in schema:
        options = [problems(value, s, where) for s in schema["anyOf"]]  # type: ignore[attr-defined]
        return [] if any(not o for o in options) else [f"{where}: matches none of anyOf"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: {value!r} is not {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:  # type: ignore[operator]
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, k) for k in kinds):
            return [f"{where}: {value!r} is not {' or '.join(kinds)}"]
    out: list[str] = []
    if isinstance(value, dict):
        props: dict[str, dict[str, object]] = schema.get("properties", {})  # type: ignore[assignment]
        out += [f"{where}: no `{k}`" for k in schema.get("required", []) if k not in value]  # type: ignore[attr-defined]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                out += problems(item, props[key], f"{where}.{key}")
            elif extra is False:
                out.append(f"{where}: `{key}` is not in the schema")
            elif isinstance(extra, dict):
                out += problems(item, extra, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            out += problems(item, schema["items"], f"{where}[{n}]")  # type: ignore[arg-type]
    return out


def _is(value: object, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("spec", SPECS)
def test_the_document_of_each_example_follows_the_schema(spec: str) -> None:
    code, out, err = run("show", spec, "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert problems(document, SCHEMA) == []
    assert document["format"] == FORMAT == SCHEMA["properties"]["format"]["const"]
    assert document["source"] == spec


def test_the_vsn_document_says_what_show_prints() -> None:
    document = json.loads(run("show", "examples/vsn/spec.py", "--format", "json")[1])
    window = next(lay for lay in document["layouts"] if lay["name"] == "Window")
    assert re.fullmatch(r"examples/vsn/spec\.py:\d+", window["site"])
    assert (window["shape"], window["row_bytes"], window["row_align"]) == (["B", "K", 56], 224, 32)
    snap = next(f for f in window["fields"] if f["path"] == "snap")
    assert snap["view"] | {} == {
        "name": "Window.snap", "layout": "Window", "path": "snap", "cols": "0..40", "start": 0, "width": 40,
        "shape": ["B", "K", 40], "strides": ["K*56", 56, 1], "offset": 0, "align": 32, "vector_bytes": 16,
        "contiguous": False, "axis_range": None,
    }
    assert {f["path"]: f["kind"] for f in window["fields"]}["context.trade"] == "group"
    fwd = next(b for b in document["bindings"] if b["name"] == "variable_selection_fwd")
    assert fwd["params"][0] == {"name": "x", "access": "in", "shape": ["B", "K", "F"], "view": "Window.snap",
                                "contiguous": False, "vector": None}
    assert fwd["symbols"] == {"B": "B", "K": "K", "F": 40}
    assert any(v["name"] == "Window.snap" for v in document["views"])
    [step] = document["programs"]
    first = step["launches"][0]
    assert first["kernel"] == "snap_feature_assemble"
    assert first["writes"] == [{"param": "snap", "buffer": "window", "view": "Window.snap", "field": "snap",
                                "cols": "0..40"}]
    assert [r["buffer"] for r in first["reads"]] == ["raw", "stats", "stats"]
    assert {"name": "lr", "dtype": "f32"} in step["values"]


def test_one_name_narrows_the_document_to_it() -> None:
    document = json.loads(run("show", "examples/vsn/spec.py:context_broadcast", "--format", "json")[1])
    assert [b["name"] for b in document["bindings"]] == ["context_broadcast"]
    assert (document["layouts"], document["programs"]) == ([], [])
    assert [v["name"] for v in document["views"]] == ["Context", "Window.context"]
    assert problems(document, SCHEMA) == []


def test_json_with_a_drawing_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run("show", "examples/vsn/spec.py", "--format", "json", "--svg", str(tmp_path / "x.svg"))
    assert (code, out) == (2, "")
    assert err == "layoutgen: error: --format json prints the document and --svg/--png draw: give one of them\n"


def test_every_key_of_the_schema_is_documented() -> None:
    page = (REPO / "docs" / "show-json.md").read_text(encoding="utf-8")
    keys = set(SCHEMA["properties"]) | {k for d in SCHEMA["$defs"].values() for k in d.get("properties", {})}
    assert sorted(k for k in keys if f"`{k}`" not in page) == []
    assert "layoutgen/project/show.schema.json" in page
