"""Checkpoints: every run folder with its state and numbers; use, rename, delete, download, upload, export."""

import os
from functools import partial

import pandas as pd
import streamlit as st

from bertviz_lite.check.learner_explore import open_learner_run
from bertviz_lite.check.learner_run import checkpoint_note
from bertviz_lite.limits import MAX_NAME_CHARS
from bertviz_lite.loading.run_folder import checkpoints_root
from bertviz_lite.runs import store, upload
from bertviz_lite.server.code_gate import code_allowed
from bertviz_lite.text.display import plain_markdown
from bertviz_lite.training.metrics import METRICS, TABLE_METRICS
from pages_app.build._learner_source import add_learner
from pages_app.common._state import keep_choice
from pages_app.common._visitor import current_visitor
from pages_app.train._admin import admin_login
from pages_app.train._uploads import bounded_file_uploader, let_go

COLUMNS = {
    "name": st.column_config.TextColumn("Name"),
    "state": st.column_config.TextColumn("State"),
    "steps": st.column_config.NumberColumn("Steps"),
    **{
        key: st.column_config.NumberColumn(
            METRICS[key].column_label, format="percent" if METRICS[key].percent else "%.3f"
        )
        for key in TABLE_METRICS
    },
    "size_mb": st.column_config.NumberColumn("Size (MB)", format="%.2f"),
    "date": st.column_config.TextColumn("Date"),
    "loadable": st.column_config.CheckboxColumn("Has weights"),
}

COMPACT = (
    "name",
    "state",
    "steps",
    "eval_mlm_acc",
    "eval_nsp_acc",
)  # what fits beside the sidebar at 1024 px


def notify(kind: str, text: str) -> None:
    st.session_state["ckpt_notice"] = (kind, text)


def use_on_explore(name: str) -> None:
    st.session_state["model_picker"] = name
    notify("success", f"**{name}** is now the model of the explore pages (the sidebar's model picker).")


def use_learner_on_explore(folder) -> None:
    """A run that trained a learner's own model: their model with the run's weights, run in the checker's process."""
    try:
        opened = open_learner_run(folder)
    except (ValueError, OSError) as err:
        notify("error", str(err))
        return
    add_learner(opened)
    use_on_explore(opened.key)


def rename(old: str) -> None:
    new = st.session_state["ckpt_new_name"].strip()
    try:
        store.rename_checkpoint(old, new, visitor=current_visitor())
    except (ValueError, OSError) as err:
        notify("error", str(err))
        return
    for key in ("model_picker", "ckpt_selected"):
        if st.session_state.get(key) == old:
            st.session_state[key] = new
    notify("success", f"Renamed **{old}** to **{new}**.")


def delete(name: str) -> None:
    try:
        store.delete_checkpoint(name, visitor=current_visitor())
    except (ValueError, OSError) as err:
        notify("error", str(err))
        return
    st.session_state["ckpt_confirm_delete"] = False
    notify("success", f"Deleted **{name}**.")


def add_upload(uploader_key: str) -> None:
    name = st.session_state["ckpt_upload_name"].strip()
    chosen = st.session_state.get(uploader_key)
    if chosen is None:
        return
    try:
        upload.import_zip(chosen, name, owner=current_visitor())  # read from the upload itself: no copy kept
    except (ValueError, OSError) as err:
        notify("error", f"Upload refused: {err}")
        return
    let_go(chosen)
    st.session_state["ckpt_upload_round"] = (
        st.session_state.get("ckpt_upload_round", 0) + 1
    )  # empties the uploader
    st.session_state["ckpt_selected"] = name
    notify("success", f"Added **{name}**: it is in the model picker now.")


def use_and_download(row: dict) -> None:
    """Use on the explore pages, download the zip, export for transformers: open to every visitor."""
    name = row["name"]
    folder = checkpoints_root() / row["name"]
    learner = checkpoint_note(folder)  # a learner's own model: their weights, their names
    if learner:
        st.info(plain_markdown(learner))
    runs_code = code_allowed(st.get_option("server.address"), os.environ)[0]
    buttons = st.container(
        horizontal=True
    )  # each as wide as its label (in thirds, "Export as Hugging…" was cut)
    buttons.button(
        "Use on explore pages",
        key="ckpt_use",
        on_click=use_learner_on_explore if learner else use_on_explore,
        args=(folder,) if learner else (name,),
        disabled=not (row["loadable"] or (learner and runs_code)),
        icon=":material/visibility:",
        type="primary",
    )
    buttons.download_button(
        "Download zip",
        data=partial(store.checkpoint_zip, folder),
        file_name=f"{name}.zip",
        mime="application/zip",
        key="ckpt_download",
        on_click="ignore",
        disabled=not row["loadable"],
        icon=":material/download:",
    )
    buttons.download_button(
        "Export as Hugging Face folder",
        data=partial(store.hf_export_zip, folder),
        file_name=f"{name}-hf.zip",
        mime="application/zip",
        key="ckpt_export",
        on_click="ignore",
        disabled=not row["loadable"],
        icon=":material/ios_share:",
        help="model.safetensors, config.json and vocab.txt: "
        "transformers' BertForPreTraining.from_pretrained loads the folder.",
    )


def rename_and_delete(name: str) -> None:
    """Rename and Delete, when store.change_refusal allows them (disabled while the run trains)."""
    refusal = store.change_refusal(name, current_visitor())
    # Why a control is missing or disabled is said with st.info, not a caption: presentation mode hides captions.
    if refusal == store.SHIPPED:
        st.info(f"{name} ships with bertviz-lite: it cannot be renamed or deleted.")
        return
    if refusal == store.NOT_YOURS:
        st.info(
            f"{name} was started or uploaded on another browser: only its owner, a browser that opened the "
            "owner's claim link (on the Train page), or the admin can rename or delete it. You can still use it, "
            "download it and export it.",
            icon=":material/lock:",
        )
        admin_login()
        return
    busy = refusal == store.TRAINING
    if busy:
        st.info(f"{name} is training: stop it on the Train page before renaming or deleting it.")
    left, right = st.columns(2)
    with left:
        st.text_input(
            "New name", key="ckpt_new_name", placeholder="letters, digits, . _ -", max_chars=MAX_NAME_CHARS
        )
        st.button("Rename", key="ckpt_rename", on_click=rename, args=(name,), disabled=busy)
    with right:
        sure = st.checkbox(f"Yes, delete {name} and all its files", key="ckpt_confirm_delete", disabled=busy)
        st.button(
            "Delete",
            key="ckpt_delete",
            on_click=delete,
            args=(name,),
            disabled=busy or not sure,
            icon=":material/delete:",
        )


def upload_form() -> None:
    key = f"ckpt_upload_{st.session_state.get('ckpt_upload_round', 0)}"
    chosen = bounded_file_uploader(
        "A zip of a checkpoint folder: model.safetensors, config.json, vocab.txt "
        "(and optionally train_args.json, metrics.jsonl, snapshots/)",
        limit_bytes=upload.MAX_ZIP_BYTES,
        type=["zip"],
        key=key,
    )
    if chosen is None:
        return
    if st.session_state.get("ckpt_upload_for") != chosen.file_id:
        st.session_state["ckpt_upload_for"] = chosen.file_id
        st.session_state["ckpt_upload_name"] = upload.suggested_name(chosen.name, chosen)
    st.text_input("Name of the new checkpoint", key="ckpt_upload_name", max_chars=MAX_NAME_CHARS)
    st.button("Add checkpoint", key="ckpt_add", on_click=add_upload, args=(key,), icon=":material/upload:")


st.header("Checkpoints")
upload.remove_abandoned_staging()  # a server stopped mid-upload left its staging folder
rows = store.checkpoint_table()
notice = st.session_state.pop("ckpt_notice", None)
if notice:
    (st.error if notice[0] == "error" else st.success)(notice[1])
if rows:
    table = pd.DataFrame(rows)
    # A few columns by default: all thirteen were cut off on a 1024-px screen with the sidebar open.
    every = st.toggle(
        "All columns",
        key="ckpt_all_columns",
        help="Train and held-out losses and accuracies, size, date and whether the folder has weights.",
    )
    st.dataframe(
        table,
        key="ckpt_table",
        hide_index=True,
        width="stretch",
        column_order=None if every else [k for k in COMPACT if k in table],
        column_config={k: v for k, v in COLUMNS.items() if k in table},
    )
    names = [row["name"] for row in rows]
    keep_choice("ckpt_selected", names, names[0], start=True)
    st.subheader("Manage")
    selected = st.selectbox("Checkpoint", names, key="ckpt_selected")
    use_and_download(rows[names.index(selected)])
    rename_and_delete(selected)
else:
    st.info("No checkpoint yet: train one on the Train page, or upload a zip below.")
st.subheader("Upload a checkpoint")
upload_form()
