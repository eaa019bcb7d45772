"""Optional SigV4 check for the stand-in: known test credentials in, AWS's own 403 shapes out.

Without keys the stand-in accepts any signed request (a desktop dry run should not need real credentials).
With keys it recomputes the request signature with botocore's SigV4 implementation and answers like the real
service: unknown access key → ``UnrecognizedClientException``, wrong secret → ``InvalidSignatureException``,
a key marked expired → ``ExpiredTokenException``. Event-stream chunk signatures are not checked.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from endpoint.sagemaker_local.asgi import ErrorReply

SIGNING_ALGORITHM = "AWS4-HMAC-SHA256"


MISSING_TOKEN = ErrorReply(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
UNKNOWN_KEY = ErrorReply(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
BAD_SIGNATURE = ErrorReply(
    403,
    "InvalidSignatureException",
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
)
EXPIRED_TOKEN = ErrorReply(403, "ExpiredTokenException", "The security token included in the request is expired")


@dataclass(frozen=True, slots=True)
class ParsedAuthorization:
    access_key_id: str
    date: str
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str


def parse_authorization(value: str) -> ParsedAuthorization | None:
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != SIGNING_ALGORITHM:
        return None
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, _, val = item.strip().partition("=")
        fields[key] = val
    try:
        access_key_id, date, region, service, terminator = fields["Credential"].split("/")
        signed_headers = tuple(fields["SignedHeaders"].split(";"))
        signature = fields["Signature"]
    except (KeyError, ValueError):
        return None
    if terminator != "aws4_request":
        return None
    return ParsedAuthorization(access_key_id, date, region, service, signed_headers, signature)


class CredentialCheck:
    """Verifies the SigV4 ``Authorization`` header of a request against known key pairs."""

    def __init__(
        self,
        keys: Mapping[str, str],
        expired: Iterable[str] = (),
        denied: Mapping[str, Iterable[str]] | None = None,
        account_id: str = "123456789012",
    ) -> None:
        """``denied`` maps an access key id to IAM actions its (pretend) policy lacks."""
        self._keys = dict(keys)
        self._expired = frozenset(expired)
        self._denied = {key: frozenset(actions) for key, actions in (denied or {}).items()}
        self._account_id = account_id

    def check(
        self,
        method: str,
        raw_path: str,
        query_string: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        action: str | None = None,
        resource: str | None = None,
    ) -> ErrorReply | None:
        """``headers`` maps lower-case names to values; ``body`` is needed when no payload hash header is sent.

        ``action`` (e.g. ``sagemaker:InvokeEndpoint``) and ``resource`` (an endpoint ARN) name what is asked for.
        """
        authorization = parse_authorization(headers.get("authorization", ""))
        if authorization is None:
            return MISSING_TOKEN
        secret = self._keys.get(authorization.access_key_id)
        if secret is None:
            return UNKNOWN_KEY
        expected = self._signature(method, raw_path, query_string, headers, body, authorization, secret)
        if expected is None or not hmac.compare_digest(expected, authorization.signature):
            return BAD_SIGNATURE
        if authorization.access_key_id in self._expired:
            return EXPIRED_TOKEN
        if action is not None and action in self._denied.get(authorization.access_key_id, ()):
            return ErrorReply(
                403,
                "AccessDeniedException",
                f"User: arn:aws:iam::{self._account_id}:user/voicedesk-test is not authorized to perform: {action} "
                f"on resource: {resource} because no identity-based policy allows the {action} action",
            )
        return None

    @staticmethod
    def _signature(
        method: str,
        raw_path: str,
        query_string: str,
        headers: Mapping[str, str],
        body: bytes | None,
        authorization: ParsedAuthorization,
        secret: str,
    ) -> str | None:
        signed: dict[str, str] = {}
        for name in authorization.signed_headers:
            value = headers.get(name)
            if value is None and name == "host":
                value = headers.get(":authority")
            if value is None:
                return None
            signed[name] = value
        timestamp = signed.get("x-amz-date") or headers.get("x-amz-date")
        if timestamp is None:
            return None
        url = f"https://{signed.get('host', 'localhost')}{raw_path}"
        if query_string:
            url += f"?{query_string}"
        # botocore takes the payload hash from x-amz-content-sha256 when it was signed, else hashes the body.
        request = AWSRequest(method=method, url=url, headers=signed, data=body or b"")
        request.context["timestamp"] = timestamp
        signer = SigV4Auth(
            Credentials(authorization.access_key_id, secret), authorization.service, authorization.region
        )
        canonical = signer.canonical_request(request)
        return signer.signature(signer.string_to_sign(request, canonical), request)
