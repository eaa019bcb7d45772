"""Runs the stand-in: hypercorn, HTTP/2 over TLS on 127.0.0.1 (awscrt speaks no cleartext HTTP/2), with a local CA kept
between runs so an exported environment keeps working; the server certificate is fresh each start."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import platformdirs
import trustme
from hypercorn.asyncio import serve
from hypercorn.config import Config

from voicedesk.app.lab.sagemaker_local import hypercorn_compat
from voicedesk.app.lab.sagemaker_local.app import StandInApp, StandInConfig

log = logging.getLogger(__name__)

DEFAULT_PORT = 8443
"""The real service's port for bidirectional streams."""
DUMMY_ACCESS_KEY_ID = "AKIAVOICEDESKLOCAL00"
DUMMY_SECRET_ACCESS_KEY = "voicedesk-local-stand-in-secret"


def default_state_dir() -> Path:
    return Path(platformdirs.user_cache_dir("voicedesk")) / "sagemaker-local"


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path


def write_private(path: Path, data: bytes) -> None:
    """Creates ``path`` readable by its owner only from the first byte on (never write-then-chmod)."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def load_or_create_ca(state_dir: Path) -> tuple[trustme.CA, Path]:
    """The local CA kept in ``state_dir`` (created on first use), and its certificate file for clients to trust."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_file, ca_key_file = state_dir / "ca.pem", state_dir / "ca-key.pem"
    if ca_file.exists() and ca_key_file.exists():
        if ca_key_file.stat().st_mode & 0o077:  # written by an older version: tighten, it is not being created
            ca_key_file.chmod(0o600)
        return trustme.CA.from_pem(ca_file.read_bytes(), ca_key_file.read_bytes()), ca_file
    ca = trustme.CA(organization_name="voicedesk sagemaker-local")
    # A key without its certificate is a run that stopped half-way: start the pair over.
    ca_key_file.unlink(missing_ok=True)
    write_private(ca_key_file, ca.private_key_pem.bytes())
    ca.cert_pem.write_to_path(str(ca_file))
    return ca, ca_file


def _remove(tls: TlsFiles) -> None:
    tls.cert_file.unlink(missing_ok=True)
    tls.key_file.unlink(missing_ok=True)


def prepare_tls(state_dir: Path, host: str = "127.0.0.1") -> TlsFiles:
    """Loads (or creates) the local CA in ``state_dir`` and issues a server certificate for 127.0.0.1/localhost, in
    files of its own, so stand-ins sharing a folder never read each other's half-written pair."""
    ca, ca_file = load_or_create_ca(state_dir)
    # The IP SAN is required: the SDK connects to https://127.0.0.1:PORT and checks the address.
    names = dict.fromkeys([host, "127.0.0.1", "localhost"])
    leaf = ca.issue_cert(*names)
    fd, key_name = tempfile.mkstemp(prefix="server-key-", suffix=".pem", dir=state_dir)  # O_EXCL, mode 0600
    with os.fdopen(fd, "wb") as out:
        out.write(leaf.private_key_pem.bytes())
    key_file = Path(key_name)
    cert_file = key_file.with_name(key_file.name.replace("server-key-", "server-cert-"))
    cert_file.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    return TlsFiles(ca_file, cert_file, key_file)


class StandInServer:
    """``async with StandInServer(config) as server:`` serves until the block ends (port 0 picks a free port)."""

    def __init__(
        self,
        config: StandInConfig,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        state_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.app = StandInApp(config)
        self.host = host
        self._requested_port = port
        self.state_dir = state_dir or default_state_dir()
        self.port = 0
        self.tls: TlsFiles | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._hypercorn: Config | None = None

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def ca_file(self) -> Path:
        assert self.tls is not None, "start the server first"
        return self.tls.ca_file

    async def start(self) -> None:
        hypercorn_compat.install()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OSError as exc:
            sock.close()
            raise OSError(
                f"Cannot listen on {self.host}:{self._requested_port} ({exc.strerror}); pick another --port."
            ) from exc
        # Listening before hypercorn starts means a client that connects at once waits in the backlog.
        sock.listen(128)
        self.port = sock.getsockname()[1]
        try:
            self.tls = await asyncio.to_thread(prepare_tls, self.state_dir, self.host)
        except BaseException:
            sock.close()
            raise
        hyper = Config()
        hyper.bind = [f"fd://{sock.detach()}"]
        hyper.certfile = str(self.tls.cert_file)
        hyper.keyfile = str(self.tls.key_file)
        hyper.alpn_protocols = ["h2", "http/1.1"]  # h2 for the HTTP/2 SDK, http/1.1 for boto3
        hyper.graceful_timeout = 1.0
        hyper.accesslog = None
        hyper.errorlog = logging.getLogger("hypercorn.error")
        self._hypercorn = hyper
        self._stop.clear()
        self._task = asyncio.create_task(serve(self.app, hyper, shutdown_trigger=self._stop.wait))  # type: ignore[arg-type]

    async def stop(self, timeout_s: float = 3.0) -> None:
        """Stops accepting, lets streams end, then drops clients keeping idle TLS connections (asyncio would wait 30 s
        each for a close_notify)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except TimeoutError:
            dropped = self.abort_connections()
            log.debug("sagemaker-local: dropped %d connection(s) still open after %.1f s", dropped, timeout_s)
        except Exception as exc:  # a connection's TLS teardown failing must not fail the shutdown
            log.debug("sagemaker-local: shutdown: %r", exc)
        try:
            # A handler still waiting (a stream proxied to the container) must not keep the stand-in from exiting:
            # found in CI, where Ctrl-C left it running; cancelled after the same grace.
            await asyncio.wait_for(task, timeout_s)
        except TimeoutError:
            log.warning(
                "sagemaker-local: the server did not stop within %.1f s of dropping connections; cancelled", timeout_s
            )
        except (asyncio.CancelledError, Exception):
            pass
        if self.tls is not None:
            _remove(self.tls)

    def abort_connections(self) -> int:
        """Drops every client connection at once, as a network failure would (call it on the server's loop)."""
        return hypercorn_compat.abort_connections(self._hypercorn) if self._hypercorn is not None else 0

    async def wait(self) -> None:
        """Serves until cancelled (the CLI's Ctrl-C)."""
        assert self._task is not None
        await self._task

    async def __aenter__(self) -> StandInServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def environment(self, region: str = "us-east-1", with_dummy_credentials: bool = True) -> dict[str, str]:
        return sdk_environment(self.url, self.ca_file, region, with_dummy_credentials)


def sdk_environment(url: str, ca_file: Path, region: str, with_dummy_credentials: bool = True) -> dict[str, str]:
    """The variables that point the HTTP/2 SDK, boto3 and voicedesk's engines at a stand-in at ``url``."""
    env = {
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": url,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": url,
        "AWS_CA_BUNDLE": str(ca_file),
        # botocore reads only AWS_DEFAULT_REGION; the HTTP/2 SDK and the AWS CLI read AWS_REGION.
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
    }
    if with_dummy_credentials:
        env["AWS_ACCESS_KEY_ID"] = DUMMY_ACCESS_KEY_ID
        env["AWS_SECRET_ACCESS_KEY"] = DUMMY_SECRET_ACCESS_KEY
    return env
