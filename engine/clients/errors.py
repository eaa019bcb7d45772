"""Turns what the SageMaker SDKs, boto3 and the network raise into a ``VoicedeskError`` a person can act on, matched by
class name and fields so neither SDK is imported."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass

from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError

BIDI_ACTION = "sagemaker:InvokeEndpointWithBidirectionalStream"
CALLER_POLICY = "packaging/iam/caller-policy.json"

_CALL_ERROR = re.compile(r"status: (?P<status>\d+)(?: - id: (?:[\w.]+#)?(?P<id>\w+))?")


@dataclass(frozen=True, slots=True)
class EndpointContext:
    """What the message needs to name: which endpoint, where, and through which URL."""

    endpoint_name: str
    region: str | None = None
    endpoint_url: str | None = None
    profile: str | None = None

    @property
    def where(self) -> str:
        return f"endpoint '{self.endpoint_name}'" + (f" in {self.region}" if self.region else "")

    @property
    def logs(self) -> str:
        return f"CloudWatch log group /aws/sagemaker/Endpoints/{self.endpoint_name}"

    @property
    def refresh_hint(self) -> str:
        profile = f" --profile {self.profile}" if self.profile else ""
        return f"refresh them (for SSO: `aws sso login{profile}`) or pick another profile with --profile"


def _status_and_id(exc: BaseException) -> tuple[int | None, str | None]:
    match = _CALL_ERROR.search(str(getattr(exc, "message", "")) or str(exc))
    if match is None:
        return None, None
    return int(match["status"]), match["id"]


_SIGNATURE_ERRORS = {
    "InvalidSignatureException": "signature does not match",
    "IncompleteSignatureException": "signature is malformed",
}
_CLOCK_HINT = "if they are right, check this computer's clock: AWS refuses signatures more than 15 minutes off."


def _signature_hint(detail: str) -> str | None:
    """What to do about a signature AWS refused for a reason its message names (boto3 passes the message on)."""
    if "Signature expired" in detail or "Signature not yet current" in detail:
        return "This computer's clock is more than 15 minutes off: set it right (turn on automatic time), then retry."
    if "scoped to a valid region" in detail:
        return "The request was signed for another region than the endpoint's: pass its region (--region, AWS_REGION)."
    if "scoped to correct service" in detail:
        return "The request was signed for another service; check AWS_ENDPOINT_URL* variables and any proxy."
    return None


def _auth_error(error_id: str | None, status: int | None, ctx: EndpointContext, detail: str) -> VoicedeskError | None:
    if error_id in ("ExpiredTokenException", "ExpiredToken", "RequestExpired"):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"Your AWS credentials have expired: {ctx.refresh_hint}.")
    if error_id in _SIGNATURE_ERRORS and (hint := _signature_hint(detail)):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"AWS refused the request to {ctx.where}{detail}. {hint}")
    if error_id in ("UnrecognizedClientException", "InvalidClientTokenId", *_SIGNATURE_ERRORS):
        what = _SIGNATURE_ERRORS.get(error_id, "access key is not known")
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"AWS rejected the credentials for {ctx.where} ({error_id}: the {what}). Check the profile or the "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY variables in use, and that they belong to the endpoint's account"
            + (f"; {_CLOCK_HINT}" if error_id == "InvalidSignatureException" else "."),
        )
    if error_id in ("AccessDeniedException", "AccessDenied") or status == 403:
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"Access denied to {ctx.where}{detail}. The caller needs {BIDI_ACTION} (and sagemaker:InvokeEndpoint, "
            f"sagemaker:InvokeEndpointWithResponseStream) on the endpoint's ARN; {CALLER_POLICY} is a ready policy.",
        )
    return None


def from_sagemaker_sdk(exc: BaseException, ctx: EndpointContext) -> VoicedeskError:
    """Maps an exception of ``aws_sdk_sagemaker_runtime_http2`` (or its transport) for a bidirectional stream."""
    if isinstance(exc, VoicedeskError):
        return exc
    name = type(exc).__name__
    message = str(getattr(exc, "message", "") or exc)
    if name == "ModelStreamError":
        return model_stream_error(message, getattr(exc, "error_code", None), ctx)
    if name == "InternalStreamFailure":
        return internal_stream_failure(message, ctx)
    if name == "ModelError":
        status = getattr(exc, "original_status_code", None)
        original = getattr(exc, "original_message", None)
        arn = getattr(exc, "log_stream_arn", None)
        return ConnectionFailed(
            f"The model container behind {ctx.where} failed"
            f"{f' with HTTP {status}' if status else ''}: {original or message}. "
            f"SageMaker's 424 message is generic; the real error is in the {ctx.logs}"
            f"{f' (stream {arn})' if arn else ''}.",
        )
    if name in ("InputValidationError", "ValidationError"):
        return _validation_error(message, ctx)
    if name in ("ServiceUnavailableError", "InternalServerError"):
        return ConnectionFailed(
            f"SageMaker could not serve {ctx.where} right now ({name}: {message}). Retry in a moment; "
            "if it persists, check the endpoint's status with `voicedesk deploy status`.",
        )
    status, error_id = _status_and_id(exc)
    if name == "CallError" and (status is not None or error_id is not None):
        auth = _auth_error(error_id, status, ctx, "")
        if auth is not None:
            return auth
        if error_id in ("ValidationError", "InputValidationError") or status == 400:
            return _validation_error(message, ctx)
        if status == 404 or error_id == "UnknownOperationException":
            return ConnectionFailed(
                f"{ctx.endpoint_url or 'The endpoint URL'} does not serve InvokeEndpointWithBidirectionalStream "
                f"(HTTP 404). Use the runtime's :8443 URL, or unset AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2.",
            )
    return from_transport(exc, ctx)


def model_stream_error(message: str, error_code: str | None, ctx: EndpointContext) -> VoicedeskError:
    return ConnectionFailed(
        f"The model container behind {ctx.where} ended the stream with an error"
        f"{f' ({error_code})' if error_code else ''}: {message}. The container's own log is in the {ctx.logs}.",
    )


def internal_stream_failure(message: str, ctx: EndpointContext) -> VoicedeskError:
    return ConnectionFailed(
        f"SageMaker's streaming layer failed for {ctx.where} (InternalStreamFailure: {message}). "
        "This is on the AWS side: retry.",
    )


def _validation_error(message: str, ctx: EndpointContext) -> VoicedeskError:
    lowered = message.lower()
    if "not found" in lowered or "could not find" in lowered or "validationerror" in lowered or not message:
        return ConnectionFailed(
            f"There is no {ctx.where} (SageMaker says it does not exist). Check the name and region "
            "(`voicedesk deploy status --name NAME --region REGION`), or deploy it with `voicedesk deploy`.",
        )
    return UsageError(f"SageMaker rejected the request to {ctx.where}: {message}")


def from_transport(exc: BaseException, ctx: EndpointContext) -> VoicedeskError:
    """Network and TLS failures (awscrt, ssl, sockets) while reaching the runtime URL."""
    url = ctx.endpoint_url or "the SageMaker runtime"
    crt_name = _crt_error_name(exc)
    if crt_name is not None:
        if "TLS" in crt_name or "CERT" in crt_name or "SSL" in crt_name:
            return untrusted_certificate(url, crt_name)
        if crt_name in ("AWS_IO_SOCKET_CONNECTION_REFUSED", "AWS_IO_SOCKET_NO_ROUTE_TO_HOST"):
            return ConnectionFailed(f"Cannot reach {url} ({crt_name}). {_local_hint(url)}")
        if crt_name in ("AWS_IO_SOCKET_TIMEOUT", "AWS_IO_SOCKET_CLOSED"):
            return ConnectionFailed(
                f"The connection to {url} timed out or closed ({crt_name}). Check the network, a proxy or firewall "
                "(bidirectional streams use port 8443), then retry.",
            )
        if crt_name.startswith("AWS_IO_DNS"):
            return ConnectionFailed(f"Cannot resolve the host of {url} ({crt_name}).")
        return ConnectionFailed(f"The connection to {url} failed ({crt_name}).")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return untrusted_certificate(url, exc.verify_message or str(exc))
    if isinstance(exc, ConnectionRefusedError):
        return ConnectionFailed(f"Cannot reach {url} (connection refused). {_local_hint(url)}")
    if isinstance(exc, TimeoutError):
        return ConnectionFailed(f"Timed out reaching {url}. Check the network, then retry.")
    if isinstance(exc, OSError):
        return ConnectionFailed(f"The connection to {url} failed: {exc}.")
    return ConnectionFailed(f"The call to {ctx.where} failed: {type(exc).__name__}: {exc}")


def untrusted_certificate(url: str, detail: str) -> VoicedeskError:
    return ConnectionFailed(
        f"{url} presented a TLS certificate this machine does not trust ({detail}). For `voicedesk sagemaker-local`, "
        "export the AWS_CA_BUNDLE it prints (or pass its CA file); behind a TLS-inspecting proxy, point "
        "AWS_CA_BUNDLE at the proxy's CA.",
    )


def _local_hint(url: str) -> str:
    if "127.0.0.1" in url or "localhost" in url:
        return "Is `voicedesk sagemaker-local` running on that port?"
    return "Check the network and the region."


def _crt_error_name(exc: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = getattr(current, "name", None)
        if type(current).__name__ == "AwsCrtError" and isinstance(name, str):
            return name
        for arg in getattr(current, "args", ()):
            if type(arg).__name__ == "AwsCrtError" and isinstance(getattr(arg, "name", None), str):
                return arg.name
        current = current.__cause__ or current.__context__
    return None


def from_credentials(exc: BaseException, profile: str | None) -> VoicedeskError:
    """boto3/botocore failures while resolving credentials (before anything is sent)."""
    name = type(exc).__name__
    where = f"profile '{profile}'" if profile else "the default credential chain"
    login = f"`aws sso login{f' --profile {profile}' if profile else ''}`"
    if name == "ProfileNotFound":
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED, f"There is no AWS profile '{profile}' (see `aws configure list-profiles`)."
        )
    if name == "NoCredentialsError":
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"No AWS credentials found in {where}. Run `aws configure` or {login}, or pass --profile.",
        )
    if name in ("UnauthorizedSSOTokenError", "SSOTokenLoadError", "TokenRetrievalError"):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"The SSO session of {where} has expired: run {login}.")
    if name in ("CredentialRetrievalError", "RefreshWithMFAUnsupportedError"):
        return VoicedeskError(ErrorCode.UNAUTHORIZED, f"Could not get AWS credentials from {where}: {exc}")
    return VoicedeskError(ErrorCode.UNAUTHORIZED, f"Could not get AWS credentials from {where}: {name}: {exc}")


def from_boto_client_error(exc: BaseException, ctx: EndpointContext) -> VoicedeskError:
    """A botocore ``ClientError`` from ``invoke_endpoint*`` (or a transport error around it)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        if type(exc).__name__ in ("SSLError", "SSLCertVerificationError") or "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return untrusted_certificate(ctx.endpoint_url or "the SageMaker runtime", str(exc))
        if type(exc).__name__ == "EndpointConnectionError":
            return ConnectionFailed(f"{exc}. {_local_hint(str(exc))}")
        if type(exc).__name__ in ("NoCredentialsError", "ProfileNotFound", "UnauthorizedSSOTokenError"):
            return from_credentials(exc, ctx.profile)
        return from_transport(exc, ctx)
    error = response.get("Error", {})
    error_id = error.get("Code")
    message = error.get("Message", "")
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    auth = _auth_error(error_id, status if status == 403 else None, ctx, f" ({error_id}: {message})")
    if auth is not None:
        return auth
    if error_id == "ModelError":
        original = response.get("OriginalMessage") or message
        original_status = response.get("OriginalStatusCode")
        return ConnectionFailed(
            f"The model container behind {ctx.where} failed"
            f"{f' with HTTP {original_status}' if original_status else ''}: {original}. "
            f"The real error is in the {ctx.logs}.",
        )
    if error_id in ("ValidationError", "InputValidationError"):
        return _validation_error(message, ctx)
    if error_id == "ModelStreamError":
        return model_stream_error(message, error.get("ErrorCode"), ctx)
    if error_id == "InternalStreamFailure":
        return internal_stream_failure(message, ctx)
    return ConnectionFailed(f"SageMaker refused the call to {ctx.where}: {error_id}: {message}")
