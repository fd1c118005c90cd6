#!/usr/bin/env bash
# The GPU checks of issues 42, 43 and 46 in one run on a lent CUDA machine (repository root, $OUT for results):
# the stacked training on CUDA against the CPU (pytest -m gpu), the practice default on digits and charlm with
# --set device=cuda, the other built-in tasks and the wine example with --quick, and the optimizer-step benchmark.
#   OUT=/tmp/out bash benchmarks/gpu_session.sh
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" LPTHEORY_PRACTICE_CACHE=/tmp/lptheory-practice-gpu
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
log="$OUT/session.log"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())"
  timeout 120 python3 -m pytest tests/test_practice_protocol.py -m gpu -q -p no:cacheprovider 2>&1 | tail -3
  t0=$(date +%s)
  timeout 300 python3 -m lptheory check proofs_checks.practice:PACK digits charlm --set device=cuda --jobs 1 \
    --json > "$OUT/practice_cuda.json" 2> "$OUT/practice_cuda.err"
  echo "practice default digits+charlm on cuda: exit $?, $(( $(date +%s) - t0 )) s"
  grep "records in" "$OUT/practice_cuda.err"
  t0=$(date +%s)
  timeout 120 python3 -m lptheory check proofs_checks.practice:PACK digits-cnn cancer --quick --set device=cuda \
    --jobs 1 --json > "$OUT/small_cuda.json" 2>> "$OUT/practice_cuda.err"
  echo "practice quick digits-cnn+cancer on cuda: exit $?, $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  timeout 90 python3 -m lptheory check examples/practice_wine.py --quick --set device=cuda --jobs 1 \
    --json > "$OUT/wine_cuda.json" 2>> "$OUT/practice_cuda.err"
  echo "wine example --quick on cuda: exit $?, $(( $(date +%s) - t0 )) s"
  grep "records in" "$OUT/practice_cuda.err"
  timeout 200 python3 benchmarks/bench_gpu_steps.py --budget-s 170 --out "$OUT"
  echo "bench_gpu_steps: exit $?"
} 2>&1 | tee "$log"
