"""Escaping for untrusted text (API descriptions, LLM output, query text) before Streamlit renders it.

Streamlit renders markdown in st.markdown, st.write, st.caption and every widget or expander label:
an API description could show a remote image (`![x](http://...)`), a link, a heading or a colour
directive. Escaping every markdown-significant character shows such text literally. Plotly's
labels understand a little HTML (`<a href>`, `<b>`), so text bound for a chart is HTML-escaped.
"""
from __future__ import annotations

import html
import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark; these are the ones
# that start markdown, Streamlit directives (:red[...], :material/x:), LaTeX ($) or HTML (<).
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'^])")
_WHITESPACE = re.compile(r"\s+")
# GFM turns bare URLs, www. names and e-mail addresses into links even when every character is
# escaped; a word joiner (U+2060, invisible) after the scheme, "www" or "@" keeps them plain text.
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|www)(?=(?:\\:|\\.))|(?<=\w)(@)(?=\w)")


def one_line(text: object, limit: int | None = None) -> str:
    """Collapse whitespace (a newline could start a block) and clip to `limit` characters."""
    out = _WHITESPACE.sub(" ", str(text if text is not None else "")).strip()
    if limit is not None and len(out) > limit:
        out = out[: max(limit - 1, 0)].rstrip() + "…"
    return out


def md(text: object, limit: int | None = None) -> str:
    """Untrusted text made safe for any markdown-rendering Streamlit call, on one line."""
    escaped = _MD_SPECIAL.sub(r"\\\1", one_line(text, limit))
    return _AUTOLINK.sub(lambda m: m.group(0) + "\u2060", escaped)


def plot_text(text: object, limit: int | None = 120) -> str:
    """Untrusted text made safe for a plotly label or hover text."""
    return html.escape(one_line(text, limit), quote=True)
