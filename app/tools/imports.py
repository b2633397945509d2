"""Imports of any size: one tool a line (NDJSON), parsed as the body arrives, embedded as the
tools come, then written all at once (all or nothing), with progress.

``POST /v1/tools/bulk`` with ``Content-Type: application/x-ndjson`` feeds the body to a
``StreamedImport`` chunk by chunk (``feed``): each complete line is parsed and checked, and
every ``EMBED_BATCH`` good cards go to the model at once, so the model works while the rest of
the body is still arriving. ``finish`` ends the parse: any bad line (or one longer than
``line_limit``) and nothing is written. ``write`` then stores the vectors still being made, in
short transactions of their own, and writes every card in one transaction that holds the
registry's revision lock only while it writes rows (``catalog.write_cards``).

Progress, for ``report``: ``{"stage": "parsed", "tools": n}`` at the end of the parse,
``{"stage": "embedded", "tools": k, "of": n}`` as vectors are stored, ``{"stage": "written",
"tools": n}`` once committed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from app.db import unit_of_work
from app.embedding.encoders import Encoder
from app.tools.catalog import BatchParser, CardEmbedding, ParsedBatch, write_cards
from registry.errors import InvalidInput, PayloadTooLarge
from registry.repository import WriteStatus

Report = Callable[[dict[str, Any]], None]


class StreamedImport:
    """One NDJSON import: ``feed`` it the body's chunks, then ``finish``, then ``write``."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        encoder: Encoder,
        namespace: str | None,
        line_limit: int,
        writable: Collection[str] | None = None,
    ) -> None:
        self.sessions = sessions
        self.encoder = encoder
        self.line_limit = line_limit
        self.embedding = CardEmbedding(None, encoder, sessions=sessions)
        self.parser = BatchParser(namespace, self._embed, writable)
        self.lines = 0
        self._partial = b""

    def _embed(self, batch: ParsedBatch, cards: list[Any]) -> None:
        if not batch.rejects:  # a bad line ends the import: no more model calls
            self.embedding.add(None, cards)

    def feed(self, chunk: bytes) -> None:
        """Parse every line ``chunk`` completes."""
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > self.line_limit:
            self._too_long()
        for line in lines:
            self._line(line)

    def _too_long(self) -> None:
        self.embedding.close()
        raise PayloadTooLarge(
            f"line {self.lines + 1} is longer than the limit of {self.line_limit} bytes a tool",
            {"line": self.lines + 1, "limit": self.line_limit},
        )

    def _line(self, raw: bytes) -> None:
        index = self.lines
        self.lines += 1
        if len(raw) > self.line_limit:
            self._too_long()
        if not raw.strip():
            return
        try:
            item = json.loads(raw)
        except ValueError as exc:  # also bytes that are not UTF-8
            self.parser.reject(index, None, [{"loc": [], "message": f"not JSON: {exc}"}])
            return
        self.parser.add(index, item)

    def finish(self) -> ParsedBatch:
        """End the parse (the last line needs no newline); InvalidInput listing every bad
        line (``index``: the line, from 0) if any, and nothing is written."""
        if self._partial:
            self._line(self._partial)
            self._partial = b""
        batch = self.parser.finish()
        if batch.rejects or not batch.cards:
            self.embedding.close()
        if batch.rejects:
            raise InvalidInput(
                f"{len(batch.rejects)} of {self.lines} lines are invalid; nothing was written",
                batch.rejects,
            )
        if not batch.cards:
            raise InvalidInput("the body holds no tool: send one JSON object a line")
        return batch

    def write(self, report: Report = lambda event: None) -> dict[WriteStatus, list[str]]:
        """Store the vectors, write every card in one transaction; the names written, by
        what happened to each."""
        cards = self.parser.batch.cards
        report({"stage": "parsed", "tools": len(cards)})
        done = 0

        def embedded(count: int) -> None:
            nonlocal done
            done += count
            report({"stage": "embedded", "tools": done, "of": len(cards)})

        self.embedding.store(None, embedded)
        with unit_of_work(self.sessions) as session:
            statuses = write_cards(session, self.encoder, cards, embedding=self.embedding)
        report({"stage": "written", "tools": len(cards)})
        names: dict[WriteStatus, list[str]] = {"created": [], "updated": [], "unchanged": []}
        for card, status in zip(cards, statuses, strict=True):
            names[status].append(card.name)
        return names
