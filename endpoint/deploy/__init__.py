"""Deploying the container to a SageMaker real-time endpoint with boto3: apply the plan (``deploy.plan``) and wait.

Models and endpoint configs are immutable, so each deploy creates a fresh ``{endpoint}-{stamp}`` pair, switches to it
without downtime and deletes the pair it replaced once InService."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from voicedesk.endpoint.deploy.aws import AUTOSCALING, SAGEMAKER, ApiCall, aws_error, call_aws, is_not_found
from voicedesk.endpoint.deploy.plan import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_VARIANT,
    IMAGE_CUDA_AMI,
    INFERENCE_AMIS,
    DeploySettings,
    EndpointState,
    Rollout,
    new_stamp,
    plan_deploy,
    plan_destroy,
    plan_rollout,
    resource_name,
)
from voicedesk.endpoint.deploy.scaling import ScalingState, read_scaling
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError

__all__ = [  # re-exported: the CLI and tests import them from here
    "DEFAULT_INSTANCE_TYPE",
    "DEFAULT_VARIANT",
    "IMAGE_CUDA_AMI",
    "INFERENCE_AMIS",
    "ApiCall",
    "DeploySettings",
    "EndpointState",
    "Rollout",
    "aws_error",
    "call_aws",
    "new_stamp",
    "plan_deploy",
    "plan_rollout",
    "resource_name",
]


def push_instructions(image_uri: str, region: str) -> str:
    registry = image_uri.split("/", 1)[0]
    repository = image_uri.split("/", 1)[1].rsplit(":", 1)[0] if "/" in image_uri else "voicedesk"
    return "\n".join(
        [
            "Build and push the endpoint image (from the repository root; Docker with buildx):",
            f"  aws ecr create-repository --repository-name {repository} --region {region}   # once",
            f"  aws ecr get-login-password --region {region} | docker login --username AWS --password-stdin {registry}",
            f"  docker build --platform linux/amd64 --provenance=false -f packaging/Dockerfile -t {image_uri} .",
            f"  docker push {image_uri}",
        ]
    )


class Deployer:
    """Applies plans with boto3 (``sagemaker``, ``application-autoscaling``) and waits, reporting through ``say``."""

    def __init__(
        self,
        client: Any,
        say: Callable[[str], None] = print,
        poll_s: float = 30.0,
        timeout_s: float = 3600.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        autoscaling: Any | None = None,
    ) -> None:
        self.client = client
        self.autoscaling = autoscaling
        self.say = say
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._clock = clock

    def _client(self, service: str) -> Any:
        client = {SAGEMAKER: self.client, AUTOSCALING: self.autoscaling}.get(service)
        if client is None:
            raise VoicedeskError(ErrorCode.INTERNAL, f"No {service} client to make the planned call with.")
        return client

    def describe(self, endpoint_name: str) -> EndpointState | None:
        from botocore.exceptions import ClientError

        try:
            endpoint = self.client.describe_endpoint(EndpointName=endpoint_name)
        except ClientError as exc:
            if is_not_found(exc):
                return None
            raise
        config_name = endpoint.get("EndpointConfigName")
        live = (endpoint.get("ProductionVariants") or [{}])[0]
        models: tuple[str, ...] = ()
        variant: dict[str, Any] = {}
        if config_name:
            try:
                config = self.client.describe_endpoint_config(EndpointConfigName=config_name)
            except ClientError as exc:
                if not is_not_found(exc):
                    raise
            else:
                variants = config.get("ProductionVariants", [])
                models = tuple(v["ModelName"] for v in variants if v.get("ModelName"))
                variant = variants[0] if variants else {}
        return EndpointState(
            endpoint_name,
            endpoint.get("EndpointStatus", "Unknown"),
            config_name,
            models,
            endpoint.get("FailureReason"),
            variant.get("InstanceType"),
            variant.get("InitialInstanceCount"),
            variant.get("VariantName") or live.get("VariantName"),
            live.get("CurrentInstanceCount"),
            live.get("DesiredInstanceCount"),
            variant.get("InferenceAmiVersion"),
        )

    def read_scaling(self, state: EndpointState | None) -> ScalingState | None:
        if state is None or state.variant_name is None or self.autoscaling is None:
            return None
        return read_scaling(self.autoscaling, state.name, state.variant_name)

    def apply(self, calls: list[ApiCall], done: list[ApiCall] | None = None) -> None:
        """Makes the calls in order; ``done`` collects those that succeeded (for a rollback)."""
        for call in calls:
            self.say(f"  {call.operation} {_subject(call)}")
            getattr(self._client(call.service), call.operation)(**call.params)
            if done is not None:
                done.append(call)

    def roll_back(self, done: list[ApiCall], restore: Sequence[ApiCall] = ()) -> None:
        """Deletes what a failed deploy created and restores the autoscaling it removed (best effort)."""
        undo = {
            "create_model": ("delete_model", "ModelName"),
            "create_endpoint_config": ("delete_endpoint_config", "EndpointConfigName"),
        }
        for call in reversed(done):
            if call.operation in undo:
                operation, key = undo[call.operation]
                self.say(f"  rolling back: {operation} {call.params[key]}")
                with contextlib.suppress(Exception):
                    getattr(self.client, operation)(**{key: call.params[key]})
        if any(call.service == AUTOSCALING for call in done):
            for call in restore:
                self.say(f"  rolling back: {call.operation} {_subject(call)}")
                with contextlib.suppress(Exception):
                    getattr(self._client(call.service), call.operation)(**call.params)

    def wait(self, endpoint_name: str, until: str = "InService") -> EndpointState | None:
        """Polls until the endpoint reaches ``until`` (or is gone, for ``until="Deleted"``); raises on Failed."""
        started = self._clock()
        last: str | None = None
        while True:
            state = self.describe(endpoint_name)
            status = state.status if state else "Deleted"
            if status != last:
                self.say(f"  {endpoint_name}: {status} ({self._clock() - started:.0f} s)")
                last = status
            if status == until:
                return state
            if status == "Failed":
                reason = state.failure_reason if state else None
                raise ConnectionFailed(
                    f"Endpoint {endpoint_name} failed: {reason or 'no reason given'}. The container's log is in "
                    f"CloudWatch under /aws/sagemaker/Endpoints/{endpoint_name}.",
                )
            if self._clock() - started > self.timeout_s:
                raise ConnectionFailed(
                    f"Endpoint {endpoint_name} is still {status} after {self.timeout_s:.0f} s; "
                    f"check `voicedesk deploy status --name {endpoint_name}` later.",
                )
            self._sleep(self.poll_s)


def _subject(call: ApiCall) -> str:
    for key in ("EndpointName", "EndpointConfigName", "ModelName", "PolicyName", "ResourceId"):
        if key in call.params:
            return str(call.params[key])
    return ""


BUSY_STATES = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})


def _say_plan(deployer: Deployer, heading: str, calls: list[ApiCall]) -> None:
    if calls:
        deployer.say(heading)
        for call in calls:
            deployer.say(call.render())


def deploy(deployer: Deployer, settings: DeploySettings, stamp: str, dry_run: bool = False) -> EndpointState | None:
    """Creates the endpoint or switches it to a new model; returns its final state (None for a dry run)."""
    name = settings.endpoint_name
    existing = call_aws(lambda: deployer.describe(name), "DescribeEndpoint")
    if existing is not None and existing.status in BUSY_STATES:
        raise UsageError(
            f"Endpoint {name} is {existing.status}; wait until it settles (`voicedesk deploy status`).",
        )
    if existing is not None and existing.status == "Failed":
        raise UsageError(
            f"Endpoint {name} is Failed ({existing.failure_reason}); SageMaker cannot update it. "
            f"Remove it with `voicedesk deploy destroy --name {name}`, then deploy again.",
        )
    scaling_now = call_aws(lambda: deployer.read_scaling(existing), "DescribeScalableTargets")
    rollout = plan_rollout(settings, existing, scaling_now, stamp)
    if dry_run:
        deployer.say(f"# {'update' if existing else 'create'} endpoint {name}: the calls `voicedesk deploy` would make")
        _say_plan(deployer, "# first, autoscaling off (SageMaker refuses this update while it is on):", rollout.before)
        for call in rollout.switch:
            deployer.say(call.render())
        _say_plan(deployer, "# then, once InService, scale on open sessions:", rollout.after)
        _say_plan(deployer, "# and remove what it replaced:", rollout.cleanup)
        return None
    size = (
        f"{settings.scaling.min_instances}–{settings.scaling.max_instances} × {settings.instance_type}"
        if settings.scaling
        else f"{settings.instance_count} × {settings.instance_type}"
    )
    deployer.say(f"{'Updating' if existing else 'Creating'} endpoint {name} ({size}):")
    done: list[ApiCall] = []
    try:
        call_aws(lambda: deployer.apply([*rollout.before, *rollout.switch], done), "deploy")
        state = call_aws(lambda: deployer.wait(name), "DescribeEndpoint")
    except VoicedeskError:
        deployer.roll_back(done, rollout.restore)
        raise
    if state is not None and state.config_name != rollout.config_name:
        # SageMaker rolled a failed update back to the old config: the new model and config are unused.
        deployer.roll_back(done, rollout.restore)
        raise ConnectionFailed(
            f"The update of {name} did not take: the endpoint is back on {state.config_name} "
            f"({state.failure_reason or 'no reason given'}). The container's log is in CloudWatch under "
            f"/aws/sagemaker/Endpoints/{name}.",
        )
    if rollout.after:
        deployer.say("Scaling on open sessions:")
        try:
            call_aws(lambda: deployer.apply(rollout.after), "autoscaling")
        except VoicedeskError as exc:
            raise VoicedeskError(
                exc.code,
                f"Endpoint {name} is InService, but its autoscaling could not be set: {exc.message} "
                "Fix that and run the same `voicedesk deploy` again.",
            ) from exc
    if rollout.cleanup:
        deployer.say("Removing the replaced model and endpoint config:")
        call_aws(lambda: deployer.apply(rollout.cleanup), "cleanup")
    return state


def destroy(deployer: Deployer, endpoint_name: str, dry_run: bool = False) -> None:
    state = call_aws(lambda: deployer.describe(endpoint_name), "DescribeEndpoint")
    if state is None:
        raise UsageError(f"There is no endpoint {endpoint_name} to destroy (check --region).")
    scaling_now = call_aws(lambda: deployer.read_scaling(state), "DescribeScalableTargets")
    calls = plan_destroy(state, scaling_now)
    if dry_run:
        deployer.say(f"# destroy endpoint {endpoint_name}: the calls `voicedesk deploy destroy` would make")
        for call in calls:
            deployer.say(call.render())
        return
    deployer.say(f"Destroying endpoint {endpoint_name}:")
    first = [call for call in calls if call.service == AUTOSCALING or call.operation == "delete_endpoint"]
    call_aws(lambda: deployer.apply(first), "DeleteEndpoint")
    call_aws(lambda: deployer.wait(endpoint_name, until="Deleted"), "DescribeEndpoint")
    call_aws(lambda: deployer.apply(calls[len(first) :]), "cleanup")


def check_image(ecr: Any, image_uri: str, region: str) -> None:
    """For an ECR image: is it there? (SageMaker would otherwise fail minutes later with a vaguer error.)"""
    from botocore.exceptions import ClientError

    registry, _, rest = image_uri.partition("/")
    if ".dkr.ecr." not in registry or not rest:
        return  # not ECR: SageMaker will say if it cannot pull it
    if "@" in rest:
        repository, digest = rest.split("@", 1)
        image_id = {"imageDigest": digest}
    else:
        repository, _, tag = rest.partition(":")
        image_id = {"imageTag": tag or "latest"}
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[image_id])
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("RepositoryNotFoundException", "ImageNotFoundException"):
            raise UsageError(
                f"The image {image_uri} is not in ECR ({code}).\n{push_instructions(image_uri, region)}",
            ) from exc
        raise aws_error(exc, "ecr:DescribeImages") from exc
