"""`python -m bertviz_lite.train`: the training command line (it lives in `bertviz_lite.training.cli`)."""

import os
import sys

# oneDNN keeps a kernel, with a packed copy of its weights, for every matmul shape it meets, up to 1,024 of them;
# in bf16 on the CPU batch shapes vary (pairs padded to the longest), so a run grew by ~40 MB a step and was killed
# at 24 GB (bench/RESULTS.md). A few shapes suffice: set before torch's first matmul, in the training process only.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")

from bertviz_lite.training.cli import main  # noqa: E402 (after the variable, which oneDNN reads on first use)

if __name__ == "__main__":
    sys.exit(main())
