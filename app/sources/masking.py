"""A source's secrets, masked out of what comes back from it (app/sources/secrets.py reads
them; docs/SOURCES.md, "Secrets", states the rule and its line).

An upstream may echo what it was sent, in its own encoding. Three layers, cheapest first:

1. **Forms**: the secret as sent and each way a server or library writes text, matched in
   any letter case (``forms``); and its base64 (standard or URL-safe) at each of the three
   byte alignments, so that it is found inside a longer blob, matched exactly.
2. **Blobs**: a run of base64 or hex characters long enough to hold the shortest secret
   (line breaks allowed) is decoded, at each alignment; if the decoded bytes hold a form
   (ASCII letters in any case), the whole run is masked
   (base64 of the request's headers, hex of a JSON echo, base64 of a percent-encoded query).
3. **Split**: a secret in no one string but in the answer's strings joined in order (an
   echo cut into pieces, a list of characters) cannot be masked in place: the answer is
   refused whole (``SecretEchoed``).

Beyond the line, by design: a part of a secret, a secret shorter than ``MIN_MASKED``, and
what only a deliberate transformation makes (encryption, a hash, compression, reversal,
characters interleaved with others). Such an upstream is hostile, and no filter on its
answers can stand for not sending it the secret.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus, unquote

MASK = "[secret]"
MIN_MASKED = 4  # shorter values would mask ordinary text
MIN_EXACT = 8  # a base64 form cut at its alignment is matched from this length
MIN_SPLIT = 8  # a secret this long is looked for across the answer's strings too
# A run of base64 (either alphabet) or hex characters, with the line breaks MIME puts in it
# and the padding at its end or ends (one class, so the scan stays fast).
_RUN = re.compile(r"[A-Za-z0-9+/_=\r\n-]{5,}")  # long enough to hold 4 bytes
_HEX = re.compile(r"[0-9A-Fa-f]+")


class SecretEchoed(Exception):
    """An answer holds a secret in a form that cannot be masked in place."""


def _percent(secret: str) -> set[str]:
    found = {quote(secret, safe=""), quote(secret), quote_plus(secret, safe="")}
    found.add("".join(f"%{b:02X}" for b in secret.encode()))  # every byte
    found.add(quote(quote(secret, safe=""), safe=""))  # twice, as a URL inside a URL
    return found


def _escaped(secret: str) -> set[str]:
    """JSON and HTML escapes: as a serializer writes them, and every character escaped."""
    every = "".join(json.dumps(c)[1:-1] if ord(c) > 0xFFFF else f"\\u{ord(c):04x}" for c in secret)
    return {
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        every,
        html.escape(secret),
        "".join(f"&#{ord(c)};" for c in secret),
        "".join(f"&#x{ord(c):x};" for c in secret),
    }


def _bases(secret: str) -> set[str]:
    """The secret, and for one that is base64 itself (Basic auth) the ``user:password`` it
    encodes and the password."""
    decoded = _base64_text(secret)
    return {secret} if decoded is None else {secret, decoded, decoded.partition(":")[2]}


def forms(secret: str) -> set[str]:
    """The textual forms of ``secret`` (and of what a Basic secret encodes), matched in any
    letter case: as sent; percent-encoded (a path, a query, a form with ``+``, every byte,
    twice); JSON- and HTML-escaped (as written, or every character); hex of its bytes."""
    found: set[str] = set()
    for base in _bases(secret):
        found |= {base, base.encode().hex()} | _percent(base) | _escaped(base)
    return {form for form in found if len(form) >= MIN_MASKED}


def base64_forms(secret: str) -> set[str]:
    """``secret`` (and what a Basic secret encodes) in base64, standard and URL-safe: whole
    (padded or not), and at each byte alignment inside a longer blob (the characters that
    hold only its bytes)."""
    whole: set[str] = set()
    middles: set[str] = set()
    for raw in (base.encode() for base in _bases(secret)):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(raw).decode()
            whole |= {text, text.rstrip("=")}
            for skip in (1, 2):  # the secret starts 2 or 1 bytes into a group of three
                middle = raw[skip:]
                middles.add(encode(middle[: len(middle) - len(middle) % 3]).decode())
    return {f for f in whole if len(f) >= MIN_MASKED} | {f for f in middles if len(f) >= MIN_EXACT}


def _base64_text(value: str) -> str | None:
    """The printable text ``value`` encodes in base64 (a word before it, such as ``Basic``,
    left out), or None."""
    token = value.rsplit(" ", 1)[-1]
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return text if text.isprintable() and text else None


def _decodings(run: str, shortest: int) -> Iterator[bytes]:
    """What a run of base64 or hex characters may encode, at each alignment (each piece
    between padding on its own: blobs side by side, or ``key=<base64>``), when it is long
    enough to hold ``shortest`` bytes."""
    for piece in re.split(r"=+", run.replace("\r", "").replace("\n", "")):
        if _HEX.fullmatch(piece):  # base64 of text is never all hex digits
            if len(piece) >= 2 * shortest:
                yield from (_unhex(piece[skip:]) for skip in (0, 1))
        elif len(piece) >= 4 * shortest // 3:
            yield from _unbase64(piece.replace("-", "+").replace("_", "/"))


def _unhex(text: str) -> bytes:
    return bytes.fromhex(text[: len(text) - len(text) % 2])


def _unbase64(text: str) -> Iterator[bytes]:
    """Base64 at each of its four alignments."""
    for skip in range(4):
        try:
            yield base64.b64decode(_padded(text[skip:]), validate=True)
        except (binascii.Error, ValueError):
            continue


def _padded(part: str) -> str:
    """Base64 characters cut to whole bytes and padded: a blob's last bytes count too."""
    if len(part) % 4 == 1:
        part = part[:-1]
    return part + "=" * (-len(part) % 4)


def _strings(value: Any, found: list[str] | None = None) -> list[str]:
    """Every string of a JSON value, keys included, in document order (the gateway has
    bounded its depth: app/gateway/failures.py)."""
    found = [] if found is None else found
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _strings(key, found)
            _strings(item, found)
    elif isinstance(value, (list, tuple)):  # not `list | tuple`: slower here
        for item in value:
            _strings(item, found)
    return found


def _folded(text: str) -> str:
    """``text`` lower-cased, each character in its place (a character whose lower case is
    longer is kept as it is)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\([\"\\/])")


def _views(text: str) -> Iterator[str]:
    """``text``, and ``text`` decoded as each escape a server writes: percent-encoding (once
    and twice), HTML entities, JSON's ``\\uXXXX`` and ``\\"``."""
    yield text
    if "%" in text:
        once = unquote(text)
        yield once
        if "%" in once:
            yield unquote(once)
    if "&" in text:
        yield html.unescape(text)
    if "\\" in text:
        yield _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else m[2], text)


@dataclass(frozen=True)
class Masker:
    """The forms of some secrets, and what finds and masks them."""

    folded: tuple[str, ...]  # lower-cased: matched in any letter case
    exact: tuple[str, ...]  # matched as they are
    shortest: int = MIN_MASKED  # bytes of the shortest secret: a blob must hold as many

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Masker:
        kept = {s for s in secrets if len(s) >= MIN_MASKED}
        folded = {f.lower() for s in kept for f in forms(s)}
        exact = {f for s in kept for f in base64_forms(s)}
        sizes = [len(base.encode()) for s in kept for base in _bases(s)]
        shortest = max(MIN_MASKED, min(sizes, default=MIN_MASKED))
        return cls(_longest_first(folded), _longest_first(exact), shortest)

    def found(self, text: str, least: int = 0) -> bool:
        """Whether ``text`` holds a form (of ``least`` characters or more) as it is."""
        folded = text.lower()
        return any(f in folded for f in self.folded if len(f) >= least) or any(
            f in text for f in self.exact if len(f) >= least
        )

    def _in_bytes(self, raw: bytes) -> bool:
        """Whether decoded bytes hold a form (ASCII letters in any case)."""
        folded = raw.lower()
        return any(f.encode() in folded for f in self.folded) or any(
            f.encode() in raw for f in self.exact
        )

    def visible(self, text: str) -> bool:
        """Whether ``text`` shows a form in any of its ``_views``, or holds a blob that
        decodes to bytes that do."""
        if any(self.found(view) for view in _views(text)):
            return True
        return bool(self._revealing_runs(text))

    def _revealing_runs(self, text: str) -> list[str]:
        """The runs of base64 or hex characters in ``text`` that decode to a form (all
        decoded first and searched at once: the common answer has none)."""
        runs = {run for run in _RUN.findall(text) if len(run) >= 4 * self.shortest // 3}
        if not runs:
            return []
        decoded = {run: b"\x00".join(_decodings(run, self.shortest)) for run in runs}
        if not self._in_bytes(b"\x00".join(decoded.values())):
            return []
        found = (run for run, raw in decoded.items() if self._in_bytes(raw))
        return sorted(found, key=len, reverse=True)

    def mask_text(self, text: str) -> str:
        """The forms as text first (a header as sent: ``Basic <base64>``), then each blob
        that decodes to one, whole, then what is left of base64 forms; a string that still
        shows a secret in a view (an encoding of an encoding: the percent-encoded JSON of
        a request) is masked whole."""
        text = _replace_folded(text, self.folded)
        for run in self._revealing_runs(text):
            text = text.replace(run, MASK)
        for form in self.exact:
            text = text.replace(form, MASK)
        return MASK if self.visible(text) else text

    def mask(self, value: Any) -> Any:
        """``value`` (any JSON) with every secret in its strings masked; the same object
        when there is nothing to mask (the common case: one pass over its strings)."""
        if not (self.folded or self.exact):
            return value
        return self._masked(value, _strings(value))

    def _masked(self, value: Any, strings: list[str]) -> Any:
        return self._mask(value) if self.visible("\x00".join(strings)) else value

    def _mask(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.mask_text(value) if self.visible(value) else value
        if isinstance(value, dict):
            return {self._mask(k): self._mask(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):  # not `list | tuple`: slower here
            return [self._mask(v) for v in value]
        return value

    def answer(self, value: Any) -> Any:
        """An upstream's answer, masked; ``SecretEchoed`` if a secret is still in its
        strings joined in order (cut into pieces no one string holds: a form, or a view of
        one; a blob cut across strings is past the line)."""
        if not (self.folded or self.exact):
            return value
        strings = _strings(value)
        masked = self._masked(value, strings)
        if masked is not value:
            strings = _strings(masked)
        joined = "".join(strings)
        if any(self.found(view, MIN_SPLIT) for view in _views(joined)):
            raise SecretEchoed("the answer holds the source's credentials cut across its strings")
        return masked


def _longest_first(found: set[str]) -> tuple[str, ...]:
    return tuple(sorted(found, key=lambda f: (-len(f), f)))


def _replace_folded(text: str, folded: tuple[str, ...]) -> str:
    """``text`` with each of ``folded`` masked in any letter case."""
    lowered = _folded(text)
    for form in folded:
        start = lowered.find(form)
        if start < 0:
            continue
        pieces, at = [], 0
        while start >= 0:
            pieces += [text[at:start], MASK]
            at = start + len(form)
            start = lowered.find(form, at)
        text = "".join([*pieces, text[at:]])
        lowered = _folded(text)
    return text


def mask(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (any JSON) with every secret, in any form the three layers find, masked
    in its strings (``[secret]``). For messages and details; an answer goes through
    ``masked_answer``."""
    return Masker.of(secrets).mask(value)


def masked_answer(value: Any, secrets: Iterable[str]) -> Any:
    """An upstream's answer, masked (``Masker.answer``)."""
    return Masker.of(secrets).answer(value)
