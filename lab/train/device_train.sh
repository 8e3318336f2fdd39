#!/usr/bin/env bash
# Fine-tune the bi-encoder where a GPU is lent (the device tool), and pack what comes back.
#
#   lab/train/device_train.sh BASE_PACKED PAIRS OUT VALIDATION_REPOS TEST_REPOS BUDGET_S
#
# BASE_PACKED: `python -m lab.train.transport pack-model` output (MiniLM in fp16 parts); PAIRS: `pack-pairs` output;
# VALIDATION_REPOS / TEST_REPOS: comma-separated repositories held out of training (both lists). Each setting in
# SETTINGS below trains on the other repositories while BUDGET_S seconds last; the one with the best mean commit
# MRR@10 on the validation repositories is packed into OUT (fp16 parts + meta.tar: config, tokenizer, train card,
# held-out measurements), and its test-repository numbers are the ones to report. Runs on CPU too (the tests' path).
set -euo pipefail
base_packed=$1 pairs=$2 out=$3 validation=$4 test=$5 budget=$6
work=${SEMANTICA_TRAIN_WORK:-/tmp/semantica-train}
SETTINGS=("train_encoder.epochs=1" "train_encoder.epochs=3 train_encoder.learning_rate=5e-5")
python=${PYTHON:-python3}
start=$SECONDS
mkdir -p "$work" "$out"
[ -f "$work/base/model.safetensors" ] || $python -m lab.train.transport unpack-model "$base_packed" "$work/base"
holdout="[$validation,$test]"
repo_args=()
for repo in ${validation//,/ } ${test//,/ }; do repo_args+=(--repo "$repo"); done
best="" best_mrr=-1
for n in "${!SETTINGS[@]}"; do
  if [ -n "$best" ] && [ $((SECONDS - start)) -gt $((budget / 2)) ]; then
    echo "setting $n skipped: $((SECONDS - start)) s of $budget used"; continue
  fi
  sets=(--set "train_encoder.base_model=$work/base" --set "train_encoder.holdout_repos=$holdout")
  for s in ${SETTINGS[$n]}; do sets+=(--set "$s"); done
  $python -m jobs.cli train-encoder --pairs "$pairs" --out "$work/tuned-$n" "${sets[@]}" "${@:7}"
  $python -m lab.train.encoder_eval --pairs "$pairs" "${repo_args[@]}" --model "minilm=$work/base" \
      --model "tuned=$work/tuned-$n" --out "$work/tuned-$n/heldout_eval.json"
  mrr=$($python -c "from lab.train.encoder_eval import mean_mrr; print(mean_mrr('$work/tuned-$n/heldout_eval.json', '$validation'))")
  echo "setting $n (${SETTINGS[$n]}): validation commit MRR@10 $mrr, $((SECONDS - start)) s"
  if $python -c "import sys; sys.exit(0 if float('$mrr') > float('$best_mrr') else 1)"; then best=$n best_mrr=$mrr; fi
done
echo "chosen: setting $best (${SETTINGS[$best]})" | tee "$work/tuned-$best/chosen.txt"
rm -rf "$work/packed"
$python -m lab.train.transport pack-model "$work/tuned-$best" "$work/packed"
mv "$work"/packed/model.safetensors.part-* "$out"/
for n in "${!SETTINGS[@]}"; do
  [ -f "$work/tuned-$n/heldout_eval.json" ] && cp "$work/tuned-$n/heldout_eval.json" "$work/packed/heldout_eval-$n.json"
  [ -f "$work/tuned-$n/train_card.json" ] && cp "$work/tuned-$n/train_card.json" "$work/packed/train_card-$n.json"
done
tar -C "$work/packed" -cf "$out/meta.tar" .
ls -la "$out"
