"""Autoscaling the endpoint on open sessions with Application Auto Scaling: plan the calls (pure), read back.

SageMaker counts an open bidirectional stream as one concurrent request, so ``ConcurrentRequestsPerModel`` is open
sessions per instance; the default target is a quarter of the session cap (a target at the cap never scales out).
SageMaker refuses an instance-type change on a scalable variant, so the target is deregistered first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from voicedesk.endpoint.deploy.aws import AUTOSCALING, ApiCall
from voicedesk.engine.errors import UsageError

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
POLICY_TYPE = "TargetTrackingScaling"
SCALE_IN_COOLDOWN_S = 900
"""Scale in slowly: every instance removed ends its open sessions, which last minutes."""
SCALE_OUT_COOLDOWN_S = 60
"""Short: a GPU instance takes minutes to come up, and this only stops the same step stacking twice."""
CONTAINER_SESSION_CAP = 16
"""``serve --max-sessions`` default (``endpoint.settings.ServerSettings.max_sessions``)."""
SESSION_CAP_ENV = "VOICEDESK_MAX_SESSIONS"
"""The container's ``serve`` passes it on as ``--max-sessions`` (packaging/serve)."""
MAX_INSTANCES_LIMIT = 100


@dataclass(frozen=True, slots=True)
class ScalingSettings:
    min_instances: int
    max_instances: int
    target_sessions: float
    """Open sessions per instance that target tracking aims for (the average over the variant's instances)."""
    scale_in_cooldown_s: int = SCALE_IN_COOLDOWN_S
    scale_out_cooldown_s: int = SCALE_OUT_COOLDOWN_S


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    name: str
    policy_type: str
    configuration: Mapping[str, Any]
    """``TargetTrackingScalingPolicyConfiguration`` (or the step-scaling one), as Application Auto Scaling has it."""

    @property
    def metric(self) -> str | None:
        spec = self.configuration.get("PredefinedMetricSpecification") or {}
        return spec.get("PredefinedMetricType") or (self.configuration.get("CustomizedMetricSpecification") or {}).get(
            "MetricName"
        )


@dataclass(frozen=True, slots=True)
class ScalingState:
    """A registered scalable target and its policies, as read back from Application Auto Scaling."""

    resource_id: str
    min_instances: int
    max_instances: int
    policies: tuple[ScalingPolicy, ...] = ()


def default_target_sessions(session_cap: int) -> int:
    return max(1, session_cap // 4)


def check_scaling(scaling: ScalingSettings, session_cap: int) -> None:
    """Raises a ``VoicedeskError`` naming the option to fix when the settings cannot work."""
    if scaling.min_instances < 1:
        raise UsageError(
            "--min-instances must be at least 1: a real-time endpoint cannot scale to zero instances.",
        )
    if scaling.max_instances < scaling.min_instances:
        raise UsageError(
            f"--max-instances ({scaling.max_instances}) is below --min-instances ({scaling.min_instances}).",
        )
    if scaling.max_instances > MAX_INSTANCES_LIMIT:
        raise UsageError(f"--max-instances is at most {MAX_INSTANCES_LIMIT}.")
    if not 0 < scaling.target_sessions < session_cap:
        raise UsageError(
            f"--target-sessions must be above 0 and below the container's session cap ({session_cap}, "
            f"--max-sessions): an instance refuses sessions beyond its cap, so a target of {scaling.target_sessions:g} "
            "would never be exceeded and the endpoint would never scale out.",
        )
    if scaling.scale_in_cooldown_s < 0 or scaling.scale_out_cooldown_s < 0:
        raise UsageError("Cooldowns are seconds, 0 or more.")


def resource_id(endpoint_name: str, variant_name: str) -> str:
    return f"endpoint/{endpoint_name}/variant/{variant_name}"


def policy_name(endpoint_name: str) -> str:
    return f"{endpoint_name}-open-sessions"


def target_tracking_configuration(scaling: ScalingSettings) -> dict[str, Any]:
    return {
        "TargetValue": float(scaling.target_sessions),
        "PredefinedMetricSpecification": {"PredefinedMetricType": METRIC},
        "ScaleInCooldown": scaling.scale_in_cooldown_s,
        "ScaleOutCooldown": scaling.scale_out_cooldown_s,
    }


def plan_scaling(endpoint_name: str, variant_name: str, scaling: ScalingSettings) -> list[ApiCall]:
    """Register (or update) the variant as a scalable target, then put the open-sessions policy on it."""
    rid = resource_id(endpoint_name, variant_name)
    target = {"ServiceNamespace": NAMESPACE, "ResourceId": rid, "ScalableDimension": DIMENSION}
    return [
        ApiCall(
            "register_scalable_target",
            {**target, "MinCapacity": scaling.min_instances, "MaxCapacity": scaling.max_instances},
            AUTOSCALING,
        ),
        ApiCall(
            "put_scaling_policy",
            {
                **target,
                "PolicyName": policy_name(endpoint_name),
                "PolicyType": POLICY_TYPE,
                "TargetTrackingScalingPolicyConfiguration": target_tracking_configuration(scaling),
            },
            AUTOSCALING,
        ),
    ]


def plan_unscaling(state: ScalingState) -> list[ApiCall]:
    """Delete every policy on the target, then deregister it (SageMaker's order before an instance-type change)."""
    target = {"ServiceNamespace": NAMESPACE, "ResourceId": state.resource_id, "ScalableDimension": DIMENSION}
    calls = [ApiCall("delete_scaling_policy", {**target, "PolicyName": p.name}, AUTOSCALING) for p in state.policies]
    calls.append(ApiCall("deregister_scalable_target", target, AUTOSCALING))
    return calls


def plan_restore(state: ScalingState) -> list[ApiCall]:
    """Put back a target and policies exactly as they were (after a failed update that had removed them)."""
    target = {"ServiceNamespace": NAMESPACE, "ResourceId": state.resource_id, "ScalableDimension": DIMENSION}
    calls = [
        ApiCall(
            "register_scalable_target",
            {**target, "MinCapacity": state.min_instances, "MaxCapacity": state.max_instances},
            AUTOSCALING,
        )
    ]
    for policy in state.policies:
        key = (
            "TargetTrackingScalingPolicyConfiguration"
            if policy.policy_type == POLICY_TYPE
            else "StepScalingPolicyConfiguration"
        )
        params = {**target, "PolicyName": policy.name, "PolicyType": policy.policy_type}
        params[key] = dict(policy.configuration)
        calls.append(ApiCall("put_scaling_policy", params, AUTOSCALING))
    return calls


def read_scaling(client: Any, endpoint_name: str, variant_name: str) -> ScalingState | None:
    """The variant's scalable target and policies, or None when it does not scale."""
    rid = resource_id(endpoint_name, variant_name)
    targets = client.describe_scalable_targets(
        ServiceNamespace=NAMESPACE, ResourceIds=[rid], ScalableDimension=DIMENSION
    ).get("ScalableTargets", [])
    target = next((t for t in targets if t.get("ResourceId") == rid), None)
    if target is None:
        return None
    policies = client.describe_scaling_policies(
        ServiceNamespace=NAMESPACE, ResourceId=rid, ScalableDimension=DIMENSION
    ).get("ScalingPolicies", [])
    return ScalingState(
        rid,
        int(target["MinCapacity"]),
        int(target["MaxCapacity"]),
        tuple(
            ScalingPolicy(
                p["PolicyName"],
                p["PolicyType"],
                p.get("TargetTrackingScalingPolicyConfiguration") or p.get("StepScalingPolicyConfiguration") or {},
            )
            for p in policies
            if p.get("ResourceId") == rid
        ),
    )


def describe_scaling(state: ScalingState | None) -> list[str]:
    """Lines for ``voicedesk deploy status``."""
    if state is None:
        return ["autoscaling: off (a fixed instance count; deploy with --max-instances to scale on open sessions)"]
    lines = [f"autoscaling: {state.min_instances}–{state.max_instances} instances"]
    if not state.policies:
        lines.append("  no scaling policy: the count stays where it is (deploy again to put one back)")
    for policy in state.policies:
        config = policy.configuration
        if policy.metric == METRIC:
            lines.append(
                f"  policy {policy.name}: keep {config.get('TargetValue', 0):g} open sessions per instance "
                f"(ConcurrentRequestsPerModel, high resolution); cooldowns: scale-in "
                f"{config.get('ScaleInCooldown', '?')} s, scale-out {config.get('ScaleOutCooldown', '?')} s"
            )
        else:
            lines.append(f"  policy {policy.name}: {policy.policy_type} on {policy.metric or 'a custom metric'}")
    return lines
