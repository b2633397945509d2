"""The FastAPI application: routes, error handlers, limits; heavy parts built in lifespan."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app import dashboard
from app.api import (
    advice,
    call,
    feedback,
    health,
    keys,
    learning,
    memory,
    metrics,
    route,
    sources,
    stats,
    tools,
    validate,
)
from app.api.error_handlers import install_error_handlers
from app.api.middleware import (
    TOO_MANY_REQUESTS,
    BodySizeLimit,
    NoNulInUrl,
    RateLimits,
    UrlLengthLimit,
)
from app.api.openapi import install_openapi
from app.api.tools import BULK_PATH, NDJSON
from app.embedding.encoders import Encoder
from app.mcp.http import mcp_routes, mcp_sessions
from app.services import build_services
from app.settings import Settings, get_settings


def create_app(
    settings: Settings | None = None, encoder: Encoder | None = None, *, freeze_gc: bool = False
) -> FastAPI:
    """Build the app; the engine, encoder and index are made when it starts, not here.

    ``freeze_gc`` (``toolreach serve``): once started, move every object alive then (the
    framework, the models, the first index: ~170k objects) out of the cyclic garbage
    collector's reach (:func:`gc.freeze`). A full collection walks every tracked object,
    every few seconds under load, while it holds the interpreter lock and every route waits
    (docs/BENCHMARKS.md, "Throughput"). A test process building many
    apps keeps it off: frozen objects in reference cycles are never reclaimed.
    """
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = build_services(settings, encoder)
        services.start()
        await services.start_sources()
        app.state.services = services
        app.state.mcp_sessions = sessions = mcp_sessions(services)
        if freeze_gc:
            gc.collect()
            gc.freeze()
        try:
            async with sessions.run():  # /mcp's requests run in its task group
                yield
        finally:
            await services.close_sources()
            services.close()
            if freeze_gc:
                gc.unfreeze()

    app = FastAPI(
        title="ToolReach",
        version="0.1.0",
        summary="A tool registry and router for LLM agents.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    install_openapi(app)
    app.add_middleware(
        BodySizeLimit,
        limit=settings.max_body_bytes,
        streamed={(BULK_PATH, NDJSON): settings.max_import_bytes},
    )
    app.add_middleware(NoNulInUrl)
    app.add_middleware(UrlLengthLimit, limit=settings.max_url_bytes)
    app.add_middleware(RateLimits)  # the outermost: a refused request costs the least
    for probe in (health, metrics):  # never rate-limited
        app.include_router(probe.router)
    for module in (
        tools,
        validate,
        route,
        feedback,
        stats,
        keys,
        sources,
        call,
        memory,
        advice,
        learning,
    ):
        app.include_router(module.router, responses={429: TOO_MANY_REQUESTS})
    app.include_router(dashboard.router)
    app.router.routes.extend(mcp_routes())
    return app
