"""The dashboard at /dashboard: server-rendered pages and SVG charts behind a login form."""

from __future__ import annotations

from fastapi import APIRouter

from app.dashboard import advice_pages, pages, registry_pages, signin

router = APIRouter()
for _module in (signin, pages, registry_pages, advice_pages):
    router.include_router(_module.router)

__all__ = ["router"]
