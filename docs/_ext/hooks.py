"""MkDocs hooks (mkdocs.yml `hooks:`): the site loads nothing from the network.

mkdocs-material's offline plugin makes search work from file:// with a Web Worker shim it
loads from a CDN; the site ships that shim (docs/assets/javascripts/iframe-worker-shim.js, from
the npm package iframe-worker) and each page loads it from there instead."""

from __future__ import annotations

import posixpath
import re
from typing import Any

_SHIM = re.compile(r'src="https://unpkg\.com/iframe-worker/shim"')
SHIPPED_SHIM = "assets/javascripts/iframe-worker-shim.js"


def on_post_page(output: str, *, page: Any, config: Any) -> str:
    depth = posixpath.dirname(page.file.dest_uri)
    local = posixpath.relpath(SHIPPED_SHIM, depth or ".")
    return _SHIM.sub(f'src="{local}"', output)
