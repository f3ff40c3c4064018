"""Each mistake code, planted in a copy of a correct learner's file by text substitution, is named by its code at the
stage where it first shows; the correct files in every style match to 1e-5 at every stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertviz_lite.check import CODES, CheckRequest, check_files
from bertviz_lite.check.mistakes import DESIGN_CHOICES

LEARNERS = Path(__file__).parent / "learners"
HF = (LEARNERS / "hf_style.py").read_text()

SINUSOID = """

def fixed_table(num_positions, dim, base=10000.0):
    position = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(base) / dim))
    table = torch.zeros(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div)
    return table.float()
"""
STD_NORM = """

class StdLayerNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.a_2, self.b_2, self.eps = nn.Parameter(torch.ones(size)), nn.Parameter(torch.zeros(size)), eps

    def forward(self, x):
        return self.a_2 * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.b_2
"""
EPS_NORM = """

class FunctionalNorm(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(size)), nn.Parameter(torch.zeros(size))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)
"""
POSITIONS = (
    "self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)",
    "self.position_embeddings(positions)",
)

# code -> (stage where it first shows, [(old, new), …] applied to hf_style.py)
PLANTED = {
    "scale-dk": ("layer.0.attention.probs", [("/ math.sqrt(self.head_size)", "/ self.head_size")]),
    "softmax-axis": ("layer.0.attention.probs", [("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")]),
    "mask-ignored": (
        "layer.0.attention.probs",
        [("scores = scores.masked_fill(mask == 0, -1e9)", "scores = scores")],
    ),
    "mask-on-queries": (
        "layer.0.attention.probs",
        [("(input_ids != 0)[:, None, None, :]", "(input_ids != 0)[:, None, :, None]")],
    ),
    "mask-inverted": ("layer.0.attention.probs", [("masked_fill(mask == 0", "masked_fill(mask == 1")]),
    "heads-split": (
        "layer.0.attention.probs",
        [
            (
                "x.view(b, t, self.num_heads, self.head_size).transpose(1, 2)",
                "x.view(b, self.num_heads, t, self.head_size)",
            ),
            ("(probs @ v).transpose(1, 2).reshape(x.shape)", "(probs @ v).reshape(x.shape)"),
        ],
    ),
    "pre-ln": (
        "layer.0.attention.probs",
        [
            (
                "return self.output(self.self(x, mask), x)",
                "return x + self.output.dense(self.self(self.output.LayerNorm(x), mask))",
            ),
            (
                "return self.output(self.intermediate(x), x)",
                "return x + self.output.dense(self.intermediate(self.output.LayerNorm(x)))",
            ),
        ],
    ),
    "shared-layernorm": (
        "layer.0.output",
        [
            (
                "return self.output(self.intermediate(x), x)",
                "return self.attention.output.LayerNorm(self.output.dense(self.intermediate(x)) + x)",
            )
        ],
    ),
    "layernorm-formula": (
        "embeddings.layer_norm",
        [
            ("nn.LayerNorm(hidden_size, eps=1e-12)", "StdLayerNorm(hidden_size)"),
            ("\n\nclass BertEmbeddings", STD_NORM + "\n\nclass BertEmbeddings"),
        ],
    ),
    "no-residual": (
        "layer.0.attention.layer_norm",
        [("return self.output(self.self(x, mask), x)", "return self.output(self.self(x, mask), 0)")],
    ),
    "gelu-tanh": (
        "layer.0.feed_forward",
        [
            (
                "        return F.gelu(self.dense(x))\n",
                "        return F.gelu(self.dense(x), approximate='tanh')\n",
            )
        ],
    ),
    "relu": (
        "layer.0.feed_forward",
        [("        return F.gelu(self.dense(x))\n", "        return F.relu(self.dense(x))\n")],
    ),
    "learned-vs-sinusoidal": (
        "embeddings.position",
        [
            (
                POSITIONS[0],
                "self.register_buffer('table', fixed_table(max_position_embeddings, hidden_size))",
            ),
            (POSITIONS[1], "self.table[: input_ids.shape[1]]"),
            ("\n\nclass BertEmbeddings", SINUSOID + "\n\nclass BertEmbeddings"),
        ],
    ),
    "sinusoidal-formula": (
        "embeddings.position",
        [
            (
                POSITIONS[0],
                "self.register_buffer('table', fixed_table(max_position_embeddings, hidden_size, 1000.0))",
            ),
            (POSITIONS[1], "self.table[: input_ids.shape[1]]"),
            ("\n\nclass BertEmbeddings", SINUSOID + "\n\nclass BertEmbeddings"),
        ],
    ),
    "no-position-embedding": ("embeddings.sum", [(" + self.position_embeddings(positions)", "")]),
    "no-segment-embedding": ("embeddings.sum", [(" + self.token_type_embeddings(token_type_ids)", "")]),
    "segment-offset": (
        "embeddings.segment",
        [("nn.Embedding(2, hidden_size)", "nn.Embedding(3, hidden_size, padding_idx=0)")],
    ),
    "no-embedding-layernorm": (
        "layer.0.attention.probs",
        [("return self.dropout(self.LayerNorm(x))", "return self.dropout(x)")],
    ),
    "dropout-active": (
        "layer.0.attention.output",
        [("probs = self.dropout(scores.softmax(dim=-1))", "probs = F.dropout(scores.softmax(dim=-1), 0.1)")],
    ),
    "layernorm-eps": (  # eps passed to F.layer_norm, which no module's attribute says: past the tolerance only in
        "mlm_logits",  # the logits (~1e-4), and found by the search
        [
            ("nn.LayerNorm(hidden_size, eps=1e-12)", "FunctionalNorm(hidden_size)"),
            ("\n\nclass BertEmbeddings", EPS_NORM + "\n\nclass BertEmbeddings"),
        ],
    ),
    "scaled-embeddings": (
        "embeddings.sum",
        [
            (
                "self.word_embeddings(input_ids)\n",
                "self.word_embeddings(input_ids) * math.sqrt(self.word_embeddings.embedding_dim)\n",
            )
        ],
    ),
    "no-pooler": ("nsp_logits", [("return x, self.pooler(x)", "return x, x[:, 0]")]),
    "mlm-head-plain-linear": (
        "mlm_logits",
        [("return self.decoder(self.transform(x)) + self.bias", "return self.decoder(x) + self.bias")],
    ),
    "mlm-head-untied": (
        "mlm_logits",
        [("self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight", "pass")],
    ),
}
CORRECT = [
    ("hf_style.py", None),
    ("fused_style.py", None),
    ("mha_style.py", None),
    ("raw_parameters.py", None),
]
# Tutorial-style models: each departure from BERT named, nothing left unexplained.
STYLES = {
    "torch_tutorial_style.py": (
        None,
        {
            "no-embedding-layernorm",
            "learned-vs-sinusoidal",
            "scaled-embeddings",
            "mlm-head-untied",
            "mlm-head-plain-linear",
        },
    ),
    "nanogpt_style.py": (
        None,
        {"no-embedding-layernorm", "pre-ln", "mlm-head-plain-linear", "layernorm-eps", "final-layernorm"},
    ),
    "tutorial_style.py": (
        "BERTLM",
        {
            "learned-vs-sinusoidal",
            "segment-offset",
            "no-embedding-layernorm",
            "pre-ln",
            "layernorm-formula",
            "gelu-tanh",
            "log-probabilities",
            "mlm-head-untied",
            "mlm-head-plain-linear",
            "no-pooler",
        },
    ),
    "annotated_style.py": (
        None,
        {
            "no-embedding-layernorm",
            "pre-ln",
            "layernorm-formula",
            "relu",
            "mlm-head-untied",
            "mlm-head-plain-linear",
            "final-layernorm",
        },
    ),
}


def planted(code: str) -> str:
    text = HF
    for old, new in PLANTED[code][1]:
        assert old in text, f"{code}: {old!r} is not in hf_style.py"
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Every planted file and every correct one, checked in one child process."""
    folder = tmp_path_factory.mktemp("planted")
    requests = [CheckRequest(LEARNERS / name, "model", cls) for name, cls in CORRECT]
    requests += [CheckRequest(LEARNERS / name, "model", cls) for name, (cls, _) in STYLES.items()]
    for code in PLANTED:
        path = folder / f"{code.replace('-', '_')}.py"
        path.write_text(planted(code))
        requests.append(CheckRequest(path))
    found = check_files(requests)
    return {r.file.name: report for r, report in zip(requests, found, strict=True)}


@pytest.mark.parametrize("name", [name for name, _ in CORRECT])
def test_a_correct_implementation_matches_at_every_stage(reports, name):
    report = reports[name]
    assert report.verdict == "match", report.to_text()
    assert report.exit_code == 0
    assert len(report.stages) >= (
        10 if name == "raw_parameters.py" else 14
    )  # raw matrices: no module to hook
    assert all(s.ok and s.max_abs_diff < 1e-5 for s in report.stages), report.to_text()
    assert report.findings == [] and report.unmapped["theirs"] == []


@pytest.mark.parametrize("code", sorted(PLANTED))
def test_a_planted_mistake_is_named_at_the_stage_where_it_first_shows(reports, code):
    report = reports[f"{code.replace('-', '_')}.py"]
    if code in DESIGN_CHOICES:  # a design difference, named, on a model that otherwise matches: match, exit 0
        assert (report.verdict, report.exit_code) == ("match", 0), report.to_text()
        assert all(s.ok and s.max_abs_diff < 1e-5 for s in report.stages), report.to_text()
    else:
        assert (report.verdict, report.exit_code) == ("differs", 1), report.to_text()
    named = {(f.code, f.stage) for f in report.findings}
    assert (code, PLANTED[code][0]) in named, report.to_text()
    assert "unexplained" not in report.codes, report.to_text()
    extra = {f.code for f in report.findings} - {code, "learned-vs-sinusoidal"}
    assert not extra, report.to_text()


@pytest.mark.parametrize("name", sorted(STYLES))
def test_a_tutorial_style_model_is_built_mapped_and_its_departures_named(reports, name):
    report = reports[name]
    assert set(report.codes) == STYLES[name][1], report.to_text()
    assert report.unmapped["theirs"] == [], report.to_text()
    stages = {s.name for s in report.stages}
    assert {"embeddings.token", "layer.1.feed_forward", "mlm_logits"} <= stages
    # nn.TransformerEncoderLayer keeps its probabilities inside (test_more_styles.py): the stages after them count
    assert "layer.0.attention.probs" in stages or name == "torch_tutorial_style.py"


def test_every_code_the_issue_asks_for_is_registered():
    asked = {
        "scale-dk",
        "softmax-axis",
        "mask-ignored",
        "mask-on-queries",
        "mask-inverted",
        "pre-ln",
        "shared-layernorm",
        "no-residual",
        "gelu-tanh",
        "relu",
        "sinusoidal-formula",
        "learned-vs-sinusoidal",
        "segment-offset",
        "no-embedding-layernorm",
        "dropout-active",
        "heads-split",
        "no-pooler",
        "mlm-head-plain-linear",
        "mlm-head-untied",
    }
    assert asked <= set(CODES) and asked <= set(PLANTED)


def test_adding_a_mistake_code_is_one_registered_function(tmp_path):
    """ARCHITECTURE's recipe: a function under @mistake(code, sentence) returning the recipe with that mistake is
    tried by the search and named in the report; here a new code takes over ReLU's variant."""
    from dataclasses import replace

    from bertviz_lite.check import mistakes

    saved = list(mistakes.MISTAKES)
    mistakes.MISTAKES[:] = [m for m in saved if m.code != "relu"]
    try:

        @mistakes.mistake("rectified", "Your feed-forward rectifies (a test's own code).")
        def _rectified(recipe, evidence):
            return None if recipe.activation == "relu" else replace(recipe, activation="relu")

        (tmp_path / "relu.py").write_text(planted("relu"))
        report = check_files([CheckRequest(tmp_path / "relu.py")])[0]
    finally:
        mistakes.MISTAKES[:] = saved
    assert [(f.code, f.stage) for f in report.findings] == [("rectified", "layer.0.feed_forward")]
    assert report.to_json()["findings"][0]["message"] == "Your feed-forward rectifies (a test's own code)."


def test_probabilities_kept_as_an_attribute_are_compared(reports):
    stages = {s.name: s for s in reports["fused_style.py"].stages}  # self.last_attention = att
    assert stages["layer.1.attention.probs"].ok and stages["layer.1.attention.probs"].shape_theirs == [
        4,
        4,
        12,
        12,
    ]
