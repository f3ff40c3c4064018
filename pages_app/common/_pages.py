"""Every page of the app, declared once in PAGES: app.py's navigation, each page's link fields (_share.py), tests' lists."""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from bertviz_lite.figures.tabs import (
    ATTENTION_TABS,
    BEYOND_ATTENTION_TABS,
    WHY_THIS_WORD_TABS,
    ViewTab,
)

EXPLORE = "Explore a sentence pair"
TRAIN = "Train"
TEACH = "Teach"
BUILD = "Build"
LAYER_KEY = "attn_layer"  # the layer and head widgets of the pages that share them
HEAD_KEY = "attn_head"


@dataclass(frozen=True)
class PageSpec:
    """One page: its script, how the navigation shows it, and what its shared link carries."""

    script: str  # from the repository root
    title: str
    icon: str
    section: str
    url_path: str | None = None  # None: Streamlit's, from the file name (3_Attention.py → Attention)
    # of share.QUERY_KEYS, besides the pair, the model and presentation mode
    link_fields: tuple[str, ...] = ()
    index_keys: tuple[str, str] = (LAYER_KEY, HEAD_KEY)  # its layer and head widgets (the link's layer, head)
    step_key: str | None = None  # its step picker (the link's `step`)
    sentence_filter_key: str | None = None  # its sentence filter widget (the link's `filter`)
    tabs: tuple[ViewTab, ...] = ()  # its declared tabs (figures/tabs.py) ...
    tab_key: str | None = None  # ... and the st.tabs key holding the open one (the link's `tab`)
    token_key: str | None = None  # its token picker (the link's `token`)
    masked_key: str | None = None  # its masked-tokens picker (the link's `masked`)
    knocked_key: str | None = None  # its knocked-out heads picker (the link's `knocked`)
    target_key: str | None = None  # its candidate words (the link's `target` and `foil`) ...
    foil_key: str | None = None
    default: bool = False  # the page at the app's root URL

    @property
    def name(self) -> str:
        """Its URL path in lower case (walkthrough, attention, train…): how _share and the tests name it."""
        return (self.url_path or re.sub(r"^[0-9]*_", "", PurePosixPath(self.script).stem)).lower()


# The pages whose widgets other modules name (the link, the tests) by their spec: ATTENTION.tab_key, not "attn_view".
WALKTHROUGH = PageSpec(
    "pages_app/explore/0_Walkthrough.py",
    "Walkthrough",
    ":material/school:",
    EXPLORE,
    link_fields=("layer", "head", "step"),
    step_key="walk_step",
    default=True,
)
ATTENTION = PageSpec(
    "pages_app/explore/3_Attention.py",
    "Attention",
    ":material/hub:",
    EXPLORE,
    link_fields=("layer", "head", "filter", "tab", "token"),
    sentence_filter_key="attn_sentence_filter",
    tabs=ATTENTION_TABS,
    tab_key="attn_view",
    token_key="nv_query",
)
PREDICTIONS = PageSpec(
    "pages_app/explore/4_Predictions.py",
    "Predictions",
    ":material/lightbulb:",
    EXPLORE,
    link_fields=("masked",),
    masked_key="pred_mask",
)
BEYOND_ATTENTION = PageSpec(
    "pages_app/explore/5_Beyond_attention.py",
    "Beyond attention",
    ":material/troubleshoot:",
    EXPLORE,
    link_fields=("layer", "head", "filter", "tab", "token", "knocked"),
    index_keys=("beyond_layer", "beyond_head"),
    sentence_filter_key="beyond_sentence_filter",
    tabs=BEYOND_ATTENTION_TABS,
    tab_key="beyond_view",
    token_key="beyond_target",
    knocked_key="beyond_heads",
)
WHY_THIS_WORD = PageSpec(
    "pages_app/explore/7_Why_this_word.py",
    "Why this word",
    ":material/compare_arrows:",
    EXPLORE,
    link_fields=("tab", "target", "foil"),
    tabs=WHY_THIS_WORD_TABS,
    tab_key="why_this_word_view",
    target_key="contrast_target",
    foil_key="contrast_foil",
)
PAGES = (
    WALKTHROUGH,
    PageSpec("pages_app/explore/1_Tokens.py", "Tokens and masking", ":material/token:", EXPLORE),
    PageSpec("pages_app/explore/2_Embeddings.py", "Embeddings", ":material/scatter_plot:", EXPLORE),
    ATTENTION,
    PREDICTIONS,
    BEYOND_ATTENTION,
    PageSpec(
        "pages_app/explore/6_Meaning_in_context.py", "Meaning in context", ":material/translate:", EXPLORE
    ),
    WHY_THIS_WORD,
    PageSpec("pages_app/train/8_Train.py", "Train", ":material/model_training:", TRAIN, url_path="train"),
    PageSpec(
        "pages_app/train/9_Compare_runs.py", "Compare runs", ":material/compare:", TRAIN, url_path="compare"
    ),
    PageSpec(
        "pages_app/train/10_Checkpoints.py",
        "Checkpoints",
        ":material/inventory_2:",
        TRAIN,
        url_path="checkpoints",
    ),
    PageSpec(
        "pages_app/live_class/11_Live_class.py",
        "Live class",
        ":material/co_present:",
        TEACH,
        url_path="class",
    ),
    PageSpec("pages_app/build/12_Your_BERT.py", "Your BERT", ":material/construction:", BUILD),
)


def pages_in(section: str) -> list[PageSpec]:
    return [page for page in PAGES if page.section == section]


def by_url_path(url_path: str) -> PageSpec | None:
    """The page at this URL path ("" is the default page), in any case."""
    return next(
        (page for page in PAGES if page.name == url_path.lower() or (page.default and not url_path)), None
    )


def follow_any_case() -> None:
    """/attention reaches the Attention page as /Attention does: Streamlit matches the URL's page name exactly ("Page
    not found" else), so one of ours in another case is set to the page's own spelling before st.navigation."""
    manager = get_script_run_ctx().pages_manager
    page = by_url_path(name) if (name := manager.intended_page_name) else None
    own = _built_pages(PAGES)[PAGES.index(page)].url_path if page else name
    if own != name:
        manager.set_script_intent(manager.intended_page_script_hash or "", own)


def navigation() -> dict[str, list[st.Page]]:
    """st.navigation's argument: the pages by section, in order (copies: st.navigation marks the one it runs)."""
    sections: dict[str, list[st.Page]] = {}
    for page, built in zip(PAGES, _built_pages(PAGES), strict=True):
        sections.setdefault(page.section, []).append(copy.copy(built))
    return sections


@functools.cache
def _built_pages(pages: tuple[PageSpec, ...]) -> tuple[st.Page, ...]:
    """Each st.Page built once per process: building resolves its path on disk, 5% of a burst's server CPU."""
    return tuple(
        st.Page(
            page.script,
            title=page.title,
            icon=page.icon,
            default=page.default,
            **({"url_path": page.url_path} if page.url_path else {}),
        )
        for page in pages
    )
