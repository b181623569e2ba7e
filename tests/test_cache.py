"""The on-disk cubin cache: hits, misses, corruption and racing processes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from layoutgen.runtime import paths
from layoutgen.runtime.cache import CacheError, CubinCache
from layoutgen.runtime.nvrtc import CompileError, CompileRequest, CompileResult, compile_cubin

SRC = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
REQ = CompileRequest(SRC, "generated/axpy.cu", report=True)


@pytest.fixture(scope="module")
def compiled() -> CompileResult:
    return compile_cubin(REQ)


def entry_files(directory: Path) -> list[str]:
    """Every file under the cache, relative and sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def expected_files(key: str, *suffixes: str) -> list[str]:
    return sorted(f"{key[:2]}/{key}{s}" for s in suffixes)


def test_miss_compiles_then_hits(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    first = cache.get_or_compile(REQ)
    second = cache.get_or_compile(REQ)
    assert (first.origin, second.origin) == ("compiled", "cache")
    assert second == first and second.resources and second.resources[0].registers > 0
    assert (cache.hits, cache.misses, cache.compiles, cache.evicted) == (1, 1, 1, 0)
    key = REQ.key()
    assert entry_files(tmp_path) == expected_files(key, ".cubin", ".json", ".lock")
    other = CubinCache(tmp_path)  # another process's view of the same folder
    assert other.lookup(REQ) == first and (other.hits, other.misses) == (1, 0)


def test_report_is_not_part_of_the_key(tmp_path: Path) -> None:
    """`check --compile` then `check --compile --report`: the second compiles nothing and still reports."""
    plain = CompileRequest(SRC, "generated/axpy.cu")
    assert plain.key() == REQ.key()
    cache = CubinCache(tmp_path)
    first = cache.get_or_compile(plain)
    assert first.origin == "compiled" and first.resources == ()  # not asked for
    reported = cache.get_or_compile(REQ)
    assert reported.origin == "cache" and reported.cubin == first.cubin
    assert [r.kernel for r in reported.resources] == ["axpy"] and reported.resources[0].registers > 0
    assert (cache.compiles, cache.hits) == (1, 1)
    assert cache.lookup(plain) is not None and cache.lookup(plain).resources == ()  # type: ignore[union-attr]
    assert cache.lookup(REQ) == reported


def test_sidecar_contents(tmp_path: Path, compiled: CompileResult) -> None:
    cache = CubinCache(tmp_path)
    cache.store(REQ, compiled)
    cubin_path, meta_path = cache.paths(REQ.key())
    assert cubin_path.read_bytes() == compiled.cubin
    meta = json.loads(meta_path.read_text())
    assert meta["key"] == REQ.key()
    assert (meta["name"], meta["arch"]) == ("generated/axpy.cu", "sm_90")
    assert meta["cubin_sha256"] == hashlib.sha256(compiled.cubin).hexdigest()
    assert meta["cubin_size"] == len(compiled.cubin)
    assert meta["log"] == compiled.log
    assert meta["resources"][0]["kernel"] == "axpy"


def test_lookup_of_an_absent_entry(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    assert cache.lookup(REQ) is None
    assert (cache.hits, cache.misses) == (0, 1)
    assert entry_files(tmp_path) == []  # a plain miss takes no lock, writes nothing


def test_store_then_lookup(tmp_path: Path, compiled: CompileResult) -> None:
    cache = CubinCache(tmp_path)
    cache.store(REQ, compiled)
    found = cache.lookup(REQ)
    assert found == compiled and found is not None and found.origin == "cache"


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _flip_cubin_byte(cubin: Path, meta: Path) -> None:
    data = bytearray(cubin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    cubin.write_bytes(bytes(data))


def _set_meta(**changes: Any) -> Callable[[Path, Path], None]:
    def corrupt(cubin: Path, meta: Path) -> None:
        doc = json.loads(meta.read_text())
        doc.update(changes)
        meta.write_text(json.dumps(doc))

    return corrupt


CORRUPTIONS: dict[str, Callable[[Path, Path], None]] = {
    "flipped-byte": _flip_cubin_byte,
    "truncated-cubin": lambda cubin, meta: _write(cubin, cubin.read_bytes()[:100]),
    "empty-cubin": lambda cubin, meta: _write(cubin, b""),
    "missing-cubin": lambda cubin, meta: cubin.unlink(),
    "missing-sidecar": lambda cubin, meta: meta.unlink(),
    "garbage-sidecar": lambda cubin, meta: _write(meta, b"\x00{not json"),
    "truncated-sidecar": lambda cubin, meta: _write(meta, meta.read_bytes()[:40]),
    "sidecar-not-an-object": lambda cubin, meta: _write(meta, b"[1, 2]"),
    "wrong-sha": _set_meta(cubin_sha256="0" * 64),
    "wrong-key": _set_meta(key="f" * 64),
    "bad-resources": _set_meta(resources=[{"kernel": "axpy", "registers": "many"}]),
    "resources-wrong-type": _set_meta(
        resources=[dict(kernel="axpy", registers=1.5, spill_stores=0, spill_loads=0, stack_frame=0, shared_bytes=0)]
    ),
    "log-not-text": _set_meta(log=7),
    # json's decoder raises RecursionError, not ValueError, for nesting this deep
    "deep-sidecar": lambda cubin, meta: _write(meta, b"[" * 200_000 + b"]" * 200_000),
}


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_broken_entry_is_removed_and_rebuilt(tmp_path: Path, compiled: CompileResult, damage: str) -> None:
    cache = CubinCache(tmp_path)
    cache.store(REQ, compiled)
    key = REQ.key()
    CORRUPTIONS[damage](*cache.paths(key))
    assert cache.lookup(REQ) is None
    assert (cache.hits, cache.misses, cache.evicted) == (0, 1, 1)
    assert entry_files(tmp_path) == expected_files(key, ".lock")  # both halves gone

    CORRUPTIONS[damage](*_store_again(cache, compiled))
    rebuilt = cache.get_or_compile(REQ)  # the broken entry is never returned
    assert rebuilt.origin == "compiled"
    assert (rebuilt.cubin, rebuilt.resources) == (compiled.cubin, compiled.resources)  # logs carry timings
    assert (cache.compiles, cache.evicted) == (1, 2)
    fresh = CubinCache(tmp_path).lookup(REQ)
    assert fresh == rebuilt and fresh is not None and fresh.origin == "cache"


def _store_again(cache: CubinCache, result: CompileResult) -> tuple[Path, Path]:
    cache.store(REQ, result)
    return cache.paths(REQ.key())


def test_writes_cubin_before_sidecar(tmp_path: Path, compiled: CompileResult, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    real_replace = os.replace

    def replace(src: str, dst: str | Path) -> None:
        order.append(Path(dst).suffix)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    CubinCache(tmp_path).store(REQ, compiled)
    assert order == [".cubin", ".json"]


def test_failed_write_leaves_no_entry_and_no_temp_files(
    tmp_path: Path, compiled: CompileResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    def replace(src: str, dst: str | Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="No space left"):
        CubinCache(tmp_path).store(REQ, compiled)
    assert entry_files(tmp_path) == expected_files(REQ.key(), ".lock")


def test_stale_temp_files_are_cleaned_under_the_lock(tmp_path: Path, compiled: CompileResult) -> None:
    cache = CubinCache(tmp_path)
    key = REQ.key()
    folder = tmp_path / key[:2]
    folder.mkdir()
    (folder / f"{key}.cubin.x1y2.tmp").write_bytes(b"half a cubin")  # a writer that was killed
    cache.store(REQ, compiled)
    assert entry_files(tmp_path) == expected_files(key, ".cubin", ".json", ".lock")


def test_compile_errors_are_not_cached(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    bad = CompileRequest("int x = ;\n", "generated/bad.cu")
    for _ in range(2):
        with pytest.raises(CompileError):
            cache.get_or_compile(bad)
    assert cache.compiles == 2
    assert entry_files(tmp_path) == expected_files(bad.key(), ".lock")


def _compile_in_child(directory: str, barrier: Any, queue: Any) -> None:
    barrier.wait()
    result = CubinCache(Path(directory)).get_or_compile(REQ)
    queue.put((result.origin, hashlib.sha256(result.cubin).hexdigest()))


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork and fcntl")
def test_racing_processes_compile_once(tmp_path: Path) -> None:
    key = REQ.key()  # loads NVRTC before the fork, so that the children start together
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(str(tmp_path), barrier, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(origin for origin, _ in results) == ["cache", "cache", "cache", "compiled"]
    assert len({digest for _, digest in results}) == 1
    assert entry_files(tmp_path) == expected_files(key, ".cubin", ".json", ".lock")
    found = CubinCache(tmp_path).lookup(REQ)
    assert found is not None and hashlib.sha256(found.cubin).hexdigest() == results[0][1]


# -- where the cache lives -------------------------------------------------------


def test_cache_dir_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(paths.CACHE_DIR_ENV, str(tmp_path / "lg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "lg"
    assert CubinCache.default().directory == tmp_path / "lg" / "cubin"
    monkeypatch.delenv(paths.CACHE_DIR_ENV)
    assert paths.cache_dir() == tmp_path / "xdg" / "layoutgen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == tmp_path / "home" / ".cache" / "layoutgen"


# -- a cache that others could write (issue 13, item 16) -------------------------


def _refusal(cache: CubinCache) -> str:
    with pytest.raises(CacheError) as caught:
        cache.lookup(REQ)
    return str(caught.value)


@pytest.mark.parametrize(("mode", "who"), [(0o777, "its group and all users"), (0o775, "its group"),
                                           (0o757, "all users")])
def test_a_cache_folder_that_others_can_write_is_refused(
    tmp_path: Path, compiled: CompileResult, mode: int, who: str
) -> None:
    folder = tmp_path / "cubin"
    CubinCache(folder).store(REQ, compiled)  # as another user of a shared folder would plant it
    folder.chmod(mode)
    assert _refusal(CubinCache(folder)) == (
        f"error[LG512]: the compile cache `{folder}` can be written by {who} (mode {mode:04o}), so another user "
        "could plant a cubin in it\n"
        f"  hint: make it private (`chmod go-w {folder}`), or point LAYOUTGEN_CACHE_DIR (or `cache_dir`) at a "
        "folder only you can write"
    )
    folder.chmod(0o700)
    entry = folder / REQ.key()[:2]
    entry.chmod(0o777)  # an entry's folder is checked as well
    assert f"the compile cache `{entry}` can be written by its group and all users" in _refusal(CubinCache(folder))


def test_a_cache_folder_of_another_user_is_refused(
    tmp_path: Path, compiled: CompileResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cubin"
    CubinCache(folder).store(REQ, compiled)
    if os.geteuid() == 0:  # root can give the folder away
        os.chown(folder, 4242, 4242)
    else:  # anyone else becomes someone else
        monkeypatch.setattr(os, "geteuid", lambda: folder.stat().st_uid + 4242)
    owner = folder.stat().st_uid
    assert _refusal(CubinCache(folder)) == (
        f"error[LG512]: the compile cache `{folder}` belongs to another user (uid {owner}), who could plant a "
        "cubin in it\n"
        "  hint: point LAYOUTGEN_CACHE_DIR (or `cache_dir`) at a folder of your own"
    )


def test_a_new_cache_is_private(tmp_path: Path) -> None:
    folder = tmp_path / "home" / ".cache" / "layoutgen" / "cubin"
    CubinCache(folder).get_or_compile(REQ)
    made = [folder, folder.parent, folder / REQ.key()[:2]]
    assert {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777 for p in made} == {
        str(p.relative_to(tmp_path)): 0o700 for p in made
    }
    cubin, meta = CubinCache(folder).paths(REQ.key())
    assert [p.stat().st_mode & 0o777 for p in (cubin, meta, cubin.with_suffix(".lock"))] == [0o600] * 3


def test_a_planted_lock_file_link_is_not_followed(tmp_path: Path, compiled: CompileResult) -> None:
    key = REQ.key()
    folder = tmp_path / key[:2]
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    (folder / f"{key}.lock").symlink_to(victim)
    with pytest.raises(CacheError) as caught:
        CubinCache(tmp_path).store(REQ, compiled)
    lock = folder / f"{key}.lock"
    assert str(caught.value) == (
        f"error[LG512]: `{lock}` in the compile cache is a symbolic link; layoutgen makes none and follows none\n"
        f"  hint: remove it (`rm {lock}`) and find out who made it"
    )
    assert not victim.exists()


@pytest.mark.parametrize("half", [".cubin", ".json"])
def test_a_cache_entry_that_is_a_folder_is_an_error_not_a_traceback(
    tmp_path: Path, compiled: CompileResult, half: str
) -> None:
    cache = CubinCache(tmp_path)
    cache.store(REQ, compiled)
    cubin, meta = cache.paths(REQ.key())
    path = cubin if half == ".cubin" else meta
    path.unlink()
    path.mkdir()
    with pytest.raises(CacheError) as caught:
        cache.get_or_compile(REQ)
    assert str(caught.value) == (
        f"error[LG513]: `{path}` in the compile cache is a folder, where layoutgen keeps a file\n"
        f"  hint: remove it (`rm -r {path}`)"
    )


def test_a_cache_dir_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    file = tmp_path / "cache"
    file.write_text("not a folder\n")
    for folder in (file, file / "cubin"):
        with pytest.raises(CacheError) as caught:
            CubinCache(folder).get_or_compile(REQ)
        assert str(caught.value) == (
            f"error[LG513]: the compile cache `{folder}` cannot be used: `{file}` is not a folder\n"
            "  hint: point LAYOUTGEN_CACHE_DIR (or `cache_dir`) at a folder"
        )


def test_load_returns_the_bytes_it_verified_reading_the_cubin_once(
    tmp_path: Path, compiled: CompileResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = CubinCache(tmp_path)
    cache.store(REQ, compiled)
    cubin_path, _ = cache.paths(REQ.key())
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    data = cache.load(REQ)
    assert data == compiled.cubin and isinstance(data, bytes)
    assert opened.count(str(cubin_path)) == 1
    assert CubinCache(tmp_path / "fresh").load(REQ) == compiled.cubin  # a miss compiles, stores and returns


@pytest.mark.parametrize("whose", ["all users", "another user"])
def test_the_folder_layoutgen_cache_dir_names_is_checked_not_only_its_cubin_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whose: str
) -> None:
    """Whoever can write the folder of LAYOUTGEN_CACHE_DIR can move its `cubin/` aside and put their own there
    (issue 29, item 5): it is checked as the torch reader's cache is, before anything is read from it."""
    top = tmp_path / "shared-cache"
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(top))
    CubinCache.default().store(REQ, CompileResult(b"mine", "", ()))  # made private, with its cubin folder
    assert [p.stat().st_mode & 0o777 for p in (top, top / "cubin")] == [0o700, 0o700]
    if whose == "all users":
        top.chmod(0o777)
        expected = (f"error[LG512]: the compile cache `{top}` can be written by its group and all users (mode 0777), "
                    "so another user could plant a cubin in it")
    else:
        if os.geteuid() == 0:
            os.chown(top, 4242, 4242)
        else:
            monkeypatch.setattr(os, "geteuid", lambda: top.stat().st_uid + 4242)
        expected = (f"error[LG512]: the compile cache `{top}` belongs to another user (uid {top.stat().st_uid}), who "
                    "could plant a cubin in it")
    assert _refusal(CubinCache.default()).split("\n")[0] == expected
    with pytest.raises(CacheError, match=r"^error\[LG512\]: the compile cache "):
        CubinCache.default().store(REQ, CompileResult(b"planted", "", ()))


def test_a_cubin_folder_that_is_a_link_in_layoutgen_cache_dir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = tmp_path / "cache"
    top.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (top / "cubin").symlink_to(elsewhere)
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(top))
    assert _refusal(CubinCache.default()) == (
        f"error[LG512]: `{top / 'cubin'}` in the compile cache is a symbolic link; layoutgen makes none and follows "
        f"none\n  hint: remove it (`rm {top / 'cubin'}`) and find out who made it")
