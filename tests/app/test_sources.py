"""Agent text sources: the scripted agent on an injected clock, an OpenAI-compatible server and Bedrock, both
real HTTP servers on 127.0.0.1 driven through the real SDKs (openai, boto3)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.app.peers import event_stream_message, serve, sse
from voicedesk.app.sources import ChatMessage
from voicedesk.app.sources.bedrock import BedrockSource
from voicedesk.app.sources.openai_compat import OpenAICompatibleSource
from voicedesk.app.sources.scripted import ScriptedSource, tokenize
from voicedesk.engine.errors import LocalErrorCode, VoicedeskError

# ---- scripted ---------------------------------------------------------------------------------------


class FakeClock:
    """Time that passes only when the source sleeps: token timing is checked exactly, with no real waiting."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_tokenize_keeps_every_character():
    for text in ["Hello world. How are you?", "  spaced   out  ", "line\nbreak", ""]:
        assert "".join(tokenize(text)) == text
    assert tokenize("Hello big world") == ["Hello", " big", " world"]


async def test_scripted_source_emits_each_token_on_its_due_time():
    clock = FakeClock()
    source = ScriptedSource(tokens_per_s=4.0, clock=clock, sleep=clock.sleep)
    emitted = []
    async for token in source.reply([ChatMessage("user", "one two three four five")]):
        emitted.append((token, clock.now - 100.0))
    assert [t for t, _ in emitted] == ["one", " two", " three", " four", " five"]
    assert [at for _, at in emitted] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])


async def test_scripted_source_does_not_drift_when_the_consumer_is_slow():
    clock = FakeClock()
    source = ScriptedSource(tokens_per_s=10.0, script="a b c d", clock=clock, sleep=clock.sleep)
    times = []
    async for _token in source.reply([]):
        times.append(clock.now - 100.0)
        clock.now += 0.25  # the consumer took longer than a token's interval: the next tokens are overdue
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75])
    assert clock.sleeps == []  # overdue tokens go out at once; waits are against the start, not the last token


async def test_scripted_source_refuses_empty_text_and_bad_rates():
    with pytest.raises(VoicedeskError, match="nothing to replay"):
        async for _ in ScriptedSource(script="   ").reply([]):
            pass
    with pytest.raises(VoicedeskError, match="above 0"):
        ScriptedSource(tokens_per_s=0)


# ---- OpenAI-compatible server (a real uvicorn peer streaming chat-completion chunks) ------------------


def chat_server(reply_tokens: list[str], seen: list[dict], on_finish: Callable[[int], None] | None = None) -> Starlette:
    """``on_finish(n)`` is called when the reply stream ends (fully sent or cut off), with the tokens sent."""

    async def completions(request: Request) -> Response:
        body = await request.json()
        seen.append(body)
        if body["model"] != "tiny-llm":
            return JSONResponse({"error": {"message": f"model '{body['model']}' not found"}}, status_code=404)

        async def chunks():
            sent = 0
            try:
                for index, token in enumerate(reply_tokens):
                    delta = {"role": "assistant", "content": token} if index == 0 else {"content": token}
                    yield sse(
                        {
                            "id": "chatcmpl-1",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": body["model"],
                            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                        }
                    )
                    sent += 1
                    await asyncio.sleep(0.02)  # the peer's pace, like a model generating
                yield sse(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    }
                )
                yield sse("[DONE]")
            finally:
                if on_finish is not None:
                    on_finish(sent)

        return StreamingResponse(chunks(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


async def test_openai_compatible_source_streams_the_reply_with_history_and_system_prompt():
    seen: list[dict] = []
    tokens = ["Hello", " there.", " How", " can", " I", " help?"]
    with serve(chat_server(tokens, seen)) as base:
        source = OpenAICompatibleSource(f"{base}/v1", "tiny-llm", system_prompt="Be brief.")
        history = [ChatMessage("user", "Hi"), ChatMessage("assistant", "Hello."), ChatMessage("user", "Help me")]
        fragments = [f async for f in source.reply(history)]
    assert fragments == tokens
    assert seen[0]["stream"] is True
    assert seen[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Help me"},
    ]


async def test_openai_compatible_source_stops_the_server_stream_when_interrupted():
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[int] = loop.create_future()
    tokens = [f" w{i}" for i in range(200)]  # 4 s of reply at the peer's pace
    with serve(chat_server(tokens, [], lambda n: loop.call_soon_threadsafe(ended.set_result, n))) as base:
        stream = OpenAICompatibleSource(f"{base}/v1", "tiny-llm").reply([ChatMessage("user", "Talk")])
        got = [await anext(stream), await anext(stream)]
        await stream.aclose()
        sent = await asyncio.wait_for(ended, 10)  # the server saw the client go away
    assert got == [" w0", " w1"]
    assert sent < len(tokens)


async def test_openai_compatible_source_names_a_missing_model():
    with serve(chat_server(["x"], [])) as base:
        source = OpenAICompatibleSource(f"{base}/v1", "no-such-model")
        with pytest.raises(VoicedeskError, match="no model 'no-such-model'") as caught:
            async for _ in source.reply([ChatMessage("user", "Hi")]):
                pass
    assert "not found" in caught.value.message


async def test_openai_compatible_source_explains_an_unreachable_server():
    with serve(chat_server([], [])) as base:
        dead = base  # the port is free again once the server stopped
    source = OpenAICompatibleSource(f"{dead}/v1", "tiny-llm")
    with pytest.raises(VoicedeskError) as caught:
        async for _ in source.reply([ChatMessage("user", "Hi")]):
            pass
    assert caught.value.code == LocalErrorCode.CONNECTION
    assert "Could not reach the chat server" in caught.value.message


def test_openai_compatible_source_checks_its_settings():
    with pytest.raises(VoicedeskError, match="must start with http"):
        OpenAICompatibleSource("localhost:11434", "m")
    with pytest.raises(VoicedeskError, match="Name the model"):
        OpenAICompatibleSource("http://127.0.0.1:1/v1", " ")


# ---- Bedrock converse_stream --------------------------------------------------------------------------
# moto (5.2) implements bedrock-runtime's invoke_model only, not converse_stream, and Bedrock has no local
# stand-in. So the peer below is a real HTTP server speaking Bedrock's wire format (AWS event-stream framing,
# checked against botocore's own decoder), and boto3 talks to it through endpoint_url: real SigV4 signing with
# the chosen profile, real HTTP, real event-stream parsing and real botocore errors.


def test_event_stream_framing_matches_botocores_decoder():
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(event_stream_message("contentBlockDelta", {"delta": {"text": "hi"}, "contentBlockIndex": 0}))
    (message,) = list(buffer)
    assert message.headers[":event-type"] == "contentBlockDelta"
    assert json.loads(message.payload) == {"delta": {"text": "hi"}, "contentBlockIndex": 0}


def bedrock_server(reply: list[str], seen: list[dict]) -> Starlette:
    async def converse_stream(request: Request) -> Response:
        model = request.path_params["model"]
        seen.append(
            {"model": model, "body": await request.json(), "authorization": request.headers.get("authorization", "")}
        )
        if model != "anthropic.test-model-v1:0":
            return JSONResponse(
                {"message": f"The provided model identifier is invalid: {model}"},
                status_code=400,
                headers={"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/"},
            )

        async def events():
            yield event_stream_message("messageStart", {"role": "assistant"})
            for text in reply:
                yield event_stream_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})
            yield event_stream_message("contentBlockStop", {"contentBlockIndex": 0})
            yield event_stream_message("messageStop", {"stopReason": "end_turn"})

        return StreamingResponse(events(), media_type="application/vnd.amazon.eventstream")

    return Starlette(routes=[Route("/model/{model:path}/converse-stream", converse_stream, methods=["POST"])])


@pytest.fixture
def aws_profile(tmp_path, monkeypatch):
    """A named profile in a private AWS config, so the test checks that the chosen profile signs requests."""
    (tmp_path / "credentials").write_text(
        "[voicedesk-test]\naws_access_key_id = AKIAVOICEDESKTEST\naws_secret_access_key = secret\n"
    )
    (tmp_path / "config").write_text("[profile voicedesk-test]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    return "voicedesk-test"


async def test_bedrock_source_streams_converse_deltas_signed_with_the_profile(aws_profile):
    seen: list[dict] = []
    with serve(bedrock_server(["Sure.", " Here", " it is."], seen)) as base:
        source = BedrockSource(
            "anthropic.test-model-v1:0",
            region="us-west-2",
            profile=aws_profile,
            system_prompt="Be brief.",
            endpoint_url=base,
        )
        history = [ChatMessage("user", "Hi"), ChatMessage("assistant", "Hello."), ChatMessage("user", "More")]
        fragments = [f async for f in source.reply(history)]
    assert fragments == ["Sure.", " Here", " it is."]
    request = seen[0]
    assert request["body"]["system"] == [{"text": "Be brief."}]
    assert [m["role"] for m in request["body"]["messages"]] == ["user", "assistant", "user"]
    assert request["body"]["messages"][2]["content"] == [{"text": "More"}]
    # SigV4 by the profile's key, scoped to the region asked for (not the profile's eu-west-1).
    assert "Credential=AKIAVOICEDESKTEST/" in request["authorization"]
    assert "/us-west-2/bedrock/aws4_request" in request["authorization"]


async def test_bedrock_source_explains_a_rejected_model_id(aws_profile):
    with serve(bedrock_server([], [])) as base:
        source = BedrockSource("anthropic.nope", region="us-east-1", profile=aws_profile, endpoint_url=base)
        with pytest.raises(VoicedeskError) as caught:
            async for _ in source.reply([ChatMessage("user", "Hi")]):
                pass
    assert caught.value.code == LocalErrorCode.USAGE
    assert "model identifier is invalid" in caught.value.message
    assert "Check the model id" in caught.value.message


async def test_bedrock_source_explains_an_unknown_profile(aws_profile):
    source = BedrockSource("anthropic.test-model-v1:0", region="us-east-1", profile="nobody")
    with pytest.raises(VoicedeskError, match="no AWS profile named 'nobody'"):
        async for _ in source.reply([ChatMessage("user", "Hi")]):
            pass
