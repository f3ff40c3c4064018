"""Text a visitor typed, linked or uploaded (a sentence, a run name, a vocab token), shown as plain text.

Streamlit renders Markdown (links, images, `:material/…:` icons, `:red[…]` colours) in st.warning, st.caption,
st.markdown, st.info and widget labels; plotly renders a pseudo-HTML (`<a href>`, `<b>`) in titles, tick labels
and hover text; a spreadsheet runs a CSV cell that starts with `=`, `+`, `-` or `@` as a formula. Every such
text goes through one of these functions on its way out, so that none of it is interpreted.
"""

from __future__ import annotations

import html
import re

import pandas as pd

# What can start Markdown in Streamlit: links and images ([ ]), emphasis (* _ ~), code (`), HTML (< >), headings
# and tables (# |), maths ($), icons and colours (:material/…:, :red[…]), and the backslash itself.
# A colon only before a non-space (":material/", ":red[", "https:"): "Note: …" stays as it is.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~${}]|:(?=\S))")
_WWW = re.compile(r"(?i)\b(www)\.")  # "www.evil.example" would be linked without any special character
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def plain_markdown(text: object) -> str:
    """`text` as Markdown that shows exactly these characters: the marks that start Markdown backslash-escaped.

    `[Log in](https://evil.example)` stays text, not a link; `![x](http://…)` loads no image; no bare URL is
    auto-linked (its `:` and a `www.` are escaped) and no `:icon:` or colour directive applies. Line breaks
    become spaces.
    """
    flat = " ".join(str(text).splitlines())
    return _WWW.sub(r"\1\\.", _MARKDOWN_SPECIAL.sub(r"\\\1", flat))


def plain_label(text: object) -> str:
    """`text` for a plotly title, tick label or hover text: `<`, `>` and `&` as entities (no `<a href>`); plotly
    shows the entities as the characters, so an ordinary token looks the same."""
    return html.escape(str(text), quote=False)


def plain_labels(texts) -> list[str]:
    """plain_label of each text: the token labels of a figure's axis or markers."""
    return [plain_label(text) for text in texts]


def plain_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: a string starting with = + - @ (or a tab or CR) gets a leading '."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def plain_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells, column names and index are plain_cell'd (numbers are left as they are)."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column]):
            frame[column] = frame[column].map(plain_cell)
    frame.columns = [plain_cell(column) for column in frame.columns]
    if frame.index.dtype == object:
        frame.index = frame.index.map(plain_cell)
    return frame
