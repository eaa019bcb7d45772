"""Every test here runs with known test AWS credentials and none of the developer's AWS config."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _test_aws_environment(aws_env: None) -> None:
    """See ``tests.support.stand_in.aws_env``."""
