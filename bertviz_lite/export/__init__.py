"""Take the lesson home: a view, or the whole walkthrough, as one self-contained HTML file that needs no server and
no network (plotly.js, the head view's script, the figures and their data inlined), with SVG beside PNG in every
figure's toolbar. `python -m bertviz_lite.export --a … --b … --model NAME --out lesson.html` is the command line.

    from bertviz_lite import export
    html = export.view_html(export.head_view(trace), export.About("minilm-english", "The cat sat.", "It slept."))
"""

from bertviz_lite.export.blocks import (
    Ask,
    Figures,
    Markup,
    Note,
    Picker,
    View,
)
from bertviz_lite.export.lesson import (
    lesson_html,
    lesson_trace,
)
from bertviz_lite.export.page import (
    About,
    markdown_html,
    script_json,
)
from bertviz_lite.export.toolbar import (
    plotly_config,
    svg_button_script,
)
from bertviz_lite.export.views import (
    attention_map,
    figure_view,
    head_view,
    model_view,
    view_html,
)

__all__ = [
    "About",
    "Ask",
    "Figures",
    "Markup",
    "Note",
    "Picker",
    "View",
    "attention_map",
    "figure_view",
    "head_view",
    "lesson_html",
    "lesson_trace",
    "markdown_html",
    "model_view",
    "plotly_config",
    "script_json",
    "svg_button_script",
    "view_html",
]
