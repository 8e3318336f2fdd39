#!/usr/bin/env bash
# One training change against its control on a GPU machine (the device tool): both measured on repositories kept out
# of their training, and the changed recipe trained on every repository, the candidate to bring back.
#
#   lab/train/device_ablate.sh BASE_DIR PAIRS OUT HOLDOUT_REPOS "CONTROL_SETS" "CANDIDATE_SETS" QUERY_LENGTHS \
#       [train-encoder args for all three...]
#
# BASE_DIR: the unpacked base model (`python -m lab.train.transport unpack-model`); PAIRS: `pack-pairs` output;
# HOLDOUT_REPOS: comma-separated corpus repositories (a fold of lab/results/encoder/crossfit_folds.json);
# CONTROL_SETS / CANDIDATE_SETS: space-separated SECTION.FIELD=VALUE settings of each recipe; QUERY_LENGTHS:
# space-separated query token windows to measure at. Three models train at once on the one GPU: control and
# candidate without the held-out repositories, and the candidate on every pair. As soon as the two fold models are
# done, `lab.train.encoder_eval` ranks the held-out repositories' queries with the base, the control and the
# candidate, every window at once (OUT/heldout_q<N>.json); the all-corpus candidate is packed into OUT (fp16 parts,
# then meta.tar with its config, tokenizer and card) when it is done, and meta.tar again with every card and log at
# the end. Runs on CPU too (the tests' path).
set -euo pipefail
base=$1 pairs=$2 out=$3 holdout=$4 control_sets=$5 candidate_sets=$6 query_lengths=$7
work=${SEMANTICA_TRAIN_WORK:-/tmp/semantica-train}
python=${PYTHON:-python3}
start=$SECONDS
mkdir -p "$work" "$out"
train() {  # NAME HOLDOUT "SETS": one model, its log in WORK/NAME.log
  local sets=(--set "train_encoder.base_model=$base" --set "train_encoder.holdout_repos=[$2]")
  for s in $3; do sets+=(--set "$s"); done
  $python -m jobs.cli train-encoder --pairs "$pairs" --out "$work/$1" "${sets[@]}" "${@:4}" > "$work/$1.log" 2>&1
}
measure_at() {  # LENGTH: the held-out repositories' queries at one query window
  local repos=()
  for repo in ${holdout//,/ }; do repos+=(--repo "$repo"); done
  $python -m lab.train.encoder_eval --pairs "$pairs" "${repos[@]}" --model "base=$base" \
      --model "control=$work/control" --model "candidate=$work/candidate" \
      --set "train_encoder.query_max_length=$1" --out "$out/heldout_q$1.json" > "$work/eval_q$1.log" 2>&1
  echo "measured at $1 query tokens, $((SECONDS - start)) s"
}
measure() {  # after both fold models: every window at once (one window of 26 repositories took 280 s on an H200)
  local length pids=() failed=0
  for length in $query_lengths; do measure_at "$length" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return $failed
}
pack_meta() {  # config, tokenizer, the train cards and logs so far: written whole each time (tar, then rename)
  local name
  mkdir -p "$work/packed"
  for name in control candidate all; do
    [ -f "$work/$name/train_card.json" ] && cp "$work/$name/train_card.json" "$work/packed/train_card-$name.json"
    [ -f "$work/$name.log" ] && cp "$work/$name.log" "$work/packed/"
  done
  cp "$work"/eval_q*.log "$work/packed/" 2>/dev/null || true
  tar -C "$work/packed" -cf "$out/meta.tar.part" . && mv "$out/meta.tar.part" "$out/meta.tar"
}
pids=()
train all "" "$candidate_sets" "${@:8}" & all_pid=$!
( train control "$holdout" "$control_sets" "${@:8}" & c=$!
  train candidate "$holdout" "$candidate_sets" "${@:8}" & d=$!
  wait $c && wait $d && echo "fold models trained, $((SECONDS - start)) s" && measure ) & pids+=($!)
failed=0
wait "$all_pid" || failed=1
echo "all-corpus candidate trained, $((SECONDS - start)) s"
if [ "$failed" = 0 ]; then
  # packed before the measurement finishes: a call cut short by its time limit still brings the candidate back
  rm -rf "$work/packed"
  $python -m lab.train.transport pack-model "$work/all" "$work/packed"
  mv "$work"/packed/model.safetensors.part-* "$out"/
  pack_meta
fi
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for name in control candidate all; do grep -v "^step" "$work/$name.log" | tail -n 3 || true; done
pack_meta
echo "done, $((SECONDS - start)) s"
[ "$failed" = 0 ] || { echo "a training or measurement failed"; exit 1; }
ls -la "$out"
