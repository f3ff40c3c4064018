"""Every view says in one plain line what it shows, and every symbol it puts on screen has plain words."""

import pytest

from bertviz_lite.figures.tabs import ALL_TABS, GLOSSARY, PAGE_ABOUT, glossary
from pages_app.common._pages import EXPLORE, pages_in

VIEWS = [*ALL_TABS, *PAGE_ABOUT.values()]


@pytest.mark.parametrize("tab", VIEWS, ids=[tab.title for tab in VIEWS])
def test_every_view_has_one_plain_line_and_explains_its_symbols(tab):
    assert tab.about and "\n" not in tab.about and len(tab.about) <= 140, tab.about
    assert tab.about.endswith((".", "?")), tab.about
    assert set(tab.symbols) <= set(GLOSSARY), set(tab.symbols) - set(GLOSSARY)
    assert all(GLOSSARY[symbol] in glossary(tab) for symbol in tab.symbols)


def test_every_explore_page_has_tabs_or_a_line_of_its_own():
    without = [page.name for page in pages_in(EXPLORE) if not page.tabs and page.name != "walkthrough"]
    assert set(without) <= set(PAGE_ABOUT), set(without) - set(PAGE_ABOUT)


def test_the_jargon_a_lecturer_met_on_screen_is_in_the_glossary():
    text = " ".join(GLOSSARY.values())
    for symbol in (
        "entropy",
        "rollout",
        "‖α f(x)‖",
        "ρ",
        "÷ max |score|",
        "q × k",
        "IsNext",
        "attention_mask",
    ):
        assert symbol in text, symbol
    shown = {symbol for tab in VIEWS for symbol in tab.symbols}
    assert shown == set(GLOSSARY), set(GLOSSARY) - shown  # no entry that no view uses
