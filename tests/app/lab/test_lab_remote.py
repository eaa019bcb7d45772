"""The lab through the CLI against the remote engines: ``--engine sagemaker NAME`` (the real HTTP/2 SDK client,
the SageMaker stand-in with hypercorn and TLS, the endpoint container on 127.0.0.1) and ``--engine websocket URL``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.lab.conftest import SEED
from tests.support.stand_in import ENDPOINT, TEST_KEY_ID, TEST_SECRET, StandInThread
from voicedesk.app.lab.sagemaker_local.auth import CredentialCheck
from voicedesk.app.lab.sagemaker_local.config import ContainerTarget, StandInConfig
from voicedesk.engine.commands import main
from voicedesk.engine.measure.timeline import UtteranceTimeline

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("aws_env")]


@pytest.fixture
def stand_in(bench_container, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInThread]:
    config = StandInConfig(
        ContainerTarget(bench_container.http_url),
        endpoint_names=frozenset({ENDPOINT}),
        credentials=CredentialCheck({TEST_KEY_ID: TEST_SECRET}),
    )
    running = StandInThread(config, tmp_path / "sagemaker-local").start()
    # How a developer points the unchanged SDK at the stand-in (see `voicedesk sagemaker-local`).
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", running.url)
    monkeypatch.setenv("AWS_CA_BUNDLE", str(running.ca_file))
    yield running
    running.stop()


def test_seed_check_through_sagemaker_and_transport_says_why_it_cannot_run(stand_in, tmp_path: Path, capsys):
    text_file = tmp_path / "reply.txt"
    text_file.write_text(" ".join(SEED), encoding="utf-8")
    argv = ["bench", "lab", "--scenarios", "seed,transport", "--engine", "sagemaker", ENDPOINT]
    argv += ["--repeat", "1", "--text-file", str(text_file), "--json", "-"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout is the JSON alone; progress went to stderr
    assert "seed: repeat 1/1" in captured.err
    assert document["engine"] == f"sagemaker {ENDPOINT}"
    seed, transport = document["scenarios"]
    assert seed["summary"]["one_segment_per_sentence"] is True
    assert seed["summary"]["one_sentence_per_request"] is True
    assert [row["text"] for row in seed["summary"]["sentences"]] == list(SEED)
    for run in seed["runs"]:
        assert run["errors"] == [] and run["notes"] == []
        timeline = run["timeline"]
        assert UtteranceTimeline.from_dict(timeline).to_dict() == timeline
        assert timeline["problems"] == []
        (sentence,) = timeline["sentences"]
        assert sentence["ttfa_s"] >= sentence["steps"]["ttfb_s"] > 0
        assert sentence["synthesis_s"] > 0  # the container reports it in sentence_end
    assert transport["skipped"].startswith("sagemaker voicedesk-test offers no SSE route")
    assert transport["runs"] == []


def test_play_without_a_usable_output_reports_the_dac_stages_absent(bench_container, tmp_path: Path, capsys):
    """Through the websocket engine; output device 9999 exists nowhere, so there is no sound output here."""
    text_file = tmp_path / "reply.txt"
    text_file.write_text(SEED[0], encoding="utf-8")
    argv = ["bench", "seed", "--engine", "websocket", bench_container.ws_url, "--play", "--output-device", "9999"]
    argv += ["--repeat", "1", "--text-file", str(text_file), "--json", "-"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["dac"]["available"] is False
    assert document["dac"]["why"].startswith("no sound output: Cannot open the audio output")
    assert "measuring without the DAC stages" in captured.err
    (seed,) = document["scenarios"]
    (run,) = seed["runs"]
    (sentence,) = run["timeline"]["sentences"]
    assert sentence["text"] == SEED[0]
    assert sentence["dac_at_s"] is None and sentence["underruns"] is None  # absent, not invented
    assert sentence["first_audible_at_s"] is not None
