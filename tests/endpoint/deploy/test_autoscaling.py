"""`voicedesk deploy` scaling on open sessions: the Application Auto Scaling calls against moto's server.

moto's own Application Auto Scaling accepts anything; tests/endpoint/deploy/moto_sagemaker.py makes it (and
SageMaker's UpdateEndpoint) keep the documented rules, so the order of our calls is checked, not assumed.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.endpoint.deploy import moto_sagemaker
from tests.endpoint.deploy.moto_sagemaker import FAIL_UPDATE_ENV, IMAGE, ROLE, deploy_args, moto_endpoint
from tests.support.stand_in import REGION
from voicedesk.endpoint.deploy import DeploySettings, plan_deploy
from voicedesk.endpoint.deploy.scaling import ScalingSettings, check_scaling
from voicedesk.engine.commands import main
from voicedesk.engine.errors import VoicedeskError

moto_url, aws = moto_sagemaker.moto_url, moto_sagemaker.aws  # fixtures

RESOURCE = "endpoint/voicedesk/variant/AllTraffic"
TARGET = {"ServiceNamespace": "sagemaker", "ResourceIds": [RESOURCE]}
POLICY = {
    "TargetValue": 6.0,
    "PredefinedMetricSpecification": {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    },
    "ScaleInCooldown": 900,
    "ScaleOutCooldown": 60,
}
SCALES = ("--min-instances", "1", "--max-instances", "4", "--target-sessions", "6", "--max-sessions", "12")


def _targets(session: boto3.Session) -> list[dict]:
    return session.client("application-autoscaling").describe_scalable_targets(**TARGET)["ScalableTargets"]


def _policies(session: boto3.Session) -> list[dict]:
    client = session.client("application-autoscaling")
    return client.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=RESOURCE)["ScalingPolicies"]


def _operations(out: str) -> list[str]:
    """The calls `deploy` reported making, in order ("  create_model voicedesk-…" → "create_model")."""
    return [line.split()[0] for line in out.splitlines() if line.startswith("  ") and "_" in line.split()[0]]


def _variant(session: boto3.Session) -> dict:
    return session.client("sagemaker").describe_endpoint(EndpointName="voicedesk")["ProductionVariants"][0]


def test_dry_run_plans_the_scaling_calls_and_makes_none(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args("--dry-run", *SCALES)) == 0
    out = capsys.readouterr().out
    create = out.index("sagemaker.create_endpoint(")
    register = out.index("application-autoscaling.register_scalable_target(")
    policy = out.index("application-autoscaling.put_scaling_policy(")
    assert create < out.index("# then, once InService, scale on open sessions:") < register < policy
    for fragment in (
        f'"ResourceId": "{RESOURCE}"',
        '"ScalableDimension": "sagemaker:variant:DesiredInstanceCount"',
        '"ServiceNamespace": "sagemaker"',
        '"MinCapacity": 1',
        '"MaxCapacity": 4',
        '"PolicyType": "TargetTrackingScaling"',
        '"PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"',
        '"TargetValue": 6.0',
        '"ScaleInCooldown": 900',
        '"VOICEDESK_MAX_SESSIONS": "12"',
        '"InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1"',
    ):
        assert fragment in out, fragment
    assert _targets(aws) == [] and aws.client("sagemaker").list_endpoints()["Endpoints"] == []


def test_create_registers_the_variant_once_in_service(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    out = capsys.readouterr().out
    assert _operations(out) == [
        "create_model",
        "create_endpoint_config",
        "create_endpoint",
        "register_scalable_target",
        "put_scaling_policy",
    ]
    [target] = _targets(aws)
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 4)
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    [policy] = _policies(aws)
    assert policy["PolicyName"] == "voicedesk-open-sessions" and policy["PolicyType"] == "TargetTrackingScaling"
    assert policy["TargetTrackingScalingPolicyConfiguration"] == POLICY

    config_name = aws.client("sagemaker").describe_endpoint(EndpointName="voicedesk")["EndpointConfigName"]
    config = aws.client("sagemaker").describe_endpoint_config(EndpointConfigName=config_name)
    assert config["ProductionVariants"][0]["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"

    assert main(["deploy", "status", "--name", "voicedesk", "--region", REGION]) == 0
    status = capsys.readouterr().out
    assert "autoscaling: 1–4 instances" in status
    assert "keep 6 open sessions per instance" in status and "scale-in 900 s" in status
    assert "variant AllTraffic: 1 × ml.g5.xlarge" in status
    assert "host AMI: al2023-ami-sagemaker-inference-gpu-4-1" in status


def test_a_model_update_keeps_scaling_and_the_size_it_reached(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    record = moto_endpoint("voicedesk")
    record.production_variants[0]["CurrentInstanceCount"] = record.production_variants[0]["DesiredInstanceCount"] = 3
    capsys.readouterr()

    bigger = ("--min-instances", "2", "--max-instances", "6", "--target-sessions", "6", "--max-sessions", "12")
    assert main(deploy_args(*bigger)) == 0
    operations = _operations(capsys.readouterr().out)
    assert "deregister_scalable_target" not in operations and "delete_scaling_policy" not in operations
    assert operations.index("update_endpoint") < operations.index("register_scalable_target")
    assert _variant(aws)["DesiredInstanceCount"] == 3  # RetainAllVariantProperties: autoscaling's count stays
    [target] = _targets(aws)
    assert (target["MinCapacity"], target["MaxCapacity"]) == (2, 6)
    assert len(_policies(aws)) == 1


def test_the_stand_in_refuses_an_instance_type_change_while_registered(aws: boto3.Session) -> None:
    """The documented rule the next test relies on, as the fixture plays it."""
    assert main(deploy_args(*SCALES)) == 0
    client = aws.client("sagemaker")
    settings = DeploySettings("voicedesk", IMAGE, ROLE, instance_type="ml.g6.xlarge")
    state = client.describe_endpoint(EndpointName="voicedesk")
    calls = plan_deploy(settings, None, "20260101-000000-000")
    for call in calls[:2]:
        getattr(client, call.operation)(**call.params)
    assert state["EndpointConfigName"] != calls[1].params["EndpointConfigName"]
    with pytest.raises(ClientError, match="deregister it before changing its instance type"):
        client.update_endpoint(EndpointName="voicedesk", EndpointConfigName=calls[1].params["EndpointConfigName"])


def test_an_instance_type_change_deregisters_first_and_registers_again(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    capsys.readouterr()
    assert main(deploy_args("--instance-type", "ml.g6.xlarge", *SCALES)) == 0
    operations = _operations(capsys.readouterr().out)
    assert operations[:3] == ["delete_scaling_policy", "deregister_scalable_target", "create_model"]
    assert operations.index("update_endpoint") < operations.index("register_scalable_target")
    assert operations.index("register_scalable_target") < operations.index("put_scaling_policy")
    config_name = aws.client("sagemaker").describe_endpoint(EndpointName="voicedesk")["EndpointConfigName"]
    variant = aws.client("sagemaker").describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"]
    assert variant[0]["InstanceType"] == "ml.g6.xlarge"
    assert len(_targets(aws)) == 1 and _policies(aws)[0]["TargetTrackingScalingPolicyConfiguration"] == POLICY


def test_a_fixed_count_deploy_turns_scaling_off(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    assert main(deploy_args("--instance-count", "2")) == 0
    assert _targets(aws) == [] and _policies(aws) == []
    assert _variant(aws)["DesiredInstanceCount"] == 2
    capsys.readouterr()
    assert main(["deploy", "status", "--name", "voicedesk", "--region", REGION]) == 0
    assert "autoscaling: off" in capsys.readouterr().out


def test_a_failed_update_puts_scaling_back(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    client = aws.client("sagemaker")
    before = client.describe_endpoint(EndpointName="voicedesk")["EndpointConfigName"]
    capsys.readouterr()
    # An instance-type change deregisters first; the update then fails and SageMaker keeps the old config.
    failing = deploy_args("--instance-type", "ml.g6.xlarge", "--env", f"{FAIL_UPDATE_ENV}=1", *SCALES)
    assert main(failing) == 2
    captured = capsys.readouterr()
    assert "did not take: the endpoint is back on " + before in captured.err
    assert "rolling back: register_scalable_target" in captured.out
    assert client.describe_endpoint(EndpointName="voicedesk")["EndpointConfigName"] == before
    assert [c["EndpointConfigName"] for c in client.list_endpoint_configs()["EndpointConfigs"]] == [before]
    assert len(client.list_models()["Models"]) == 1
    [target] = _targets(aws)
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 4)
    assert _policies(aws)[0]["TargetTrackingScalingPolicyConfiguration"] == POLICY


def test_destroy_removes_the_policy_and_target(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args(*SCALES)) == 0
    capsys.readouterr()
    assert main(["deploy", "destroy", "--name", "voicedesk", "--region", REGION, "--dry-run"]) == 0
    planned = capsys.readouterr().out
    assert planned.index("application-autoscaling.deregister_scalable_target(") < planned.index(
        "sagemaker.delete_endpoint("
    )
    assert main(["deploy", "destroy", "--name", "voicedesk", "--region", REGION, "--yes"]) == 0
    assert _targets(aws) == [] and _policies(aws) == []  # moto would not remove them by itself
    assert aws.client("sagemaker").list_endpoints()["Endpoints"] == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--max-instances", "4", "--target-sessions", "16"), "below the container's session cap (16"),
        (("--max-instances", "4", "--max-sessions", "4", "--target-sessions", "5"), "session cap (4"),
        (("--min-instances", "3", "--max-instances", "2"), "--max-instances (2) is below --min-instances (3)"),
        (("--instance-count", "2", "--max-instances", "4"), "not both"),
        (
            (
                "--target-sessions",
                "4",
            ),
            "--target-sessions needs --max-instances",
        ),
        (("--min-instances", "0", "--max-instances", "2"), "cannot scale to zero"),
    ],
)
def test_capacity_mistakes_are_explained_before_any_call(aws: boto3.Session, capsys, extra, message) -> None:
    assert main(deploy_args(*extra)) == 2
    assert message in capsys.readouterr().err
    assert aws.client("sagemaker").list_models()["Models"] == [] and _targets(aws) == []


def test_the_default_target_is_a_quarter_of_the_session_cap(aws: boto3.Session, capsys) -> None:
    assert main(deploy_args("--dry-run", "--max-instances", "3", "--max-sessions", "20")) == 0
    assert '"TargetValue": 5.0' in capsys.readouterr().out
    check_scaling(ScalingSettings(1, 3, 15.5), session_cap=16)
    with pytest.raises(VoicedeskError):
        check_scaling(ScalingSettings(1, 3, 16), session_cap=16)
