"""Plotly figure builders: pure functions from the data of a view (bertviz_lite.inspection.views) to a `go.Figure`.

`figures.attention_heatmap` and the rest: every name a module here lists in its `__all__` is offered here
too, so a new figure module needs no edit in this file.
"""

from bertviz_lite.inspection.views import public_names

globals().update(public_names(__name__, __path__))
__all__ = sorted(public_names(__name__, __path__))
