"""Hover highlighting for the head view: a small script (no library, nothing fetched) the page adds beside the chart.

Plotly cannot restyle other traces on hover by itself. `head_view_hover_script(key)` returns a <script>
that watches the chart under `.st-key-<key>`: hovering a token (the "queries" or "keys" column of
figures.head_view_figure) dims every line and redraws that token's lines on top, in their head's colour at
full strength; leaving the token restores the view. It reads only the figure's own data.
"""

from __future__ import annotations

import json

_SCRIPT = """<script>
(() => {
  const KEY = __KEY__;
  const NS = "http://www.w3.org/2000/svg";
  const solid = colour => colour.replace(/rgba\\(([^,]+),([^,]+),([^,]+),[^)]+\\)/, "rgb($1,$2,$3)");
  function lineTraces(gd) {
    return [...gd.querySelectorAll(".scatterlayer .trace")].filter(el => el.querySelector(".js-line"));
  }
  function clear(gd) {
    gd.querySelectorAll(".bvl-highlight").forEach(el => el.remove());
    lineTraces(gd).forEach(el => { el.style.opacity = ""; });
  }
  function highlight(gd, event) {
    const point = (event.points || [])[0];
    if (!point || !["queries", "keys"].includes(point.data.name)) return;
    clear(gd);
    const token = point.pointIndex, end = point.data.name === "queries" ? 0 : 1;
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    const group = document.createElementNS(NS, "g");
    group.setAttribute("class", "bvl-highlight");
    for (const trace of gd._fullData) {
      if (trace.mode !== "lines" || trace.visible !== true) continue;  // a head hidden by the legend stays hidden
      const x = trace.x, y = trace.y;
      for (let i = 0; i + 1 < y.length; i += 3) {
        if (y[i + end] !== token) continue;
        const path = document.createElementNS(NS, "path");
        path.setAttribute("d", `M${xa.l2p(x[i])},${ya.l2p(y[i])}L${xa.l2p(x[i + 1])},${ya.l2p(y[i + 1])}`);
        path.setAttribute("style", `stroke:${solid(trace.line.color)};stroke-width:${trace.line.width + 1.5};fill:none`);
        group.appendChild(path);
      }
    }
    lineTraces(gd).forEach(el => { el.style.opacity = "0.12"; });
    gd.querySelector(".scatterlayer").appendChild(group);
  }
  function attach() {
    const gd = document.querySelector(`.st-key-${KEY} .js-plotly-plot`);
    if (!gd || !gd.on || gd.__bvlHighlight) return;
    gd.__bvlHighlight = true;
    gd.on("plotly_hover", event => highlight(gd, event));
    gd.on("plotly_unhover", () => clear(gd));
  }
  const flag = `__bvlHighlight_${KEY}`;
  if (!window[flag]) { window[flag] = setInterval(attach, 400); }
  attach();
})();
</script>"""


def head_view_hover_script(key: str = "head_view") -> str:
    """The <script> that highlights a hovered token's lines in the head view drawn under `.st-key-<key>`."""
    if not key.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"chart key {key!r} must be letters, digits, '_' or '-'")
    return _SCRIPT.replace("__KEY__", json.dumps(key))
