"""Beyond attention: norm-weighted attention, attribution checked against leave-one-out, head knock-out, logit lens."""

import streamlit as st

from bertviz_lite import figures
from bertviz_lite.figures import tabs as declared
from bertviz_lite.inspection import analysis, attribution, explore, views
from bertviz_lite.inspection.views.beyond_attention import explained_masks
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.text.display import plain_markdown
from pages_app.common._pages import BEYOND_ATTENTION
from pages_app.common._share import ALL_HEADS, from_link
from pages_app.common._state import KEEP, keep_choice, keep_choices, new_input
from pages_app.common._ui import is_present, load_context, on_tile_click, show_figure, show_table, view
from pages_app.explore._attention_ui import controls_then_figure, head_pickers, renewing_key
from pages_app.explore._tabs import declared_tabs, show_declared_tabs

NSP = -1  # the "Explain" option for the next-sentence decision


ctx = load_context()
encoding = ctx.encoding
model = ctx.model
num_layers = model.config.num_hidden_layers
num_heads = model.config.num_attention_heads
labels = analysis.unique_labels(encoding.tokens)

st.header("Beyond attention")
st.caption(
    "Attention weights alone can mislead. Here they are set beside what the model does with them: the size of what "
    "each head actually passes on, what the prediction changes when a token is masked, what happens without some "
    "heads, and what each layer would already predict."
)


def pick_target(where=st) -> tuple[int | None, tuple[int, ...]] | None:
    """The prediction to explain (None: NSP) and the positions to mask for it; None when there is nothing."""
    choices = views.explain_choices(encoding, model)
    if not choices:
        st.info(
            f"{plain_markdown(ctx.inputs.source)} has no trained MLM or NSP head (or there is no sentence B for NSP), "
            "so there is "
            f"no prediction to explain. {DEFAULT_MODEL} has both."
        )
        return None
    options = [
        NSP if choice is None else choice for choice in choices
    ]  # a selectbox reads None as "nothing picked"
    default = options[choices.index(views.default_choice(encoding, choices))]
    if new_input("beyond_target_input", ctx.inputs) and not from_link(
        BEYOND_ATTENTION.token_key
    ):  # new text: other tokens
        st.session_state[BEYOND_ATTENTION.token_key] = default
    keep_choice(BEYOND_ATTENTION.token_key, options, default)
    picked = where.selectbox(
        "Explain",
        options,
        index=options.index(default),
        key=BEYOND_ATTENTION.token_key,
        persist_state=KEEP,
        format_func=lambda i: "next-sentence decision (NSP)" if i == NSP else f"[MASK] at {labels[i]}",
    )
    position = None if picked == NSP else picked
    return position, explained_masks(encoding, position)


def shown(data_function, masked: tuple[int, ...] = (), **params):
    """The view's data, or None after a plain st.error (a model without the needed head, say)."""
    try:
        return view(data_function, ctx, masked, **params)
    except ValueError as err:
        st.error(plain_markdown(err))
        return None


def _toggle_head(layer: int, head: int) -> None:
    """A clicked tile knocks that head out, or brings it back."""
    name = attribution.head_name(layer, head)
    chosen = st.session_state.get(BEYOND_ATTENTION.knocked_key, [])
    st.session_state[BEYOND_ATTENTION.knocked_key] = (
        [h for h in chosen if h != name] if name in chosen else [*chosen, name]
    )


tabs = declared_tabs(declared.BEYOND_ATTENTION_TABS, BEYOND_ATTENTION.tab_key)

if tabs["Norm-weighted attention"].open:
    with tabs["Norm-weighted attention"]:
        st.caption(
            "Kobayashi et al. (2020): a head adds α_ij · f(x_j) to token i, where f is the value projection followed by "
            "the head's slice of the attention output projection. Its size ‖α f(x)‖ counts both the weight and the "
            "vector it weighs. For all heads, the norm of the heads' summed vectors ‖Σ_h α f(x)‖ is shown."
        )
        heads = [ALL_HEADS, *range(num_heads)]
        sentence_filter, layer, head = head_pickers(
            "beyond",
            explore.has_sentence_b(encoding),
            num_layers,
            heads,
            ALL_HEADS,
            lambda h: "all heads" if h == ALL_HEADS else f"head {h}",
        )
        data = shown(
            views.norm_attention,
            layer=layer,
            head=None if head == ALL_HEADS else head,
            sentence_filter=sentence_filter,
        )
        if data is not None:
            above = (
                None if is_present() else st.container()
            )  # presentation mode: the figures first, then the note
            raw_column, norm_column = st.columns(2)
            with raw_column:
                show_figure(
                    figures.attention_weights_figure(data),
                    "beyond_raw_attention",
                    frame=data.to_frame,
                    slide_top=300,
                )
            with norm_column:
                show_figure(
                    figures.norm_attention_figure(data),
                    "beyond_norm_attention",
                    frame=data.to_frame,
                    slide_top=300,
                )
            (above or st).info(data.note())
            show_table(data.shares().round(4), "beyond_norm_shares", hide_index=True)
        shares = view(views.special_share_by_layer, ctx)
        show_figure(
            figures.special_share_by_layer_figure(shares), "beyond_special_share", frame=shares.to_frame
        )

if tabs["Attribution"].open:
    with tabs["Attribution"]:
        controls, figure = controls_then_figure()
        pick, pick_steps = controls.columns([3, 1])
        target = pick_target(pick)
        if target is not None:
            position, masked = target
            steps = pick_steps.select_slider(
                "Integrated-gradients steps", [32, 64, 128], value=32, key="beyond_steps", persist_state=KEEP
            )
            with figure, st.spinner("Masking each token in turn and integrating gradients…"):
                data = shown(views.token_attribution, masked, position=position, steps=steps)
            if data is not None:
                st.caption(
                    "Leave-one-out is the ground truth here: each token in turn becomes [MASK] and the model runs again; "
                    f"its score is how much {data.label} drops. Gradient × input is ∇f(x)·x on the summed input "
                    "embeddings; integrated gradients run from a baseline where every token is [MASK] (positions and "
                    "segments kept). Attention, rollout and norms are read from the explained token's row."
                )
                with figure:
                    show_figure(
                        figures.token_attribution_figure(data, slide=is_present()),
                        "beyond_attribution",
                        frame=data.to_frame,
                        slide_top=200,
                    )
                show_table(data.correlation_frame().round(3), "beyond_attribution_spearman", hide_index=True)
                st.caption(data.completeness_note())

if tabs["Head knock-out"].open:
    with tabs["Head knock-out"]:
        controls, figure = controls_then_figure()
        with controls:
            target = pick_target()
        if target is not None:
            position, masked = target
            names = [
                attribution.head_name(layer, head) for layer in range(num_layers) for head in range(num_heads)
            ]
            keep_choices(BEYOND_ATTENTION.knocked_key, names)
            chosen = controls.multiselect(
                "Heads to knock out (or click tiles in the model view below)",
                names,
                default=[],
                key=BEYOND_ATTENTION.knocked_key,
                persist_state=KEEP,
            )
            heads = tuple(sorted(chosen, key=names.index))  # one cache entry per set of heads
            with figure:
                data = shown(views.head_knockout, masked, heads=heads, position=position, k=5)
            if data is not None:
                st.caption(
                    "A knocked-out head's attention probabilities are multiplied by 0 (transformers' head_mask): "
                    "it adds nothing to its layer's output, and the layers above see the difference."
                )
                with figure:
                    show_figure(figures.head_knockout_figure(data), "beyond_knockout", frame=data.to_frame)
            with st.expander("Model view: click a tile to knock that head out (or bring it back)"):
                overview = view(views.model_view, ctx, masked)
                key = renewing_key("beyond_model_view", bare_first=False)
                show_figure(
                    figures.model_view_figure(overview, tile_size=min(80, 480 // num_layers)),
                    "beyond_model_view",
                    frame=overview.to_frame,
                    key=key,
                    selection_mode="points",
                    on_select=on_tile_click(
                        key, num_layers, num_heads, _toggle_head, renew="beyond_model_view"
                    ),
                )

if tabs["Layer by layer"].open:
    with tabs["Layer by layer"]:
        controls, figure = controls_then_figure()
        with controls:
            target = pick_target()
        if target is not None:
            position, masked = target
            with figure:
                data = shown(views.logit_lens, masked, position=position, k=5)
            if data is not None:
                st.caption(
                    "A logit lens for an encoder: the output head reads every layer's hidden state as if it were the "
                    f"last. The final answer is {data.answer!r}; the bars show how early the model settles on it."
                )
                with figure:
                    show_figure(figures.logit_lens_figure(data), "beyond_logit_lens", frame=data.to_frame)

show_declared_tabs(declared.BEYOND_ATTENTION_TABS, tabs, ctx)
