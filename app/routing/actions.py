"""What a step asks to have done, and what an operation does: create, read one, list (or
search), update, delete, or a named action (rename, archive, fork, merge…).

Real catalogs are full of operations on the same resource that differ only in their action
(``ListConversation``, ``FetchConversation``, ``UpdateConversation``…); their cards share
nearly every word, so the keyword and embedding stages cannot tell them apart. The action
can: the step's verb in the user's language ("provision", "scrub", "give up", "lösche",
"列出"), against the operation's method and path shape (``GET /v1/Conversations/{Sid}``: read
one; ``POST`` on a collection: create), its name (``ListConversation``, ``get_file_contents``)
or its MCP annotations (``readOnlyHint``, ``destructiveHint``).

``step_action`` gives each action a weight from the step's verbs (the first verb counts most:
an agent's step starts with what it wants done); ``operation_action`` reads one action from a
card. A named action (the step's verb is a word of the operation's name or path) is the
strongest agreement of all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from app.routing.text import analyse, split_identifier, words

Spell = Callable[[str, str], str]  # (a word, its stem) → the stem meant
ACTIONS = ("create", "read", "list", "update", "delete")

# English verbs (and question words) by the action they ask for, as stems; a verb that can
# ask for two actions lists both (its weight is shared).
_ENGLISH: dict[str, str] = {
    "create": "create make new add start provision register upload post send submit generate "
    "spin setup build invite attach schedule import open file raise write compose draft "
    "enroll subscribe issue establish introduce launch insert put store save copy fork "
    "duplicate clone transcribe translate mkdir touch cp comment reply",
    "read": "get show fetch retrieve read view see display lookup check describe detail info "
    "inspect download print tell status what whats is which open look cat head tail less",
    "list": "list all every which search find browse enumerate query any how many who "
    "everything each catalog ls grep",
    "update": "update change rename edit modify set move pause resume enable disable close "
    "reopen archive unarchive assign replace rotate enlarge resize mark lock unlock promote "
    "demote deactivate activate turn approve reject switch configure patch adjust extend "
    "renew restore roll reset merge apply toggle limit upgrade downgrade overwrite transfer "
    "convert end stop mv chmod",
    "delete": "delete remove drop erase destroy scrub purge cancel revoke kick uninstall clear "
    "wipe trash detach unshare unsubscribe leave discard dismiss expire terminate kill rm "
    "rmdir",
}
# Other languages: word beginnings (lower-case, Latin scripts) and CJK substrings.
_OTHER: dict[str, str] = {
    "create": "erstell anleg leg neu hinzufüg füg schick send sende lade hoch registrier "
    "crea crear nuev añad agreg envía envia manda sube registra escrib cré ajout envoi "
    "nouvea cria adicion cri envi novo nuovo aggiung invia 创建 新建 新增 添加 加到 发送 发 上传 "
    "注册 建 作成 作って 追加 送信 送って 送る 登録 新しい アップロード 書い",
    "read": "zeig hol gib anzeig lies les öffn prüf muestr obtén obten mira ver lee consult "
    "revis montr affich obtien lis mostr exib 查看 获取 显示 读 看 查 打开 状况 状态 表示 見せ "
    "見て 読ん 取得 確認 教え 状況",
    "list": "list alle sämtlich such finde todo toda busca encuentr tous toutes cherch trouv "
    "列出 所有 全部 搜索 查找 一覧 すべて 全て 検索 探し",
    "update": "änder aktualisier benenn umbenenn setz verschieb schließ deaktivier aktivier "
    "bearbeit cambi actualiz renombr modific cierr mueve mover desactiv activ modifi "
    "renomm ferm déplac atualiz alter 更新 修改 改 重命名 设置 移动 关闭 归档 变更 変更 更新して "
    "名前 移動 無効 有効 閉じ 設定",
    "delete": "lösch entfern storn widerruf elimin borr quit cancel supprim retir annul "
    "apag remov 删除 删掉 移除 取消 撤销 删 削除 消して 消す 外して 取り消",
}
_QUESTION = re.compile(r"\?\s*$")
# Phrasal verbs whose first word alone asks for another action ("get rid of": not "get").
_PHRASES = re.compile(
    r"\b(?:get rid of|throw away|take down|set up|spin up|sign up|look up|turn off|turn on|"
    r"give up on|give up|leave an? (?:comment|note|review|message|reply))\b",
    re.IGNORECASE,
)
_PHRASE_VERB = {
    "get rid of": "delete", "throw away": "delete", "take down": "delete", "set up": "create",
    "spin up": "create", "sign up": "create", "look up": "read", "turn off": "disable",
    "turn on": "enable", "give up on": "cancel", "give up": "cancel",
    **{f"leave {a} {thing}": "add" for a in ("a", "an")
       for thing in ("comment", "note", "review", "message", "reply")},
}  # fmt: skip
# Words that make a read a list: "show me all my services", "zeig alle Nachrichten".
_EVERY = frozenset(
    [
        "all",
        "every",
        "alle",
        "sämtliche",
        "todos",
        "todas",
        "tous",
        "toutes",
        "tutti",
        "所有",
        "全部",
        "すべて",
        "全て",
    ]
)


def _stem_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for action, verbs in _ENGLISH.items():
        for stem in analyse(verbs):
            table.setdefault(stem, [])
            if action not in table[stem]:
                table[stem].append(action)
    return {stem: tuple(actions) for stem, actions in table.items()}


_STEMS = _stem_table()
VERB_STEMS = frozenset(_STEMS)  # the English verbs (stems) a step's action is read from
# Question words the analyser drops as stop words.
_QUESTIONS: dict[str, tuple[str, ...]] = {
    "what": ("read",),
    "which": ("list", "read"),
    "who": ("list", "read"),
    "is": ("read",),
    "any": ("list",),
    "all": ("list",),
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_PREFIXES = tuple(
    (prefix, action, bool(_CJK.search(prefix)))
    for action, text in _OTHER.items()
    for prefix in text.split()
)
# The beginnings of other languages' verbs in Latin script ("escrib", "lösch", "erstell").
ABROAD = tuple(sorted({p for p, _, cjk in _PREFIXES if not cjk}))


@dataclass(frozen=True, slots=True)
class StepAction:
    """Each action's weight in a step (they sum to 1, or the step names none: empty)."""

    weights: Mapping[str, float] = field(default_factory=dict)


@functools.lru_cache(maxsize=1 << 16)
def _word_actions(word: str) -> tuple[str, tuple[str, ...]]:
    """(``word``'s stem, the actions that stem or the word's beginning asks for). Kept per
    word: most words ask for none, and finding that reads every prefix of ``_PREFIXES``."""
    stems = analyse(word)
    stem = stems[0] if stems else ""
    if stem in _STEMS:
        return stem, _STEMS[stem]
    matched = (a for p, a, cjk in _PREFIXES if (p in word if cjk else word.startswith(p)))
    return stem, tuple(dict.fromkeys(matched))


def _actions_of(word: str, spell: Spell | None = None) -> tuple[str, ...]:
    """The actions a step's word asks for (``word``: lower-case, as written; ``spell``: a
    misspelt word's stem → the one meant, ``spelling.Speller.fix``)."""
    if word in _QUESTIONS:
        return _QUESTIONS[word]
    stem, actions = _word_actions(word)
    if not stem or stem in _STEMS or spell is None:
        return actions
    return _STEMS.get(spell(word, stem), actions)


def step_action(text: str, spell: Spell | None = None) -> StepAction:
    """The actions ``text`` (a step, its values masked) asks for: the first word that asks
    for an action decides (an agent's step starts with what it wants done, or with a
    question word); later ones weigh ``_LATER`` each. ``spell`` reads a misspelt verb."""
    weights: dict[str, float] = {}
    text = _PHRASES.sub(lambda m: _PHRASE_VERB[" ".join(m.group().lower().split())], text)
    said = [w.lower() for w in words(text)[:40]]
    first = -1
    for at, word in enumerate(said):
        actions = _actions_of(word, spell)
        if not actions:
            continue
        first = at if first < 0 else first
        share = (1.0 if not weights else _LATER) / len(actions)
        for action in actions:
            weights[action] = weights.get(action, 0.0) + share
    many = _EVERY.intersection(said) or _plural_object(said, first)
    if "read" in weights and many:
        weights["list"] = weights.get("list", 0.0) + weights.pop("read")
    total = sum(weights.values())
    if total <= 0:
        return StepAction()
    return StepAction({a: w / total for a, w in weights.items()})


_LATER = 0.25
# Words between a verb and its object ("show me the messages", "get all my files").
_BEFORE_OBJECT = frozenset("me us the my our your his her their its these those some any".split())  # noqa: SIM905
# Plural nouns that name one thing's parts ("get the details of PR 88" reads one).
_ONE_THINGS = frozenset(["details", "contents", "settings", "stats", "news", "specs"])


def _plural_object(said: list[str], verb: int) -> bool:
    """Whether the first verb's object is a plural noun ("show me the messages": a list),
    as the stemmer reads one: a word in -s whose stem is its singular's."""
    if verb < 0:
        return False
    for word in said[verb + 1 : verb + 4]:
        if word in _BEFORE_OBJECT:
            continue
        return (
            word not in _ONE_THINGS
            and len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and analyse(word) == analyse(word[:-1])
        )
    return False


@dataclass(frozen=True, slots=True)
class OperationAction:
    """What an operation does (``None``: the card does not say), and the resource it acts on
    (the stem of the last noun of its path, else of its name; ``""``: none), which names the
    operation's own id among its parameters (``slots.id_key``)."""

    action: str | None = None
    resource: str = ""


_METHODS = {"GET": "read", "HEAD": "read", "DELETE": "delete", "PUT": "update", "PATCH": "update"}
_PARAM = re.compile(r"^\{[^}]*\}$")


def _path_action(method: str, path: str) -> str | None:
    """The action of ``METHOD /path`` by its shape and its last literal segment's verb."""
    segments = [s for s in path.strip("/").split("/") if s]
    segments = [re.sub(r"\.(json|xml)$", "", s) for s in segments]
    item = bool(segments) and bool(_PARAM.match(segments[-1]))
    literal = [s for s in segments if not _PARAM.match(s)]
    last = words(split_identifier(literal[-1])) if literal else []
    verb = next((a for w in last for a in _actions_for_op_word(w)), None)
    if method in ("GET", "HEAD"):
        if verb in ("list", "read"):
            return verb
        plural = bool(last) and last[-1].endswith("s") and not last[-1].endswith("ss")
        return "read" if item or not plural else "list"
    if method == "POST":
        if verb is not None and not item:
            return verb
        return "update" if item else "create"
    return _METHODS.get(method)


def _actions_for_op_word(word: str) -> tuple[str, ...]:
    """The action an operation's name word states (``list``, ``fetch``, ``create``…)."""
    stems = analyse(word)
    if not stems:
        return ()
    return _OP_VERBS.get(stems[0], ())


_OP_VERBS: dict[str, tuple[str, ...]] = {
    stem: (action,)
    for action, verbs in {
        "create": "create add post insert new make send upload register submit generate "
        "invite import copy fork push write",
        "read": "get fetch retrieve read show view describe info detail download lookup "
        "inspect status",
        "list": "list search find query browse all history",
        "update": "update modify edit set change rename patch move put replace archive "
        "unarchive enable disable close reopen assign merge mark lock unlock",
        "delete": "delete remove destroy drop revoke cancel kick clear purge trash detach "
        "uninstall erase",
    }.items()
    for stem in analyse(verbs)
}


def operation_action(
    name: str,
    operation: str = "",
    annotations: Mapping[str, bool] | None = None,
) -> OperationAction:
    """What a card's operation does: from its ``METHOD /path`` when it has one (an imported
    OpenAPI operation), else the first action word of its name, else its MCP annotations."""
    name_words = [w.lower() for w in words(split_identifier(name))]
    action: str | None = None
    method, _, path = operation.partition(" ")
    if method.upper() in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE") and path:
        action = _path_action(method.upper(), path)
    if action is None:
        action = next((a for w in name_words for a in _actions_for_op_word(w)), None)
    if action is None and annotations:
        if annotations.get("readOnlyHint"):
            action = "read"
        elif annotations.get("destructiveHint"):
            action = "delete"
    return OperationAction(action, _resource(name_words, path))


def _resource(name_words: list[str], path: str) -> str:
    """The stem of the last word that is no action and no id: of the path's literal
    segments when there is a path, else of the name."""
    literal = [s for s in path.strip("/").split("/") if s and not _PARAM.match(s)]
    candidates = words(split_identifier(" ".join(literal))) if literal else name_words
    for word in reversed(candidates):
        stems = analyse(word.lower())
        if stems and stems[0] not in _OP_VERBS and stems[0] not in _NOT_RESOURCE:
            return stems[0]
    return ""


_NOT_RESOURCE = frozenset(analyse("id sid uid uuid v1 v2 v3 api json me current"))
# A step that asks about people ("who is in channel C…?", "list everyone in group 55",
# "wer", "quién", "谁"), and the resources that are people or what people did.
_WHO = frozenset("who whom whose everyone everybody anyone anybody wer quién quien".split())  # noqa: SIM905
_WHO_CJK = ("谁", "誰")
PEOPLE = frozenset(
    analyse(
        "member membership user participant collaborator collaboration reviewer review "
        "assignee owner people person contributor attendee subscriber follower"
    )
)


def asks_for_people(text: str) -> bool:
    """Whether ``text`` asks who (a person, the people of something)."""
    return not _WHO.isdisjoint(w.lower() for w in words(text)) or any(c in text for c in _WHO_CJK)


_ID_WORDS = frozenset(analyse("id ids sid uid uuid"))


def name_stems(name: str) -> frozenset[str]:
    """The stems of a tool's name, no id word: ``get_files_id_thumbnail_id`` → get, file,
    thumbnail."""
    return frozenset(analyse(split_identifier(name).replace("_", " "))) - _ID_WORDS


def agreement(step: StepAction, op: OperationAction) -> float:
    """How well the operation does what the step asks, from −1 to 1: the step's weight on
    the operation's action (reading one and listing are half alike: people say "show" and
    "find" for both), less its weight on actions of another kind; 0 when either side says
    nothing."""
    if not step.weights or op.action is None:
        return 0.0
    return sum(w * _COMPATIBLE.get((a, op.action), -1.0) for a, w in step.weights.items())


_COMPATIBLE = {
    **{(a, a): 1.0 for a in ACTIONS},
    ("read", "list"): 0.5,
    ("list", "read"): 0.5,
}
