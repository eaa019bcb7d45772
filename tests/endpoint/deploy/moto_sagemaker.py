"""moto running as a real HTTP server on 127.0.0.1 for `voicedesk deploy` (boto3 unpatched, real HTTP).

moto 5.2 lags the services in ways that matter here, so this brings its fake services (the server side, never
boto3 or our code) up to what SageMaker and Application Auto Scaling document:

- SageMaker: UpdateEndpoint exists (the endpoint switches to the new config; ``RetainAllVariantProperties``
  keeps each variant's instance count), and it fails, as SageMaker documents, when it would change the
  instance type of (or remove) a variant registered as a scalable target; the GPU instance families newer than
  moto's enum list (ml.g5, ml.g6, ml.g6e) are accepted.
- Application Auto Scaling: registering a SageMaker variant needs the endpoint and variant to exist, and a
  scaling policy needs a registered target (moto accepts both blindly).

A model whose container environment has ``MOTO_FAIL_UPDATE`` makes UpdateEndpoint play a failed update that
SageMaker rolled back: the endpoint stays on its old config, InService, with a failure reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import httpx
import pytest

from tests.support.stand_in import REGION

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/voicedesk-sagemaker"
IMAGE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/voicedesk:v1"
FAIL_UPDATE_ENV = "MOTO_FAIL_UPDATE"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def _autoscaling_backend(account: str, region: str):  # the fake Application Auto Scaling service's state
    from moto.applicationautoscaling.models import applicationautoscaling_backends

    return applicationautoscaling_backends[account][region]


def _bring_sagemaker_up_to_date() -> None:
    from moto.core.responses import ActionResult
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import FakeEndpointConfig
    from moto.sagemaker.responses import SageMakerResponse

    original_validate = FakeEndpointConfig.validate_instance_type

    def validate_instance_type(self: FakeEndpointConfig, instance_type: str) -> None:
        if not instance_type.startswith(("ml.g5.", "ml.g6.", "ml.g6e.")):
            original_validate(self, instance_type)

    def update_endpoint(self: SageMakerResponse) -> ActionResult:
        backend = self.sagemaker_backend
        name = self._get_param("EndpointName")
        endpoint = backend.endpoints[name]
        config_name = self._get_param("EndpointConfigName")
        new_config = backend.describe_endpoint_config(config_name)
        new_variants = {v["VariantName"]: v for v in new_config["ProductionVariants"]}
        old_config = backend.describe_endpoint_config(endpoint.endpoint_config_name)
        targets = _autoscaling_backend(self.current_account, self.region).targets.get(DIMENSION, {})
        for old in old_config["ProductionVariants"]:
            new = new_variants.get(old["VariantName"])
            if f"endpoint/{name}/variant/{old['VariantName']}" in targets and (
                new is None or new.get("InstanceType") != old.get("InstanceType")
            ):
                raise ValidationError(
                    message=f"The variant {old['VariantName']} of endpoint {name} is registered with Application "
                    "Auto Scaling; deregister it before changing its instance type or removing it."
                )
        models = [backend.describe_model(v["ModelName"]) for v in new_variants.values()]
        if any(FAIL_UPDATE_ENV in (m.primary_container.get("Environment") or {}) for m in models):
            endpoint.failure_reason = "The primary container for production variant AllTraffic did not pass the ping"
            return ActionResult({"EndpointArn": endpoint.arn})
        kept = {v["VariantName"]: v.get("DesiredInstanceCount") for v in endpoint.production_variants}
        endpoint.endpoint_config_name = config_name
        endpoint.production_variants = endpoint._process_production_variants(list(new_variants.values()))
        if self._get_bool_param("RetainAllVariantProperties"):
            for variant in endpoint.production_variants:
                if kept.get(variant["VariantName"]):
                    variant["CurrentInstanceCount"] = variant["DesiredInstanceCount"] = kept[variant["VariantName"]]
        return ActionResult({"EndpointArn": endpoint.arn})

    SageMakerResponse.update_endpoint = update_endpoint  # type: ignore[attr-defined]
    FakeEndpointConfig.validate_instance_type = validate_instance_type  # type: ignore[method-assign]


def _bring_autoscaling_up_to_date() -> None:
    from moto.applicationautoscaling.exceptions import AWSValidationException
    from moto.applicationautoscaling.models import ApplicationAutoscalingBackend
    from moto.core.exceptions import JsonRESTError
    from moto.sagemaker.models import sagemaker_backends

    original_register = ApplicationAutoscalingBackend.register_scalable_target
    original_put_policy = ApplicationAutoscalingBackend.put_scaling_policy

    def register_scalable_target(self, namespace, r_id, dimension, *args, **kwargs):  # type: ignore[no-untyped-def]
        if namespace == "sagemaker":
            _, endpoint_name, _, variant = [*r_id.split("/"), "", "", ""][:4]
            endpoint = sagemaker_backends[self.account_id][self.region_name].endpoints.get(endpoint_name)
            if endpoint is None or variant not in [v["VariantName"] for v in endpoint.production_variants]:
                raise AWSValidationException(f"Could not find {r_id}: the endpoint or its variant does not exist.")
        return original_register(self, namespace, r_id, dimension, *args, **kwargs)

    def put_scaling_policy(self, policy_name, service_namespace, resource_id, scalable_dimension, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not self._scalable_target_exists(resource_id, scalable_dimension):
            raise JsonRESTError(
                "ObjectNotFoundException",
                f"No scalable target registered for service namespace: {service_namespace}, resource ID: "
                f"{resource_id}, scalable dimension: {scalable_dimension}",
            )
        return original_put_policy(
            self, policy_name, service_namespace, resource_id, scalable_dimension, *args, **kwargs
        )

    ApplicationAutoscalingBackend.register_scalable_target = register_scalable_target  # type: ignore[method-assign]
    ApplicationAutoscalingBackend.put_scaling_policy = put_scaling_policy  # type: ignore[method-assign]


def bring_moto_up_to_date() -> None:
    from moto.sagemaker.responses import SageMakerResponse

    if hasattr(SageMakerResponse, "update_endpoint"):
        return
    _bring_sagemaker_up_to_date()
    _bring_autoscaling_up_to_date()


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    bring_moto_up_to_date()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> boto3.Session:
    """Every boto3 client (ours and the test's) goes to moto over HTTP; its state starts empty."""
    httpx.post(f"{moto_url}/moto-api/reset", timeout=10).raise_for_status()
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    session = boto3.Session(region_name=REGION)
    ecr = session.client("ecr")
    ecr.create_repository(repositoryName="voicedesk")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json", "layers": []}
    ecr.put_image(repositoryName="voicedesk", imageManifest=json.dumps(manifest), imageTag="v1")
    return session


def moto_endpoint(name: str):  # the fake service's record, to play SageMaker's own state changes
    from moto.sagemaker.models import sagemaker_backends

    return sagemaker_backends[ACCOUNT][REGION].endpoints[name]


def deploy_args(*extra: str) -> list[str]:
    common = ["--name", "voicedesk", "--region", REGION, "--image", IMAGE, "--role", ROLE, "--poll", "0"]
    return ["deploy", *common, *extra]
