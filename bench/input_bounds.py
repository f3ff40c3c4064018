"""The worst visitor inputs found (issue 30) fed through the package functions the pages call: each must be refused
with a sentence within 1 s of CPU and 100 MB of memory.

    python bench/input_bounds.py           # every case
    python bench/input_bounds.py --smoke   # a smaller safetensors header to build; the smoke test runs this

One line per case, key=value: case, refused (the refusal's first words), cpu_s (process CPU time of the call),
peak_mb (growth of the process's peak resident memory during the call, measured from a reset peak), within_budget.
The inputs themselves are built before the measurement: they arrive in the server as a widget's or a link's value.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.inspection import explore  # noqa: E402
from bertviz_lite.inspection.views import meaning_in_context as meaning  # noqa: E402
from bertviz_lite.inspection.views import why_this_word  # noqa: E402
from bertviz_lite.loading.pretrained import MINILM, load_tokenizer  # noqa: E402
from bertviz_lite.loading.run_folder import validate_run_name  # noqa: E402
from bertviz_lite.runs import run_options, upload  # noqa: E402
from bertviz_lite.server import access, app_routes, upload_gate  # noqa: E402
from bertviz_lite.text.corpora.senses import sense_index  # noqa: E402

MB = 1 << 20
CPU_BUDGET_S = 1.0
MEMORY_BUDGET_MB = 100


def kib(field: str) -> int:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))


def measure(action: Callable[[], object]) -> tuple[str, float, float]:
    """(the refusal's text, CPU seconds, peak resident growth in MB) of an action that must raise ValueError."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak starts again from here
    before = kib("VmRSS")
    cpu = time.process_time()
    try:
        action()
        refusal = "ACCEPTED"
    except ValueError as err:  # CheckpointError and OptionError are ValueErrors
        refusal = " ".join(str(err).split()[:8])
    return refusal, time.process_time() - cpu, (kib("VmHWM") - before) / 1024


def empty_tensor_zip(folder: Path, count: int = 800_000) -> bytes:
    """A checkpoint zip whose model.safetensors is a header of `count` empty tensors (47 MB, 2 MB zipped)."""
    header = json.dumps(
        {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(count)}
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("m/config.json", (folder / "config.json").read_bytes())
        archive.writestr("m/vocab.txt", (folder / "vocab.txt").read_bytes())
        archive.writestr("m/model.safetensors", len(header).to_bytes(8, "little") + header.encode())
    return buffer.getvalue()


class _LiveSessions:
    """The one thing Streamlit's upload route asks of its runtime: is this session live?"""

    def is_active_session(self, session_id: str) -> bool:
        return True


def _upload_route(manager):
    """Streamlit's own PUT upload route (ASGI), storing into `manager`, its HTTP errors answered as the server does
    (no XSRF check: the bench sends no cookie)."""
    from starlette.middleware.exceptions import ExceptionMiddleware
    from streamlit import config
    from streamlit.web.server.starlette.starlette_routes import create_upload_routes

    config.set_option("server.enableXsrfProtection", False)
    route = next(r for r in create_upload_routes(_LiveSessions(), manager, None) if "PUT" in r.methods)
    return ExceptionMiddleware(route.app)


def send_upload(app, session: str, megabytes: int, *, declared: bool, chunk: int = 64 * 1024) -> int:
    """PUT `megabytes` of one file through `app` as a browser would (multipart; Content-Length or chunked)."""
    boundary = b"bench"
    head = b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'
    pieces = [head] + [b"x" * chunk] * (megabytes * MB // chunk) + [b"\r\n--" + boundary + b"--\r\n"]
    length = sum(map(len, pieces))
    headers = [(b"content-type", b"multipart/form-data; boundary=" + boundary)]
    headers += [(b"content-length", str(length).encode())] if declared else []
    file_id = f"file-{megabytes}-mb"
    scope = {
        "type": "http",
        "method": "PUT",
        "path": f"{upload_gate.UPLOAD_PATH}{session}/{file_id}",
        "path_params": {"session_id": session, "file_id": file_id},
        "headers": headers,
        "client": ("203.0.113.9", 1),
        "query_string": b"",
    }
    answers = []

    async def receive():
        return {"type": "http.request", "body": pieces.pop(0) if pieces else b"", "more_body": bool(pieces)}

    async def send(message):
        answers.append(message)

    import asyncio

    asyncio.run(app(scope, receive, send))
    return answers[0]["status"]


def refused_upload(app, session: str, megabytes: int, declared: bool) -> None:
    status = send_upload(app, session, megabytes, declared=declared)
    if status >= 400:
        raise ValueError(f"HTTP {status}")


def upload_cases(megabytes: int) -> dict[str, Callable[[], object]]:
    """Uploads past a page's limit, to a page with no uploader, and over what a session may hold, sent to Streamlit's
    own upload route behind the gate (the corpus uploader takes 5 MB)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    corpus_page = "corpus page"
    holding_one = "corpus page holding a file"
    no_uploader = "tokens page"
    for session in (corpus_page, holding_one):
        upload_gate.GATE.allow(session, run_options.MAX_CORPUS_BYTES)

    gated = upload_gate.wrap(
        _upload_route(manager), *app_routes.held_uploads(manager)
    )  # as app.py installs it
    assert send_upload(gated, holding_one, 4, declared=True) == 204  # a 4 MB corpus the page took: held
    return {
        f"upload_{megabytes}mb_declared": lambda: refused_upload(gated, corpus_page, megabytes, True),
        f"upload_{megabytes}mb_chunked": lambda: refused_upload(gated, corpus_page, megabytes, False),
        f"upload_{megabytes}mb_page_without_uploader": lambda: refused_upload(
            gated, no_uploader, megabytes, False
        ),
        "upload_3mb_beside_a_held_4mb": lambda: refused_upload(gated, holding_one, 3, True),
    }


def ungated_upload(megabytes: int) -> tuple[int, float]:
    """The reference: what Streamlit's route alone holds after the chunked upload the gate refuses (MB resident)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    before = kib("VmRSS")
    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    status = send_upload(_upload_route(manager), "corpus", megabytes, declared=False)
    return status, (kib("VmRSS") - before) / 1024


def cases(root: Path, tensors: int = 800_000) -> dict[str, Callable[[], object]]:
    """The worst inputs, each as the call a page makes with it (`tensors`: 800,000 empty ones make a 47 MB header)."""
    tokenizer = load_tokenizer(MINILM)
    sentence = "bank " * 600_000  # 3 MB; 1 MB
    words = "bank " * 200_000
    bomb = empty_tensor_zip(REPO / "checkpoints" / "demo-tiny", tensors)
    tiny = run_options.preset_options("tiny")
    english = {
        **{k: v for k, v in tiny.items() if k not in run_options.MODEL_FIELDS},
        "init": "minilm-english",
    }
    corpus = ("A sentence of the corpus. " * 240_000).encode()  # 6.2 MB
    index = sense_index()
    return {
        "sentence_3mb": lambda: explore.encode(tokenizer, sentence, None, 128),
        "your_sentences_1mb": lambda: meaning.user_lines(words),
        "your_sentences_lines_bypassing_the_page": lambda: meaning.gather_occurrences(
            index, "bank", [words] * 10
        ),
        "candidate_word_3mb": lambda: why_this_word.candidate_id(tokenizer, sentence),
        "run_name_1mb": lambda: validate_run_name("/" + "n" * MB),
        "corpus_6mb": lambda: run_options.corpus_summary(corpus),
        "safetensors_800000_empty_tensors": lambda: upload.import_zip(bomb, "bomb", root),
        "form_num_documents_1e9": lambda: run_options.check_form({**tiny, "num_documents": 10**9}),
        "form_steps_10e5000": lambda: run_options.check_form({**tiny, "steps": 10**5000}),
        "form_minilm_english_batch_1024": lambda: run_options.check_form({**english, "batch_size": 1024}),
        "path_5000_chars": lambda: access.check_model_source("/" + "a" * 5000),
        "path_other_users_home": lambda: access.check_model_source("~nosuchuser123/model"),
        "path_proc": lambda: access.check_model_source("/proc/1/root/x"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tensors", type=int, default=800_000, help="empty tensors the bomb's header names")
    parser.add_argument("--upload-mb", type=int, default=200, help="megabytes of the hostile uploads")
    add_smoke_flag(parser, argv, tensors=20_000, upload_mb=20)
    args = parser.parse_args(argv)
    worst_cpu = 0.0
    worst_mb = 0.0
    with tempfile.TemporaryDirectory() as folder:
        every = {**cases(Path(folder), args.tensors), **upload_cases(args.upload_mb)}
        for name, action in every.items():
            refusal, cpu_s, peak_mb = measure(action)
            worst_cpu = max(worst_cpu, cpu_s)
            worst_mb = max(worst_mb, peak_mb)
            within = refusal != "ACCEPTED" and cpu_s <= CPU_BUDGET_S and peak_mb <= MEMORY_BUDGET_MB
            print(
                f"case={name} cpu_s={cpu_s:.4f} peak_mb={peak_mb:.1f} within_budget={within} refused={refusal!r}",
                flush=True,
            )
    status, held_mb = ungated_upload(args.upload_mb)
    print(
        f"reference=ungated_upload_{args.upload_mb}mb_chunked status={status} resident_growth_mb={held_mb:.1f}"
    )
    print(
        f"worst_cpu_s={worst_cpu:.4f} worst_peak_mb={worst_mb:.1f} cpu_budget_s={CPU_BUDGET_S} "
        f"memory_budget_mb={MEMORY_BUDGET_MB}"
    )


if __name__ == "__main__":
    main()
