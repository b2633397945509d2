"""A card's text as the dashboard shows it: Markdown links as links, everything else as text."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# [label](http(s)://...): a URL with no space, quote, angle bracket or parenthesis in it.
_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\((https?://[^\s()<>\"'`]{1,2000})\)")


def linked(text: str | None) -> Markup:
    """``text`` escaped, with each Markdown link to an http(s) URL made a link (issue 42
    item 12: "[E.164](https://…)" showed raw). Any other scheme (``javascript:``, ``data:``)
    stays text; the label and the URL are escaped, and a link opens no window the page could
    be reached from (``noopener``) and tells the site nothing (``noreferrer``)."""
    if not text:
        return Markup("")
    parts: list[Markup] = []
    last = 0
    for match in _LINK.finditer(text):
        parts.append(escape(text[last : match.start()]))
        label, href = match.groups()
        anchor = '<a href="{}" rel="noopener noreferrer nofollow" class="external">{}</a>'
        parts.append(Markup(anchor).format(href, label))
        last = match.end()
    parts.append(escape(text[last:]))
    return Markup("").join(parts)
