"""A step's values and the action it asks for, read as evidence about tools: reading.py (values
and what the keyword stage reads), slots.py (which parameter a value fits), actions.py (what
the step asks and what an operation does)."""

from __future__ import annotations

import numpy as np
import pytest

from app.routing import RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.actions import (
    agreement,
    asks_for_people,
    name_stems,
    operation_action,
    step_action,
)
from app.routing.parts import keyword_text
from app.routing.reading import read_step
from app.routing.slots import (
    compile_profile,
    compile_slots,
    fit,
    gathered_ids,
    pattern_checker,
    unsupplied_ids,
)
from app.routing.view import NamespaceView
from registry.calls import value_problem


def test_values_are_read_with_their_shape_and_noun() -> None:
    reading = read_step(
        "text +14155550123 about conversation CHe17964b8e0416e15a38a43d1aa749599, "
        "then mail ana@example.com the file ./report.pdf by 2025-03-01"
    )
    shapes = {v.text: (v.shape, v.noun) for v in reading.values}
    assert shapes["+14155550123"] == ("phone", "text")
    assert shapes["CHe17964b8e0416e15a38a43d1aa749599"] == ("id", "conversation")
    assert shapes["ana@example.com"][0] == "email"
    assert shapes["./report.pdf"][0] == "path"
    assert shapes["2025-03-01"][0] == "datetime"


def test_the_keyword_stage_reads_no_digits_or_hex() -> None:
    text = keyword_text("pause sub_1MowQVLkdIwHu7ixeRlqHVzs until March, call +14155550123")
    assert "1Mow" not in text and "4155550123" not in text
    assert text.startswith("pause") and "phone number" in text
    assert keyword_text("rename 'Spring promo' please") == "rename 'Spring promo' please"


def test_a_value_fits_the_parameter_whose_pattern_takes_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ConversationSid": {"type": "string", "pattern": "^CH[0-9a-fA-F]{32}$"},
            "UserSid": {"type": "string", "pattern": "^US[0-9a-fA-F]{32}$"},
        },
        "required": ["ConversationSid"],
    }
    conversation, user = compile_slots(schema, "message")
    [value] = read_step("delete conversation CHe17964b8e0416e15a38a43d1aa749599").values
    matches = pattern_checker(value_problem)
    assert fit(value, conversation, matches, {}) == 1.0
    assert fit(value, user, matches, {}) < 1.0


def test_an_id_of_another_resource_does_not_supply_a_required_id() -> None:
    """``UserSid`` has no pattern of its own, but the namespace's cards return users whose
    ``sid`` is ``^US…``: a ``CH…`` id in the step is not its value."""
    returns_user = {
        "type": "object",
        "properties": {"sid": {"type": "string", "pattern": "^US[0-9a-fA-F]{32}$"}},
    }
    fetch_user = ToolDoc("FetchUser", "", "Fetch a user", returns=returns_user,
                         operation="GET /v1/Users/{Sid}")  # fmt: skip
    update_user = ToolDoc(
        "UpdateUser",
        "",
        "Update a user",
        parameters={"type": "object", "properties": {"UserSid": {"type": "string"}},
                    "required": ["UserSid"]},
        operation="POST /v1/Users/{UserSid}",
    )  # fmt: skip
    profiles = [compile_profile(d) for d in (fetch_user, update_user)]
    ids = gathered_ids(profiles)
    matches = pattern_checker(value_problem)
    other = read_step("rename CHe17964b8e0416e15a38a43d1aa749599").values
    own = read_step("rename USe17964b8e0416e15a38a43d1aa749599").values
    assert unsupplied_ids(profiles[1], ids, other, matches, ["UserSid"]) == {"UserSid"}
    assert unsupplied_ids(profiles[1], ids, own, matches, ["UserSid"]) == frozenset()


@pytest.mark.parametrize(
    ("step", "action"),
    [
        ("provision a new messaging service for the spring promo", "create"),
        ("get rid of conversation CH123, it is spam", "delete"),
        ("show me all my messaging services", "list"),
        ("show me the messages of conversation CH123", "list"),  # a plural object lists
        ("what steps did run run_abc123 take?", "list"),
        ("show me the message MB123", "read"),
        ("get the details of pull request 88", "read"),  # one thing's details
        ("what is the status of the build", "read"),
        ("lösche die Unterhaltung CH123", "delete"),
        ("crea un nuevo servicio de mensajería", "create"),
        ("删除这个会话", "delete"),
        ("leave a comment on file 123: 'please check page 4'", "create"),  # not "leave"
        ("leave channel C024BE91L", "delete"),
        ("comment on PR 1203 that the tests are missing", "create"),
        ("reply on acme/api#1347 that we need logs", "create"),
    ],
)
def test_the_action_a_step_asks_for(step: str, action: str) -> None:
    weights = step_action(step).weights
    assert max(weights, key=weights.__getitem__) == action


def test_what_an_operation_does() -> None:
    assert operation_action("CreateService", "POST /v1/Services").action == "create"
    assert operation_action("x", "GET /v1/Services").action == "list"
    assert operation_action("x", "GET /v1/Services/{Sid}").action == "read"
    assert operation_action("x", "DELETE /v1/Services/{Sid}").action == "delete"
    assert operation_action("search_repositories").resource == "repositori"
    assert operation_action("anything", "", {"readOnlyHint": True}).action == "read"


def test_agreement_is_signed_and_silent_when_either_side_says_nothing() -> None:
    create = operation_action("x", "POST /v1/Services")
    assert agreement(step_action("set up a new service"), create) > 0
    assert agreement(step_action("delete the service"), create) < 0
    assert agreement(step_action("the service"), create) == 0
    assert agreement(step_action("show the services"), operation_action("x", "")) == 0


def test_values_and_action_put_the_right_operation_first() -> None:
    """Two look-alike cards with the same words: the step's id (the pattern of one card's
    parameter) and its verb decide, and ``stages`` say so."""
    sid = {"type": "string", "pattern": "^MG[0-9a-fA-F]{32}$"}
    docs = [
        ToolDoc("ListService", "", "Messaging service", operation="GET /v1/Services"),
        ToolDoc(
            "FetchService",
            "",
            "Messaging service",
            parameters={"type": "object", "properties": {"Sid": sid}, "required": ["Sid"]},
            operation="GET /v1/Services/{Sid}",
        ),
    ]
    others = ["Send an e-mail", "Create an invoice", "Upload a file", "Book a flight"]
    docs += [ToolDoc(f"other_{i}", "", text) for i, text in enumerate(others)]
    vectors = np.eye(len(docs), 8, dtype=np.float32)
    vectors[:2] = vectors[0] + vectors[1]  # the look-alikes: one vector
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = RouterIndex.build(docs, vectors, RouterConfig(), value_check=value_problem)
    step = "what is configured on messaging service MGe17964b8e0416e15a38a43d1aa749599?"
    query = vectors[:1]
    found = Router(RouterConfig()).route(NamespaceView(index), step, query, RouteOptions(k=2))
    assert found[0].name == "FetchService"
    assert found[0].stages["values"] > found[1].stages.get("values", 0.0)
    assert not found[0].missing_required


def test_name_stems_leave_out_id_words() -> None:
    assert name_stems("get_files_id_thumbnail_id") == {"get", "file", "thumbnail"}
    assert name_stems("CreateVideoExtend") == {"creat", "video", "extend"}


def _look_alikes() -> tuple[Router, NamespaceView, np.ndarray]:
    """A tool and its narrower look-alike (the same name and more), whose vectors the step's
    is nearer, and an unrelated tool: Box's two deletes, whose cards both say "delete" and
    "file"."""
    docs = [
        ToolDoc("delete_files_id_trash", "", "Permanently delete file: permanently deletes a "
                "file that is in the trash", operation="DELETE /files/{file_id}/trash"),
        ToolDoc("delete_files_id", "", "Delete file: deletes a file, either permanently or by "
                "moving it to the trash", operation="DELETE /files/{file_id}"),
        ToolDoc("get_users_me", "", "Get the current user", operation="GET /users/me"),
    ]  # fmt: skip
    vectors = np.eye(len(docs), 8, dtype=np.float32)
    vectors[1] = vectors[0] + 0.3 * vectors[1]  # the embedding leans to the narrower one
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = RouterIndex.build(docs, vectors, RouterConfig())
    return Router(RouterConfig()), NamespaceView(index), vectors


@pytest.mark.parametrize(
    ("step", "first", "voted"),
    [
        # the step says the shorter name's words, none of the longer one's added words
        ("delete file 12345678901", "delete_files_id", True),
        # it says the added word: the narrower tool keeps its place
        ("permanently delete file 12345678901 from the trash", "delete_files_id_trash", False),
        # in another language it says neither name's words: no vote, the embedding decides
        ("Lösche die Datei 12345678901", "delete_files_id_trash", False),
    ],
)
def test_a_look_alike_whose_name_adds_unsaid_words_comes_second(
    step: str, first: str, voted: bool
) -> None:
    router, view, vectors = _look_alikes()
    found = router.route(view, step, vectors[:1], RouteOptions(k=3))
    assert found[0].name == first, [(c.name, c.stages) for c in found]
    votes = {c.name: c.stages.get("qualifier", 0.0) for c in found}
    assert (votes["delete_files_id_trash"] < 0) is voted, votes
    assert votes["delete_files_id"] == 0 and votes["get_users_me"] == 0
    off = Router(RouterConfig(qualifier_weight=0.0)).route(
        view, step, vectors[:1], RouteOptions(k=3)
    )
    assert all("qualifier" not in c.stages for c in off)


@pytest.mark.parametrize(
    ("step", "people"),
    [
        ("who is in channel C0G9QF9GW?", True),
        ("who's in conversation CHe17964b8e0416e15a38a43d1aa749599?", True),
        ("list everyone in group 5577123", True),
        ("Wer ist im Kanal C0G9QF9GW?", True),
        ("谁在这个频道里", True),
        ("what is the topic of channel C0G9QF9GW?", False),
        ("show the channel's history", False),
    ],
)
def test_a_step_that_asks_who(step: str, people: bool) -> None:
    assert asks_for_people(step) is people


def test_a_step_that_asks_who_lifts_the_tools_of_people() -> None:
    """ "Who is in the conversation" names no participant: the tool whose resource is people
    comes first over the look-alike read of the conversation itself (one vector for both)."""
    docs = [
        ToolDoc("FetchConversation", "", "Fetch a conversation",
                operation="GET /v1/Conversations/{Sid}"),
        ToolDoc("ListConversationParticipant", "", "Retrieve a list of all participants of the "
                "conversation", operation="GET /v1/Conversations/{ConversationSid}/Participants"),
        ToolDoc("get_users_me", "", "Get the current user", operation="GET /users/me"),
    ]  # fmt: skip
    vectors = np.eye(len(docs), 8, dtype=np.float32)
    vectors[1] = vectors[0] + 0.1 * vectors[1]  # the embedding leans to the conversation
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    view = NamespaceView(RouterIndex.build(docs, vectors, RouterConfig()))
    step = "who's in conversation CHe17964b8e0416e15a38a43d1aa749599?"
    found = Router(RouterConfig()).route(view, step, vectors[:1], RouteOptions(k=3))
    assert found[0].name == "ListConversationParticipant", [(c.name, c.stages) for c in found]
    assert found[0].stages["people"] == pytest.approx(0.1)
    assert "people" not in found[1].stages or found[1].stages["people"] == 0
    off = Router(RouterConfig(people_weight=0.0)).route(view, step, vectors[:1], RouteOptions(k=3))
    assert off[0].name == "FetchConversation"
    assert all("people" not in c.stages for c in off)
