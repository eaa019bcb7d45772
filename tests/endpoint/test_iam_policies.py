"""packaging/iam: least privilege, checked. A policy may grant ``"Resource": "*"`` only for an action that
cannot be scoped to a resource (the allowlist below says why for each), no action is a wildcard, the trust
policy carries the confused-deputy conditions, and the deployer may make every call ``voicedesk deploy`` makes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from voicedesk.endpoint.deploy import DeploySettings, EndpointState, plan_rollout
from voicedesk.endpoint.deploy.plan import plan_destroy
from voicedesk.endpoint.deploy.scaling import ScalingPolicy, ScalingSettings, ScalingState

REPO = Path(__file__).resolve().parents[2]
IAM = REPO / "packaging" / "iam"
POLICIES = sorted(p for p in IAM.glob("*.json") if p.name != "execution-role-trust-policy.json")

STAR_ONLY = {
    "ecr:GetAuthorizationToken": "a registry-wide login token; the action has no resource type",
    "sts:GetCallerIdentity": "who am I; the action has no resource type",
    "cloudwatch:PutMetricData": "the action has no resource type; scoped by the cloudwatch:namespace condition",
    "application-autoscaling:DescribeScalableTargets": "list actions have no resource type",
    "application-autoscaling:DescribeScalingPolicies": "list actions have no resource type",
    "application-autoscaling:DescribeScalingActivities": "list actions have no resource type",
    "application-autoscaling:RegisterScalableTarget": "a scalable target's ARN ends in an ID assigned at "
    "registration, so it cannot be named in advance; scoped by the namespace and dimension conditions",
    "application-autoscaling:DeregisterScalableTarget": "as RegisterScalableTarget",
    "application-autoscaling:PutScalingPolicy": "as RegisterScalableTarget",
    "application-autoscaling:DeleteScalingPolicy": "as RegisterScalableTarget",
}
"""Actions that may be granted on "*", and why; a new entry needs a reason AWS documents."""
STAR_NEEDS_CONDITION = {
    "cloudwatch:PutMetricData": ("cloudwatch:namespace",),
    "application-autoscaling:RegisterScalableTarget": (
        "application-autoscaling:service-namespace",
        "application-autoscaling:scalable-dimension",
    ),
    "application-autoscaling:DeregisterScalableTarget": ("application-autoscaling:service-namespace",),
    "application-autoscaling:PutScalingPolicy": ("application-autoscaling:service-namespace",),
    "application-autoscaling:DeleteScalingPolicy": ("application-autoscaling:service-namespace",),
}
ACCOUNT_WIDE = re.compile(r"^arn:aws:[^:]+:[^:]*:[^:]*:(\*|[a-z-]+[/:]\*)$|^arn:aws:s3:::[^/]+/\*$")
"""A resource that names a type but not a resource: every repository, log group, or object in a bucket."""


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _condition_keys(statement: dict) -> set[str]:
    return {key for operator in statement.get("Condition", {}).values() for key in operator}


def _granted(policy: dict) -> dict[str, list[str]]:
    """Action → the resources it is allowed on."""
    granted: dict[str, list[str]] = {}
    for statement in policy["Statement"]:
        if statement["Effect"] == "Allow":
            for action in _as_list(statement["Action"]):
                granted.setdefault(action, []).extend(_as_list(statement["Resource"]))
    return granted


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.name)
def test_star_only_where_no_resource_can_be_named(path: Path) -> None:
    policy = _load(path)
    assert policy["Version"] == "2012-10-17"
    for statement in policy["Statement"]:
        assert statement.get("Sid"), f"{path.name}: every statement says what it is for (Sid)"
        actions, resources = _as_list(statement["Action"]), _as_list(statement["Resource"])
        for action in actions:
            assert "*" not in action, f"{path.name} {statement['Sid']}: wildcard action {action}"
        if "*" in resources:
            assert resources == ["*"], f"{path.name} {statement['Sid']}: '*' beside named resources"
            for action in actions:
                assert action in STAR_ONLY, (
                    f"{path.name} {statement['Sid']}: {action} is granted on '*' but supports resource-level "
                    "permissions; name the resource"
                )
                missing = set(STAR_NEEDS_CONDITION.get(action, ())) - _condition_keys(statement)
                assert not missing, f"{path.name} {statement['Sid']}: {action} on '*' needs the condition {missing}"
        for resource in resources:
            assert not ACCOUNT_WIDE.match(resource), f"{path.name} {statement['Sid']}: {resource} names no resource"


def test_the_trust_policy_guards_against_the_confused_deputy() -> None:
    trust = _load(IAM / "execution-role-trust-policy.json")
    for statement in trust["Statement"]:
        assert statement["Principal"] == {"Service": "sagemaker.amazonaws.com"}
        condition = statement["Condition"]
        assert condition["StringEquals"]["aws:SourceAccount"] == "ACCOUNT_ID"
        # SageMaker's documented form for inference: the account's SageMaker ARNs in the region, not one endpoint.
        assert condition["ArnLike"]["aws:SourceArn"] == "arn:aws:sagemaker:REGION:ACCOUNT_ID:*"


def test_model_data_is_readable_only_under_its_prefix() -> None:
    granted = _granted(_load(IAM / "execution-role-policy.json"))
    assert granted["s3:GetObject"] == ["arn:aws:s3:::MODEL_BUCKET/voicedesk/*"]
    assert _granted(_load(IAM / "deployer-policy.json"))["ecr:DescribeImages"] == [
        "arn:aws:ecr:REGION:ACCOUNT_ID:repository/voicedesk"
    ]


def test_callers_may_open_bidirectional_streams() -> None:
    granted = _granted(_load(IAM / "caller-policy.json"))
    for action in (
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointWithResponseStream",
        "sagemaker:InvokeEndpointWithBidirectionalStream",
    ):
        assert granted[action] == ["arn:aws:sagemaker:REGION:ACCOUNT_ID:endpoint/voicedesk"]


def _iam_action(service: str, operation: str) -> str:
    prefix = {"sagemaker": "sagemaker", "application-autoscaling": "application-autoscaling"}[service]
    return f"{prefix}:{''.join(part.title() for part in operation.split('_'))}"


def test_the_deployer_may_make_every_call_deploy_makes() -> None:
    scaled = ScalingState(
        "endpoint/voicedesk/variant/AllTraffic", 1, 4, (ScalingPolicy("voicedesk-open-sessions", "x", {}),)
    )
    existing = EndpointState("voicedesk", "InService", "voicedesk-a", ("voicedesk-a",), None, "ml.g5.xlarge", 1)
    settings = DeploySettings(
        "voicedesk", "img", "arn:aws:iam::1:role/r", instance_type="ml.g6.xlarge", scaling=ScalingSettings(1, 4, 4)
    )
    calls = [
        *plan_rollout(settings, None, None, "20260101-000000-000").all_calls(),
        *plan_rollout(settings, existing, scaled, "20260101-000000-000").all_calls(),
        *plan_destroy(existing, scaled),
    ]
    needed = {_iam_action(call.service, call.operation) for call in calls}
    needed |= {  # what deploy reads before planning
        "sagemaker:DescribeEndpoint",
        "sagemaker:DescribeEndpointConfig",
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:DescribeScalingPolicies",
        "ecr:DescribeImages",
        "sts:GetCallerIdentity",
        "iam:PassRole",  # CreateModel hands SageMaker the execution role
        "iam:CreateServiceLinkedRole",  # the first RegisterScalableTarget in an account
        "cloudwatch:PutMetricAlarm",  # target tracking creates its alarms as the caller
    }
    assert len(needed) > 15
    missing = needed - set(_granted(_load(IAM / "deployer-policy.json")))
    assert not missing, f"packaging/iam/deployer-policy.json lacks {sorted(missing)}"
