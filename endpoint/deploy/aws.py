"""The AWS plumbing ``voicedesk deploy`` shares: one planned API call, and AWS errors turned into ours."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError

SAGEMAKER = "sagemaker"
AUTOSCALING = "application-autoscaling"
"""boto3 client names, as ``ApiCall.service`` spells them."""


@dataclass(frozen=True, slots=True)
class ApiCall:
    operation: str
    """The boto3 client method, e.g. ``create_model``."""
    params: dict[str, Any]
    service: str = SAGEMAKER

    def render(self) -> str:
        return f"{self.service}.{self.operation}(**{json.dumps(self.params, indent=2, sort_keys=True)})"


def is_not_found(exc: Exception) -> bool:
    error = getattr(exc, "response", {}).get("Error", {})
    message = str(error.get("Message", "")).lower()
    return error.get("Code") in ("ValidationException", "ValidationError", "ResourceNotFound") and (
        "could not find" in message or "not found" in message or "does not exist" in message
    )


def call_aws[T](action: Callable[[], T], what: str) -> T:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return action()
    except ClientError as exc:
        raise aws_error(exc, what) from exc
    except BotoCoreError as exc:
        from voicedesk.engine.clients.errors import from_credentials

        if type(exc).__name__ in ("NoCredentialsError", "ProfileNotFound", "UnauthorizedSSOTokenError"):
            raise from_credentials(exc, None) from exc
        raise ConnectionFailed(f"{what} failed: {exc}") from exc


def aws_error(exc: Any, what: str) -> VoicedeskError:
    error = exc.response.get("Error", {})
    code, message = error.get("Code", "Error"), error.get("Message", str(exc))
    if code in ("AccessDeniedException", "AccessDenied") or "not authorized" in message:
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"{what} was denied: {message}. Deploying needs the permissions in packaging/iam/deployer-policy.json "
            "(SageMaker create/update/describe/delete, iam:PassRole on the execution role, and Application Auto "
            "Scaling when the endpoint scales).",
        )
    if code == "ResourceLimitExceeded":
        return UsageError(
            f"{what}: {message}. Ask for a higher 'endpoint usage' quota for the instance type in Service Quotas, "
            "or pick another --instance-type (or a lower --max-instances).",
        )
    if code in ("ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException", "InvalidClientTokenId"):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"AWS rejected the credentials ({code}: {message}).")
    return UsageError(f"{what} failed: {code}: {message}")
