"""What the services' gRPC servicers share."""

from __future__ import annotations

from typing import NoReturn

import grpc


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, details: str) -> NoReturn:
    """`context.abort`, which always raises; grpc ships no type information to say so."""
    await context.abort(code, details)
    raise AssertionError("grpc.aio.ServicerContext.abort returned")
