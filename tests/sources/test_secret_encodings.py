"""A source's secrets never come back in an encoding the gateway can detect (issue 38 item 8).

The probe: an echoing upstream returned the source's secret upper-cased, hex-encoded, in
base64 at a non-zero offset, and inside a base64 blob of the request headers; none was
masked. Here the upstream (tests/sources/echo_upstream.py, ``/encoded/{how}``) writes the
request it received in each encoding of ``ENCODINGS``, and the answer is read as an
attacker would: every string decoded every way we know, at every alignment.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import html
import json
import re
from collections.abc import Iterator
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from app.sources.masking import Masker, mask
from tests.conftest import ADMIN, AGENT, empty_database
from tests.sources.conftest import app_client
from tests.sources.echo_upstream import BASE, ENCODINGS, EchoUpstream

API_KEY = 'file-secret-KEY+/xyz987 "q" é'  # a query secret: '+', '/', a space, quotes
BASIC = ("robot", "pass-w0rd-42")  # sent as Basic auth
TOKEN = "tok_9f8e7d6c5b4a39281706"  # sent as X-Token
SECRETS = [API_KEY, ":".join(BASIC), BASIC[1], TOKEN, "file-secret-KEY"]


def decodings(text: str) -> Iterator[str]:
    """``text`` and what it may encode: hex, base64 (both alphabets, every alignment, line
    breaks dropped), percent-encoding (twice), HTML entities, JSON escapes."""
    yield text
    yield unquote(unquote(text))
    yield html.unescape(text)
    if "\\u" in text:
        with contextlib.suppress(ValueError):
            yield json.loads(f'"{text}"')
    for run in re.findall(r"[A-Za-z0-9+/_\-\n]{8,}", text):
        run = run.replace("\n", "")
        if re.fullmatch(r"[0-9A-Fa-f]+", run):
            for skip in (0, 1):
                even = run[skip:]
                raw = bytes.fromhex(even[: len(even) - len(even) % 2])
                decoded = raw.decode("utf-8", "replace")
                yield decoded
                yield from decodings(decoded)
        for skip in range(4):
            part = run[skip:].replace("-", "+").replace("_", "/")
            part = part[:-1] if len(part) % 4 == 1 else part
            part += "=" * (-len(part) % 4)
            try:
                decoded = base64.b64decode(part).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                continue
            yield decoded
            yield from decodings(decoded) if len(decoded) < len(text) else ()


def strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def revealed(answer: object) -> list[str]:
    """The secrets an attacker reads in ``answer``, decoding every way we know."""
    texts = [*strings(answer), "".join(strings(answer))]
    seen = {d.lower() for t in texts for d in decodings(t)}
    return [s for s in SECRETS if any(s.lower() in d for d in seen)]


@pytest.fixture(scope="module")
def gw(
    sqlite_url: str, echo: EchoUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    folder = tmp_path_factory.mktemp("secrets")
    (folder / "key").write_text(API_KEY)
    (folder / "basic").write_text(base64.b64encode(":".join(BASIC).encode()).decode())
    (folder / "token").write_text(TOKEN)
    empty_database(sqlite_url)
    with app_client(sqlite_url, secret_dirs=(str(folder),)) as client:
        body = {
            "name": "echo",
            "kind": "openapi",
            "url": f"{echo.url}{BASE}/openapi.json",
            "query": {"api_key": {"file": str(folder / "key")}},
            "headers": {
                "Authorization": {"file": str(folder / "basic"), "prefix": "Basic "},
                "X-Token": {"file": str(folder / "token")},
            },
        }
        response = client.post("/v1/sources", json=body, headers=ADMIN)
        assert response.status_code == 201, response.text
        yield client


def call(gw: TestClient, how: str) -> dict:
    body = {"name": "echo_encoded", "arguments": {"how": how}}
    response = gw.post("/v1/call", json=body, headers=AGENT)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_the_oracle_reads_every_encoding_unmasked() -> None:
    """The test's own decoder finds each secret in each encoding as the upstream writes it
    (so a pass below is the masking's, not a blind oracle's)."""
    echoed = {
        "path": f"/echo?api_key={API_KEY}",
        "headers": {"Authorization": "Basic " + base64.b64encode(b"robot:pass-w0rd-42").decode()},
        "headers2": {"X-Token": TOKEN},
        "basic": ":".join(BASIC),  # the echo upstream decodes Basic credentials
    }
    for how, encode in ENCODINGS.items():
        value = encode(json.dumps(echoed, ensure_ascii=False), echoed)
        found = revealed({"value": value})
        assert ":".join(BASIC) in found or BASIC[1] in found, how
        if not how.startswith("headers"):
            assert API_KEY in found or "file-secret-KEY" in found, how


@pytest.mark.parametrize("how", [h for h in ENCODINGS if h not in ("split", "characters")])
def test_an_encoded_echo_is_masked(gw: TestClient, how: str) -> None:
    answer = call(gw, how)
    assert answer["ok"], answer
    assert revealed(answer) == [], (how, answer)


@pytest.mark.parametrize("how", ["split", "characters"])
def test_an_echo_cut_into_pieces_is_withheld(gw: TestClient, how: str) -> None:
    answer = call(gw, how)
    assert answer["ok"] is False and answer["result"] is None, answer
    error = answer["error"]
    assert error["code"] == "secret_withheld" and not error["retryable"], error
    assert revealed(answer) == []


def test_ordinary_text_is_left_as_it_is() -> None:
    """No false masks: base64 and hex of other text, words, ids, the secret's own parts."""
    text = {
        "id": "123e4567-e89b-12d3-a456-426614174000",
        "image": base64.b64encode(bytes(range(256)) * 4).decode(),
        "hex": "deadbeef" * 8,
        "words": "internationalization of the robot pass",
        "part": TOKEN[:8],
    }
    assert mask(text, SECRETS) is text
    assert Masker.of(SECRETS).answer(text) is text  # nor is it refused as a split secret
