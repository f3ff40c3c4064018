"""The projector's figures of a live class: counts as drawn, the model's answer marked, typed words as text."""

import pytest

from bertviz_lite.figures.live_class import MAX_WORDS, MODEL_COLOUR, class_answers_figure, class_cloze_figure


def test_the_class_answers_figure_draws_the_counts_and_marks_the_model_answer():
    fig = class_answers_figure(["No", "Yes", "<b>x</b>"], [3, 2, 0], "Yes")
    bar = fig.data[0]
    assert list(bar.x) == [3, 2, 0] and list(bar.y) == ["No", "Yes ← model", "&lt;b&gt;x&lt;/b&gt;"]
    assert list(bar.text) == ["3 (60%)", "2 (40%)", "0 (0%)"] and bar.marker.color[1] == MODEL_COLOUR
    assert "5 students" in fig.layout.title.text and fig.layout.xaxis.dtick == 1  # whole students
    assert class_answers_figure(["a", "b"], [23, 2], "a").layout.xaxis.dtick == 5
    with pytest.raises(ValueError, match="answers"):
        class_answers_figure(["a"], [1, 2], "a")


@pytest.mark.parametrize("stacked", [False, True])
def test_the_cloze_figure_puts_the_class_words_beside_or_above_the_model_top_5(stacked):
    words = [f"w{i}" for i in range(MAX_WORDS + 2)]
    counts = [20 - i for i in range(MAX_WORDS + 2)]
    fig = class_cloze_figure(
        words, counts, ["w1", "mat", "<a>", "bed", "sofa"], [0.4, 0.2, 0.1, 0.1, 0.05], stacked
    )
    mine, model = fig.data
    assert list(mine.y) == words[:MAX_WORDS] and list(mine.x) == counts[:MAX_WORDS]
    assert mine.marker.color[1] == MODEL_COLOUR and mine.marker.color[0] != MODEL_COLOUR
    assert list(model.y)[2] == "&lt;a&gt;" and "+15 more" in fig.layout.annotations[0].text
    if stacked:  # a phone: the model's chart under the class's
        assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0]
    else:  # a projector: beside it
        assert fig.layout.xaxis2.domain[0] > fig.layout.xaxis.domain[1]
