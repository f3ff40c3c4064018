"""A from-scratch BERT whose module names, and numbers, match Hugging Face's `modeling_bert.py`.

Shapes in comments: B batch, T tokens, H hidden size, nh heads, hd head size, V vocabulary.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from bertviz_lite.model.attention_masks import additive_mask, check_head_mask
from bertviz_lite.model.config import BertConfig
from bertviz_lite.model.dropout import BertDropout
from bertviz_lite.model.embeddings import BertEmbeddings
from bertviz_lite.model.heads import BertPreTrainingHeads
from bertviz_lite.model.loss_rows import flat_rows, labelled_mean_loss, labelled_positions, row_bucket
from bertviz_lite.model.outputs import (
    BertForPreTrainingOutput,
    BertModelOutput,
    BertTrace,
    LayerAttention,
    PretrainingOutput,
)


class BertSelfAttention(nn.Module):
    """Multi-head scaled dot-product attention with an additive padding mask."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.head_dim
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = BertDropout(config.attention_probs_dropout_prob)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, H) -> (B, nh, T, hd)"""
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, nh, T, hd) -> (B, T, H)"""
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).reshape(batch, seq, self.num_attention_heads * self.attention_head_size)

    def project_qkv(self, hidden_states: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v (B, nh, T, hd) from one matrix product: the three projections' weights stacked, (3H, H).

        The fast path's (forward); the same numbers as three products, which forward_with_attention keeps for reading
        (and the state dict keeps query, key and value apart). On a GPU one product of thrice the width keeps the
        matrix units busier than three, and its backward is one product too."""
        weight = torch.cat((self.query.weight, self.key.weight, self.value.weight))
        bias = torch.cat((self.query.bias, self.key.bias, self.value.bias))
        batch, seq, _ = hidden_states.shape
        qkv = F.linear(hidden_states, weight, bias)
        qkv = qkv.view(batch, seq, 3, self.num_attention_heads, self.attention_head_size).permute(
            2, 0, 3, 1, 4
        )
        return qkv.unbind(0)

    def forward(self, hidden_states: Tensor, mask: Tensor | None) -> Tensor:
        """Fast path (no probabilities): PyTorch's fused scaled_dot_product_attention.

        Training on a CPU, attention is written out instead: there SDPA with dropout runs its unfused math path anyway,
        with torch's dearer dropout mask and a softmax that checks for masked rows (model/dropout.py)."""
        if self.dropout.draws_mask(hidden_states):
            return self.forward_with_attention(hidden_states, mask)[0]
        q, k, v = self.project_qkv(hidden_states)
        p = self.dropout.p if self.training else 0.0
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        return self.merge_heads(context)

    def forward_with_attention(
        self, hidden_states: Tensor, mask: Tensor | None, head_mask: Tensor | None = None
    ) -> tuple[Tensor, LayerAttention]:
        """The forward pass with attention written out (not the fused kernel), keeping q, k, v and the probabilities.

        head_mask (nh,) multiplies each head's probabilities, as transformers' `head_mask` did: 0 knocks a head out.
        """
        q, k, v = (self.split_heads(f(hidden_states)) for f in (self.query, self.key, self.value))
        # Scaling q (T x hd) costs less than scaling the scores (T x T).
        scores = (q / math.sqrt(self.attention_head_size)) @ k.transpose(-1, -2)  # (B, nh, T, T)
        if mask is not None:
            scores = scores + mask
        probs = scores.softmax(dim=-1)
        if head_mask is not None:
            probs = probs * head_mask[:, None, None]
        context = self.merge_heads(self.dropout(probs) @ v)
        return context, LayerAttention(q, k, v, probs)


class BertSelfOutput(nn.Module):
    """Attention output projection, dropout, residual, LayerNorm (post-LN)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = BertDropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    """Self-attention, then its output projection with residual and LayerNorm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states: Tensor, mask: Tensor | None, rows: Tensor | None = None) -> Tensor:
        """rows (R,): flat positions b * T + t; the output is then theirs alone, (R, H) (see BertEncoder.forward)."""
        # (B, T, H): every query; the rows' attention needs every position's keys and values anyway
        context = self.self(hidden_states, mask)
        if rows is not None:
            context, hidden_states = (flat_rows(x, rows) for x in (context, hidden_states))
        return self.output(context, hidden_states)

    def forward_with_attention(
        self, hidden_states: Tensor, mask: Tensor | None, head_mask: Tensor | None = None
    ) -> tuple[Tensor, LayerAttention]:
        context, inside = self.self.forward_with_attention(hidden_states, mask, head_mask)
        return self.output(context, hidden_states), inside


class BertIntermediate(nn.Module):
    """First feed-forward layer with exact (erf) GELU."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return F.gelu(self.dense(hidden_states))


class BertOutput(nn.Module):
    """Second feed-forward layer, dropout, residual, LayerNorm."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = BertDropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(nn.Module):
    """One post-LN encoder layer: self-attention block, then feed-forward block."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def feed_forward(self, attention_output: Tensor) -> Tensor:
        """The feed-forward block (its own residual and LayerNorm included)."""
        return self.output(self.intermediate(attention_output), attention_output)

    def forward(self, hidden_states: Tensor, mask: Tensor | None, rows: Tensor | None = None) -> Tensor:
        return self.feed_forward(self.attention(hidden_states, mask, rows))

    def forward_with_attention(
        self, hidden_states: Tensor, mask: Tensor | None, head_mask: Tensor | None = None
    ) -> tuple[Tensor, LayerAttention]:
        attention_output, inside = self.attention.forward_with_attention(hidden_states, mask, head_mask)
        return self.feed_forward(attention_output), inside


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, hidden_states: Tensor, mask: Tensor | None, rows: Tensor | None = None) -> Tensor:
        """The last layer's output (B, T, H); with rows (R,) (flat positions b * T + t), that of those rows alone (R, H).

        A position's output in the last layer needs every position's keys and values, but no other position's output
        projection or feed-forward block: a pretraining step, whose losses read the labelled rows and [CLS] only,
        skips those blocks for the other rows (85% of them at 15% masking; the same numbers for the rows it keeps).
        """
        last = len(self.layer) - 1
        for index, layer in enumerate(self.layer):
            hidden_states = layer(hidden_states, mask, rows if index == last else None)
        return hidden_states

    def forward_with_attention(
        self, hidden_states: Tensor, mask: Tensor | None, head_mask: Tensor | None = None
    ) -> tuple[tuple[Tensor, ...], tuple[LayerAttention, ...]]:
        """Every layer's output (the input first) and what each layer's attention computed; head_mask (L, nh)."""
        outputs = [hidden_states]
        inside = []
        for index, layer in enumerate(self.layer):
            layer_mask = None if head_mask is None else head_mask[index]
            hidden_states, layer_inside = layer.forward_with_attention(hidden_states, mask, layer_mask)
            outputs.append(hidden_states)
            inside.append(layer_inside)
        return tuple(outputs), tuple(inside)


class BertPooler(nn.Module):
    """Dense + tanh on the [CLS] position."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return torch.tanh(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    """Embeddings, encoder and pooler (Hugging Face's `BertModel`): `model.bert(input_ids)` works as there."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)

    def prepare_inputs(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None,
        attention_mask: Tensor | None,
        position_ids: Tensor | None,
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Fill in the defaults: segment 0, positions 0..T-1, attend to every non-padding token."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq), got {tuple(input_ids.shape)}")
        seq_len = input_ids.shape[1]
        if seq_len > self.config.max_position_embeddings:
            raise ValueError(
                f"{seq_len} tokens is more than max_position_embeddings "
                f"({self.config.max_position_embeddings}); truncate the input"
            )
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = (input_ids != self.config.pad_token_id).long()
        if position_ids is None:
            position_ids = torch.arange(seq_len, device=input_ids.device).unsqueeze(0)
        return input_ids, token_type_ids, attention_mask, position_ids

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        *,
        padded: bool | None = None,
    ) -> BertModelOutput:
        """Fast encoder pass (fused attention kernel); `padded` as `attention_masks.additive_mask` takes it."""
        hidden = self.last_hidden_state(
            input_ids, token_type_ids, attention_mask, position_ids, padded=padded
        )
        return BertModelOutput(hidden, self.pooler(hidden))

    def last_hidden_state(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        *,
        padded: bool | None = None,
        rows: Tensor | None = None,
    ) -> Tensor:
        """The encoder's output (B, T, H); with rows (R,) (flat positions b * T + t), those rows' alone (R, H), the
        last layer computed for them only (BertEncoder.forward)."""
        input_ids, token_type_ids, attention_mask, position_ids = self.prepare_inputs(
            input_ids, token_type_ids, attention_mask, position_ids
        )
        hidden = self.embeddings(input_ids, token_type_ids, position_ids)
        return self.encoder(hidden, additive_mask(attention_mask, hidden.dtype, padded), rows)


def _want(requested: bool | None, available: bool) -> bool:
    return available if requested is None else requested


class BertForPreTraining(nn.Module):
    """BERT with its MLM and NSP heads (Hugging Face's `BertForPreTraining`).

    `model(input_ids, token_type_ids)` returns both heads' logits, `model.mlm_logits(...)` the MLM head's (B, T, V),
    `model.trace(...)` a BertTrace with every intermediate; `model.pretraining_loss(...)` trains.
    """

    def __init__(self, config: BertConfig, init_weights: bool = True):
        """init_weights=False skips BERT's initialisation (N(0, 0.02)), for weights about to be loaded over it."""
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config)
        # Which heads hold trained weights; loaders set these (MiniLM, say, ships no heads).
        self.has_mlm_head = self.has_nsp_head = True
        if init_weights:
            self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self) -> None:
        """Share one matrix between the word embeddings and the MLM decoder."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding) and module.weight.requires_grad:
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def encode(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        *,
        padded: bool | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Fast encoder pass: (last hidden state (B, T, H), pooled (B, H))."""
        out = self.bert(input_ids, token_type_ids, attention_mask, position_ids, padded=padded)
        return out.last_hidden_state, out.pooler_output

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        *,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> BertForPreTrainingOutput:
        """Both heads, as transformers' BertForPreTraining: prediction_logits (B, T, V), seq_relationship_logits (B, 2)."""
        hidden, pooled = self.encode(input_ids, token_type_ids, attention_mask, position_ids)
        return BertForPreTrainingOutput(self.cls.predictions(hidden), self.cls.seq_relationship(pooled))

    def mlm_logits(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        *,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
    ) -> Tensor:
        """The MLM head alone: logits (B, T, V), without the NSP head's pooler."""
        hidden, _ = self.encode(input_ids, token_type_ids, attention_mask, position_ids)
        return self.cls.predictions(hidden)

    def next_sentence_logits(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
    ) -> Tensor:
        """NSP logits (B, 2); index 0 = B follows A."""
        _, pooled = self.encode(input_ids, token_type_ids, attention_mask)
        return self.cls.seq_relationship(pooled)

    def pretraining_loss(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor,
        attention_mask: Tensor,
        labels: Tensor,
        next_sentence_label: Tensor,
        *,
        mlm_positions: Tensor | None = None,
        padded: bool | None = None,
    ) -> PretrainingOutput:
        """MLM + NSP loss; only the labelled positions are projected onto the vocabulary.

        mlm_positions (K,): `labelled_positions(labels, K)`, made on the host before the batch moves (as the trainer
        does), so that the step neither waits for the device nor changes shape from batch to batch; by default it is
        made here, which waits for a GPU. padded: as `attention_masks.additive_mask` takes it.
        """
        if mlm_positions is None:
            mlm_positions = labelled_positions(labels, bucket=row_bucket(input_ids)).to(labels.device)
        batch, seq = labels.shape
        cls_rows = torch.arange(batch, device=input_ids.device) * seq  # [CLS] of each pair, for the NSP head
        # The last layer computes only the rows the losses read: (K + B, H)
        rows = torch.cat([mlm_positions, cls_rows])
        hidden = self.bert.last_hidden_state(
            input_ids, token_type_ids, attention_mask, padded=padded, rows=rows
        )
        mlm_rows, cls = hidden.split([mlm_positions.shape[0], batch])
        mlm_labels = labels.reshape(-1)[mlm_positions]  # (K,): -100 after the labelled ones
        mlm_logits = self.cls.predictions(mlm_rows)  # (K, V)
        mlm_loss = labelled_mean_loss(mlm_logits, mlm_labels)
        nsp_logits = self.cls.seq_relationship(self.bert.pooler(cls[:, None]))  # the pooler reads position 0
        nsp_loss = labelled_mean_loss(
            nsp_logits, next_sentence_label
        )  # -100: a lone sentence, no NSP question
        return PretrainingOutput(mlm_loss + nsp_loss, mlm_loss, nsp_loss, mlm_logits, mlm_labels, nsp_logits)

    @torch.no_grad()
    def trace(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        heads: bool | None = None,
        head_mask: Tensor | None = None,
    ) -> BertTrace:
        """One forward pass that keeps every intermediate (explicit attention, not the fused kernel).

        `heads`: compute MLM/NSP logits; by default only for the heads that hold trained weights.
        `head_mask` (layers, heads): multiplies each head's attention probabilities (0 = knocked out), as
        transformers' `head_mask` did; the trace's attentions are the multiplied ones.
        """
        head_mask = check_head_mask(head_mask, self.config)
        input_ids, token_type_ids, attention_mask, position_ids = self.bert.prepare_inputs(
            input_ids, token_type_ids, attention_mask, position_ids
        )
        parts = self.bert.embeddings.parts(input_ids, token_type_ids, position_ids)
        hidden = self.bert.embeddings.dropout(parts.layer_norm)
        mask = additive_mask(attention_mask, hidden.dtype)
        hidden_states, layers = self.bert.encoder.forward_with_attention(hidden, mask, head_mask)
        pooled = self.bert.pooler(hidden_states[-1])
        return BertTrace(
            embeddings=parts,
            layers=layers,
            hidden_states=hidden_states,
            pooled=pooled,
            mlm_logits=self.cls.predictions(hidden_states[-1]) if _want(heads, self.has_mlm_head) else None,
            nsp_logits=self.cls.seq_relationship(pooled) if _want(heads, self.has_nsp_head) else None,
            attention_mask=attention_mask,
        )

    def num_parameters(self) -> int:
        """Trainable and frozen parameters, the tied matrix counted once."""
        return sum(p.numel() for p in self.parameters())

    def load_hf_state_dict(self, state_dict: dict[str, Tensor]) -> None:
        """Load weights saved by transformers (BertModel, BertForMaskedLM or BertForPreTraining)."""
        from bertviz_lite.model.hf_io import load_hf_state_dict

        load_hf_state_dict(self, state_dict)

    def hf_state_dict(self) -> dict[str, Tensor]:
        """Weights under transformers' BertForPreTraining names."""
        from bertviz_lite.model.hf_io import hf_state_dict

        return hf_state_dict(self)


class _SkipInit(TorchFunctionMode):
    """Leaves torch.nn.init's functions undone: on the meta device normal_ runs a Python reference that imports
    torch._dynamo (1.2 s of CPU, once per process: a fresh server's first model load)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return args[0] if args else kwargs["tensor"]  # every init function's first argument
        return func(*args, **kwargs)


def meta_model(config: BertConfig) -> BertForPreTraining:
    """The model's names and shapes on the meta device: nothing allocated, nothing initialised."""
    with torch.device("meta"), _SkipInit():
        return BertForPreTraining(config, init_weights=False)


def uninitialised_model(config: BertConfig) -> BertForPreTraining:
    """The model with its parameters allocated and nothing drawn into them (torch.nn.init left undone), for weights
    about to be loaded over every one: MiniLM's draws cost 0.15 s of CPU at each load."""
    with _SkipInit():
        return BertForPreTraining(config, init_weights=False)
