"""Free text in a home request: list items and search queries, which no home list holds.

``WildText`` finds them from the words around them (learned from the training sentences);
``listed_item`` takes the words between a list verb and the list when those words hold the
home's own names ("put lock the barn door on the chores list"); ``ends_in_list`` says a
request ends with a list's phrase; ``timer_named`` takes the name in "the timer for the
bread". Pure functions over normalized (and masked) words.
"""
from __future__ import annotations

from ..numbers import NUMBER_WORDS
from .lists import Match
from .words import (BACK, BEFORE_REQUEST, COMMAND_VERBS, DETERMINERS, DONE, FILLERS, NO_ITEM,
                    number_word, said_number)

EDGE_WORDS = frozenset(("the", "a", "an", "my", "our", "and", "of", "to", "on", "in", "for",
                         "from", "them", "it", "this", "that", "please", "me", "you", "us",
                         "add", "put"))   # a command verb never begins or ends an item
# nor its particle: "check off tent" -> tent (stripped from a span, so its context still
# counts: templates say "check {item} off" and "check off {item}")
PARTICLES = frozenset(("off", "out", "up", "down"))
# "to my shopping list", "from the camping trip list": an item ends before its list's phrase
_LIST_LEADS = frozenset(("to", "on", "onto", "in", "into", "from", "off"))
_LIST_WORDS = frozenset(("list", "lists"))
# words of the request around an item, never inside one ("can you add this soap": this soap)
_NOT_IN_ITEM = frozenset(("add", "added", "you", "stick", "chuck", "bung"))


_NOT_WILD = frozenset(NUMBER_WORDS | {"hour", "hours", "minute", "minutes", "second", "seconds",
                                      "half", "s", "timer", "timers", "now", "please", "again",
                                      "anymore", "thanks", "moment", "sec", "bit", "while",
                                      "today", "tonight", "already", "too", "also"})


_ITEM_VERBS = frozenset(("add", "put", "stick", "pop", "write", "cross", "tick", "check", "mark",
                         "remove", "take", "scratch", "strike", "delete", "bung", "chuck"))
_MARKING = frozenset(("mark", "tick", "check"))
_ADDING = frozenset(("add", "put", "stick", "pop", "write", "bung", "chuck"))
_OWNERS = frozenset(("my", "our", "the", "your", "a"))
_LIST_NAMING = frozenset(("@todo", "@name", "shopping", "to", "do", "todo"))


def listed_item(words: list[str], found: list[Match]) -> str:
    """The words between a list verb and the list ("put [lock the barn door] on the chores
    list", "cross [lock the barn door] off chores", "mark [x] as done on chores"), names of
    the home in them and all; "" when the request is not said that way."""
    k = next((i for i, w in enumerate(words) if w not in BEFORE_REQUEST), None)
    if k is None or words[k] not in _ITEM_VERBS:
        return ""
    k += 1
    # the verb's particle ("check off tent"), but "add off the gen by midnight" adds it all
    while k < len(words) and (words[k] in ("down", "please") or
                              words[k] in ("off", "away") and words[k - 1] not in _ADDING):
        k += 1
    # where the list is named: its to-do name, or the word "list"
    named = [m.start for m in found if m.domain == "todo"] + \
        [i for i, w in enumerate(words) if w in _LIST_WORDS]
    if not named:
        return ""
    end = min(named)
    while end > k and words[end - 1] in _OWNERS or end > k and words[end - 1] == "shopping":
        end -= 1
    if end <= k or words[end - 1] not in _LIST_LEADS:
        return ""
    end -= 1
    done = next((i for i in range(k, end - 1)       # ("is done": "as done" misheard)
                 if words[i] in ("as", "is") and words[i + 1] in DONE), None)
    span = words[k:done if done is not None else end]
    if len(span) > 1 and span[-1] in DONE and words[k - 1] in _MARKING:
        span = span[:-1]                   # "mark feed the dog done on the chore chart"
    while span and (span[0] in ("a", "an", "some", "more", "any") or span[0] in FILLERS):
        span = span[1:]
    if not span or span[0] in BACK | {"this", "that", "these"} or len(span) > 8 or \
            len(span) == 1 and (span[0] in NO_ITEM or said_number(span[0])):
        return ""                          # "put them on the list": what? (said before)
    return " ".join(span)


_TIMER_FOR_ENDS = frozenset(("for", "and", "to", "on", "in", "that", "so", "but", "or", "is",
                             "please", "thanks", "thank", "me", "us", "you", "him", "her", "them",
                             "it"))


def timer_named(masked: list[str]) -> str:
    """The timer named in "pause the timer for the bread" (a timer that runs: not "set a timer
    for 5 minutes for the eggs", which says what a new one is for): the words after "timer
    for", a possessive or "the" dropped; "" for "the timer for a minute", "for now"."""
    for i, w in enumerate(masked[:-2]):
        if w not in ("timer", "timers") or masked[i + 1] != "for":
            continue
        span = masked[i + 2:]
        if span[0] in ("the", "my", "our", "your"):
            span = span[1:]
        name: list[str] = []
        for word in span:
            if word in _TIMER_FOR_ENDS or word in FILLERS or word.startswith("@"):
                break
            if word in _NOT_WILD or number_word(word) or word in DETERMINERS:
                name = []              # a length or a while: perhaps a name after it
                break
            name.append(word)
        if 0 < len(name) <= 3:
            return " ".join(name)
    return ""


def timer_named_first(masked: list[str]) -> str:
    """The name said before the word timer where nothing else could be ("bread timer 40
    minutes", "the pasta timer for ten minutes", "a twelve minute cookie timer"): one or two
    plain words at the start or after a timer's length; "" otherwise."""
    t = next((i for i, w in enumerate(masked) if w == "timer"), None)
    if t is None:
        return ""
    then = masked[t + 1:t + 2]             # a length or "for" after it, or nothing
    if then and not (then[0] in ("for", "please") or number_word(then[0]) or
                     then[0] in NUMBER_WORDS):
        return ""
    for n in (2, 1):
        name, before = masked[max(t - n, 0):t], masked[:max(t - n, 0)]
        lead = [w for w in before if w not in ("the", "my", "a")]
        if len(name) == n and (not lead or lead[-1].rstrip("s") in _LENGTH_UNITS) and not any(
                w in _NOT_WILD or number_word(w) or w in EDGE_WORDS or w in FILLERS or
                w in PARTICLES or w.startswith("@") or w in _NO_TIMER_NAME or
                w in COMMAND_VERBS or len(w) < 3 for w in name):
            return " ".join(name)
    return ""


_LENGTH_UNITS = frozenset(("minute", "hour", "second"))


# what begins a timer request without naming it ("start timer ...", an "egg timer")
_NO_TIMER_NAME = frozenset(("set", "start", "cancel", "stop", "pause", "resume", "restart",
                            "unpause", "new", "kitchen", "egg", "countdown", "hold", "continue",
                            "increase", "decrease", "add", "extend", "reduce", "remove",
                            "shorten", "lengthen", "check", "snooze", "another", "second",
                            "create", "drop", "make", "just", "lets", "begin", "go", "my",
                            "quick", "short", "long", "little", "small", "big", "other",
                            "one", "the", "a"))


def ends_in_list(masked: list[str]) -> bool:
    """The request ends with a list's phrase ("... on the chores list", "... to @todo")."""
    return any(all(w in _LIST_WORDS or w in DETERMINERS or w in _LIST_NAMING
                   for w in masked[i + 1:]) for i in list_phrase_starts(masked)) or \
        len(masked) > 3 and masked[-3] in _LIST_LEADS and masked[-2:] == ["@name", "@todo"]


def list_phrase_starts(words: list[str]) -> set[int]:
    """Where a list's phrase begins in ``words`` ("add soap [to my shopping list]", "check off
    tent [from the @name @todo list]"): a preposition, then "list" at most five words on
    with no other preposition between."""
    out = set()
    for i, w in enumerate(words):
        if w not in _LIST_LEADS:
            continue
        for k in range(i + 1, min(len(words), i + 7)):
            if words[k] in _LIST_LEADS:
                break
            if words[k] in _LIST_WORDS or words[k] == "@todo":   # ("to the camping list")
                out.add(i)
                break
    return out


def wild_keys(padded: list[str], i: int, j: int) -> tuple[tuple, tuple]:
    """(two words before, two after) and (one before, one after) a span of ``padded``
    (the masked words between ``<s>`` and ``</s>``)."""
    return ((tuple(padded[i - 2:i]), tuple(padded[j:j + 2])),
            (tuple(padded[i - 1:i]), tuple(padded[j:j + 1])))


class WildText:
    """Free-text slots (shopping items, search queries) from the words around them: a span
    whose neighbours (two words each side, else one) were seen around that slot in training,
    or, for an item, one seen before it and its list's phrase after ("remove paper towels
    [from my shopping list]"). A span never begins or ends with a function word
    (``EDGE_WORDS``) unless the slot's training values do ("the beatles": ``edges``)."""

    def __init__(self, contexts: dict[str, dict[str, list]],
                 edges: dict[str, list[list[str]]] | None = None) -> None:
        # label -> slot -> [[left, right, level], ...]
        self.contexts = contexts
        self.edges = edges or {}           # slot -> [words a value begins with, ends with]
        self._pairs = {(lab, s): {(tuple(a), tuple(b)): int(lv) for a, b, lv in rows}
                       for lab, d in contexts.items() for s, rows in d.items()}
        self._lefts = {key: {a for (a, _), lv in pairs.items() if lv == 1}
                       for key, pairs in self._pairs.items()}
        self._lefts2 = {key: {a for (a, _), lv in pairs.items() if lv == 2}
                        for key, pairs in self._pairs.items()}
        self._rights = {key: {b for (_, b), lv in pairs.items() if lv == 1}
                        for key, pairs in self._pairs.items()}

    def extract(self, label: str, masked: list[str], have=()) -> dict[str, str]:
        out = {}
        padded = ["<s>", "<s>", *masked, "</s>", "</s>"]
        stops = {i + 2 for i in list_phrase_starts(masked)}
        for slot in self.contexts.get(label, {}):
            if slot in have:
                continue
            pairs, lefts = self._pairs[(label, slot)], self._lefts[(label, slot)]
            lefts2, rights = self._lefts2[(label, slot)], self._rights[(label, slot)]
            starts, ends = (set(w) for w in self.edges.get(slot, ((), ())))
            item = slot == "item"          # "add two dozen eggs": numbers are part of it
            best = None
            for i in range(2, len(padded) - 2):
                for j in range(i + 1, min(len(padded) - 2, i + 8) + 1):
                    span = padded[i:j]
                    last = span[-1]
                    if j - 1 in stops or last.startswith("@") or item and last in _NOT_IN_ITEM or \
                            (last in _NOT_WILD or number_word(last)) and \
                            not (item and said_number(last)):
                        break
                    if (span[0] in EDGE_WORDS and span[0] not in starts) or \
                            (last in EDGE_WORDS and last not in ends):
                        continue
                    score = None
                    # a span that begins with a function word only when no other does ("the
                    # beatles"; "the album abbey road" is "abbey road")
                    plain = span[0] not in EDGE_WORDS
                    for level, key in zip((2, 1), wild_keys(padded, i, j), strict=True):
                        if pairs.get(key) == level:
                            score = (level, plain, j - i)
                            break
                    if score is None and item and j in stops and (
                            tuple(padded[i - 1:i]) in lefts or padded[i - 1] in _ARTICLES
                            and tuple(padded[i - 2:i - 1]) in lefts):
                        score = (0, plain, j - i)   # its list's phrase after it
                    if score is None and tuple(padded[i - 2:i]) in lefts2 and \
                            tuple(padded[j:j + 1]) in rights:
                        # the two words before and the word after seen around the slot, not
                        # together ("put on some [jazz]" + "play [jazz] in the kitchen")
                        score = (0, plain, j - i)
                    if score is not None and (best is None or score > best[0]):
                        best = (score, span, i)
            if best is not None:
                words = list(best[1])
                at = best[2]
                if item and padded[at - 1] == "of" and _measure(padded[at - 2]):
                    words = padded[at - 2:at] + words      # "a bag of rice": bag of rice
                while item and len(words) > 1 and (words[0] in PARTICLES
                                                   or words[0] in _AMOUNTS):
                    words.pop(0)
                while item and len(words) > 1 and words[-1] in PARTICLES and not (
                        len(words) > 2 and words[0] not in EDGE_WORDS):
                    words.pop()            # ("take the bins out" keeps its "out")
                out[slot] = " ".join(words)
        return out


_ARTICLES = frozenset(("a", "an", "some", "the"))
_AMOUNTS = frozenset(("some", "more", "any"))      # "add some paper towels": paper towels
# words before "of" that are no amount of an item ("ran out of", "some of", "one of")
_NOT_MEASURE = frozenset(("more", "some", "lot", "lots", "all", "none", "rid", "sort", "kind",
                          "one", "most", "few", "couple", "bit"))


def _measure(word: str) -> bool:
    """``word`` before "of" and an item may be its amount ("bag", "bottle", "dozen")."""
    return not (word in EDGE_WORDS or word in PARTICLES or word in _NOT_IN_ITEM
                or word in _NOT_MEASURE or word.startswith(("@", "<")) or number_word(word))
