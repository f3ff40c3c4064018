"""A learner's model on the explore pages in AppTest: checked on the Your BERT page, opened with demo-tiny's weights, it
draws Tokens, Embeddings, Attention and Predictions (a correct model: the very attention our BERT draws), other pages
say they need our BERT, and a model that hides its attention says so where the heatmap would be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bertviz_lite.check.learner_explore import MISSING, OUR_INTERNALS, open_learner
from bertviz_lite.check.learner_model import LearnerSpec
from bertviz_lite.inspection import explore
from bertviz_lite.loading.pretrained import DEMO, load
from bertviz_lite.server.balancer import WORKER_SETTING
from bertviz_lite.server.code_gate import ALLOW_CODE_SETTING
from bertviz_lite.text.display import plain_markdown
from pages_app.build._learner_source import LEARNERS as LEARNER_MODELS
from pages_app.common._pages import ATTENTION
from pages_app.common._sidebar import DEFAULTS
from tests.app.conftest import APP, array, charts, no_exception

LEARNERS = Path(__file__).parents[1] / "check" / "learners"
EXPLORE = "pages_app/explore/{}.py"


@pytest.fixture(autouse=True)
def code_allowed_here(monkeypatch):
    monkeypatch.setenv(ALLOW_CODE_SETTING, "1")
    monkeypatch.delenv(WORKER_SETTING, raising=False)


def opened(file: Path) -> AppTest:
    """Your BERT page: the file checked, then opened in the explore pages with demo-tiny's weights."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["model_picker"] = DEMO
    at.switch_page("pages_app/build/12_Your_BERT.py").run()
    at.text_input(key="build_file").set_value(str(file))
    at.button(key="build_check").click().run()
    no_exception(at)
    assert any("demo-tiny" in caption.value for caption in at.caption)  # whose weights it will run with
    at.button(key="build_explore").click().run()
    no_exception(at)
    assert at.session_state["model_picker"] == f"Your BERT: Bert in {file.name} with demo-tiny's weights"
    return at


def on_page(file: Path, page: str) -> AppTest:
    """An explore page drawn for their model with demo-tiny's weights, opened as the Your BERT page opens it (its
    check: the tests above and in tests/check)."""
    model, tokenizer = load(DEMO)
    theirs = open_learner(LearnerSpec(file), DEMO, model, tokenizer)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state[LEARNER_MODELS] = {theirs.key: theirs}
    at.session_state["model_picker"] = theirs.key
    at.switch_page(EXPLORE.format(page)).run()
    no_exception(at)
    return at


def test_a_correct_model_draws_the_four_pages_with_the_attention_our_bert_draws():
    at = opened(LEARNERS / "hf_style.py")  # Open lands on the Attention page
    assert not at.error and "Attention" in [header.value for header in at.header]
    model, tokenizer = load(DEMO)
    encoding = explore.encode(tokenizer, DEFAULTS["sentence_a"], DEFAULTS["sentence_b"], 128)
    ours = explore.trace_encoding(model, tokenizer, encoding, 128, batched=False).attentions[0, 0]
    heatmap = array(charts(at)["attention_heatmap"]["data"][0]["z"])
    assert heatmap.shape == ours.shape and np.allclose(heatmap, ours, atol=1e-4)
    for page in ("1_Tokens", "2_Embeddings", "4_Predictions"):
        at.switch_page(EXPLORE.format(page)).run()
        no_exception(at)
        assert not at.error, page
    assert any(key.startswith("predictions_") for key in charts(at)) and "nsp" in charts(at)
    at.switch_page(EXPLORE.format("5_Beyond_attention")).run()
    no_exception(at)
    assert [error.value for error in at.error] == [
        plain_markdown(f"Could not load the model: {OUR_INTERNALS}")
    ]


def test_a_model_that_hides_its_attention_says_so_in_one_sentence():
    at = on_page(LEARNERS / "sdpa_style.py", "3_Attention")
    assert plain_markdown(MISSING["attentions"]) in [info.value for info in at.info]
    assert "attention_heatmap" not in charts(at)


def test_compare_with_bert_puts_bert_s_head_view_beside_theirs():
    model, tokenizer = load(DEMO)
    theirs = open_learner(LearnerSpec(LEARNERS / "hf_style.py"), DEMO, model, tokenizer)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state[LEARNER_MODELS] = {theirs.key: theirs}
    at.session_state["model_picker"] = theirs.key
    at.session_state[ATTENTION.tab_key] = "Head view"
    at.switch_page(EXPLORE.format("3_Attention")).run()
    no_exception(at)
    assert "head_view" in charts(at) and "head_view_bert" not in charts(at)  # off until asked
    at.toggle(key="hv_compare").set_value(True).run()
    no_exception(at)
    drawn = charts(at)
    assert f"**BERT** ({DEMO}), the same pair and weights" in [text.value for text in at.markdown]
    assert [trace.get("name") for trace in drawn["head_view"]["data"]] == [
        trace.get("name") for trace in drawn["head_view_bert"]["data"]
    ]  # a correct model with BERT's weights: the same heads, the same lines
    for mine, bert in zip(drawn["head_view"]["data"], drawn["head_view_bert"]["data"], strict=True):
        assert mine.get("x") == bert.get("x") and mine.get("y") == bert.get("y")


def test_embeddings_of_a_sequence_first_model_that_adds_its_parts_inline_go_on_to_the_token_vectors():
    """PyTorch's nn.Transformer tutorial style: (T, B, H) tensors, positions from a buffer, the sum computed inline.
    The parts view says which parts it cannot show, and the page goes on to the 2-D token vectors, read from what
    each layer (the first one included) is given and gives, turned to one pair's (T, H)."""
    at = on_page(LEARNERS / "torch_tutorial_style.py", "2_Embeddings")
    notes = [info.value for info in at.info]
    assert any("the position embeddings and the sum (" in note for note in notes), notes
    tokens = len(explore.encode(load(DEMO)[1], DEFAULTS["sentence_a"], DEFAULTS["sentence_b"], 128))
    assert _points(at) == tokens
    box = at.selectbox(key="pca_vectors")
    box.set_value(box.options[1]).run()  # "embedding output": what their first layer reads
    no_exception(at)
    assert _points(at) == tokens


def _points(at: AppTest) -> int:
    """The 2-D token vectors' points, over the figure's traces."""
    return sum(len(array(trace["x"])) for trace in charts(at)["pca"]["data"] if "x" in trace)
