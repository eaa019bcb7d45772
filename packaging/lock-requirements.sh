#!/usr/bin/env bash
# Regenerates packaging/requirements-endpoint.txt, requirements-build.txt and requirements-lang-*.txt, the hash-locked requirements
# the endpoint image installs with `pip install --require-hashes`, from the .in files beside them, for the
# image's platform (Linux x86_64, glibc 2.28+, CPython 3.12) whatever machine runs it. Needs PyPI and uv
# (`pip install uv`; or set UV=/path/to/uv). tests/endpoint/test_requirements_lock.py checks the result
# against the .in files and pyproject.toml.
#
# Usage: bash packaging/lock-requirements.sh [--upgrade]
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
for name in build endpoint; do
    "$UV" pip compile "packaging/requirements-$name.in" \
        --output-file "packaging/requirements-$name.txt" \
        --generate-hashes \
        --python-version 3.12 \
        --python-platform x86_64-manylinux_2_28 \
        --index-url https://pypi.org/simple \
        --custom-compile-command "bash packaging/lock-requirements.sh" \
        --no-strip-extras \
        --quiet \
        "$@"
done
# The optional languages' G2P packages (docker build --build-arg LANGUAGES=...), within the endpoint lock's
# versions of anything they share with it (numpy, pydantic).
for lang in ja zh; do
    "$UV" pip compile "packaging/requirements-lang-$lang.in" \
        --output-file "packaging/requirements-lang-$lang.txt" \
        --constraint packaging/requirements-endpoint.txt \
        --generate-hashes \
        --python-version 3.12 \
        --python-platform x86_64-manylinux_2_28 \
        --index-url https://pypi.org/simple \
        --custom-compile-command "bash packaging/lock-requirements.sh" \
        --no-strip-extras \
        --quiet \
        "$@"
done
