"""Optional native build of the reference server's hot modules with mypyc.

Everything about the package is in pyproject.toml; this file only adds
extension modules, and only when asked:

    XSPEC_MYPYC=1 pip install --no-build-isolation -c constraints.txt -e '.[dev]'
    XSPEC_MYPYC=1 python -m build --wheel --no-isolation

Without XSPEC_MYPYC (the default) nothing is compiled and the package is the
pure-Python one it always was. The compiled build needs mypy (which ships
mypyc; it is in the dev extra, hence --no-build-isolation), a C compiler and
Python's headers. A compiled module shadows its .py file: after editing one,
build again or remove reference/*.so.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

# The reference server's modules compiled with XSPEC_MYPYC=1 (reference/<name>.py).
# server.py stays interpreted (`python -m xspec.reference.server` cannot run an extension module); its
# connections' hot path is connection.py.
COMPILED = ("protocol", "streams", "xcommands", "core", "generic", "api", "clock", "tracking", "connection",
            "strings", "lists", "pubsub", "keyspace", "expiry", "notify", "values", "scripting", "hashes", "zsets",
            "../spec/lua",  # spec/lua.py (xspec.spec.lua): redis.call's bridge, shared with the model
            "propagation", "replication", "replica_link",
            # the snapshot a full sync sends and loads: RDB records, listpacks, LZF, the checksum
            "../spec/rdb", "../spec/listpack_codec", "../spec/lzf", "../spec/crc64")

# The import packages whose sources live in top-level folders (pyproject.toml's package-dir).
MAPPED = ("spec", "models", "reference", "traces")


def mypyc_extensions() -> list:
    if os.environ.get("XSPEC_MYPYC", "") in ("", "0"):
        return []
    from mypyc.build import mypycify

    # mypyc names a module after its path, and reference/protocol.py is xspec.reference.protocol:
    # compile through a view of the package-dir mapping made of symlinks (as scripts/typecheck does).
    root = Path(__file__).resolve().parent
    view = root / "build" / "mypyc-view"
    package = view / "xspec"
    package.mkdir(parents=True, exist_ok=True)
    links = {f.name: f for f in (root / "xspec").glob("*.py")} | {sub: root / sub for sub in MAPPED}
    for name, target in links.items():
        link = package / name
        if not link.is_symlink():
            link.symlink_to(target)
    extensions = mypycify([str(package / "reference" / f"{name}.py") for name in COMPILED],
                          opt_level="3", multi_file=True, group_name="xspec._reference_native")
    # With multi_file, each module's C file includes the group's header, which mypyc writes
    # beside the group's own C file (build/xspec/, after the dotted group name) but does not
    # put on the include path.
    for extension in extensions:
        extension.include_dirs.append(str(Path("build") / "xspec"))
    return extensions


class ParallelBuildExt(build_ext):
    """build_ext compiling an extension's C files side by side, one per CPU.

    mypyc's ``multi_file`` output is one C file per module in a single extension, which
    setuptools would compile one after the other: on two cores that doubles the build.
    """

    def build_extension(self, ext: Any) -> None:
        compile_one_list = self.compiler.compile

        def compile_each(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
                parts = pool.map(lambda source: compile_one_list([source], *args, **kwargs), sources)
                return [obj for objects in parts for obj in objects]

        self.compiler.compile = compile_each
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = compile_one_list


setup(ext_modules=mypyc_extensions(), cmdclass={"build_ext": ParallelBuildExt})
