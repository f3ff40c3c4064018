"""What an exported file weighs and costs to build (issue 35): the lesson and the attention views, by pair length.

For each pair length (the default pair repeated, cut to N tokens with --max-length N), builds with bertviz_lite.export
the lesson and each attention view with its pickers, and prints one key=value line per file: its size, the part that
is plotly.js (packed alone, measured in the same run: the floor every file pays), the figures' data before and after
packing, the number of figures and the seconds to build it (trace excluded). Goal (issue 35): a lesson for a 30-token
pair with minilm-english under 5 MB.

    python bench/export_size.py [--model minilm-english] [--tokens 30 64 128]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import sys
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._smoke import add_smoke_flag  # noqa: E402
from bertviz_lite.export import About, lesson_trace  # noqa: E402
from bertviz_lite.export.__main__ import WRITERS  # noqa: E402
from bertviz_lite.export.page import packed_plotly_js  # noqa: E402
from bertviz_lite.limits import MB  # noqa: E402
from bertviz_lite.loading.pretrained import DEFAULT_MODEL, load  # noqa: E402

TEXT_A = "The quick brown fox jumps over the lazy dog near the river bank."  # with TEXT_B: 30 tokens in minilm-english
TEXT_B = "It was tired after running all day in the hot summer sun."
MORE = " Then it walked home along the old road and slept until the next morning came."


def pair_of(tokens: int) -> tuple[str, str]:
    """The default pair, lengthened until it has at least `tokens` tokens (max length then cuts it)."""
    text_b = TEXT_B
    while len((TEXT_A + text_b).split()) < tokens:
        text_b += MORE
    return TEXT_A, text_b


def data_of(page: str, element: str) -> str:
    """The base64 text a page's <script id=element> holds (gzip inside)."""
    return page.split(f'id="{element}">', 1)[1].split("</script>", 1)[0]


def measure(kind: str, build, model_name: str, tokens: int) -> str:
    started = time.perf_counter()
    page = build()
    seconds = time.perf_counter() - started
    packed = data_of(page, "bvl-data")
    data = gzip.decompress(base64.b64decode(packed))
    size = len(page.encode("utf-8"))
    return (
        f"kind={kind} model={model_name} tokens={tokens} file_mb={size / MB:.2f} "
        f"plotly_js_mb={len(data_of(page, 'bvl-plotly')) / MB:.2f} data_json_mb={len(data) / MB:.2f} "
        f"data_packed_mb={len(packed) / MB:.2f} figures={len(json.loads(data)['figures'])} build_s={seconds:.2f} "
        f"under_5_mb={size < 5 * MB}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--tokens", type=int, nargs="+", default=[30, 64, 128])
    add_smoke_flag(parser, argv, model="demo-tiny", tokens=[30])
    args = parser.parse_args(argv)
    model, tokenizer = load(args.model)
    packed_plotly_js()  # once per process: not part of any file's build time
    for tokens in args.tokens:
        text_a, text_b = pair_of(tokens) if tokens > 30 else (TEXT_A, TEXT_B)
        trace = lesson_trace(model, tokenizer, text_a, text_b, max_length=tokens)
        about = About(args.model, text_a, text_b)
        for kind, write in WRITERS.items():  # the files `python -m bertviz_lite.export --view KIND` writes
            print(measure(kind, partial(write, trace, about), args.model, trace.num_tokens))


if __name__ == "__main__":
    main()
