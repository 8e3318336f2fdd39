#!/usr/bin/env bash
# Cross-fitted encoders on a GPU machine (the device tool), and the cosines the corpus and dev studies read back.
#
#   lab/train/device_crossfit.sh BASE_DIR PAIRS TEXTS_DIR OUT FOLD_A FOLD_B QUERY_LENGTH [train-encoder args...]
#
# BASE_DIR: the unpacked base model (`python -m lab.train.transport unpack-model`); PAIRS: `pack-pairs` output;
# TEXTS_DIR: the studies' `--record` files (*.parquet); FOLD_A / FOLD_B: comma-separated corpus repositories.
# Three models train with the same settings: fold-a on fold A's pairs, fold-b on fold B's, all on every pair.
# Each study text is encoded by the model that never trained on its repository (fold A's repositories by fold-b,
# fold B's by fold-a; other groups, the dev split, by all), so the corpus study measures every repository out of
# fold. The all model is the candidate to ship: packed into OUT (first) with the three train cards, then the cosines.
set -euo pipefail
base=$1 pairs=$2 texts=$3 out=$4 fold_a=$5 fold_b=$6 query_length=$7
work=${SEMANTICA_TRAIN_WORK:-/tmp/semantica-train}
python=${PYTHON:-python3}
start=$SECONDS
mkdir -p "$work" "$out"
train() {  # NAME HOLDOUT: one model, its log in WORK/NAME.log
  $python -m jobs.cli train-encoder --pairs "$pairs" --out "$work/$1" --set "train_encoder.base_model=$base" \
      --set "train_encoder.holdout_repos=[$2]" "${@:3}" > "$work/$1.log" 2>&1
}
# The three share the GPU at once: a MiniLM step at batch 128 leaves it mostly idle (tokenising is the bound).
pids=()
train fold-a "$fold_b" "${@:8}" & pids+=($!)
train fold-b "$fold_a" "${@:8}" & pids+=($!)
train all "" "${@:8}" & pids+=($!)
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for name in fold-a fold-b all; do grep -v "^step" "$work/$name.log" | tail -n 3; done
[ "$failed" = 0 ] || { echo "a training failed"; exit 1; }
echo "trained, $((SECONDS - start)) s"
# The all-corpus model is packed first: a call cut short by its time limit still brings the candidate back.
rm -rf "$work/packed"
$python -m lab.train.transport pack-model "$work/all" "$work/packed"
mv "$work"/packed/model.safetensors.part-* "$out"/
for name in fold-a fold-b all; do
  cp "$work/$name/train_card.json" "$work/packed/train_card-$name.json"; cp "$work/$name.log" "$work/packed/"
done
tar -C "$work/packed" -cf "$out/meta.tar" .
echo "packed, $((SECONDS - start)) s"
# Each recorded file (`lab.train.text_vectors split` cuts one by fold) is encoded in its own process, all at once.
pids=()
for recorded in "$texts"/*.parquet; do
  $python -m lab.train.text_vectors encode --texts "$recorded" --query-length "$query_length" \
      --out "$out/$(basename "$recorded" .parquet).cosines.npz" \
      --model "$fold_a=$work/fold-b" --model "$fold_b=$work/fold-a" --model "*=$work/all" & pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
echo "encoded, $((SECONDS - start)) s"
[ "$failed" = 0 ] || { echo "an encoding failed"; exit 1; }
ls -la "$out"
