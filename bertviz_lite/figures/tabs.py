"""The tabs of the explore pages, declared once: each page builds its st.tabs from these, and the tests import them.

A tab that holds a data function and its figure builder needs no page code: the page calls
`view(tab.data, ctx, **tab.chosen(layer=…, head=…, sentence_filter=…))` (the picks the tab declares it takes) and draws
`tab.figure(data)` with a CSV of `data.to_frame()`. The other tabs are drawn by their page's own code (controls,
clicks). Every view declares `code`: the functions of the package's model that compute what it shows, the functions
themselves (not names), which its "The code" panel lists with this pair's shapes (inspection/code_listing.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bertviz_lite.model.embeddings import BertEmbeddings
from bertviz_lite.model.heads import BertLMPredictionHead, BertPredictionHeadTransform
from bertviz_lite.model.modeling import (
    BertAttention,
    BertEncoder,
    BertForPreTraining,
    BertLayer,
    BertPooler,
    BertSelfAttention,
    BertSelfOutput,
)
from bertviz_lite.text.masking import mask_tokens
from bertviz_lite.text.tokenization import BertTokenizer, Encoding


@dataclass(frozen=True)
class ViewTab:
    """One tab of an explore page."""

    title: str  # the tab's label, also its value in session state (attn_view, beyond_view)
    data: Callable[..., Any] | None = (
        None  # a data function of bertviz_lite.inspection.views: data(trace, **picks)
    )
    figure: Callable[[Any], Any] | None = (
        None  # its builder in bertviz_lite.figures: figure(data) -> go.Figure
    )
    picks: tuple[str, ...] = ()  # the page's picks (layer, head, sentence_filter, …) the data function takes
    about: str = ""  # one plain line: what the view shows (kept on screen in presentation mode)
    symbols: tuple[str, ...] = ()  # the symbols it puts on screen, explained in GLOSSARY
    code: tuple[
        Callable[..., Any], ...
    ] = ()  # the package's functions that compute it ("The code"); never empty

    @property
    def drawn_by_page(self) -> bool:
        """Whether the page's own code draws this tab (no data function and builder declared)."""
        return self.data is None or self.figure is None

    @property
    def name(self) -> str:
        """The chart key and the file name of its PNG and CSV: the data function's name."""
        return self.data.__name__ if self.data is not None else self.title.lower().replace(" ", "_")

    def chosen(self, **picks: Any) -> dict[str, Any]:
        """Of the page's picks (layer, head, sentence_filter, …), the ones this tab declares in `picks`."""
        return {name: picks[name] for name in self.picks}


# Plain words for every symbol the views put on screen (hover text beside a view's line in presentation mode).
GLOSSARY = {
    "q · k": "q · k (or q × k, element by element): a query compared with a key; large when they point the same way.",
    "softmax": "softmax: turns scores into weights that are positive and add up to 1.",
    "entropy": "entropy (nats): how spread out a head's attention is; 0 = all on one token, higher = spread wide.",
    "rollout": "rollout: attention multiplied through the layers (plus the skip connection): how much of each input "
    "token reaches a token after a layer.",
    "‖α f(x)‖": "‖α f(x)‖: attention weight α times the size of the vector f(x) that the head passes on; big only "
    "when both are big.",
    "ρ": "ρ (rho): Spearman rank correlation with leave-one-out; 1 = the method ranks tokens the way masking "
    "them does.",
    "÷ max |score|": "÷ max |score|: each column is divided by its largest absolute value, so columns compare on one "
    "scale from −1 to 1.",
    "IsNext": "IsNext / NotNext: the model's two answers to “does sentence B follow sentence A?”.",
    "attention_mask": "attention_mask: 1 for real tokens, 0 for padding; padded tokens get no attention.",
    "[CLS] [SEP]": "[CLS] starts the input (its vector feeds NSP); [SEP] ends each sentence.",
    "PLL": "PLL (pseudo-log-likelihood): mask each word in turn, add up the log-probabilities the model gives the "
    "real word; closer to 0 = more natural to the model.",
    "logit": "logit: the model's raw score for a word before softmax; the gap between two words' logits decides "
    "which one is more likely.",
    "recovered": "recovered: how much of the clean run's logit gap comes back when one piece is restored; "
    "100% = all of it, 0% = none.",
}

# The code behind the views: the model's functions that compute what each shows, shared where views show the same.
ATTENTION_CODE = (BertSelfAttention.split_heads, BertSelfAttention.forward_with_attention)
LAYER_STACK_CODE = (BertEncoder.forward_with_attention, BertLayer.forward_with_attention)
MLM_HEAD_CODE = (BertLMPredictionHead.forward, BertPredictionHeadTransform.forward)
NSP_HEAD_CODE = (BertPooler.forward, BertForPreTraining.forward)

# The Attention page (pages_app/explore/3_Attention.py); the first tab is the one a visit opens.
ATTENTION_TABS = (
    ViewTab(
        "Heatmap",
        about="One head: each row is a token asking (query), each column a token it looks at (key); "
        "dark = much attention.",
        symbols=("q · k", "softmax", "[CLS] [SEP]"),
        code=ATTENTION_CODE,
    ),
    ViewTab(
        "Head view",
        about="Lines from each token to the tokens it attends to, one colour per head; thicker = "
        "more attention.",
        symbols=("[CLS] [SEP]",),
        code=ATTENTION_CODE,
    ),
    ViewTab(
        "Model view",
        about="Every head of every layer at a glance (rows: layers, columns: heads); click one to "
        "open it beside.",
        symbols=("[CLS] [SEP]",),
        code=(BertSelfAttention.forward_with_attention, BertEncoder.forward_with_attention),
    ),
    ViewTab(
        "Neuron view",
        about="How one query's attention is computed: q × k, their sum, scaling, softmax, weighted values.",
        symbols=("q · k", "softmax"),
        code=(BertSelfAttention.forward_with_attention, BertSelfAttention.merge_heads),
    ),
    ViewTab(
        "Head statistics",
        about="One number per head: how spread out its attention is, or where it goes.",
        symbols=("entropy", "[CLS] [SEP]"),
        code=(BertSelfAttention.forward_with_attention,),
    ),
    ViewTab(
        "Rollout",
        about="How much each input token reaches each token after a layer, heads averaged and the "
        "skip connection included.",
        symbols=("rollout",),
        code=(
            BertAttention.forward_with_attention,
            BertSelfOutput.forward,
            BertEncoder.forward_with_attention,
        ),
    ),
)
# The Beyond attention page (pages_app/explore/5_Beyond_attention.py).
BEYOND_ATTENTION_TABS = (
    ViewTab(
        "Norm-weighted attention",
        about="Left: attention weights; right: weights times the size of what each token passes on.",
        symbols=("‖α f(x)‖", "[CLS] [SEP]"),
        code=(
            BertSelfAttention.forward_with_attention,
            BertSelfAttention.merge_heads,
            BertSelfOutput.forward,
        ),
    ),
    ViewTab(
        "Attribution",
        about="Which tokens a prediction rests on, by four methods, checked against masking each token.",
        symbols=("ρ", "÷ max |score|", "IsNext"),
        code=(BertEmbeddings.parts, BertForPreTraining.forward),
    ),
    ViewTab(
        "Head knock-out",
        about="The prediction before and after switching some heads off.",
        symbols=("IsNext", "attention_mask"),
        code=(BertSelfAttention.forward_with_attention, BertEncoder.forward_with_attention),
    ),
    ViewTab(
        "Layer by layer",
        about="What each layer would already predict if it were the last.",
        code=(BertEncoder.forward_with_attention, *MLM_HEAD_CODE),
    ),
)
# The Why this word page (pages_app/explore/7_Why_this_word.py).
WHY_THIS_WORD_TABS = (
    ViewTab(
        "Minimal pairs",
        about="Two sentences one word apart: which one the model finds more natural, token by token.",
        symbols=("PLL",),
        code=(BertForPreTraining.forward, *MLM_HEAD_CODE),
    ),
    ViewTab(
        "Contrastive prediction",
        about="Why one word rather than another at [MASK]: the gap between their "
        "scores, layer by layer and token by token.",
        symbols=("logit",),
        code=MLM_HEAD_CODE,
    ),
    ViewTab(
        "Activation patching",
        about="Put one piece of the clean sentence's run into the corrupted run: where "
        "does the answer come back?",
        symbols=("recovered",),
        code=LAYER_STACK_CODE,
    ),
)

# The explore pages without tabs: one line each, by the page's name (pages_app/common/_pages.py).
PAGE_ABOUT = {
    "tokens": ViewTab(
        "Tokens",
        about="The words as the model sees them: WordPiece pieces, special tokens, segments A and B.",
        symbols=("[CLS] [SEP]", "attention_mask"),
        code=(BertTokenizer._assemble, Encoding.to_tensors, mask_tokens),
    ),
    "embeddings": ViewTab(
        "Embeddings",
        about="Each token's starting vector: word + position + segment, added "
        "up; colour = value of each dimension.",
        code=(BertEmbeddings.parts,),
    ),
    "predictions": ViewTab(
        "Predictions",
        about="Left: the model's guesses for hidden words; right: does sentence B follow A?",
        symbols=("IsNext",),
        code=(*MLM_HEAD_CODE, *NSP_HEAD_CODE),
    ),
    "meaning_in_context": ViewTab(
        "Meaning in context",
        about="One word in many sentences: dots close together = the model reads the word alike there.",
        code=LAYER_STACK_CODE,
    ),
}

ALL_TABS = ATTENTION_TABS + BEYOND_ATTENTION_TABS + WHY_THIS_WORD_TABS  # what a link's `tab` may name


def glossary(tab: ViewTab) -> str:
    """The plain-word explanations of the tab's symbols, one per line (Markdown)."""
    return "\n\n".join(GLOSSARY[symbol] for symbol in tab.symbols)


def titles(tabs: tuple[ViewTab, ...]) -> list[str]:
    """The tabs' labels, in order."""
    return [tab.title for tab in tabs]
