#!/usr/bin/env bash
# One call on a lent GPU (about 9 minutes): English runs side by side, fitted to a time budget, the CUDA tests
# beside them, the quality bench of each run, and the best run back as a float16 checkpoint in pieces (the device
# tool returns at most 8 files of 16 MiB). Needs .gpu/minilm: a float16 copy of the packaged all-MiniLM-L6-v2
# folder (bench/RESULTS.md, "English model"). A dry run here: DEVICE=cpu TRAIN_MINUTES=0.5 MEASURE_AFTER=20 \
#   EXTRA="--batch-size 8 --eval-pairs 64 --eval-every 100 --snapshot-every 100" bash bench/gpu_english.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-english-out}
TRAIN_MINUTES=${TRAIN_MINUTES:-6.5}
DEVICE=${DEVICE:-cuda}
MEASURE_AFTER=${MEASURE_AFTER:-150}
EXTRA=${EXTRA:-}  # options that override the common ones (a dry run's smaller batches)
PACK_BY=${PACK_BY:-510}  # seconds after the start by which packing starts, whatever is still running
LOGS=/tmp/gpu-english-logs RUNS=/tmp/gpu-english-runs
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
rm -rf "$LOGS" "$RUNS"; mkdir -p "$OUT" "$LOGS" "$RUNS"

{ nvidia-smi -L; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  nproc; free -g | head -2; } > "$LOGS/machine.txt" 2>&1

COMMON=(--init .gpu/minilm --corpus english+everyday --whole-word-mask --mask-repeats --seq-len 128 --batch-size 256
        --eval-fraction 0.02 --eval-pairs 3200 --device "$DEVICE" --steps 6000 --warmup 300 --log-every 100
        --eval-every 500 --snapshot-every 300 --save-every 1000 --threads 2)
# shellcheck disable=SC2206
COMMON+=($EXTRA)
NAMES=(english-v8a english-v8b)
RECIPES=("--lr 2e-4 --copy-penalty 1 --single-sentences 0.3"   # the recipe of bench/RESULTS.md
         "--lr 3e-4 --copy-penalty 1 --single-sentences 0.5")  # faster, more lone sentences (the bench's format)
for i in "${!NAMES[@]}"; do
    # shellcheck disable=SC2086  # a recipe is a list of options
    RAYON_NUM_THREADS=4 OMP_NUM_THREADS=2 python3 bench/train_to_deadline.py --minutes "$TRAIN_MINUTES" \
        --measure-after "$MEASURE_AFTER" -- "${COMMON[@]}" ${RECIPES[$i]} --out "$RUNS/${NAMES[$i]}" > "$LOGS/${NAMES[$i]}.log" 2>&1 &
done
if [ "$DEVICE" = cuda ]; then
    timeout 240 python3 -m pytest tests/model/test_cuda.py -p no:cacheprovider -o addopts="" -q -rA > "$LOGS/cuda_tests.log" 2>&1
fi
wait
echo "trained_by_s=$SECONDS" >> "$LOGS/machine.txt"

left=$((PACK_BY - SECONDS)); [ "$left" -lt 20 ] && left=20
for name in "${NAMES[@]}"; do
    timeout "$left" python3 bench/english_quality.py --model "$RUNS/$name" --threads 4 --no-overlap-check --verbose \
        > "$LOGS/quality-$name.txt" 2>&1 &
done
wait
echo "benched_by_s=$SECONDS" >> "$LOGS/machine.txt"
left=$((PACK_BY - SECONDS))  # batches made ahead against one by one on this GPU, if the minutes allow
if [ "$DEVICE" = cuda ] && [ "$left" -gt 45 ]; then
    timeout 40 python3 bench/prefetch_overlap.py --device cuda --model .gpu/minilm --threads 2 --steps 40 --reps 2 \
        > "$LOGS/prefetch_overlap.txt" 2>&1
fi

best=$(python3 - "$LOGS" "${NAMES[@]}" <<'EOF'
import sys
from pathlib import Path
logs, names = Path(sys.argv[1]), sys.argv[2:]
def score(name):
    path = logs / f"quality-{name}.txt"
    if not path.is_file():
        return -1.0
    values = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and " " not in line)
    try:
        return (float(values["cloze_top1"]) + float(values["cloze_top5"]) + 1 - float(values["copy_rate"])
                + float(values["nsp"]) + float(values["minimal_pairs"]))
    except (KeyError, ValueError):
        return -1.0
print(max(names, key=score))
EOF
)
echo "best=$best packed_at_s=$SECONDS" >> "$LOGS/machine.txt"
rm -f "$RUNS/$best/optimizer.safetensors"
python3 -c "import sys; from bertviz_lite.loading.checkpoints import save_half_precision as h; h(sys.argv[1])" "$RUNS/$best"
tar -C "$RUNS" -cf /tmp/best.tar "$best"
split -b 15M -d /tmp/best.tar "$OUT/best.tar.part"
for name in "${NAMES[@]}"; do cp "$RUNS/$name/metrics.jsonl" "$LOGS/metrics-$name.jsonl" 2>/dev/null; done
tar -C "$LOGS" -czf "$OUT/logs.tgz" .
cat "$LOGS/machine.txt" "$LOGS"/quality-*.txt "$LOGS/prefetch_overlap.txt" 2>/dev/null
tail -n 3 "$LOGS"/english-v8*.log "$LOGS/cuda_tests.log" 2>/dev/null
ls -la "$OUT"
