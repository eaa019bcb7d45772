"""The preparation pool tests' own worker tasks, in a module a spawned worker imports without torch (the test
module imports it: each worker started with a task from there paid about 1.5 s of CPU for it)."""

from __future__ import annotations

import os


def dies(*_args: object) -> None:
    os._exit(3)  # a worker crashing hard (a segfault in a native library looks the same to the pool)


def no_setup(_setup: object) -> None:
    pass
