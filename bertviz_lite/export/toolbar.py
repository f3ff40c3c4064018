"""SVG beside PNG in every plotly figure's toolbar: in exported files (export/assets/runtime.js adds a modebar button
through plotly's own API) and in the app, whose charts take no JavaScript in their config: `svg_button_script()` adds
the same button to each chart's toolbar. Plotly writes the SVG in the browser; its text names the figure's fonts
(plotly's default, Open Sans, then Verdana and Arial), and nothing is downloaded for them.
"""

from __future__ import annotations

import json
from pathlib import Path

SVG_TITLE = "Download plot as SVG"
# A downward arrow into a tray, filled (plotly colours a modebar icon's fill), on a 1000 × 1000 box.
SVG_ICON = {
    "width": 1000,
    "height": 1000,
    "path": "M440 80H560V520L720 360L800 440L500 740L200 440L280 360L440 520ZM80 640H200V820H800V640H920V940H80Z",
}
_APP_SCRIPT = (Path(__file__).resolve().parent / "assets" / "svg_button.js").read_text(encoding="utf-8")


def plotly_config(name: str) -> dict:
    """plotly's PNG download, named after the figure, at twice the screen resolution (the SVG button is added to it)."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}}


def svg_button_script() -> str:
    """The <script> that gives every plotly chart of the page an SVG button beside its PNG one (once per page)."""
    settings = json.dumps({"title": SVG_TITLE, "icon": SVG_ICON})
    return f"<script>{_APP_SCRIPT.replace('__SETTINGS__', settings)}</script>"
