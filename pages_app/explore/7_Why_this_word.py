"""Why this word: which sentence BERT prefers, why one candidate rather than another, and where the difference lives."""

import streamlit as st

from bertviz_lite import figures
from bertviz_lite.figures import tabs as declared
from bertviz_lite.inspection import views
from bertviz_lite.limits import MAX_WORD_CHARS
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from pages_app.common._pages import WHY_THIS_WORD
from pages_app.common._ui import load_context, show_figure, show_table, view_of_model
from pages_app.explore._questions import ask
from pages_app.explore._tabs import declared_tabs, show_declared_tabs

RESTORE = {
    "residual stream": ("residual",),
    "attention vs feed-forward": ("attention", "feed-forward"),
    "heads": ("head",),
}
TARGET = WHY_THIS_WORD.target_key
FOIL = WHY_THIS_WORD.foil_key
CAPTIONS = {
    "residual stream": "Each cell: B's run with A's hidden state put back at one position after one layer (row), the "
    "rest of B's run left as it was. Bold columns are the tokens that differ; the outlined column is "
    "the [MASK] where the candidates compete.",
    "attention vs feed-forward": "Each cell: B's run with what one layer's attention block (top) or feed-forward block "
    "(bottom) adds at one position taken from A's run. Where a block's cells are strong, "
    "that block moves the difference.",
    "heads": "Each cell: B's run with one head's output (at every position) taken from A's run. A strong head carries "
    "what tells the sentences apart; most heads carry nothing.",
}

ctx = load_context()
text_a = ctx.inputs.text_a
text_b = ctx.inputs.text_b

st.header("Why this word")
st.caption(
    "Sentence A and sentence B from the sidebar are read here as two separate sentences, each on its own. Minimal "
    "pairs: which one does the model find more natural? Contrastive prediction: at the [MASK] of A, why the target "
    "word rather than the foil? Activation patching: A is the clean run, B the corrupted one; putting A's states back "
    "into B's run one at a time shows where the model keeps what tells them apart."
)


def _use_example() -> None:
    """The picked example goes into the sidebar's sentences and the candidates; the picker empties again."""
    name = st.session_state.get("why_this_word_example")
    if name in views.EXAMPLES:
        a, b, target, foil = views.EXAMPLES[name]
        st.session_state.update({"sentence_a": a, "sentence_b": b, TARGET: target, FOIL: foil})
    st.session_state["why_this_word_example"] = None


def _use_pair() -> None:
    """The picked built-in minimal pair goes into the sidebar's sentences; the picker empties again."""
    picked = views.builtin_pair_choices().get(st.session_state.get("why_this_word_pair"))
    if picked:
        st.session_state["sentence_a"], st.session_state["sentence_b"] = picked
    st.session_state["why_this_word_pair"] = None


def shown(data_function, **params):
    """A view's data, or None after a plain st.error (a sentence without [MASK], lengths that differ, …)."""
    try:
        return view_of_model(data_function, ctx, **params)
    except ValueError as err:
        st.error(str(err))
        return None


def pick_candidates() -> tuple[str, str] | str:
    """The target and foil words at A's [MASK] (typed, or the model's defaults), or why there are none."""
    try:
        default = view_of_model(
            views.default_candidates, ctx, text_a=text_a, text_b=text_b, max_length=ctx.max_length
        )
    except ValueError as err:
        default = None
        reason = str(err)
    pick_target, pick_foil = st.columns(2)
    hint = ("the model's top guess: ", "B's top guess (or A's second): ") if default else ("", "")
    shown_default = default or ("needs a [MASK] in sentence A", "needs a [MASK] in sentence A")
    target = pick_target.text_input(
        "Target word at A's [MASK]",
        key=TARGET,
        placeholder=hint[0] + shown_default[0],
        max_chars=MAX_WORD_CHARS,
        help="The word whose logit is explained, against the foil's (contrast and patching).",
    )
    foil = pick_foil.text_input(
        "Foil word",
        key=FOIL,
        placeholder=hint[1] + shown_default[1],
        max_chars=MAX_WORD_CHARS,
        help="The alternative: why the target rather than this word?",
    )
    if default is None:
        return reason
    return (target or "").strip() or default[0], (foil or "").strip() or default[1]


st.selectbox(
    "Examples",
    list(views.EXAMPLES),
    index=None,
    key="why_this_word_example",
    on_change=_use_example,
    placeholder="Load an example into sentence A (clean) and sentence B (corrupted)…",
    help="Each example is a pair of sentences of the same length with a [MASK] in A, and two candidates.",
)
if not ctx.model.has_mlm_head:
    st.info(
        f"{ctx.inputs.source} has no trained masked-language-model head, so it predicts no words to compare. "
        f"{DEFAULT_MODEL} has one."
    )
    st.stop()
candidates = pick_candidates()


def candidates_or_note() -> tuple[str, str] | None:
    """The target and foil, or None after saying why there are none (contrast and patching need both)."""
    if isinstance(candidates, str):
        st.info(candidates)
        return None
    return candidates


tabs = declared_tabs(declared.WHY_THIS_WORD_TABS, WHY_THIS_WORD.tab_key)

if tabs["Minimal pairs"].open:
    with tabs["Minimal pairs"]:
        st.selectbox(
            "Built-in minimal pairs",
            list(views.builtin_pair_choices()),
            index=None,
            key="why_this_word_pair",
            on_change=_use_pair,
            placeholder="Load a built-in minimal pair into sentences A and B…",
            help="Pairs generated from templates (bertviz_lite/inspection/minimal_pairs.py): agreement across "
            "an attractor, determiner–noun agreement, irregular past forms, argument structure, negative "
            "polarity. Which sentence is the grammatical one alternates between A and B.",
        )
        data = shown(views.pair_likelihood, text_a=text_a, text_b=text_b, max_length=ctx.max_length)
        if data is not None and ask(views.pair_likelihood_question(data), "minimal_pair"):
            show_figure(figures.pair_likelihood_figure(data), "contrast_minimal_pair", frame=data.to_frame)
            st.caption(
                "Pseudo-log-likelihood (Salazar et al., 2020): each token of a sentence is replaced by [MASK] in "
                "turn and the model's log P of the original token is added up; each sentence is scored alone. "
                "Bars are surprisals −log P, so the sentence with the shorter bars in total is the preferred one."
            )

if tabs["Contrastive prediction"].open:
    with tabs["Contrastive prediction"]:
        if words := candidates_or_note():
            target, foil = words
            lens = shown(
                views.contrast_lens, text_a=text_a, target=target, foil=foil, max_length=ctx.max_length
            )
            if lens is not None and ask(views.contrast_question(lens), "contrast"):
                show_figure(figures.contrast_lens_figure(lens), "contrast_by_layer", frame=lens.to_frame)
                st.caption(
                    "A logit lens of the difference: the output head reads every layer's hidden state at the "
                    "[MASK] as if it were the last. The softmax's normaliser cancels in a difference of logits, "
                    "so logit(target) − logit(foil) = log P(target) − log P(foil)."
                )
                with st.spinner("Masking each token in turn and integrating gradients…"):
                    data = shown(
                        views.contrast_attribution,
                        text_a=text_a,
                        target=target,
                        foil=foil,
                        max_length=ctx.max_length,
                    )
                if data is not None:
                    show_figure(
                        figures.token_attribution_figure(data), "contrast_attribution", frame=data.to_frame
                    )
                    show_table(
                        data.correlation_frame().round(3), "contrast_attribution_spearman", hide_index=True
                    )
                    st.caption(
                        f"Leave-one-out: how much {data.label} drops when each token becomes [MASK]. "
                        + data.completeness_note()
                    )

if tabs["Activation patching"].open:
    with tabs["Activation patching"]:
        if words := candidates_or_note():
            target, foil = words
            restore = (
                st.segmented_control(
                    "Restore", list(RESTORE), default="residual stream", key="why_this_word_restore"
                )
                or "residual stream"
            )
            grids = [
                shown(
                    views.activation_patching,
                    text_a=text_a,
                    text_b=text_b,
                    target=target,
                    foil=foil,
                    site=site,
                    max_length=ctx.max_length,
                )
                for site in RESTORE[restore]
            ]
            grids = [grid for grid in grids if grid is not None]
            if grids and grids[0].note():
                st.warning(grids[0].note())
            asked = restore == "residual stream"  # the tab's question is about the residual stream
            if grids and (not asked or ask(views.patching_question(grids[0]), "patching")):
                st.caption(CAPTIONS[restore])
                for grid in grids:
                    show_figure(
                        figures.activation_patching_figure(grid),
                        f"contrast_patching_{grid.site}",
                        frame=grid.to_frame,
                    )

show_declared_tabs(declared.WHY_THIS_WORD_TABS, tabs, ctx)  # the open tab's code panel
