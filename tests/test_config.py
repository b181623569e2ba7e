"""`[tool.layoutgen]` settings: defaults, finding the root, overrides, errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from layoutgen.project.config import KEYS, Config, ConfigError, find_root, load_config
from layoutgen.project.selection import Selection


def project(root: Path, table: str | None, extra: str = "") -> Path:
    """A pyproject.toml in ``root`` with the given ``[tool.layoutgen]`` body."""
    text = '[project]\nname = "demo"\n' + extra
    if table is not None:
        text += "\n[tool.layoutgen]\n" + table
    (root / "pyproject.toml").write_text(text)
    return root


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder that is also the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def error(root: Path, table: str, overrides: dict[str, object] | None = None) -> str:
    project(root, table)
    with pytest.raises(ConfigError) as caught:
        load_config(root, overrides)
    return str(caught.value)


# --- reading --------------------------------------------------------------


def test_reads_every_key(root: Path) -> None:
    project(
        root,
        'specs = ["examples/vsn/spec.py", "b.py"]\nout = "gen/"\narch = "sm_90a"\n'
        'cache_dir = ".cache/lg"\n',
    )
    assert load_config(root) == Config(
        root, ("examples/vsn/spec.py", "b.py"), out="gen", arch="sm_90a", cache_dir=".cache/lg"
    )


def test_missing_table_gives_defaults(root: Path) -> None:
    project(root, None)
    config = load_config(root)
    assert config == Config(root, (), "generated", "sm_90", None)


def test_missing_pyproject_uses_the_start_folder(root: Path) -> None:
    if find_root(root) is not None:
        pytest.skip("the temporary folder lies inside a project")
    assert load_config(root) == Config(root)
    assert load_config() == Config(root)  # the working directory


def test_root_is_the_nearest_pyproject(root: Path) -> None:
    project(root, 'arch = "sm_80"\n')
    deep = root / "examples" / "vsn"
    deep.mkdir(parents=True)
    (deep / "spec.py").write_text("")
    assert find_root(deep) == root
    assert find_root(deep / "spec.py") == root
    config = load_config(deep)
    assert (config.root, config.arch) == (root, "sm_80")
    project(deep, None)  # a package of its own inside the project, without [tool.layoutgen]: looked past
    assert find_root(deep) == root
    project(deep, "")
    assert find_root(deep) == deep
    project(root, None)  # no [tool.layoutgen] anywhere: the nearest pyproject.toml, every setting defaulted
    project(deep, None)
    assert find_root(deep) == deep


def test_paths(root: Path) -> None:
    config = load_config(project(root, 'specs = ["a/spec.py"]\ncache_dir = "c"\n'))
    assert config.spec_paths == (root / "a/spec.py",)
    assert config.out_path == root / "generated"
    assert config.cache_path == root / "c"
    assert Config(root).cache_path is None
    assert Config(root, cache_dir="/abs/cache").cache_path == Path("/abs/cache")


def test_generated_code_names_the_cache_dir_relative_to_its_folder(root: Path) -> None:
    assert Config(root, cache_dir=".cache/lg").cache_dir_from("generated/vsn") == "../../.cache/lg"
    assert Config(root, cache_dir="c", out="a/b").cache_dir_from("a/b/vsn") == "../../../c"
    assert Config(root, cache_dir="~/lg").cache_dir_from("generated/vsn") == "~/lg"  # as written: no home path
    assert Config(root, cache_dir="/abs/cache").cache_dir_from("generated/vsn") == "/abs/cache"
    assert Config(root).cache_dir_from("generated/vsn") is None


def test_launchers_use_the_cache_dir_that_check_compile_uses(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cache_dir` is written into the generated module; its launchers then use the same folder."""
    import importlib.util
    import sys

    from layoutgen.project.writing import apply
    from layoutgen.project.process import process_spec
    from layoutgen.runtime.cache import CubinCache

    (root / "k.cu.j2").write_text("    y.at(row, 0) = x.at(row, 0);\n")
    (root / "spec.py").write_text(
        "from layoutgen import Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel, Out\n"
        "from layoutgen.declare.spec import Spec\n"
        "(N,) = dims('N')\n"
        "Rows = Layout('Rows', [N], f32, width=4)\n"
        "k = Kernel('copy_rows', 'k.cu.j2', [In('x', [N, 4]), Out('y', [N, 4])])\n"
        "spec = Spec('cachedemo', kernels=[k.bind(x=Rows, y=Rows)])\n"
    )
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(root / "elsewhere"))
    for cache_dir, expected in [(".lgcache", root / ".lgcache"), (None, root / "elsewhere" / "cubin")]:
        table = 'specs = ["spec.py"]\nout = "gen/code"\n' + (f'cache_dir = "{cache_dir}"\n' if cache_dir else "")
        config = load_config(project(root, table))
        result = process_spec(config, root / "spec.py")
        assert result.ok and result.plan is not None, result.diagnostics
        apply(root, result.plan)
        init = root / "gen" / "code" / "cachedemo" / "__init__.py"
        assert (f"_CACHE_DIR = {'../../../.lgcache' if cache_dir else None!r}\n") in init.read_text()
        spec = importlib.util.spec_from_file_location(f"cachedemo_{bool(cache_dir)}", init)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules.pop(spec.name, None)
        used = module._lg_kernel_copy_rows.cache().directory.resolve()
        checked = (CubinCache(config.cache_path) if config.cache_path else CubinCache.default()).directory
        assert used == checked.resolve() == expected  # `check --compile` warms what launches read


# --- overrides ------------------------------------------------------------


def test_overrides_replace_file_values(root: Path) -> None:
    project(root, 'arch = "sm_80"\nout = "gen"\n')
    config = load_config(root, {"arch": "sm_90", "specs": [Path("x/spec.py")], "out": None})
    assert (config.arch, config.specs, config.out) == ("sm_90", ("x/spec.py",), "gen")


def test_override_errors(root: Path) -> None:
    project(root, None)
    with pytest.raises(ConfigError) as caught:
        load_config(root, {"arch": "90"})
    assert str(caught.value) == '`arch` must be a string like "sm_90", got "90" (override)'
    with pytest.raises(ConfigError) as caught:
        load_config(root, {"archh": "sm_90"})
    assert str(caught.value) == "there is no setting `archh` to override; did you mean `arch`?"


# --- errors ---------------------------------------------------------------


def test_wrong_arch_type(root: Path) -> None:
    assert error(root, "arch = 90\n") == (
        '`[tool.layoutgen].arch` must be a string like "sm_90", got 90 (pyproject.toml)'
    )


@pytest.mark.parametrize("arch", ["sm90", "sm_", "compute_90", "sm_90b", "SM_90", "sm_90a "])
def test_wrong_arch_form(root: Path, arch: str) -> None:
    assert error(root, f'arch = "{arch}"\n') == (
        f'`[tool.layoutgen].arch` must be a string like "sm_90", got "{arch}" (pyproject.toml)'
    )


@pytest.mark.parametrize("arch", ["sm_70", "sm_90", "sm_90a", "sm_100a", "sm_120"])
def test_good_arch(root: Path, arch: str) -> None:
    project(root, f'arch = "{arch}"\n')
    assert load_config(root).arch == arch


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            'specs = "spec.py"\n',
            '`[tool.layoutgen].specs` must be a list of paths to spec modules, like ["examples/vsn/spec.py"],'
            ' got "spec.py" (pyproject.toml)',
        ),
        (
            'specs = ["a.py", 3]\n',
            '`[tool.layoutgen].specs` must be a list of paths to spec modules, like ["examples/vsn/spec.py"],'
            ' got ["a.py", 3] (pyproject.toml)',
        ),
        (
            'out = "../elsewhere"\n',
            '`[tool.layoutgen].out` must be a folder inside the project, like "generated",'
            ' got "../elsewhere" (pyproject.toml)',
        ),
        (
            'out = "/tmp/gen"\n',
            '`[tool.layoutgen].out` must be a folder inside the project, like "generated",'
            ' got "/tmp/gen" (pyproject.toml)',
        ),
        (
            'out = "."\n',
            '`[tool.layoutgen].out` must be a folder inside the project, like "generated",'
            ' got "." (pyproject.toml)',
        ),
        (  # TOML 'gen\cuda': one backslash, a separator on Windows and a letter elsewhere
            "out = 'gen\\cuda'\n",
            '`[tool.layoutgen].out` must be a folder inside the project with "/" between its parts, like'
            ' "generated", got "gen\\\\cuda" (pyproject.toml)',
        ),
        (
            'out = "gen\\nerated"\n',
            '`[tool.layoutgen].out` must be a folder inside the project named without control characters, like'
            ' "generated", got "gen\\nerated" (pyproject.toml)',
        ),
        (
            "cache_dir = false\n",
            '`[tool.layoutgen].cache_dir` must be a path to a folder, like ".cache/layoutgen",'
            " got false (pyproject.toml)",
        ),
    ],
)
def test_wrong_values(root: Path, table: str, message: str) -> None:
    assert error(root, table) == message


def test_unknown_key_suggests_the_closest(root: Path) -> None:
    assert error(root, 'outt = "gen"\n') == (
        "`[tool.layoutgen]` has no key `outt` (pyproject.toml); did you mean `out`?"
    )
    assert error(root, 'cache-dir = "c"\n') == (
        "`[tool.layoutgen]` has no key `cache-dir` (pyproject.toml); did you mean `cache_dir`?"
    )


def test_unknown_key_without_a_close_match_lists_the_keys(root: Path) -> None:
    assert error(root, "verbose = true\n") == (
        "`[tool.layoutgen]` has no key `verbose` (pyproject.toml);"
        " known keys: `specs`, `out`, `arch`, `cache_dir`, `debug`, `select`, `ignore`, `warnings_as_errors`,"
        " `include`, `templates`, `build_archs`"
    )


def test_source_is_shown_relative_to_the_working_directory(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(root, "arch = 90\n")
    (root / "sub").mkdir()
    monkeypatch.chdir(root / "sub")
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value).endswith(f"got 90 ({root / 'pyproject.toml'})")


def test_table_that_is_not_a_table(root: Path) -> None:
    (root / "pyproject.toml").write_text('[tool]\nlayoutgen = "on"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    assert str(caught.value) == '`[tool.layoutgen]` must be a table, got "on" (pyproject.toml)'


def test_invalid_toml(root: Path) -> None:
    (root / "pyproject.toml").write_text("[tool.layoutgen\n")
    with pytest.raises(ConfigError, match=r"^pyproject.toml is not valid TOML: "):
        load_config(root)


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_config_checks_on_construction(root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Config(root, arch="sm90")
    assert str(caught.value) == '`Config.arch` must be a string like "sm_90", got "sm90"'
    assert Config(root, ["a.py"]).specs == ("a.py",)  # type: ignore[arg-type]


# --- which diagnostics are reported -----------------------------------------


IGNORABLE = "LG303, LG306, LG401, LG403, LG404, LG406, LG407, LG505, LG627"  # warnings, notes, and the lint's errors


def test_select_ignore_and_warnings_as_errors_are_read_and_overridden(root: Path) -> None:
    project(root, 'select = ["LG4", "LG303"]\nignore = ["LG404"]\nwarnings_as_errors = true\n')
    config = load_config(root)
    assert (config.select, config.ignore, config.warnings_as_errors) == (("LG4", "LG303"), ("LG404",), True)
    assert config.selection == Selection(("LG4", "LG303"), ("LG404",), True)
    # The command line replaces the file's lists (as every override replaces its key).
    config = load_config(root, {"ignore": ("LG401",), "select": None, "warnings_as_errors": False})
    assert (config.select, config.ignore, config.warnings_as_errors) == (("LG4", "LG303"), ("LG401",), False)
    project(root, None)
    assert load_config(root).selection == Selection((), (), False)


@pytest.mark.parametrize(("table", "message"), [
    ('ignore = "LG401"\n', '`[tool.layoutgen].ignore` must be a list of diagnostic codes or their prefixes, like'
                            ' ["LG401", "LG3"], got "LG401" (pyproject.toml)'),
    ('select = ["LG9"]\n', '`[tool.layoutgen].select` must be a list of diagnostic codes or their prefixes, like'
                           ' ["LG401", "LG3"], got "LG9", which is no code and no prefix of one (pyproject.toml)'),
    ('ignore = ["lg401"]\n', '`[tool.layoutgen].ignore` must be a list of diagnostic codes or their prefixes, like'
                             ' ["LG401", "LG3"], got "lg401", which is no code and no prefix of one (pyproject.toml)'),
    ('ignore = ["LG401", "LG201"]\n',
     f"`[tool.layoutgen].ignore` must be a list of codes that can be ignored ({IGNORABLE}) or their prefixes,"
     ' got "LG201": LG201 (not-contiguous) is an error that stops generation (pyproject.toml)'),
    ('ignore = ["LG2"]\n',
     f"`[tool.layoutgen].ignore` must be a list of codes that can be ignored ({IGNORABLE}) or their prefixes,"
     ' got "LG2": every code starting with LG2 is an error that stops generation (pyproject.toml)'),
    ("warnings_as_errors = 1\n", "`[tool.layoutgen].warnings_as_errors` must be true or false, got 1 (pyproject.toml)"),
])
def test_wrong_selection_values(root: Path, table: str, message: str) -> None:
    assert error(root, table) == message


def test_an_ignored_error_on_the_command_line_is_refused(root: Path) -> None:
    project(root, None)
    with pytest.raises(ConfigError) as caught:
        load_config(root, {"ignore": ("LG502",)})
    assert str(caught.value) == (
        f"`ignore` must be a list of codes that can be ignored ({IGNORABLE}) or their prefixes, got \"LG502\": "
        "LG502 (stale-generated) is an error that stops generation (override)"
    )


def test_a_kernel_not_executed_cannot_be_ignored_for_a_project(root: Path) -> None:
    """LG531 (a kernel `check --execute` could not run) may be accepted only on its kernel's binding line, with a
    reason: `ignore` refuses it, and a prefix that covers it leaves it reported."""
    assert error(root, 'ignore = ["LG531"]\n') == (
        f"`[tool.layoutgen].ignore` must be a list of codes that can be ignored ({IGNORABLE}) or their prefixes, "
        'got "LG531": LG531 (not-executed) may be turned off only on the line it is reported at, by a comment that '
        "says why (`# layoutgen: ignore[LG531]: why`) (pyproject.toml)")
    project(root, 'ignore = ["LG5"]\n')
    selection = load_config(root).selection
    assert [code for code in ("LG505", "LG530", "LG531", "LG532") if selection.reports(code)] == [
        "LG530", "LG531", "LG532"]


def test_a_prefix_that_covers_errors_ignores_only_what_can_be_ignored(root: Path) -> None:
    project(root, 'ignore = ["LG4"]\n')
    selection = load_config(root).selection
    assert [code for code in ("LG401", "LG402", "LG403", "LG404", "LG303") if selection.reports(code)] == [
        "LG402", "LG303"]


# --- the key table --------------------------------------------------------


def test_keys_document_every_setting() -> None:
    fields = [f.name for f in dataclasses.fields(Config) if f.name != "root"]
    assert list(KEYS) == fields
    for key, doc in KEYS.items():
        assert "(default: " in doc, key
        assert "\n" not in doc, key


def test_package_metadata_uses_an_spdx_license_expression() -> None:
    """`license = "..."` (PEP 639), not the deprecated table form setuptools warns about on every install."""
    import tomllib

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    project_table = data["project"]
    assert project_table["license"] == "Apache-2.0"
    assert not any(c.startswith("License ::") for c in project_table.get("classifiers", []))
    assert "setuptools>=77" in data["build-system"]["requires"]  # the first to read the SPDX form
