"""The heavy parts, built once per process in the app's lifespan and torn down with it."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app import migrate
from app.catalog import parse_batch, write_cards
from app.db import make_engine, make_session_factory, unit_of_work
from app.encoders import Encoder, make_encoder
from app.index import IndexManager
from app.routing import RouterConfig
from app.settings import Settings
from registry import repository

log = logging.getLogger("toolreach")


@dataclass
class Services:
    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    encoder: Encoder
    index: IndexManager

    def close(self) -> None:
        self.index.stop()
        self.engine.dispose()


def router_config(settings: Settings) -> RouterConfig:
    return RouterConfig()


def build_services(settings: Settings, encoder: Encoder | None = None) -> Services:
    """Engine, encoder and index; on the embedded SQLite default, migrations run first."""
    if settings.is_sqlite:
        migrate.upgrade(settings.sqlalchemy_url)
    else:
        migrate.ensure_current(settings.sqlalchemy_url)
    engine = make_engine(settings.sqlalchemy_url)
    factory = make_session_factory(engine)
    encoder = encoder or make_encoder(settings.encoder)
    index = IndexManager(factory, encoder, router_config(settings))
    services = Services(settings, engine, factory, encoder, index)
    if settings.load_demo:
        load_demo_once(services)
    index.sync()
    return services


def demo_cards() -> list[object]:
    text = resources.files("app").joinpath("demo/catalog.json").read_text(encoding="utf-8")
    items: list[object] = json.loads(text)
    return items


def load_demo_once(services: Services) -> None:
    """Load the demo catalog on a registry that was never written to."""
    with unit_of_work(services.session_factory) as session:
        if repository.current_revision(session) != 0:
            return
        batch = parse_batch(demo_cards(), None)
        if batch.rejects:
            raise RuntimeError(f"the demo catalog has invalid cards: {batch.rejects}")
        write_cards(session, services.encoder, batch.cards)
        log.info("loaded the demo catalog: %d tools", len(batch.cards))
