"""The code panel in a real browser: on a 1280×720 slide every walkthrough step's figure still ends on the screen with the
panel's toggle below it (off), and the panel opened shows the source with the default pair's shapes; off a slide, a
collapsed expander. Measured boxes and screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest

from devtools.server import ARTIFACTS
from tests.browser.driver import NEEDS_DEFAULT_MODEL
from tests.browser.test_presentation import EXPANDER_VIEW

pytestmark = [pytest.mark.browser, NEEDS_DEFAULT_MODEL]

SLIDE = {"width": 1280, "height": 720}


def test_a_slide_keeps_each_steps_figure_whole_with_the_code_toggle_below(slide_walk):
    """Read from the walk through every step on a slide that test_presentation's figure test reads too (the
    `slide_walk` fixture: one walk, not two)."""
    boxes = {}
    for step in slide_walk.steps:
        checked, text, t_top, t_bottom = step.toggle
        assert not checked, f"{step.name}: the code panel is on"
        assert "The code" in text, (step.name, text)
        assert step.code_blocks == 0, f"{step.name}: source on the slide, the panel is not collapsed"
        assert step.exception is None, f"{step.name}: {step.exception}"
        top, bottom = step.figure.get((SLIDE["width"], SLIDE["height"]), (None, None))
        boxes[step.key] = (top, bottom, t_top, t_bottom)
    (ARTIFACTS / "code_panel_1280x720_boxes.txt").write_text(
        "".join(
            f"{key}: figure {top} to {bottom} px, toggle {t_top:.0f} to {t_bottom:.0f} px of 720\n"
            for key, (top, bottom, t_top, t_bottom) in boxes.items()
        ),
        encoding="utf-8",
    )
    cut = {
        key: round(bottom) for key, (_, bottom, _, _) in boxes.items() if bottom is not None and bottom > 720
    }
    assert not cut, f"figure bottoms below the 1280x720 slide with the code toggle: {cut}"
    below = {key: round(t_top) for key, (_, bottom, t_top, _) in boxes.items() if bottom and t_top < bottom}
    assert not below, f"the toggle must sit below the figure: {below}"
    assert slide_walk.build_link_shown, "the last step's link 'Build: check your own BERT' is not shown"


def test_the_opened_panel_shows_the_source_with_the_pairs_shapes(slide_walk):
    """Step 4 (one head: q, k, v, scores, softmax) on a 1280x720 slide, its panel toggled on at the end of the walk's
    visit (`slide_walk`: the walk's page load serves, not one of its own)."""
    opened = slide_walk.opened
    assert opened.step == "one_head", opened.step
    assert len(opened.blocks) == 2, opened.blocks  # split_heads and forward_with_attention
    attention = opened.blocks[1]
    # The default pair is 22 tokens on minilm-english: 12 heads of 32.
    assert "q, k, v = " in attention and "# q, k, v: (1, 12, 22, 32)" in attention
    assert "scores = " in attention and "# (1, 12, 22, 22)" in attention
    assert opened.exception is None, opened.exception


def test_off_a_slide_the_panel_is_a_collapsed_expander_that_opens(normal_walk):
    """The Attention page's Neuron view at 1280x720 in normal mode, read from the walk through the normal views that
    test_presentation's figure text test reads too (`normal_walk`: its page load serves, not one of its own)."""
    expander = normal_walk.expander
    assert expander.summaries == 1, f"{EXPANDER_VIEW}: {expander.summaries} expanders titled 'The code'"
    assert expander.blocks_folded == 0, f"{EXPANDER_VIEW}: source shown before the expander is opened"
    assert len(expander.blocks) == 2, expander.blocks  # forward_with_attention and merge_heads
    assert "def merge_heads" in expander.blocks[1]
    assert expander.exception is None, expander.exception
