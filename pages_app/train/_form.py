"""The "new run" form of the Train page: preset, every CLI option, corpus, device, Start.

Widget keys are `opt_<option>` (the TrainingArguments / BertConfig field), so the form holds one flat
dict that `run_options.check_options` validates exactly as the CLI would.
"""

from __future__ import annotations

import os

import streamlit as st

from bertviz_lite.check.request import MAX_PATH_CHARS
from bertviz_lite.limits import MAX_CORPUS_CHARS, MAX_NAME_CHARS
from bertviz_lite.loading.pretrained import MINILM, SHIPPED_CHECKPOINTS
from bertviz_lite.runs import lifecycle, run_options
from bertviz_lite.server.code_gate import code_allowed
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.training.training_args import DEVICES, DTYPES, PRESETS, OptionError
from pages_app.common._state import clamp_number
from pages_app.common._visitor import current_visitor
from pages_app.train._uploads import bounded_file_uploader

CORPUS_SOURCES = (
    "Built-in stories",
    "English (WordNet)",
    "Everyday English",
    "Upload a .txt file",
    "Paste text",
)
NAMED_CORPORA = {CORPUS_SOURCES[0]: "builtin", CORPUS_SOURCES[1]: "english", CORPUS_SOURCES[2]: "everyday"}
RANDOM = "random weights"  # the `init` option's None, as the picker shows it (a None value reads "Choose an option")
YOUR_BERT = (
    "Your BERT"  # a learner's own model (`model_file`), offered only where server/code_gate.py allows it
)
INIT_CHOICES = (RANDOM, MINILM, *SHIPPED_CHECKPOINTS)
DTYPE_LABELS = {"auto": "auto", "fp32": "float32", "bf16": "bf16"}


def apply_preset() -> None:
    """Fill every option with the chosen preset's values (on_change of the preset picker)."""
    for name, value in run_options.preset_options(st.session_state["train_preset"]).items():
        st.session_state[f"opt_{name}"] = RANDOM if name == "init" and value is None else value
    st.session_state.setdefault("opt_threads", 0)


def _field(name: str) -> None:
    """One option's widget, as its declaration says: a picker for choices, a checkbox for a flag, else a number box."""
    label = run_options.labels()[name]
    help_text = run_options.option_help()[name]
    choices = run_options.choices(name)
    if isinstance(st.session_state[f"opt_{name}"], bool):
        st.checkbox(label, key=f"opt_{name}", help=help_text)
    elif choices:
        st.selectbox(label, choices, key=f"opt_{name}", help=help_text)
    elif isinstance(st.session_state[f"opt_{name}"], float):
        st.number_input(
            label, key=f"opt_{name}", step=run_options.float_step(name) or 0.01, format="%g", help=help_text
        )
    else:
        st.number_input(label, key=f"opt_{name}", step=1, format="%d", help=help_text)


def _section(group: str) -> None:
    """A form section: every option declared in `group`, in declaration order."""
    st.markdown(f"**{group}**")
    for name in run_options.form_fields(group):
        _field(name)


def _corpus() -> tuple[str | None, tuple[int, int] | None, str | None]:
    """(text of a user corpus or None for a named one, its (documents, sentences), error message or None)."""
    source = st.radio(
        "Corpus",
        CORPUS_SOURCES,
        key="train_corpus_source",
        horizontal=True,
        help=run_options.option_help()["corpus"],
    )
    st.session_state["opt_corpus"] = NAMED_CORPORA.get(source, "builtin")
    if source in NAMED_CORPORA:
        return None, None, None
    limit_mb = run_options.MAX_CORPUS_BYTES / 1e6
    if source == CORPUS_SOURCES[3]:
        upload = bounded_file_uploader(
            f"Plain UTF-8 text, at most {limit_mb:.0f} MB; blank lines separate documents",
            limit_bytes=run_options.MAX_CORPUS_BYTES,
            type=["txt"],
            key="train_corpus_file",
        )
        if upload is None:
            return None, None, "Choose a .txt file for the corpus, or pick the built-in stories."
        data = upload.getvalue()
        file_name = upload.name
    else:
        text = st.text_area(
            "Your text: sentences end with . ! or ?, blank lines separate documents",
            key="train_corpus_text",
            height=150,
            max_chars=MAX_CORPUS_CHARS,
        )
        data = text
        file_name = None
    try:
        documents, sentences = run_options.corpus_summary(data, file_name)
    except ValueError as err:
        return None, None, f"Corpus: {err}"
    st.caption(f"{documents} document{'s' * (documents != 1)}, {sentences} sentences.")
    return run_options.decode_corpus(data), (documents, sentences), None


def _device() -> str | None:
    """The device picker; returns an error message when the choice cannot work here."""
    reason = run_options.cuda_unavailable_reason()
    labels = {"auto": "auto", "cpu": "CPU", "cuda": "CUDA" if reason is None else "CUDA (not available)"}
    device = st.radio(
        "Device",
        DEVICES,
        key="opt_device",
        horizontal=True,
        format_func=labels.get,
        help=run_options.option_help()["device"],
    )
    if reason:
        st.caption(f"CUDA is not available: {reason}.")
    return run_options.device_problem(device)


def _run_name() -> str | None:
    """The optional run name; returns an error message when it is unusable."""
    name = st.text_input(
        "Run name (optional)",
        key="train_run_name",
        placeholder="run-<date>-<time>",
        max_chars=MAX_NAME_CHARS,
        help="The folder under checkpoints/ that will hold the run.",
    ).strip()
    if not name:
        return None
    try:
        lifecycle.check_new_run_name(name)
    except ValueError as err:
        return str(err)
    return None


def code_runs_here() -> bool:
    """Whether this server may run a visitor's own file (server/code_gate.py): the Your BERT choice is offered."""
    return code_allowed(st.get_option("server.address"), os.environ)[0]


def _start_from() -> None:
    """Random weights, continue pre-training a pretrained model (its sizes and vocabulary are kept), or, where code
    may run, Your BERT: the learner's own model, built at the preset's sizes."""
    choices = (*INIT_CHOICES, YOUR_BERT) if code_runs_here() else INIT_CHOICES
    if (
        st.session_state.get("opt_init") not in choices
    ):  # a preset, a link that says "no model", the gate closed
        st.session_state["opt_init"] = RANDOM
    st.selectbox(
        run_options.labels()["init"], choices, key="opt_init", help=run_options.option_help()["init"]
    )


def start_model() -> str | None:
    """The model the run continues from, or None for random weights (or the learner's own model)."""
    init = st.session_state.get("opt_init")
    return None if init in (None, RANDOM, YOUR_BERT) else init


def learner_file() -> str | None:
    """The learner's `FILE[:CLASS]` when the run trains Your BERT (and code may run here), else None."""
    if st.session_state.get("opt_init") != YOUR_BERT or not code_runs_here():
        return None
    return st.session_state.get("train_model_file", "").strip() or None


def _your_bert() -> str | None:
    """The learner's file, as the Your BERT page left it or typed here; returns an error message when none is given."""
    if "train_model_file" not in st.session_state:  # the file last checked on the Your BERT page
        typed = st.session_state.get("build_file", "")
        class_name = st.session_state.get("build_class", "")
        st.session_state["train_model_file"] = f"{typed}:{class_name}" if typed and class_name else typed
    st.text_input(
        run_options.labels()["model_file"],
        key="train_model_file",
        max_chars=MAX_PATH_CHARS,
        placeholder="my_bert/bert.py or my_bert/bert.py:MyBert",
        help=run_options.option_help()["model_file"],
    )
    st.caption(
        "Your model trains at the sizes of the Model section below, with this corpus, masking and optimizer: MLM "
        "from its logits, and NSP when it has an NSP head (otherwise MLM only). Only the training process imports "
        "your file, with the checker's time and memory limits."
    )
    return None if learner_file() else "Give the .py file of your model (FILE or FILE:CLASS)."


def form_options() -> dict:
    """The form's flat options dict (threads excluded); model sizes are left out when starting from a model."""
    names = run_options.form_option_names(from_model=start_model() is not None)
    chosen = {"init": start_model(), "model_file": learner_file()}
    return {name: chosen[name] if name in chosen else st.session_state[f"opt_{name}"] for name in names}


def _check(
    options: dict, corpus: tuple[int, int] | None
) -> tuple[run_options.TrainingArguments | None, str | None]:
    """The run's arguments, or the trainer's refusal (options, then the pairs the corpus gives) as a message."""
    try:
        return run_options.check_form(options, corpus), None
    except OptionError as err:
        return None, str(err)


def _start(options: dict, corpus_text: str | None, name: str) -> None:
    """Start button: launch the run and point the page (and its URL) at it."""
    try:
        run_dir = lifecycle.launch_run(
            options,
            name=name or None,
            corpus_text=corpus_text,
            owner=current_visitor(),
            allow_code=code_runs_here(),
        )
    except (lifecycle.RunLimitError, ValueError, OSError) as err:
        # A refusal of the run this visitor launched moments ago under this name: the same press handled again.
        if not (
            isinstance(err, lifecycle.RunLimitError)
            and (run_dir := lifecycle.just_launched(name, current_visitor()))
        ):
            st.session_state["train_notice"] = ("error", str(err))
            return
    st.session_state["train_notice"] = (
        "success",
        f"Started **{run_dir.name}**: it trains in its own process.",
    )
    st.session_state["train_run"] = run_dir.name
    st.session_state["train_run_name"] = ""  # the name is taken now
    st.session_state["train_started"] = True
    st.query_params["run"] = run_dir.name


def _top_row() -> list[str | None]:
    """Preset, start from, run name; then device and dtype, threads; returns the device's and the name's errors.

    Two rows: in one row of five, half a 1024-px page cut the start-from picker to 'rand'."""
    top = st.columns([1, 2, 2])
    below = st.columns([3, 2])
    with top[0]:
        st.selectbox(
            "Preset",
            list(PRESETS),
            key="train_preset",
            on_change=apply_preset,
            help=run_options.option_help()["preset"],
        )
    with top[1]:
        _start_from()
    with below[0]:
        errors = [_device()]
        st.radio(
            run_options.labels()["dtype"],
            DTYPES,
            key="opt_dtype",
            horizontal=True,
            format_func=DTYPE_LABELS.get,
            help=run_options.option_help()["dtype"],
        )
    with top[2]:
        errors.append(_run_name())
    if st.session_state.get("opt_init") == YOUR_BERT:
        errors.append(_your_bert())
    most = lifecycle.threads_allowed(current_visitor())
    # Written only when out of range (the admin logged out): a write on every rerun sends the server's value back to
    # the box, over a number typed while that rerun ran (the typed threads came back as 0).
    if "opt_threads" in st.session_state and st.session_state["opt_threads"] is None:  # a box left empty
        st.session_state["opt_threads"] = 0
    clamp_number("opt_threads", 0, most)
    below[1].number_input(
        f"CPU threads (0: {lifecycle.training_threads()})",
        min_value=0,
        max_value=most,
        step=1,
        key="opt_threads",
        help=f"At most {most} for a run started here.",
    )
    return errors


def _option_columns() -> None:
    """Every declared option in three columns; the model's sizes only when it starts from random weights."""
    columns = st.columns(3)
    with columns[0]:
        if start_model():
            st.markdown("**Model**")
            st.caption(
                f"Sizes, vocabulary and weights come from {plain_markdown(start_model())}; "
                "missing MLM/NSP heads start fresh."
            )
        else:
            _section("Model")
    with columns[1]:
        _section("Data")
        _section("Logging")
    with columns[2]:
        _section("Optimisation")


@st.fragment
def new_run_form() -> None:
    """Draw the form and its Start button (disabled while an option is invalid).

    A fragment: typing an option reruns the form only, not the charts of the run shown below it.
    """
    if st.session_state.pop("train_started", False):
        st.rerun(scope="app")  # the page below switches to the new run
    if "opt_steps" not in st.session_state:
        st.session_state.setdefault("train_preset", "tiny")
        apply_preset()
    errors = _top_row()
    _option_columns()
    corpus_text, corpus, corpus_error = _corpus()
    options = form_options()
    args, option_error = _check(options, corpus)
    errors = [error for error in (option_error, corpus_error, *errors) if error]
    for error in errors:
        st.error(error)
    if args is not None:
        st.caption(run_options.plan_summary(options))
    launch = (
        {**run_options.command_options(args), "threads": st.session_state["opt_threads"] or None}
        if args
        else {}
    )
    st.button(
        "Start training",
        key="train_start",
        type="primary",
        icon=":material/play_arrow:",
        disabled=bool(errors),
        on_click=_start,
        args=(launch, corpus_text, st.session_state["train_run_name"].strip()),
    )
    notice = st.session_state.pop("train_notice", None)
    if notice:
        (st.error if notice[0] == "error" else st.success)(notice[1])
