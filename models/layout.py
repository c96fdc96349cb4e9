"""Placeholder; replaced by the exact node-layout emulation (see tests/test_layout.py)."""

from __future__ import annotations

from typing import Any


class NodeLayout:
    def freeze(self) -> Any:
        return ()
