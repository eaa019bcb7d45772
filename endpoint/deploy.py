"""Deploying the container to a SageMaker real-time endpoint with boto3: plan (pure), then apply and wait.

Models and endpoint configs are immutable in SageMaker, so every deploy creates a fresh pair named
``{endpoint}-{stamp}``; a new endpoint is created from it, an existing one is switched to it with
``update_endpoint`` (no downtime), and the pair it replaced is deleted once the endpoint is back InService.
``plan_*`` return the exact API calls, which ``--dry-run`` prints instead of making.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.errors import ErrorCode, VoicedeskError

DEFAULT_INSTANCE_TYPE = "ml.g5.xlarge"
DEFAULT_VARIANT = "AllTraffic"
STARTUP_HEALTH_CHECK_S = 600
"""Time SageMaker gives the container to answer /ping: model load and warm-up on a cold instance."""
TAG_KEY = "voicedesk:endpoint"
MAX_NAME = 63


@dataclass(frozen=True, slots=True)
class DeploySettings:
    endpoint_name: str
    image_uri: str
    role_arn: str
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    variant_name: str = DEFAULT_VARIANT
    environment: Mapping[str, str] = field(default_factory=dict)
    model_data_url: str | None = None
    """An S3 ``model.tar.gz`` SageMaker unpacks into /opt/ml/model (weights), or None for baked-in weights."""
    startup_health_check_s: int = STARTUP_HEALTH_CHECK_S


@dataclass(frozen=True, slots=True)
class ApiCall:
    operation: str
    """The boto3 ``sagemaker`` client method, e.g. ``create_model``."""
    params: dict[str, Any]

    def render(self) -> str:
        return f"sagemaker.{self.operation}(**{json.dumps(self.params, indent=2, sort_keys=True)})"


@dataclass(frozen=True, slots=True)
class EndpointState:
    name: str
    status: str
    config_name: str | None
    model_names: tuple[str, ...] = ()
    failure_reason: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None


def resource_name(endpoint_name: str, stamp: str) -> str:
    """``{endpoint}-{stamp}``, cut to SageMaker's 63-character limit without losing the stamp."""
    return f"{endpoint_name[: MAX_NAME - len(stamp) - 1]}-{stamp}"


def new_stamp(now: float | None = None) -> str:
    """UTC time to the millisecond: two deploys in the same second must not reuse a model or config name."""
    millis = round((time.time() if now is None else now) * 1000)
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(millis // 1000)) + f"-{millis % 1000:03d}"


def plan_deploy(settings: DeploySettings, existing: EndpointState | None, stamp: str) -> list[ApiCall]:
    name = resource_name(settings.endpoint_name, stamp)
    tags = [{"Key": TAG_KEY, "Value": settings.endpoint_name}]
    container: dict[str, Any] = {"Image": settings.image_uri, "Mode": "SingleModel"}
    if settings.environment:
        container["Environment"] = dict(settings.environment)
    if settings.model_data_url:
        container["ModelDataUrl"] = settings.model_data_url
    variant: dict[str, Any] = {
        "VariantName": settings.variant_name,
        "ModelName": name,
        "InitialInstanceCount": settings.instance_count,
        "InstanceType": settings.instance_type,
        "InitialVariantWeight": 1.0,
        "ContainerStartupHealthCheckTimeoutInSeconds": settings.startup_health_check_s,
        # Send each new stream to the instance with the fewest in flight: sessions are long and uneven.
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }
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
        calls.append(ApiCall("update_endpoint", {"EndpointName": settings.endpoint_name, "EndpointConfigName": name}))
    return calls


def plan_cleanup(replaced: EndpointState) -> list[ApiCall]:
    """After an update: the config and models the endpoint no longer uses."""
    calls = (
        [ApiCall("delete_endpoint_config", {"EndpointConfigName": replaced.config_name})]
        if replaced.config_name
        else []
    )
    calls += [ApiCall("delete_model", {"ModelName": model}) for model in replaced.model_names]
    return calls


def plan_destroy(state: EndpointState) -> list[ApiCall]:
    return [ApiCall("delete_endpoint", {"EndpointName": state.name}), *plan_cleanup(state)]


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
    """Applies plans with a boto3 ``sagemaker`` client and waits, reporting progress through ``say``."""

    def __init__(
        self,
        client: Any,
        say: Callable[[str], None] = print,
        poll_s: float = 30.0,
        timeout_s: float = 3600.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.say = say
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self._sleep = sleep
        self._clock = clock

    def describe(self, endpoint_name: str) -> EndpointState | None:
        from botocore.exceptions import ClientError

        try:
            endpoint = self.client.describe_endpoint(EndpointName=endpoint_name)
        except ClientError as exc:
            if _is_not_found(exc):
                return None
            raise
        config_name = endpoint.get("EndpointConfigName")
        models: tuple[str, ...] = ()
        instance_type = instance_count = None
        if config_name:
            try:
                config = self.client.describe_endpoint_config(EndpointConfigName=config_name)
            except ClientError as exc:
                if not _is_not_found(exc):
                    raise
            else:
                variants = config.get("ProductionVariants", [])
                models = tuple(v["ModelName"] for v in variants if v.get("ModelName"))
                if variants:
                    instance_type = variants[0].get("InstanceType")
                    instance_count = variants[0].get("InitialInstanceCount")
        return EndpointState(
            endpoint_name,
            endpoint.get("EndpointStatus", "Unknown"),
            config_name,
            models,
            endpoint.get("FailureReason"),
            instance_type,
            instance_count,
        )

    def apply(self, calls: list[ApiCall], done: list[ApiCall] | None = None) -> None:
        """Makes the calls in order; ``done`` collects those that succeeded (for a rollback)."""
        for call in calls:
            self.say(f"  {call.operation} {_subject(call)}")
            getattr(self.client, call.operation)(**call.params)
            if done is not None:
                done.append(call)

    def roll_back(self, done: list[ApiCall]) -> None:
        """Deletes the model and config a failed deploy created (best effort: the original error matters more)."""
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
                raise VoicedeskError(
                    ErrorCode.CONNECTION,
                    f"Endpoint {endpoint_name} failed: {reason or 'no reason given'}. The container's log is in "
                    f"CloudWatch under /aws/sagemaker/Endpoints/{endpoint_name}.",
                )
            if self._clock() - started > self.timeout_s:
                raise VoicedeskError(
                    ErrorCode.CONNECTION,
                    f"Endpoint {endpoint_name} is still {status} after {self.timeout_s:.0f} s; "
                    f"check `voicedesk deploy status --name {endpoint_name}` later.",
                )
            self._sleep(self.poll_s)


def _subject(call: ApiCall) -> str:
    for key in ("EndpointName", "EndpointConfigName", "ModelName"):
        if key in call.params:
            return str(call.params[key])
    return ""


def _is_not_found(exc: Exception) -> bool:
    error = getattr(exc, "response", {}).get("Error", {})
    message = str(error.get("Message", "")).lower()
    return error.get("Code") in ("ValidationException", "ValidationError", "ResourceNotFound") and (
        "could not find" in message or "not found" in message or "does not exist" in message
    )


BUSY_STATES = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})


def deploy(deployer: Deployer, settings: DeploySettings, stamp: str, dry_run: bool = False) -> EndpointState | None:
    """Creates the endpoint or switches it to a new model; returns its final state (None for a dry run)."""
    name = settings.endpoint_name
    existing = call_aws(lambda: deployer.describe(name), "DescribeEndpoint")
    if existing is not None and existing.status in BUSY_STATES:
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE,
            f"Endpoint {name} is {existing.status}; wait until it settles (`voicedesk deploy status`).",
        )
    if existing is not None and existing.status == "Failed":
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE,
            f"Endpoint {name} is Failed ({existing.failure_reason}); SageMaker cannot update it. "
            f"Remove it with `voicedesk deploy destroy --name {name}`, then deploy again.",
        )
    calls = plan_deploy(settings, existing, stamp)
    if dry_run:
        deployer.say(f"# {'update' if existing else 'create'} endpoint {name}: the calls `voicedesk deploy` would make")
        for call in calls:
            deployer.say(call.render())
        if existing is not None:
            deployer.say("# then, once InService, remove what it replaced:")
            for call in plan_cleanup(existing):
                deployer.say(call.render())
        return None
    deployer.say(f"{'Updating' if existing else 'Creating'} endpoint {name} ({settings.instance_type}):")
    done: list[ApiCall] = []
    try:
        call_aws(lambda: deployer.apply(calls, done), "deploy")
    except VoicedeskError:
        deployer.roll_back(done)
        raise
    state = call_aws(lambda: deployer.wait(name), "DescribeEndpoint")
    if existing is not None:
        deployer.say("Removing the replaced model and endpoint config:")
        call_aws(lambda: deployer.apply(plan_cleanup(existing)), "cleanup")
    return state


def destroy(deployer: Deployer, endpoint_name: str, dry_run: bool = False) -> None:
    state = call_aws(lambda: deployer.describe(endpoint_name), "DescribeEndpoint")
    if state is None:
        raise VoicedeskError(
            ErrorCode.BAD_MESSAGE, f"There is no endpoint {endpoint_name} to destroy (check --region)."
        )
    calls = plan_destroy(state)
    if dry_run:
        deployer.say(f"# destroy endpoint {endpoint_name}: the calls `voicedesk deploy destroy` would make")
        for call in calls:
            deployer.say(call.render())
        return
    deployer.say(f"Destroying endpoint {endpoint_name}:")
    call_aws(lambda: deployer.apply(calls[:1]), "DeleteEndpoint")
    call_aws(lambda: deployer.wait(endpoint_name, until="Deleted"), "DescribeEndpoint")
    call_aws(lambda: deployer.apply(calls[1:]), "cleanup")


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
            raise VoicedeskError(
                ErrorCode.BAD_MESSAGE,
                f"The image {image_uri} is not in ECR ({code}).\n{push_instructions(image_uri, region)}",
            ) from exc
        raise aws_error(exc, "ecr:DescribeImages") from exc


def call_aws[T](action: Callable[[], T], what: str) -> T:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return action()
    except ClientError as exc:
        raise aws_error(exc, what) from exc
    except BotoCoreError as exc:
        from engine.clients.errors import from_credentials

        if type(exc).__name__ in ("NoCredentialsError", "ProfileNotFound", "UnauthorizedSSOTokenError"):
            raise from_credentials(exc, None) from exc
        raise VoicedeskError(ErrorCode.CONNECTION, f"{what} failed: {exc}") from exc


def aws_error(exc: Any, what: str) -> VoicedeskError:
    error = exc.response.get("Error", {})
    code, message = error.get("Code", "Error"), error.get("Message", str(exc))
    if code in ("AccessDeniedException", "AccessDenied") or "not authorized" in message:
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"{what} was denied: {message}. Deploying needs sagemaker:CreateModel, CreateEndpointConfig, "
            "CreateEndpoint, UpdateEndpoint, Describe*/Delete* and iam:PassRole on the execution role.",
        )
    if code == "ResourceLimitExceeded":
        return VoicedeskError(
            ErrorCode.BAD_MESSAGE,
            f"{what}: {message}. Ask for a higher 'endpoint usage' quota for the instance type in Service Quotas, "
            "or pick another --instance-type.",
        )
    if code in ("ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException", "InvalidClientTokenId"):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"AWS rejected the credentials ({code}: {message}).")
    return VoicedeskError(ErrorCode.BAD_MESSAGE, f"{what} failed: {code}: {message}")
