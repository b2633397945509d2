"""``repository.write_cards`` (a few statements per 500 cards) against ``write_card`` one card
at a time: the same statuses, the same rows, on Postgres and SQLite."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.db import make_engine, make_session_factory, unit_of_work
from registry import repository
from registry.card import ToolCard
from registry.errors import Conflict
from registry.models import Tool, ToolVersion
from tests.conftest import empty_database


def card(name: str, description: str = "Does a thing.", namespace: str = "default") -> ToolCard:
    return ToolCard(name=name, description=description, namespace=namespace)


def snapshot(factory) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Every tool and version as plain values (ids and times left out)."""
    with unit_of_work(factory) as session:
        tools = session.execute(
            select(
                Tool.namespace, Tool.name, Tool.current_version, Tool.revision, Tool.summary
            ).order_by(Tool.namespace, Tool.name)
        ).all()
        versions = session.execute(
            select(Tool.namespace, Tool.name, ToolVersion.version, ToolVersion.content_hash)
            .join(Tool, Tool.id == ToolVersion.tool_id)
            .order_by(Tool.namespace, Tool.name, ToolVersion.version)
        ).all()
    return [tuple(r) for r in tools] + [tuple(r) for r in versions]


def run(factory, cards: list[ToolCard], bulk: bool, **kw: object) -> list[str]:  # type: ignore[no-untyped-def]
    with unit_of_work(factory) as session:
        revision = repository.next_revision(session)
        if bulk:
            return repository.write_cards(session, cards, revision, **kw)  # type: ignore[arg-type]
        return [repository.write_card(session, c, revision, **kw) for c in cards]  # type: ignore[arg-type]


def scenario(url: str, bulk: bool) -> tuple[list[list[str]], list[tuple]]:
    """Statuses of each call and the rows left, on an emptied database."""
    empty_database(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    statuses = [run(factory, [card(f"tool_{i}") for i in range(520)] + [other("t")], bulk)]
    with unit_of_work(factory) as session:  # one tool deleted: a write brings it back
        repository.delete_tool(session, "default", "tool_7", repository.next_revision(session))
    second = [
        card("tool_1"),  # unchanged
        card("tool_2", "Does another thing."),  # updated
        card("tool_7"),  # deleted, comes back
        card("new_one"),  # created
        other("t", "Changed."),  # updated, in another namespace
    ]
    statuses.append(run(factory, second, bulk))
    # a name twice in one call: the second is an update of the first
    statuses.append(run(factory, [card("twice"), card("twice", "Again.")], bulk))
    with pytest.raises(Conflict):
        run(factory, [card("fresh"), card("tool_3")], bulk, create_only=True)
    rows = snapshot(factory)
    engine.dispose()
    return statuses, rows


def other(name: str, description: str = "Does a thing.") -> ToolCard:
    return card(name, description, namespace="other")


def test_bulk_writes_as_one_card_at_a_time_does(database_url: str) -> None:
    statuses, rows = scenario(database_url, bulk=True)
    assert statuses == [
        ["created"] * 521,
        ["unchanged", "updated", "created", "created", "updated"],
        ["created", "updated"],
    ]
    assert (statuses, rows) == scenario(database_url, bulk=False)
    assert len(rows) == 523 + 527  # tools, then versions


def test_a_vector_stored_meanwhile_by_another_writer_is_kept(database_url: str) -> None:
    """Two writes of the same text at once both find no vector, embed it, and store it: the
    second insert was a 500 (duplicate key) on Postgres."""
    from registry.models import Embedding

    empty_database(database_url)
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    first, second = factory(), factory()
    try:
        assert repository.embedded_hashes(first, "m", {"h1": ""}) == set()
        assert repository.embedded_hashes(second, "m", {"h1": ""}) == set()
        repository.put_embeddings(first, "m", 2, {"h1": b"first"})
        first.commit()
        repository.put_embeddings(second, "m", 2, {"h1": b"second", "h2": b"other"})
        second.commit()
    finally:
        first.close()
        second.close()
    with unit_of_work(factory) as session:
        rows = session.execute(select(Embedding.text_hash, Embedding.vector)).all()
    engine.dispose()
    assert sorted(map(tuple, rows)) == [("h1", b"first"), ("h2", b"other")]
