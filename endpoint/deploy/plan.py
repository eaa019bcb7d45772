"""``voicedesk deploy``'s plan, pure: the exact API calls one deploy or destroy makes, in order. GPU variants ask for
the inference AMI with NVIDIA driver 580, which the image's CUDA 13.0 needs (docs/remote.md, "The GPU driver")."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicedesk.endpoint.deploy.aws import ApiCall
from voicedesk.endpoint.deploy.scaling import (
    CONTAINER_SESSION_CAP,
    SESSION_CAP_ENV,
    ScalingSettings,
    ScalingState,
    plan_restore,
    plan_scaling,
    plan_unscaling,
)
from voicedesk.endpoint.hosting import PLATFORM_ENV, PLATFORM_SAGEMAKER

DEFAULT_INSTANCE_TYPE = "ml.g5.xlarge"
DEFAULT_VARIANT = "AllTraffic"
STARTUP_HEALTH_CHECK_S = 600
"""Time SageMaker gives the container to answer /ping: model load and warm-up on a cold instance."""
TAG_KEY = "voicedesk:endpoint"
MAX_NAME = 63

INFERENCE_AMIS: Mapping[str, str] = {
    "al2-ami-sagemaker-inference-gpu-2": "NVIDIA driver 535, CUDA 12.2",
    "al2-ami-sagemaker-inference-gpu-2-1": "NVIDIA driver 535, CUDA 12.2, no CUDA-compat mounting",
    "al2-ami-sagemaker-inference-gpu-3-1": "NVIDIA driver 550, CUDA 12.4, no CUDA-compat mounting",
    "al2023-ami-sagemaker-inference-gpu-4-1": "NVIDIA driver 580, CUDA 13.0, no CUDA-compat mounting",
}
"""``ProductionVariant.InferenceAmiVersion`` values for GPUs, from the SageMaker API reference."""
IMAGE_CUDA_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"
"""The one whose driver runs the image's CUDA 13.0 natively (packaging/Dockerfile)."""
AUTO_AMI = "auto"
GPU_FAMILIES = ("ml.g", "ml.p")


@dataclass(frozen=True, slots=True)
class DeploySettings:
    endpoint_name: str
    image_uri: str
    role_arn: str
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    """The fixed size; with ``scaling``, the size it starts at (clamped to its range)."""
    variant_name: str = DEFAULT_VARIANT
    environment: Mapping[str, str] = field(default_factory=dict)
    model_data_url: str | None = None
    """An S3 ``model.tar.gz`` SageMaker unpacks into /opt/ml/model (weights), or None for baked-in weights."""
    startup_health_check_s: int = STARTUP_HEALTH_CHECK_S
    inference_ami: str | None = AUTO_AMI
    """``auto``: the CUDA 13 AMI on GPU instance types, none on CPU ones; None: SageMaker's default."""
    scaling: ScalingSettings | None = None

    @property
    def session_cap(self) -> int:
        """The container's ``--max-sessions``: what ``VOICEDESK_MAX_SESSIONS`` sets, else its default."""
        value = self.environment.get(SESSION_CAP_ENV)
        return int(value) if value else CONTAINER_SESSION_CAP


@dataclass(frozen=True, slots=True)
class EndpointState:
    name: str
    status: str
    config_name: str | None
    model_names: tuple[str, ...] = ()
    failure_reason: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    """The config's initial count."""
    variant_name: str | None = None
    current_instance_count: int | None = None
    desired_instance_count: int | None = None
    inference_ami: str | None = None


@dataclass(frozen=True, slots=True)
class Rollout:
    """One deploy, in the order it runs; ``restore`` undoes ``before`` when the switch fails."""

    config_name: str
    before: list[ApiCall]
    switch: list[ApiCall]
    after: list[ApiCall]
    cleanup: list[ApiCall]
    restore: list[ApiCall]

    def all_calls(self) -> list[ApiCall]:
        return [*self.before, *self.switch, *self.after, *self.cleanup]


def resource_name(endpoint_name: str, stamp: str) -> str:
    """``{endpoint}-{stamp}``, cut to SageMaker's 63-character limit without losing the stamp."""
    return f"{endpoint_name[: MAX_NAME - len(stamp) - 1]}-{stamp}"


def new_stamp(now: float | None = None) -> str:
    """UTC time to the millisecond: two deploys in the same second must not reuse a model or config name."""
    millis = round((time.time() if now is None else now) * 1000)
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(millis // 1000)) + f"-{millis % 1000:03d}"


def is_gpu_instance(instance_type: str) -> bool:
    return instance_type.startswith(GPU_FAMILIES)


def resolve_inference_ami(settings: DeploySettings) -> str | None:
    if settings.inference_ami == AUTO_AMI:
        return IMAGE_CUDA_AMI if is_gpu_instance(settings.instance_type) else None
    return settings.inference_ami


def initial_instance_count(settings: DeploySettings, existing: EndpointState | None) -> int:
    """A scaling endpoint keeps the size autoscaling had reached (within the new range); else the fixed count."""
    if settings.scaling is None:
        return settings.instance_count
    low, high = settings.scaling.min_instances, settings.scaling.max_instances
    current = existing.desired_instance_count if existing is not None else None
    return min(max(current or settings.instance_count, low), high)


def plan_deploy(
    settings: DeploySettings, existing: EndpointState | None, stamp: str, retain_instance_count: bool = False
) -> list[ApiCall]:
    """The SageMaker calls: a new model and config, then create_endpoint or update_endpoint."""
    name = resource_name(settings.endpoint_name, stamp)
    tags = [{"Key": TAG_KEY, "Value": settings.endpoint_name}]
    container: dict[str, Any] = {"Image": settings.image_uri, "Mode": "SingleModel"}
    # serve knows it is behind SageMaker by this (no token warning, no per-client cap): endpoint.hosting.
    container["Environment"] = {PLATFORM_ENV: PLATFORM_SAGEMAKER, **settings.environment}
    if settings.model_data_url:
        container["ModelDataUrl"] = settings.model_data_url
    variant: dict[str, Any] = {
        "VariantName": settings.variant_name,
        "ModelName": name,
        "InitialInstanceCount": initial_instance_count(settings, existing),
        "InstanceType": settings.instance_type,
        "InitialVariantWeight": 1.0,
        "ContainerStartupHealthCheckTimeoutInSeconds": settings.startup_health_check_s,
        # Send each new stream to the instance with the fewest in flight: sessions are long and uneven.
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }
    ami = resolve_inference_ami(settings)
    if ami:
        variant["InferenceAmiVersion"] = ami
    if settings.model_data_url:
        variant["ModelDataDownloadTimeoutInSeconds"] = settings.startup_health_check_s
    calls = [
        ApiCall(
            "create_model",
            {"ModelName": name, "ExecutionRoleArn": settings.role_arn, "PrimaryContainer": container, "Tags": tags},
        ),
        ApiCall("create_endpoint_config", {"EndpointConfigName": name, "ProductionVariants": [variant], "Tags": tags}),
    ]
    if existing is None:
        calls.append(
            ApiCall(
                "create_endpoint", {"EndpointName": settings.endpoint_name, "EndpointConfigName": name, "Tags": tags}
            )
        )
    else:
        update: dict[str, Any] = {"EndpointName": settings.endpoint_name, "EndpointConfigName": name}
        if retain_instance_count:
            update["RetainAllVariantProperties"] = True
        calls.append(ApiCall("update_endpoint", update))
    return calls


def plan_rollout(
    settings: DeploySettings, existing: EndpointState | None, scaling_now: ScalingState | None, stamp: str
) -> Rollout:
    """Everything one deploy does, with the autoscaling calls placed where SageMaker allows them."""
    same_variant = existing is not None and existing.variant_name == settings.variant_name
    same_type = existing is not None and existing.instance_type == settings.instance_type
    # SageMaker refuses an update that changes the instance type of (or drops) a registered variant.
    must_deregister = scaling_now is not None and not (settings.scaling and same_variant and same_type)
    before = plan_unscaling(scaling_now) if must_deregister and scaling_now else []
    keeps_scaling = scaling_now is not None and not must_deregister
    switch = plan_deploy(settings, existing, stamp, retain_instance_count=keeps_scaling)
    after = plan_scaling(settings.endpoint_name, settings.variant_name, settings.scaling) if settings.scaling else []
    cleanup = plan_cleanup(existing) if existing is not None else []
    restore = plan_restore(scaling_now) if before and scaling_now else []
    return Rollout(resource_name(settings.endpoint_name, stamp), before, switch, after, cleanup, restore)


def plan_cleanup(replaced: EndpointState) -> list[ApiCall]:
    """After an update: the config and models the endpoint no longer uses."""
    calls = (
        [ApiCall("delete_endpoint_config", {"EndpointConfigName": replaced.config_name})]
        if replaced.config_name
        else []
    )
    calls += [ApiCall("delete_model", {"ModelName": model}) for model in replaced.model_names]
    return calls


def plan_destroy(state: EndpointState, scaling_now: ScalingState | None = None) -> list[ApiCall]:
    before = plan_unscaling(scaling_now) if scaling_now else []
    return [*before, ApiCall("delete_endpoint", {"EndpointName": state.name}), *plan_cleanup(state)]
