"""Every HTTP error answer comes from here: ``answer`` turns a ``Refusal``, Starlette's own refusals and bugs into
``error_body``'s one JSON shape, with the status of its code's row in ``engine.errors``."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from voicedesk.engine.errors import ErrorCode, VoicedeskError, error_body, http_status_for

BUG_MESSAGE = "The server failed on this request; its log says why."


class Refusal(Exception):
    """What a route raises to refuse a request; ``openai``: OpenAI's error shape, which its client parses."""

    def __init__(self, error: VoicedeskError, request_id: str | None = None, openai: bool = False) -> None:
        super().__init__(error.message)
        self.error, self.request_id, self.openai = error, request_id, openai


def error_response(error: VoicedeskError, request_id: str | None = None, openai: bool = False) -> JSONResponse:
    code = str(error.code)
    body = (
        {"error": {"message": error.message, "type": "invalid_request_error", "code": code}}
        if openai
        else error_body(error, request_id)
    )
    headers = getattr(error, "headers", {})  # Retry-After of a saturated queue…
    return JSONResponse(body, status_code=http_status_for(code), headers=headers)


async def answer(request: Request, exc: Exception) -> JSONResponse:
    """The one exception handler of the app."""
    if isinstance(exc, Refusal):
        return error_response(exc.error, exc.request_id, exc.openai)
    if not isinstance(exc, HTTPException):  # a bug: the client learns that, and no more (Starlette logs it)
        return error_response(VoicedeskError(ErrorCode.INTERNAL, BUG_MESSAGE))
    path = request.url.path if len(request.url.path) <= 80 else request.url.path[:80] + "…"
    if exc.status_code == 404:
        routes = ", ".join(getattr(route, "path", "") for route in request.app.routes)
        error = VoicedeskError(ErrorCode.NOT_FOUND, f"There is no route {path!r} here; the routes are: {routes}.")
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {path!r}; use {allowed or 'another method'}."
        error = VoicedeskError(ErrorCode.METHOD_NOT_ALLOWED, message)
    else:
        error = VoicedeskError(ErrorCode.BAD_MESSAGE, f"The request was refused: {exc.detail}.")
    response = error_response(error)
    response.status_code = exc.status_code
    response.headers.update(exc.headers or {})  # Allow of a wrong method
    return response
