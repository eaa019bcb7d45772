"""SigV4 checking for the stand-in: what AWS rejects is rejected here too, with AWS's own 403 shapes.

The credential scope must name today, ``sagemaker`` and the region, within 15 minutes either way; with known keys the
signature is recomputed with botocore's code (unknown key, wrong secret, expired key each answered as AWS does).
Event-stream chunk signatures are not checked. Hostile input gets a 403, never a crash."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from voicedesk.app.lab.sagemaker_local.asgi import ErrorReply

SIGNING_ALGORITHM = "AWS4-HMAC-SHA256"
SIGNING_SERVICE = "sagemaker"
MAX_CLOCK_SKEW = timedelta(minutes=15)
"""How far a request's ``x-amz-date`` may be from the service's clock, either way (AWS's SigV4 window)."""
AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"

_SIGNATURE = re.compile(r"[0-9a-f]{64}")
_AMZ_DATE = re.compile(r"\d{8}T\d{6}Z")


MISSING_TOKEN = ErrorReply(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
UNKNOWN_KEY = ErrorReply(403, "UnrecognizedClientException", "The security token included in the request is invalid.")
BAD_SIGNATURE = ErrorReply(
    403,
    "InvalidSignatureException",
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
)
EXPIRED_TOKEN = ErrorReply(403, "ExpiredTokenException", "The security token included in the request is expired")


def incomplete_signature(message: str) -> ErrorReply:
    return ErrorReply(403, "IncompleteSignatureException", message)


def invalid_signature(message: str) -> ErrorReply:
    return ErrorReply(403, "InvalidSignatureException", message)


@dataclass(frozen=True, slots=True)
class ParsedAuthorization:
    access_key_id: str
    date: str
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str


def parse_authorization(value: str) -> ParsedAuthorization | ErrorReply:
    """The parts of a SigV4 ``Authorization`` header, or the error AWS gives for a malformed one."""
    algorithm, _, rest = value.strip().partition(" ")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, _, val = item.strip().partition("=")
        fields[key] = val
    missing = [name for name in ("Credential", "Signature", "SignedHeaders") if not fields.get(name)]
    if algorithm != SIGNING_ALGORITHM or missing:
        wanted = missing or ["Credential", "Signature", "SignedHeaders"]
        return incomplete_signature(
            " ".join(f"Authorization header requires '{name}' parameter." for name in wanted)
            + f" Authorization={value[:200]}"
        )
    credential = fields["Credential"]
    parts = credential.split("/")
    if len(parts) != 5:
        return incomplete_signature(
            "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, "
            f"got '{credential[:200]}'"
        )
    access_key_id, date, region, service, terminator = parts
    if terminator != "aws4_request":
        return invalid_signature(
            f"Credential should be scoped with a valid terminator: 'aws4_request', not '{terminator[:40]}'."
        )
    signed_headers = tuple(fields["SignedHeaders"].split(";"))
    return ParsedAuthorization(access_key_id, date, region, service, signed_headers, fields["Signature"])


def check_scope(
    authorization: ParsedAuthorization, headers: Mapping[str, str], region: str | None, now: datetime
) -> ErrorReply | None:
    """What the service checks before it looks at keys: the date, the service, the region, the time window."""
    timestamp = headers.get("x-amz-date")
    if timestamp is None:
        return incomplete_signature(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
        )
    if not _AMZ_DATE.fullmatch(timestamp):
        return incomplete_signature(
            f"Date must be in ISO-8601 'basic format'. Got '{timestamp[:40]}'. See http://en.wikipedia.org/wiki/ISO_8601"
        )
    try:
        signed_at = datetime.strptime(timestamp, AMZ_DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return incomplete_signature(f"Date must be a real date and time. Got '{timestamp}'.")
    if authorization.date != timestamp[:8]:
        return invalid_signature(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{authorization.date[:40]}' != '{timestamp[:8]}', from '{timestamp}'."
        )
    if authorization.service != SIGNING_SERVICE:
        return invalid_signature(f"Credential should be scoped to correct service: '{SIGNING_SERVICE}'. ")
    if region is not None and authorization.region != region:
        return invalid_signature(
            f"Credential should be scoped to a valid region. (This endpoint is in {region}; the request was "
            f"signed for '{authorization.region[:40]}'.)"
        )
    if "host" not in authorization.signed_headers:
        return invalid_signature("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
    stamp = now.strftime(AMZ_DATE_FORMAT)
    if signed_at < now - MAX_CLOCK_SKEW:
        limit = (now - MAX_CLOCK_SKEW).strftime(AMZ_DATE_FORMAT)
        return invalid_signature(f"Signature expired: {timestamp} is now earlier than {limit} ({stamp} - 15 min.)")
    if signed_at > now + MAX_CLOCK_SKEW:
        limit = (now + MAX_CLOCK_SKEW).strftime(AMZ_DATE_FORMAT)
        return invalid_signature(
            f"Signature not yet current: {timestamp} is still later than {limit} ({stamp} + 15 min.)"
        )
    return None


class CredentialCheck:
    """Verifies the SigV4 ``Authorization`` header of a request; ``keys=None`` accepts any key id and secret."""

    def __init__(
        self,
        keys: Mapping[str, str] | None,
        expired: Iterable[str] = (),
        denied: Mapping[str, Iterable[str]] | None = None,
        account_id: str = "123456789012",
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``denied`` maps an access key id to IAM actions its (pretend) policy lacks; ``clock`` is the service's
        (tests set it off to play a client whose clock is wrong)."""
        self._keys = dict(keys) if keys is not None else None
        self._clock = clock or (lambda: datetime.now(UTC))
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
        *,
        region: str | None = None,
        now: datetime | None = None,
    ) -> ErrorReply | None:
        """``headers``: lower-case names; ``body`` is needed without a payload hash header; ``action`` and ``resource``
        name what is asked; ``region`` must be the scope's (None: any); ``now``: the service's clock."""
        value = headers.get("authorization")
        if not value:
            return MISSING_TOKEN
        authorization = parse_authorization(value)
        if isinstance(authorization, ErrorReply):
            return authorization
        failure = check_scope(authorization, headers, region, now or self._clock())
        if failure is not None:
            return failure
        if self._keys is not None:
            secret = self._keys.get(authorization.access_key_id)
            if secret is None:
                return UNKNOWN_KEY
            if not _SIGNATURE.fullmatch(authorization.signature):
                return BAD_SIGNATURE  # not what SigV4 produces (e.g. non-ASCII): it cannot match
            expected = _signature(method, raw_path, query_string, headers, body, authorization, secret)
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


def _signature(
    method: str,
    raw_path: str,
    query_string: str,
    headers: Mapping[str, str],
    body: bytes | None,
    authorization: ParsedAuthorization,
    secret: str,
) -> str | None:
    """The signature botocore computes for this request, or None when the request cannot be signed as given."""
    signed: dict[str, str] = {}
    for name in authorization.signed_headers:
        value = headers.get(name)
        if value is None and name == "host":
            value = headers.get(":authority")
        if value is None:
            return None
        signed[name] = value
    url = f"https://{signed.get('host', 'localhost')}{raw_path}"
    if query_string:
        url += f"?{query_string}"
    try:
        # botocore takes the payload hash from x-amz-content-sha256 when it was signed, else hashes the body.
        request = AWSRequest(method=method, url=url, headers=signed, data=body or b"")
        request.context["timestamp"] = headers["x-amz-date"]
        signer = SigV4Auth(
            Credentials(authorization.access_key_id, secret), authorization.service, authorization.region
        )
        canonical = signer.canonical_request(request)
        return signer.signature(signer.string_to_sign(request, canonical), request)
    except Exception:  # whatever hostile headers make botocore choke on cannot carry a valid signature
        return None
