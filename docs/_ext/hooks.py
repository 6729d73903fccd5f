"""MkDocs hooks (mkdocs.yml `hooks:`): the site loads nothing from the network, 404 page included.

- mkdocs-material's offline plugin makes search work from file:// with a Web Worker shim it
  would load from a CDN; the site ships that shim (docs/assets/javascripts/iframe-worker-shim.js,
  from the npm package iframe-worker) and names it in mkdocs.yml's ``extra.polyfills``, which the
  plugin then leaves alone.
- MkDocs renders the error page (404.html) with absolute paths ("/assets/...", base URL "/"
  without a ``site_url``): they point outside the site opened from its files or served under a
  sub-path. It gets relative paths like every other top-level page instead."""

from __future__ import annotations

from typing import Any

ERROR_PAGE = "404.html"


def on_template_context(context: Any, *, template_name: str, config: Any) -> Any:
    if template_name == ERROR_PAGE:
        context["base_url"] = "."
    return context
