"""AWS credentials for the HTTP/2 SDK from a boto3 session, resolved again on every signing: the SDK's own chain lacks
SSO, assume-role and instance roles, and a long session must survive a rotation."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, NoCredentialsError
from smithy_aws_core.identity import AWSCredentialsIdentity

from voicedesk.engine.clients.errors import from_credentials


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
