"""A step's misspelt words read as the namespace's own words (app/routing/spelling.py), and what
is never read as misspelt: English words, other languages' verbs, short words, ids."""

from __future__ import annotations

import numpy as np
import pytest

from app.routing import RouteOptions, Router, RouterConfig, RouterIndex, ToolDoc
from app.routing.actions import ABROAD, VERB_STEMS, step_action
from app.routing.lexicon import english_words
from app.routing.parts import as_written, keyword_text
from app.routing.spelling import READ_PER_STEP, Speller, foreign_beginnings, one_edit
from app.routing.text import analyse
from app.routing.view import NamespaceView


@pytest.mark.parametrize(
    ("a", "b", "one"),
    [
        ("chekc", "check", True),  # two neighbours swapped
        ("serch", "search", True),  # a letter left out
        ("listt", "list", True),  # one added
        ("lost", "list", True),  # one changed
        ("check", "check", False),  # no edit
        ("abc", "bca", False),  # two edits
        ("craete", "creat", False),  # two edits from the stem, one from its form "create"
    ],
)
def test_one_edit(a: str, b: str, one: bool) -> None:
    assert (b in set(one_edit(a))) is one


def _speller(*card_words: str) -> Speller:
    known = {verb: 0 for verb in VERB_STEMS}
    for stem in analyse(" ".join(card_words)):
        known[stem] = known.get(stem, 0) + 1
    english = english_words()
    return Speller.of(known, english, foreign_beginnings(ABROAD, english))


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("lsit my vectr stores", "list my vector stores"),
        ("craete an isue", "create an issue"),
        ("chekc my token", "check my token"),
        ("serch repos", "search repos"),
        ("raed the config", "read the config"),
        ("Craete an isue. Lsit my vectr stores", "create an issue. list my vector stores"),
    ],
)
def test_a_misspelt_word_is_read_as_the_word_meant(typed: str, meant: str) -> None:
    speller = _speller("vector store issue repository token config")
    assert speller.analyse(typed) == analyse(meant)


@pytest.mark.parametrize(
    "step",
    [
        "spring promo for the campaign",  # "promo": English, not a misspelt "promote"
        "tell me by mail",  # "mail": not "tail" (a verb the action reader knows)
        "Escribe 'hola' en saludo",  # Spanish: "escribe" is not a misspelt "describe"
        "Lösche die Datei",  # letters outside a–z
        "Benenne es um",  # begins like a German verb and like no English word
        "get sub_1Mow and CHe1796",  # ids
        "add the tag",  # known words; short words
        "spell-check 'a glas of watr'",  # what the step quotes
        "show me tweets from Elon Musk",  # a name: not a misspelt "muse"
    ],
)
def test_what_is_never_read_as_misspelt(step: str) -> None:
    speller = _speller("promote campaign describe tail order issue glass water muse")
    assert speller.analyse(keyword_text(step), as_written(step)) == analyse(keyword_text(step))


def test_a_word_of_another_language_one_edit_from_a_card_word_is_read_as_it() -> None:
    speller = _speller("archive order")
    assert speller.analyse("archiv") == analyse("archive")
    assert speller.analyse("listt sendd") == analyse("list send")  # begin like Spanish verbs too


def test_the_most_used_word_wins_among_equally_close_ones() -> None:
    speller = Speller.of({"cart": 1, "card": 5})
    assert speller.fix("carx", "carx") == "card"


def test_a_misspelt_verb_still_names_the_action() -> None:
    speller = _speller("issue")
    assert step_action("craete an isue", speller.fix).weights == {"create": 1.0}
    assert step_action("craete an isue").weights == {}  # not read without the speller


def test_a_step_with_typos_is_routed_as_the_step_without() -> None:
    """Two look-alike cards (one vector) that only the verb and the words tell apart: the
    misspelt step finds the same tool as the step spelt right."""
    docs = [
        ToolDoc("listVectorStores", "", "Returns a list of vector stores", operation="GET /v1/vs"),
        ToolDoc("createVectorStore", "", "Create a vector store", operation="POST /v1/vs"),
        ToolDoc("createImage", "", "Create an image from a prompt", operation="POST /v1/images"),
        ToolDoc("listFiles", "", "Returns a list of files", operation="GET /v1/files"),
    ]  # fmt: skip
    vectors = np.eye(len(docs), 8, dtype=np.float32)
    vectors[:2] = vectors[0] + vectors[1]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = RouterIndex.build(docs, vectors, RouterConfig())
    router, view = Router(RouterConfig()), NamespaceView(index)
    for step in ("list my vector stores", "lsit my vectr stores"):
        found = router.route(view, step, vectors[:1], RouteOptions(k=2))
        assert found[0].name == "listVectorStores", step
        assert found[0].stages["action"] > 0 > found[1].stages["action"], step


def test_a_step_of_many_made_up_words_reads_at_most_a_bounded_number_of_them() -> None:
    """A hostile step of hundreds of unknown words: each read costs ~54 lookups a letter, so a
    step may read at most ``READ_PER_STEP`` words no earlier step read; the rest stay as
    written, and a typo among the first is still read."""
    speller = _speller("vector store issue repository token config")
    rng = np.random.default_rng(7)
    made_up = ["".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), size=9)) for _ in range(300)]
    step = "craete " + " ".join(made_up)
    read = speller.analyse(step)
    assert read[0] == "creat"
    assert len(speller.read) == READ_PER_STEP
    assert read[READ_PER_STEP + 1 :] == analyse(" ".join(made_up[READ_PER_STEP:]))
    # what was read stays remembered: the next step reads the next words, at most as many
    speller.analyse(step)
    assert len(speller.read) == 2 * READ_PER_STEP
