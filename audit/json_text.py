"""Reading a trace line's JSON text as :func:`json.loads` does, faster."""

from __future__ import annotations

import json
from typing import Any

import orjson


def loads(text: str) -> Any:
    """JSON text to Python, exactly as :func:`json.loads` reads it (orjson first: it is several times faster,
    and where it refuses, NaN or integers past 64 bits, json decides)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
