"""Amazon Bedrock as the agent: boto3's blocking ``converse_stream`` read on a worker thread; an interrupt closes
the stream, which stops generation at Bedrock."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from voicedesk.app.sources import ChatMessage
from voicedesk.engine.errors import ConnectionFailed, ErrorCode, UsageError, VoicedeskError

_DONE = object()


class BedrockSource:
    def __init__(
        self,
        model_id: str,
        region: str = "",
        profile: str = "",
        system_prompt: str = "",
        endpoint_url: str | None = None,
        max_tokens: int = 1024,
    ) -> None:
        if not model_id.strip():
            raise UsageError(
                "Name the Bedrock model to ask (e.g. anthropic.claude-3-haiku-20240307-v1:0 or an inference "
                "profile id such as us.anthropic.claude-3-5-haiku-20241022-v1:0)."
            )
        self.model_id = model_id.strip()
        self.region = region.strip()
        self.profile = profile.strip()
        self.system_prompt = system_prompt
        self.endpoint_url = endpoint_url
        self.max_tokens = max_tokens
        self.name = f"Bedrock · {self.model_id}"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ProfileNotFound

        try:
            session = boto3.Session(profile_name=self.profile or None, region_name=self.region or None)
            return session.client(
                "bedrock-runtime",
                endpoint_url=self.endpoint_url,
                config=Config(retries={"max_attempts": 2, "mode": "standard"}, read_timeout=120),
            )
        except ProfileNotFound:
            raise VoicedeskError(
                ErrorCode.UNAUTHORIZED,
                f"There is no AWS profile named {self.profile!r} on this machine; run "
                f"`aws configure --profile {self.profile}` (or `aws sso login`), or clear the profile field.",
            ) from None
        except BotoCoreError as exc:
            raise _explain(exc, self) from exc

    def request(self, messages: Sequence[ChatMessage]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "modelId": self.model_id,
            "messages": [{"role": m.role, "content": [{"text": m.text}]} for m in messages if m.text.strip()],
            "inferenceConfig": {"maxTokens": self.max_tokens},
        }
        if self.system_prompt.strip():
            request["system"] = [{"text": self.system_prompt}]
        return request

    async def reply(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()
        holder: dict[str, Any] = {}

        def hand_over(item: object) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is gone (the app quit mid-reply): nobody is listening
                stop.set()

        def pump() -> None:
            try:
                for text in self._fragments(messages, stop, holder):
                    hand_over(text)
                hand_over(_DONE)
            except Exception as exc:  # raised on the loop, in the reader
                hand_over(exc)

        worker = threading.Thread(target=pump, name="bedrock-stream", daemon=True)
        worker.start()
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
        finally:
            stop.set()
            stream = holder.get("stream")
            if stream is not None:
                await asyncio.to_thread(stream.close)

    def _fragments(
        self, messages: Sequence[ChatMessage], stop: threading.Event, holder: dict[str, Any]
    ) -> Iterator[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client().converse_stream(**self.request(messages))
            holder["stream"] = response["stream"]
            for event in response["stream"]:
                if stop.is_set():
                    return
                delta = event.get("contentBlockDelta", {}).get("delta", {})
                if delta.get("text"):
                    yield delta["text"]
                if "messageStop" in event:
                    return
        except (ClientError, BotoCoreError) as exc:
            raise _explain(exc, self) from exc


def _explain(exc: Exception, source: BedrockSource) -> VoicedeskError:
    from botocore import exceptions as errors

    where = f"profile {source.profile!r}" if source.profile else "the default AWS credentials"
    if isinstance(exc, errors.NoRegionError):
        return UsageError("No AWS region is set for Bedrock: fill in the region (e.g. us-east-1).")
    if isinstance(exc, errors.NoCredentialsError | errors.PartialCredentialsError | errors.TokenRetrievalError):
        return VoicedeskError(
            ErrorCode.UNAUTHORIZED,
            f"No usable AWS credentials ({where}): {exc}. Run `aws configure` or `aws sso login`, "
            "or pick a profile that has Bedrock access.",
        )
    if isinstance(exc, errors.EndpointConnectionError):
        return ConnectionFailed(
            f"Could not reach Bedrock in {source.region or 'the configured region'} ({exc}). "
            "Check the network, and that Bedrock is offered in this region."
        )
    if isinstance(exc, errors.ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", str(exc))
        if code in ("AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"):
            return VoicedeskError(
                ErrorCode.UNAUTHORIZED,
                f"Bedrock refused {where}: {message}. Ask for bedrock:InvokeModelWithResponseStream on "
                f"{source.model_id}, and enable the model under Bedrock › Model access.",
            )
        if code in ("ValidationException", "ResourceNotFoundException"):
            return UsageError(
                f"Bedrock did not accept the request for {source.model_id!r}: {message}. Check the model id "
                "(some models need an inference profile id such as us.anthropic.…) and the region."
            )
        if code in ("ThrottlingException", "ServiceQuotaExceededException", "ModelNotReadyException"):
            return ConnectionFailed(f"Bedrock is busy ({code}: {message}); try again shortly.")
        return ConnectionFailed(f"Bedrock failed ({code or type(exc).__name__}): {message}")
    return ConnectionFailed(f"Bedrock failed: {exc}")
