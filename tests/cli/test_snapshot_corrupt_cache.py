"""Every kind of corrupt cache entry is a miss: computed again, never an error of the run.

Real files in a real cache folder: a warm cache made by `snapshot --update` on one bundled recipe,
whose entries are then cut, garbled, or replaced. `snapshot --check` must pass exactly as with a
good cache, and leave good entries behind. Before, a truncated or garbled entry made every later
run fail with pytest's INTERNALERROR (and exit 3 without naming a recipe) until the cache was deleted.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mmfreeze.cli.exit_codes import ExitCode
from mmfreeze.disk_cache import MAX_ENTRY_BYTES, DiskCache
from mmfreeze.models.cache import StructureCache
from mmfreeze.snapshots.frozen_cache import FrozenSetCache
from tests.cli.test_snapshot_faults import BUNDLED, run, said

CACHES: dict[str, type[DiskCache]] = {"frozen_sets": FrozenSetCache, "structures": StructureCache}


def _garble(data: bytes, start: int) -> bytes:
    """``data`` with 32 bytes from ``start`` overwritten by a fixed pattern."""
    return data[:start] + bytes(range(0x80, 0xA0)) + data[start + 32:]


def _json_entry(change: Callable[[dict], object]) -> Callable[[bytes], bytes]:
    """A well-formed gzip entry holding ``change`` applied to the entry's own JSON."""
    return lambda data: gzip.compress(json.dumps(change(json.loads(gzip.decompress(data)))).encode())


def _with(**fields: object) -> Callable[[dict], dict]:
    return lambda record: {**record, **fields}


def _without(name: str) -> Callable[[dict], dict]:
    return lambda record: {key: value for key, value in record.items() if key != name}


def _oversized(_: bytes) -> bytes:
    """A gzip entry unpacking past MAX_ENTRY_BYTES (a quarter of a MB on disk): never read whole."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip stream
    block = b" " * (1 << 20)
    body = b"".join(packer.compress(block) for _ in range(MAX_ENTRY_BYTES // len(block) + 1))
    return body + packer.compress(b"[]") + packer.flush()


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "empty file": lambda data: b"",
    "truncated in the header": lambda data: data[:6],
    "truncated in the data": lambda data: data[: len(data) // 2],
    "garbled header": lambda data: _garble(data, 0),
    "garbled data": lambda data: _garble(data, len(data) // 2),
    "not gzip": lambda data: gzip.decompress(data),
    "gzip of invalid JSON": lambda data: gzip.compress(gzip.decompress(data)[:-7]),
    "gzip of bytes that are not UTF-8": lambda data: gzip.compress(b"\xff\xfe{"),
    "JSON nested too deep": lambda data: gzip.compress(b"[" * 200_000 + b"]" * 200_000),
    "JSON list": _json_entry(lambda record: [record]),
    "JSON string": _json_entry(lambda record: "frozen"),
    "JSON object missing a field": _json_entry(_without("format")),
    "JSON object with an extra field": _json_entry(_with(surplus=1)),
    "JSON field of the wrong type": _json_entry(
        lambda record: {key: ({"x": 1} if isinstance(value, (list, str)) else value) for key, value in record.items()}),
    "wrong format version": _json_entry(_with(format=-1)),
    "unpacks past the size limit": _oversized,
}


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with one bundled recipe and its accepted snapshot, and the cache that made it."""
    base = tmp_path_factory.mktemp("warm")
    repo = base / "repo"
    (repo / "recipes").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[tool.mmfreeze]\n")
    shutil.copy(BUNDLED, repo / "recipes" / "a.yaml")
    update = run(repo, "--update", "--cache-dir", str(base / "cache"), "recipes")
    assert update.returncode == ExitCode.OK, said(update)
    for kind in CACHES:
        assert list((base / "cache" / kind).glob("*.json.gz")), kind
    return base


@pytest.fixture
def copy(warm: Path, tmp_path: Path) -> Path:
    shutil.copytree(warm, tmp_path / "copy")
    return tmp_path / "copy"


def corrupt(cache: Path, kinds: tuple[str, ...], corruption: str) -> list[Path]:
    entries = [entry for kind in kinds for entry in sorted((cache / kind).glob("*.json.gz"))]
    for entry in entries:
        entry.write_bytes(CORRUPTIONS[corruption](entry.read_bytes()))
    return entries


def readable(entry: Path) -> bool:
    """Whether the cache reads ``entry`` as a hit (a fresh cache: nothing in memory)."""
    cache = CACHES[entry.parent.name](entry.parent.parent)
    return cache.get(entry.name.removesuffix(".json.gz")) is not None


@pytest.mark.slow  # 32 runs of the real command (the cache classes alone: the test below)
@pytest.mark.parametrize("kinds", [("frozen_sets",), ("frozen_sets", "structures")], ids=["frozen sets", "every entry"])
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_cache_entry_is_a_miss_and_is_written_again(copy: Path, corruption: str, kinds: tuple[str, ...]) -> None:
    """`snapshot --check` over a cache whose entries are damaged: exit 0, "1 passed" (the frozen set,
    and with every entry damaged the model too, computed again), no INTERNALERROR; afterwards each
    damaged entry reads as a hit."""
    entries = corrupt(copy / "cache", kinds, corruption)
    assert entries and not any(readable(entry) for entry in entries)

    result = run(copy / "repo", "--check", "--report", "json", "--cache-dir", str(copy / "cache"), "recipes")
    assert result.returncode == ExitCode.OK, said(result)
    assert "INTERNALERROR" not in said(result)
    assert [(e["recipe"], e["status"]) for e in json.loads(result.stdout)["recipes"]] == [("recipes/a.yaml", "passed")]
    assert all(readable(entry) for entry in entries)


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("kind", sorted(CACHES))
def test_each_cache_reads_a_corrupt_entry_as_a_miss(warm: Path, tmp_path: Path, kind: str, corruption: str) -> None:
    """The same files read in this process: ``get`` returns ``None``, never raises."""
    entry = next((warm / "cache" / kind).glob("*.json.gz"))
    damaged = tmp_path / kind / entry.name
    damaged.parent.mkdir()
    damaged.write_bytes(CORRUPTIONS[corruption](entry.read_bytes()))
    assert CACHES[kind](tmp_path).get(entry.name.removesuffix(".json.gz")) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.parametrize("kind", sorted(CACHES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_whatever_an_entry_holds_the_cache_reads_it_or_misses(warm: Path, tmp_path: Path, kind: str, data: st.DataObject) -> None:
    """Property: a real entry with any bytes overwritten or cut, its JSON with any field replaced by
    any JSON value, or any JSON at all: ``get`` returns a value or ``None``, and never raises."""
    entry = next((warm / "cache" / kind).glob("*.json.gz"))
    original = entry.read_bytes()
    record = json.loads(gzip.decompress(original))
    variant = data.draw(st.sampled_from(["bytes", "field", "json"]))
    if variant == "bytes":
        start = data.draw(st.integers(0, len(original)))
        payload = original[:start] + data.draw(st.binary(max_size=16)) + original[start + data.draw(st.integers(0, 16)):]
    elif variant == "field":
        name = data.draw(st.sampled_from(sorted(record)))
        payload = gzip.compress(json.dumps({**record, name: data.draw(JSON)}).encode())
    else:
        payload = gzip.compress(json.dumps(data.draw(JSON)).encode())
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    (folder / kind).mkdir()
    (folder / kind / entry.name).write_bytes(payload)
    CACHES[kind](folder).get(entry.name.removesuffix(".json.gz"))  # must not raise
