"""The HTTP/2 transport for SageMaker's bidirectional stream: awscrt (the SDK's only transport that streams both ways).
A quick ``ssl`` handshake comes first on non-AWS URLs (awscrt reports an untrusted certificate only after 10-30 s);
credentials come from boto3 at every signing, since the SDK's own chain lacks SSO, assume-role and instance roles."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from copy import deepcopy
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
from awscrt import io as crt_io
from botocore.exceptions import BotoCoreError, NoCredentialsError
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig, _AWSCRTEventLoop

from voicedesk.engine.clients.errors import from_credentials, untrusted_certificate
from voicedesk.engine.errors import ConnectionFailed

log = logging.getLogger(__name__)

BIDI_PORT = 8443
AWS_HOST_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")


def default_endpoint_url(region: str) -> str:
    """The runtime's bidirectional-stream URL; the SDK's own resolver would pick port 443, which does not serve it."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://runtime.sagemaker.{region}.{suffix}:{BIDI_PORT}"


def is_aws_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host.endswith(AWS_HOST_SUFFIXES)


class CRTClient(AWSCRTHTTPClient):
    """``AWSCRTHTTPClient`` with a connect timeout and, optionally, a CA file instead of the system trust store."""

    def __init__(
        self,
        ca_file: Path | None = None,
        connect_timeout_s: float = 5.0,
        eventloop: _AWSCRTEventLoop | None = None,
        client_config: AWSCRTHTTPClientConfig | None = None,
    ) -> None:
        super().__init__(eventloop=eventloop, client_config=client_config or AWSCRTHTTPClientConfig(force_http_2=True))
        self._ca_file = ca_file
        self._connect_timeout_s = connect_timeout_s
        self._socket_options.connect_timeout_ms = int(connect_timeout_s * 1000)
        if ca_file is not None:
            options = crt_io.TlsContextOptions()
            options.override_default_trust_store_from_path(None, str(ca_file))
            self._tls_ctx = crt_io.ClientTlsContext(options)

    async def _await_response(self, stream: Any) -> Any:
        # awscrt writes the request body in a task of its own; when the service answers and ends the stream first
        # (an HTTP error), that task fails with AWS_ERROR_HTTP_STREAM_HAS_COMPLETED and asyncio prints its
        # traceback at exit. The response already carries the error that matters, so only log the write's fate.
        writer = getattr(stream, "_writer", None)
        if isinstance(writer, asyncio.Task):
            writer.add_done_callback(_log_body_writer)
        return await super()._await_response(stream)

    def __deepcopy__(self, memo: Any) -> CRTClient:
        # The stock copy would rebuild the default trust store and forget the timeout.
        return CRTClient(self._ca_file, self._connect_timeout_s, self._eventloop, deepcopy(self._config, memo))


def _log_body_writer(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.debug("request body writer ended early: %s", exc)


async def check_tls(url: str, ca_file: Path | None, timeout_s: float) -> None:
    """One TLS handshake with the trust the CRT client will use; raises a ``VoicedeskError`` that says what to fix."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    context.set_alpn_protocols(["h2"])
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context, server_hostname=host), timeout_s
        )
    except ssl.SSLCertVerificationError as exc:
        raise untrusted_certificate(url, exc.verify_message or str(exc)) from exc
    except ConnectionRefusedError as exc:
        hint = "Is `voicedesk sagemaker-local` running on that port?" if host in ("127.0.0.1", "localhost") else ""
        raise ConnectionFailed(f"Cannot reach {url} (connection refused). {hint}".strip()) from exc
    except TimeoutError as exc:
        raise ConnectionFailed(f"Timed out after {timeout_s:g} s connecting to {url}; check the address.") from exc
    except (ssl.SSLError, OSError) as exc:
        raise ConnectionFailed(f"Cannot open a TLS connection to {url}: {exc}") from exc
    try:
        negotiated = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        if negotiated != "h2":
            raise ConnectionFailed(
                f"{url} does not speak HTTP/2 (ALPN gave {negotiated!r}); bidirectional streams need it. "
                "Is this the runtime's :8443 URL or `voicedesk sagemaker-local`?",
            )
    finally:
        writer.close()
        with contextlib.suppress(ssl.SSLError, OSError):
            await writer.wait_closed()


class BotoCredentialsResolver:
    """An SDK ``IdentityResolver`` backed by ``boto3.Session`` (profiles, SSO, assume-role, env, instance roles)."""

    def __init__(self, session: boto3.Session) -> None:
        self._session = session
        self._credentials: Any = None

    @property
    def profile(self) -> str | None:
        return self._session.profile_name if self._session.profile_name != "default" else None

    async def get_identity(self, *, properties: object = None, **_: object) -> AWSCredentialsIdentity:
        try:
            if self._credentials is None:
                # The first lookup may read files or call SSO/STS: keep it off the event loop.
                self._credentials = await asyncio.to_thread(self._session.get_credentials)
                if self._credentials is None:
                    raise NoCredentialsError()
            credentials = self._credentials
            refresh = getattr(credentials, "refresh_needed", None)
            if refresh is not None and refresh():
                frozen = await asyncio.to_thread(credentials.get_frozen_credentials)
            else:
                frozen = credentials.get_frozen_credentials()
        except BotoCoreError as exc:
            raise from_credentials(exc, self.profile) from exc
        return AWSCredentialsIdentity(
            access_key_id=frozen.access_key, secret_access_key=frozen.secret_key, session_token=frozen.token
        )
