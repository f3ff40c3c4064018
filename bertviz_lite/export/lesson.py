"""The walkthrough as one file: its steps (inspection/walkthrough.py's STEPS) for one pair and model, with
Next/Previous and the arrow keys, the predict-then-reveal questions (answers hidden until revealed), the figures of
every layer and head its pickers offer, and each step's "The code" panel with the pair's shapes.

    model, tokenizer = load("minilm-english")
    html = lesson_html(lesson_trace(model, tokenizer, "The cat sat on the mat.", "It was tired."), about)
"""

from __future__ import annotations

import html
from collections.abc import Callable

from bertviz_lite.export.blocks import Ask, Figures, Markup, Note, View, key_of, number_picker, single
from bertviz_lite.export.page import HEAD_VIEW_KEY, About, markdown_html, page_html
from bertviz_lite.export.payload import Payload
from bertviz_lite.figures.attention import head_view_figure
from bertviz_lite.figures.embeddings import embedding_window_figure
from bertviz_lite.figures.model_view import model_view_figure
from bertviz_lite.figures.predictions import next_sentence_figure, top_predictions_figure
from bertviz_lite.figures.style import readable
from bertviz_lite.figures.tokens import token_chip_html
from bertviz_lite.figures.walkthrough import ids_figure, one_head_figure, residual_figure
from bertviz_lite.inspection import explore, views
from bertviz_lite.inspection import walkthrough as walk
from bertviz_lite.inspection.code_listing import code_listing, shape_legend
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.inspection.live_shapes import LiveShapes, pair_shapes
from bertviz_lite.limits import export_token_problem
from bertviz_lite.loading.pretrained import DEFAULT_MODEL
from bertviz_lite.model.modeling import BertForPreTraining
from bertviz_lite.text.tokenization import BertTokenizer

LESSON_TITLE = "BERT, step by step"
EMBEDDING_TOKENS = 48  # the embeddings step shows the first 48 tokens, as the page does


def lesson_trace(
    model: BertForPreTraining, tokenizer: BertTokenizer, text_a: str, text_b: str, max_length: int = 128
) -> PairTrace:
    """The pair traced as the walkthrough traces it: its default word masked (views.mask_focus)."""
    max_length = explore.effective_max_length(model, max_length)
    encoding = explore.encode(tokenizer, text_a, text_b, max_length)
    problem = export_token_problem(len(encoding), "A lesson")
    if problem:
        raise ValueError(problem)
    masked = views.mask_focus(encoding).masked
    return explore.trace_encoding(model, tokenizer, encoding, max_length, masked, batched=False)


def _shown(fig) -> object:
    """A figure at presentation sizes (a lesson goes on a projector as often as on a laptop)."""
    return readable(fig, present=True)


def _tokens(trace: PairTrace, focus: views.MaskFocus) -> View:
    encoding = trace.encoding
    chips = token_chip_html(trace.tokens, encoding.token_type_ids, encoding.special_tokens_mask)
    return View("", blocks=(Markup(chips),))


def _ids(trace: PairTrace, focus: views.MaskFocus) -> View:
    encoding = trace.encoding
    fig = ids_figure(trace.tokens, encoding.position_ids, encoding.token_type_ids)
    return View("", blocks=(single(_shown(fig), "walk_ids"),))


def _embeddings(trace: PairTrace, focus: views.MaskFocus) -> View:
    window = views.embedding_window(trace, start=0, size=EMBEDDING_TOKENS)
    return View("", blocks=(single(_shown(embedding_window_figure(window)), "walk_embeddings"),))


def _sizes(trace: PairTrace) -> tuple[int, int]:
    return trace.model.config.num_hidden_layers, trace.model.config.num_attention_heads


def _one_head(trace: PairTrace, focus: views.MaskFocus) -> View:
    """Pick a layer and head, guess where the query token looks, then see the head's three stages."""
    num_layers, num_heads = _sizes(trace)
    query = 0 if focus.query is None else focus.query
    cells = [(layer, head) for layer in range(num_layers) for head in range(num_heads)]
    questions = {key_of(*cell): walk.attention_question(trace, *cell, query=query) for cell in cells}
    stages = {
        key_of(*cell): _shown(one_head_figure(walk.one_head_data(trace, *cell, query_index=query)))
        for cell in cells
    }
    keys = ("layer", "head")
    pickers = (
        number_picker("layer", "Layer", num_layers, num_layers // 2),
        number_picker("head", "Head", num_heads, 0),
    )
    reveal = (Figures(stages, keys=keys, name="walk_one_head"),)
    return View("", pickers=pickers, blocks=(Ask(questions, keys, reveal),))


def _many_heads(trace: PairTrace, focus: views.MaskFocus) -> View:
    """The model view, and the head view of the layer (and head) that its pickers or a click on a tile pick."""
    num_layers, num_heads = _sizes(trace)
    tile_size = min(80, 520 // num_layers)
    grid = Figures(
        {key_of(): _shown(model_view_figure(views.model_view(trace), tile_size=tile_size))},
        name="walk_model_view",
        click=("layer", "head"),
    )
    lines = {
        key_of(layer): _shown(head_view_figure(views.head_view_links(trace, layer, range(num_heads))))
        for layer in range(num_layers)
    }
    head_view = Figures(
        lines, keys=("layer",), name="walk_head_view", head_filter="head", hover_key=HEAD_VIEW_KEY
    )
    pickers = (
        number_picker("layer", "Layer", num_layers, num_layers // 2),
        number_picker("head", "Heads", num_heads, "all", all_label="all heads"),
    )
    note = Note(
        "Click a tile to see that layer and head in the head view below: each query token (left) linked to the "
        "keys it attends to (right). Hover a token there to light up its lines."
    )
    return View("", pickers=pickers, blocks=(grid, note, head_view))


def _residual(trace: PairTrace, focus: views.MaskFocus) -> View:
    fig = residual_figure(walk.residual_changes(trace))
    return View("", blocks=(single(_shown(fig), "walk_residual"),))


def _no_head(kind: str) -> Note:
    return Note(
        f"This model has no trained {kind} head, so this step has no answer to show ({DEFAULT_MODEL} has both "
        "heads)."
    )


def _mlm(trace: PairTrace, focus: views.MaskFocus) -> View:
    if not trace.model.has_mlm_head:
        return View("", blocks=(_no_head("masked-word (MLM)"),))
    if focus.query is None:
        return View("", blocks=(Note("There is no word to mask: the pair has no ordinary word."),))
    question = walk.mlm_question(trace.mlm_logits, trace.tokenizer, focus.query, focus.original)
    top = views.top_predictions(trace, position=focus.query, k=10)
    reveal = (single(_shown(top_predictions_figure(top)), "walk_mlm"),)
    return View("", blocks=(Ask({key_of(): question}, reveal=reveal),))


def _nsp(trace: PairTrace, focus: views.MaskFocus) -> View:
    if not trace.model.has_nsp_head:
        return View("", blocks=(_no_head("next-sentence (NSP)"),))
    if not trace.has_sentence_b:
        return View("", blocks=(Note("This pair has no sentence B, so there is nothing to ask."),))
    answer = views.next_sentence(trace)
    reveal = (single(_shown(next_sentence_figure(answer)), "walk_nsp"),)
    return View("", blocks=(Ask({key_of(): walk.nsp_question(answer.p_is_next)}, reveal=reveal),))


# Each step of walk.STEPS and the function that builds its figures and questions (a step without one: text only).
STEP_VIEWS: dict[str, Callable[[PairTrace, views.MaskFocus], View]] = {
    "tokens": _tokens,
    "ids": _ids,
    "embeddings": _embeddings,
    "one_head": _one_head,
    "many_heads": _many_heads,
    "residual": _residual,
    "mlm": _mlm,
    "nsp": _nsp,
}


def _code_panel(step: walk.Step, shapes: LiveShapes | None, legend: str) -> str:
    """The step's "The code": the source of the functions it declares (inspection/code_listing.py), read from the
    installed package, with the pair's shapes beside the lines that made them; folded until opened."""
    if shapes is None or not step.code:
        return ""
    blocks = "".join(
        f'<p class="bvl-where">{html.escape(block.where)}</p><pre><code>{html.escape(block.text)}</code></pre>'
        for block in code_listing(step.code, shapes)
    )
    return (
        f'<details class="bvl-code"><summary>The code</summary><p class="bvl-caption">{html.escape(legend)}</p>'
        f"{blocks}</details>"
    )


def _step_html(
    payload: Payload, number: int, step: walk.Step, text: str, view: View | None, code: str
) -> str:
    hidden = "" if number == 1 else " hidden"
    return "\n".join(
        [
            f'<section class="bvl-step" id="step-{number}" data-key="{step.key}"{hidden}>',
            f"<h2>Step {number} of {len(walk.STEPS)}: {html.escape(step.title)}</h2>",
            f'<div class="bvl-step-text"><p>{markdown_html(text)}</p></div>',
            payload.view_html(view) if view else "",
            code,
            "</section>",
        ]
    )


def lesson_html(trace: PairTrace, about: About, code: bool = True) -> str:
    """The walkthrough of a trace made by lesson_trace as one self-contained HTML file.

    Args:
        trace: the pair's trace with the walkthrough's word masked (lesson_trace, or the page's own).
        about: the model's name, the sentences as typed and how the file was made.
        code: each step's "The code" panel, with the shapes of about's pair (a second or more: the pair runs once
            more under a line tracer, inspection/live_shapes.py).
    Raises ValueError (a sentence) for a pair longer than limits.MAX_EXPORT_TOKENS or a trace not masked as the
    walkthrough masks it.
    """
    problem = export_token_problem(trace.num_tokens, "A lesson")
    if problem:
        raise ValueError(problem)
    focus = views.mask_focus(trace.encoding)
    if tuple(trace.masked_positions) != focus.masked:
        raise ValueError(
            f"a lesson needs the trace with [MASK] at {list(focus.masked)} (lesson_trace makes it)"
        )
    config = trace.model.config
    tokenizer = trace.tokenizer
    facts = walk.step_facts(config, tokenizer.vocab_size, trace.num_tokens, focus.original)
    shapes = _pair_shapes(trace, about) if code else None
    legend = shape_legend(config, trace.num_tokens)
    payload = Payload()
    sections = [
        _step_html(
            payload,
            number,
            step,
            walk.step_text(step, facts),
            STEP_VIEWS[step.key](trace, focus) if step.key in STEP_VIEWS else None,
            _code_panel(step, shapes, legend),
        )
        for number, step in enumerate(walk.STEPS, start=1)
    ]
    return page_html(LESSON_TITLE, about, "\n".join(sections), payload, lesson=True)


def _pair_shapes(trace: PairTrace, about: About) -> LiveShapes:
    """The shapes each line of the package makes for about's pair, cut to the trace's length."""
    text_b = about.text_b if about.text_b.strip() else None
    return pair_shapes(
        trace.model, trace.tokenizer, text_a=about.text_a, text_b=text_b, max_length=trace.num_tokens
    )
