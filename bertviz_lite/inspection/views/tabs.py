"""The tabs of the explore pages, declared once: each page builds its st.tabs from these, and the tests import them.

A tab that names a data function and a figure builder needs no page code: the page calls
`view(tab.data, inputs, **tab.params(layer=…, head=…, which=…))` (only the pickers the function names) and
draws `figures.<tab.figure>(data)` with a CSV of `data.to_frame()`. The other tabs are drawn by their page's
own code (controls, clicks).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ViewTab:
    """One tab of an explore page."""

    title: str  # the tab's label, also its value in session state (attn_view, beyond_view)
    data: Callable[..., Any] | None = None  # a data function of bertviz_lite.inspection.views
    figure: str | None = None  # the name of its builder in bertviz_lite.figures (figures import views, not back)

    @property
    def drawn_by_page(self) -> bool:
        """Whether the page's own code draws this tab (no data function and builder declared)."""
        return self.data is None or self.figure is None

    @property
    def name(self) -> str:
        """The chart key and the file name of its PNG and CSV: the data function's name."""
        return self.data.__name__ if self.data is not None else self.title.lower().replace(" ", "_")

    def params(self, **picks: Any) -> dict[str, Any]:
        """The page's picks (layer, head, which, …) that the data function takes."""
        wanted = inspect.signature(self.data).parameters if self.data is not None else {}
        return {name: value for name, value in picks.items() if name in wanted}


# The Attention page (pages/explore/3_Attention.py); the first tab is the one a visit opens.
ATTENTION_TABS = (
    ViewTab("Heatmap"),
    ViewTab("Head view"),
    ViewTab("Model view"),
    ViewTab("Neuron view"),
    ViewTab("Head statistics"),
    ViewTab("Rollout"),
)
# The Beyond attention page (pages/explore/5_Beyond_attention.py).
BEYOND_ATTENTION_TABS = (
    ViewTab("Norm-weighted attention"),
    ViewTab("Attribution"),
    ViewTab("Head knock-out"),
    ViewTab("Layer by layer"),
)
# The Why this word page (pages/explore/7_Why_this_word.py).
WHY_THIS_WORD_TABS = (
    ViewTab("Minimal pairs"),
    ViewTab("Contrastive prediction"),
    ViewTab("Activation patching"),
)


def titles(tabs: tuple[ViewTab, ...]) -> list[str]:
    """The tabs' labels, in order."""
    return [tab.title for tab in tabs]
