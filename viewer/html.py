"""One self-contained HTML file: the page's data as JSON, its style and script inlined.

Nothing is fetched when the page opens (no CDN, no fonts, no images): the file can be
attached to an issue and opened from disk. The script (``assets/*.js``) only draws the
data; the state it shows was computed in Python.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).parent / "assets"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>{style}</style>
</head><body>
<noscript>This page draws its views with JavaScript; the data is in the script element below.</noscript>
<script type="application/json" id="xspec-data">{data}</script>
<script>{script}</script>
</body></html>
"""


def _json(data: Any) -> str:
    """JSON that cannot end its script element early (``</script>``, ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def render_page(data: dict[str, Any], script: str) -> str:
    """The page for ``data`` drawn by the asset ``script`` (``trace.js``, ``graph.js``), with the common style."""
    return PAGE.format(title=html.escape(str(data.get("title", "xspec view"))), style=asset("view.css"),
                       data=_json(data), script=asset("common.js") + "\n" + asset(script))


def write_page(path: Path, data: dict[str, Any], script: str) -> int:
    """Write the page; returns its size in bytes."""
    text = render_page(data, script)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


__all__ = ["render_page", "write_page"]
