"""`voicedesk deploy` against moto running as a real HTTP server on 127.0.0.1 (boto3 unpatched, real HTTP).

moto lags SageMaker in ways that matter here; ``tests/endpoint/deploy/moto_sagemaker.py`` brings its fake services
(the server side, never boto3 or our code) up to date. Autoscaling has its own file, test_autoscaling.py.
"""

from __future__ import annotations

import boto3
import pytest

from tests.endpoint.deploy import moto_sagemaker
from tests.endpoint.deploy.moto_sagemaker import IMAGE, ROLE, deploy_args, moto_endpoint
from tests.support.stand_in import REGION
from voicedesk.endpoint.deploy import Deployer, DeploySettings, plan_deploy, resource_name
from voicedesk.engine.commands import main

moto_url, aws = moto_sagemaker.moto_url, moto_sagemaker.aws  # fixtures


def test_dry_run_prints_the_exact_calls_and_makes_none(aws: boto3.Session, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(deploy_args("--dry-run", "--env", "VOICEDESK_MAX_SESSIONS=8")) == 0
    out = capsys.readouterr().out
    assert "# create endpoint voicedesk" in out
    for fragment in (
        "sagemaker.create_model(",
        "sagemaker.create_endpoint_config(",
        "sagemaker.create_endpoint(",
        '"InstanceType": "ml.g5.xlarge"',
        '"ContainerStartupHealthCheckTimeoutInSeconds": 600',
        '"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"',
        f'"Image": "{IMAGE}"',
        '"VOICEDESK_MAX_SESSIONS": "8"',
    ):
        assert fragment in out, fragment
    client = aws.client("sagemaker")
    assert client.list_models()["Models"] == [] and client.list_endpoints()["Endpoints"] == []


def test_create_status_update_destroy(aws: boto3.Session, capsys: pytest.CaptureFixture[str]) -> None:
    client = aws.client("sagemaker")
    assert main(deploy_args()) == 0
    created = capsys.readouterr().out
    assert "Endpoint voicedesk is InService" in created and "voicedesk: InService" in created
    first = client.describe_endpoint(EndpointName="voicedesk")
    variant = client.describe_endpoint_config(EndpointConfigName=first["EndpointConfigName"])["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g5.xlarge" and variant["InitialInstanceCount"] == 1
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 600
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    model = client.describe_model(ModelName=variant["ModelName"])
    assert model["PrimaryContainer"]["Image"] == IMAGE and model["ExecutionRoleArn"] == ROLE

    assert main(["deploy", "status", "--name", "voicedesk", "--region", REGION]) == 0
    status = capsys.readouterr().out
    assert "Endpoint voicedesk in us-east-1: InService" in status
    assert (
        f"runtime.sagemaker.{REGION}.amazonaws.com:8443/endpoints/voicedesk/invocations-bidirectional-stream" in status
    )

    # A second deploy updates in place: new config and model, the replaced ones removed.
    assert main([*deploy_args("--instance-count", "2"), "--image", IMAGE]) == 0
    updated = capsys.readouterr().out
    assert "Updating endpoint voicedesk" in updated and "update_endpoint voicedesk" in updated
    second = client.describe_endpoint(EndpointName="voicedesk")
    assert second["EndpointConfigName"] != first["EndpointConfigName"]
    assert second["EndpointArn"] == first["EndpointArn"]  # the same endpoint, not a new one
    configs = [c["EndpointConfigName"] for c in client.list_endpoint_configs()["EndpointConfigs"]]
    assert configs == [second["EndpointConfigName"]]
    assert [m["ModelName"] for m in client.list_models()["Models"]] != [variant["ModelName"]]
    assert len(client.list_models()["Models"]) == 1

    assert main(["deploy", "destroy", "--name", "voicedesk", "--region", REGION, "--dry-run"]) == 0
    assert "sagemaker.delete_endpoint(" in capsys.readouterr().out
    assert client.list_endpoints()["Endpoints"] != []

    assert main(["deploy", "destroy", "--name", "voicedesk", "--region", REGION, "--yes"]) == 0
    assert "are gone" in capsys.readouterr().out
    assert client.list_endpoints()["Endpoints"] == []
    assert client.list_endpoint_configs()["EndpointConfigs"] == [] and client.list_models()["Models"] == []

    assert main(["deploy", "status", "--name", "voicedesk", "--region", REGION]) == 1
    assert "There is no endpoint voicedesk in us-east-1" in capsys.readouterr().err


def test_missing_image_says_how_to_build_and_push(aws: boto3.Session, capsys: pytest.CaptureFixture[str]) -> None:
    missing = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/voicedesk:not-pushed"
    assert main([*deploy_args(), "--image", missing]) == 2
    err = capsys.readouterr().err
    assert "is not in ECR (ImageNotFoundException)" in err
    assert f"docker build --platform linux/amd64 --provenance=false -f packaging/Dockerfile -t {missing} ." in err
    assert f"aws ecr get-login-password --region {REGION} | docker login" in err
    assert aws.client("sagemaker").list_models()["Models"] == []


def test_default_image_is_in_the_callers_account(aws: boto3.Session, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "image", "--region", REGION]) == 0
    assert f"docker push 123456789012.dkr.ecr.{REGION}.amazonaws.com/voicedesk:latest" in capsys.readouterr().out


def test_missing_role_explains_how_to_create_one(aws: boto3.Session, capsys, monkeypatch) -> None:
    monkeypatch.delenv("VOICEDESK_SAGEMAKER_ROLE", raising=False)
    assert main(["deploy", "--region", REGION, "--image", IMAGE]) == 2
    err = capsys.readouterr().err
    assert "needs an execution role" in err and "packaging/iam/execution-role-trust-policy.json" in err


def test_a_failed_endpoint_is_reported_and_not_updated(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args()) == 0
    record = moto_endpoint("voicedesk")
    record.endpoint_status, record.failure_reason = "Failed", "The primary container did not pass the ping check."
    capsys.readouterr()
    assert main(["deploy", "status", "--name", "voicedesk", "--region", REGION]) == 0
    assert "failure: The primary container did not pass the ping check." in capsys.readouterr().out
    assert main(deploy_args()) == 2
    assert "voicedesk deploy destroy --name voicedesk" in capsys.readouterr().err


def test_waiting_reports_each_status_change(aws: boto3.Session) -> None:
    client = aws.client("sagemaker")
    settings = DeploySettings("progress", IMAGE, ROLE)
    for call in plan_deploy(settings, None, "20260101-000000"):
        getattr(client, call.operation)(**call.params)
    record = moto_endpoint("progress")
    record.endpoint_status = "Creating"
    said: list[str] = []

    def advance(_seconds: float) -> None:  # stands in for time passing on SageMaker's side
        record.endpoint_status = "InService"

    state = Deployer(client, say=said.append, poll_s=30, sleep=advance).wait("progress")
    assert state is not None and state.status == "InService"
    assert [line.split(":")[1].split("(")[0].strip() for line in said] == ["Creating", "InService"]


def test_destroying_what_does_not_exist(aws: boto3.Session, capsys) -> None:
    assert main(["deploy", "destroy", "--name", "ghost", "--region", REGION, "--yes"]) == 2
    assert "There is no endpoint ghost to destroy" in capsys.readouterr().err


def test_resource_names_fit_sagemakers_limit() -> None:
    name = resource_name("x" * 80, "20260101-000000")
    assert len(name) == 63 and name.endswith("-20260101-000000")


def test_a_rejected_deploy_leaves_nothing_behind(aws: boto3.Session, capsys) -> None:
    assert main([*deploy_args("--instance-type", "ml.bogus.xlarge")]) == 2
    captured = capsys.readouterr()
    assert "ValidationException" in captured.err and "rolling back: delete_model" in captured.out
    client = aws.client("sagemaker")
    assert client.list_models()["Models"] == [] and client.list_endpoint_configs()["EndpointConfigs"] == []


def test_deploys_in_the_same_second_get_distinct_names() -> None:
    from voicedesk.endpoint.deploy import new_stamp

    assert new_stamp(1_764_000_000.100) != new_stamp(1_764_000_000.900)
    assert new_stamp(1_764_000_000.100) == "20251124-160000-100"


@pytest.mark.parametrize(
    ("instance_type", "ami", "expected"),
    [
        ("ml.g5.xlarge", "auto", "al2023-ami-sagemaker-inference-gpu-4-1"),
        ("ml.g6e.2xlarge", "auto", "al2023-ami-sagemaker-inference-gpu-4-1"),
        ("ml.p5.48xlarge", "auto", "al2023-ami-sagemaker-inference-gpu-4-1"),
        ("ml.c5.2xlarge", "auto", None),
        ("ml.g5.xlarge", None, None),
        ("ml.g5.xlarge", "al2-ami-sagemaker-inference-gpu-3-1", "al2-ami-sagemaker-inference-gpu-3-1"),
    ],
)
def test_the_plan_asks_gpu_variants_for_the_driver_the_image_needs(instance_type, ami, expected) -> None:
    settings = DeploySettings("voicedesk", IMAGE, ROLE, instance_type=instance_type, inference_ami=ami)
    variant = plan_deploy(settings, None, "20260101-000000-000")[1].params["ProductionVariants"][0]
    assert variant.get("InferenceAmiVersion") == expected


def test_inference_ami_none_on_the_command_line(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args("--dry-run", "--inference-ami", "none")) == 0
    assert "InferenceAmiVersion" not in capsys.readouterr().out
