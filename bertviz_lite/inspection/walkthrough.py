"""A guided walk of one sentence pair through BERT: the steps' texts, their questions and the model's answers.

Plain Python and numpy (no streamlit): the Walkthrough page shows `STEPS` in order, and for a step with a
question it asks the learner first (`attention_question`, `mlm_question`, `nsp_question`), then reveals the
model's answer (`check_answer`). The data behind the new figures: `one_head_data`, `residual_changes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bertviz_lite.inspection.analysis import attention_steps, softmax, unique_labels
from bertviz_lite.inspection.explore import PairTrace
from bertviz_lite.limits import clamp
from bertviz_lite.model.embeddings import BertEmbeddings
from bertviz_lite.model.heads import BertLMPredictionHead, BertPredictionHeadTransform
from bertviz_lite.model.modeling import (
    BertEncoder,
    BertForPreTraining,
    BertIntermediate,
    BertLayer,
    BertModel,
    BertOutput,
    BertPooler,
    BertSelfAttention,
    BertSelfOutput,
)
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.text.tokenization import BertTokenizer, Encoding


@dataclass(frozen=True)
class Step:
    """One stop of the walkthrough: a title, a short plain-language text ({placeholders} from step_facts) and the
    package's functions that compute what it shows (its "The code" panel, inspection/code_listing.py)."""

    key: str
    title: str
    text: str
    # The functions themselves, never empty (tests/inspection/test_code_listing.py checks every step).
    code: tuple[Callable[..., Any], ...] = ()


STEPS = (
    Step(
        "tokens",
        "WordPiece tokens and special tokens",
        "BERT never sees words, only **tokens** from a fixed vocabulary of {vocab:,} pieces. A word it does not "
        "know whole is split into pieces; a piece that continues a word starts with `##`. BERT adds **[CLS]** at "
        "the start (its vector will summarise the pair) and **[SEP]** after each sentence (the small numbers under "
        "each token are its position · segment, the next step). To see what BERT "
        "learned, we hide one word behind **[MASK]** ({masked}); at the end the model will guess it.",
        code=(BertTokenizer._assemble, Encoding.to_tensors),
    ),
    Step(
        "ids",
        "Segment and position ids",
        "Each token also gets a **segment id** (0 for sentence A, 1 for sentence B) and a **position id** (0, 1, "
        "2, …). Attention by itself ignores order, so without positions *dog bites man* and *man bites dog* "
        "would look the same. This input has {tokens} tokens; this model knows at most {positions} positions.",
        code=(BertModel.prepare_inputs,),
    ),
    Step(
        "embeddings",
        "Three embeddings, added up",
        "Every token id, position id and segment id picks a learned vector of {hidden} numbers. BERT **adds** the "
        "three vectors, then LayerNorm rescales each sum to mean 0 and variance 1. Blue and red are negative and "
        "positive numbers; each row is one token.",
        code=(BertEmbeddings.parts,),
    ),
    Step(
        "one_head",
        "One attention head: q · k, softmax, weighted values",
        "In each layer, every token makes a **query** q, a **key** k and a **value** v (three learned projections). "
        "The query of one token is compared with every key: the score is q · k / √d (d = {head_dim}). A "
        "**softmax** turns the scores into weights that sum to 1, and the token's output is the **weighted sum of "
        "the values**: it takes most from the tokens it attends to. Pick another layer and head to compare.",
        code=(BertSelfAttention.split_heads, BertSelfAttention.forward_with_attention),
    ),
    Step(
        "many_heads",
        "Many heads, many layers",
        "A layer has {heads} heads, each with its own q, k and v, so each can look for something different: the "
        "next word, the previous one, [SEP], the same word. Their outputs are joined and mixed. The model stacks "
        "{layers} such layers. Each small square is one head's attention map (rows: queries, columns: keys); "
        "click one to look at it closely in step {one_head_step}.",
        code=(BertSelfAttention.merge_heads, BertSelfOutput.forward, BertEncoder.forward_with_attention),
    ),
    Step(
        "residual",
        "The residual stream and the feed-forward network",
        "Each layer does not replace a token's vector: it **adds** to it (the residual connection), first the "
        "attention output, then the output of a small **feed-forward network** applied to every token on its "
        "own (hidden size {hidden} → {intermediate} → {hidden}), each followed by LayerNorm. The colour shows how "
        "much each layer changes each token's vector, relative to its size before the layer.",
        code=(
            BertLayer.forward_with_attention,
            BertLayer.feed_forward,
            BertIntermediate.forward,
            BertOutput.forward,
            BertSelfOutput.forward,
        ),
    ),
    Step(
        "mlm",
        "Masked-word prediction (MLM)",
        "After the last layer, the MLM head turns the vector at **[MASK]** into a score for every token in the "
        "vocabulary; a softmax makes them probabilities. Pre-training teaches BERT exactly this: guess the hidden "
        "word from both sides of its context.",
        code=(BertLMPredictionHead.forward, BertPredictionHeadTransform.forward),
    ),
    Step(
        "nsp",
        "Next-sentence prediction (NSP)",
        "The vector of **[CLS]** goes to the NSP head, which gives the probability that sentence B really "
        "follows sentence A in a text. In pre-training, half the pairs are real and half are random, so the "
        "model learns to tell them apart.",
        code=(BertPooler.forward, BertForPreTraining.forward),
    ),
    Step(
        "build",
        "Your turn: build your own BERT",
        "You have seen every part of BERT, and **The code** under each step shows the lines of this package that "
        "computed it, with the shapes of this pair's tensors. Now write your own BERT in a file of yours: the "
        "**Your BERT** page (section Build) starts a skeleton for you, runs your model beside this one stage by "
        "stage and says what to change until it matches. The code below is the whole model, end to end.",
        code=(BertForPreTraining.forward, BertModel.forward),
    ),
)
STEP_KEYS = tuple(step.key for step in STEPS)


def step_facts(config, vocab_size: int, num_tokens: int, masked_word: str | None) -> dict:
    """The numbers the step texts mention: sizes of the model and of the input."""
    return {
        "vocab": vocab_size,
        "tokens": num_tokens,
        "positions": config.max_position_embeddings,
        "hidden": config.hidden_size,
        "intermediate": config.intermediate_size,
        "heads": config.num_attention_heads,
        "layers": config.num_hidden_layers,
        "head_dim": config.hidden_size // config.num_attention_heads,
        "masked": f"here the word “{plain_markdown(masked_word)}”"
        if masked_word
        else "or type [MASK] in a sentence yourself",
        "one_head_step": step_number("one_head"),
    }


def step_text(step: Step, facts: dict) -> str:
    """The step's text with the facts filled in."""
    return step.text.format(**facts)


def step_number(key: str) -> int:
    """The 1-based number of the step with this key, as the page counts them."""
    return [step.key for step in STEPS].index(key) + 1


def clamp_step(step: int) -> int:
    """A 1-based step number kept within 1..len(STEPS)."""
    return clamp(int(step), 1, len(STEPS))


# ---------------------------------------------------------------- questions


@dataclass(frozen=True)
class Question:
    """A multiple-choice question about what the model will do, with the model's own answer."""

    prompt: str
    options: tuple[str, ...]
    answer: str  # one of options
    explanation: str  # the model's answer in a sentence, shown on reveal

    @property
    def signature(self) -> str:
        """Changes when the input changes the question, so an old reveal does not carry over."""
        return f"{self.prompt}|{'|'.join(self.options)}|{self.answer}"


@dataclass(frozen=True)
class Verdict:
    correct: bool
    message: str


def check_answer(question: Question, choice: str | None) -> Verdict:
    """Whether the learner's choice matches the model, said in a sentence with the model's answer."""
    if choice is None:
        return Verdict(False, f"No guess made. {question.explanation}")
    if choice not in question.options:
        raise ValueError(f"{choice!r} is not one of the options ({', '.join(question.options)})")
    if choice == question.answer:
        return Verdict(True, f"Right! {question.explanation}")
    return Verdict(False, f"Not this time: you said {choice}. {question.explanation}")


def _candidate_keys(query: int, length: int, special) -> list[int]:
    """Keys worth offering as guesses: [CLS], the first [SEP], the token itself and its neighbours."""
    seps = [i for i in range(1, length) if special[i]]
    candidates = [0, *seps[:1], query, query - 1, query + 1]
    return [i for i in candidates if 0 <= i < length]


def attention_question(trace: PairTrace, layer: int, head: int, query: int) -> Question:
    """Which key does token `query` attend to most in one head? Options: the answer and common patterns."""
    row = np.asarray(trace.attentions[layer, head, query], dtype=np.float64)
    labels = unique_labels(trace.tokens)
    best = int(np.argmax(row))
    chosen = sorted({best, *_candidate_keys(query, trace.num_tokens, trace.special)})
    return Question(
        prompt=f"Which token will {labels[query]} attend to most in layer {layer}, head {head}?",
        options=tuple(labels[i] for i in chosen),
        answer=labels[best],
        explanation=f"In layer {layer}, head {head}, {labels[query]} gives {row[best]:.0%} of its attention to "
        f"{labels[best]}.",
    )


def mlm_question(mlm_logits, tokenizer: BertTokenizer, position: int, original: str | None) -> Question:
    """Which word will the model put at the masked position? Options: its top 3 and the hidden word."""
    probs = softmax(np.asarray(mlm_logits[position], dtype=np.float64))
    top = [int(i) for i in np.argsort(-probs, kind="stable")[:3]]
    guesses = list(tokenizer.convert_ids_to_tokens(top))
    options = sorted({*guesses, *([original] if original else [])})
    hidden = f" The hidden word was “{original}”." if original else ""
    return Question(
        prompt="Which word will the model put in place of [MASK]?",
        options=tuple(options),
        answer=guesses[0],
        explanation=f"The model's top guess is “{guesses[0]}” ({probs[top[0]]:.0%}).{hidden}",
    )


NSP_OPTIONS = ("Yes: B follows A", "No: B does not follow A")


def nsp_question(p_is_next: float) -> Question:
    """Will the model say B follows A? The model's answer is yes when P(IsNext) ≥ 0.5."""
    return Question(
        prompt="Will the model say that sentence B follows sentence A?",
        options=NSP_OPTIONS,
        answer=NSP_OPTIONS[0] if p_is_next >= 0.5 else NSP_OPTIONS[1],
        explanation=f"The model gives {p_is_next:.0%} that B follows A.",
    )


# ---------------------------------------------------------------- data for the step figures


@dataclass(frozen=True)
class OneHead:
    """One query token through one head: score, softmax weight and size of the weighted value per key."""

    scores: np.ndarray  # [T] q · k / √d
    weights: np.ndarray  # [T] softmax of the scores
    contributions: np.ndarray  # [T] |weight × value|, how much of the output each key supplies
    tokens: list[str]
    query_index: int
    layer: int
    head: int

    def to_frame(self) -> pd.DataFrame:
        """One row per key: key_index, key, score, weight, contribution."""
        return pd.DataFrame(
            {
                "key_index": np.arange(len(self.tokens)),
                "key": self.tokens,
                "score": self.scores,
                "weight": self.weights,
                "contribution": self.contributions,
            }
        )


def one_head_data(trace: PairTrace, layer: int, head: int, query_index: int) -> OneHead:
    """The three stages of attention for one query token in one head of the trace."""
    path = attention_steps(
        trace.queries[layer, head], trace.keys[layer, head], trace.values[layer, head], query_index
    )
    contributions = np.linalg.norm(path.weighted_values, axis=1)
    return OneHead(path.scaled, path.weights, contributions, list(trace.tokens), query_index, layer, head)


@dataclass(frozen=True)
class ResidualChanges:
    """How much each layer changes each token's vector: |h_l − h_(l−1)| / |h_(l−1)|."""

    change: np.ndarray  # [L, T]
    tokens: list[str]

    def to_frame(self) -> pd.DataFrame:
        """One row per layer and token: layer (1-based), index, token, relative_change."""
        layers, count = self.change.shape
        return pd.DataFrame(
            {
                "layer": np.repeat(np.arange(1, layers + 1), count),
                "index": np.tile(np.arange(count), layers),
                "token": self.tokens * layers,
                "relative_change": self.change.ravel(),
            }
        )


def residual_changes(trace: PairTrace) -> ResidualChanges:
    """Relative change of every token's vector through each layer of the trace ([L + 1, T, H] hidden states)."""
    states = np.asarray(trace.hidden_states, dtype=np.float64)
    tokens = trace.tokens
    before = states[:-1]
    after = states[1:]
    norms = np.maximum(np.linalg.norm(before, axis=-1), 1e-12)
    return ResidualChanges(np.linalg.norm(after - before, axis=-1) / norms, list(tokens))
