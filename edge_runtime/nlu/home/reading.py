"""How a home request's words read, before and after its names are masked (``@name
@light``): the verb's own particle, a cover's halfway, an area that begins the next
sentence, "all" of a kind, a show put on a player, an "on" that says where, a command
passed on to a device, a command put off for a while, what an announcement says. Pure
functions over normalized words; ``model.HomeModel`` applies them."""
from __future__ import annotations

from .lists import Match
from .words import (AS_IT_IS, BEFORE_REQUEST, COMMAND_VERBS, DETERMINERS, DEVICE_WORDS,
                    LIGHT_WORDS, lead_at, leading_word, said_number)

_TIME_UNITS = frozenset(("hour", "minute", "second"))
# what asks for every device of a kind ("turn off all the lights", "the whole house")
_ALL_WORDS = frozenset(("all", "every", "everything", "everywhere", "whole", "entire", "house",
                        "home"))


_QUARTERS = {("a", "quarter", "of", "an", "hour"): ["15", "minutes"],
             ("quarter", "of", "an", "hour"): ["15", "minutes"],
             ("three", "quarters", "of", "an", "hour"): ["45", "minutes"],
             ("and", "a", "quarter"): ["and", "15", "minutes"]}


def spoken_units(words: list[str]) -> list[str]:
    """ "an hour" -> "1 hour", "a minute and a half" -> "1 minute and a half", "a quarter of
    an hour" -> "15 minutes", "an hour and a quarter" -> "1 hour and 15 minutes", "an hour and
    a half" -> "1 hour and 30 minutes"."""
    for said, meant in _QUARTERS.items():
        n = len(said)
        at = next((i for i in range(len(words) - n + 1) if tuple(words[i:i + n]) == said), None)
        if at is not None and (said[0] != "and" or "hour" in words[:at]):
            words = [*words[:at], *meant, *words[at + n:]]
    for i in range(len(words) - 3):     # "an hour and a half": 1 hour and 30 minutes
        if words[i].rstrip("s") in ("hour", "minute") and \
                words[i + 1:i + 4] == ["and", "a", "half"]:
            half = ["30", "minutes" if words[i].startswith("hour") else "seconds"]
            words = [*words[:i + 2], *half, *words[i + 4:]]
            break
    out = list(words)
    for i in range(len(out) - 1):
        if out[i] in ("a", "an") and out[i + 1].rstrip("s") in _TIME_UNITS and \
                (i == 0 or out[i - 1] not in ("and", "half")):
            out[i] = "1"
    return out


# what a span of time is said with after "in"/"after" ("in an hour and a half")
_SPAN_WORDS = frozenset(("a", "an", "half", "quarter", "quarters", "of", "and"))
_UNIT_FORMS = frozenset(("hour", "hours", "hr", "hrs", "minute", "minutes", "min", "mins",
                         "second", "seconds", "sec", "secs"))
_SPAN_AFTER = (("and", "a", "half"), ("time",), ("from", "now"))


def _span(words: list[str], at: int) -> int:
    """The end of a span of time said from ``words[at]`` ("20 minutes", "half an hour",
    "an hour and a half", "ten minutes' time"), or ``at`` when there is none."""
    end, i, counted = at, at, False
    while i < len(words) and (words[i] in _SPAN_WORDS or said_number(words[i]) or
                              words[i] in _UNIT_FORMS):
        counted = counted or said_number(words[i]) or words[i] in ("a", "an", "half")
        i += 1
        if words[i - 1] in _UNIT_FORMS and counted:
            end = i + (words[i:i + 1] == ["s"])      # (the templates' "minute[s]")
    for after in _SPAN_AFTER:
        if end > at and tuple(words[end:end + len(after)]) == after:
            end += len(after)
    return end


def delayed(words: list[str]) -> tuple[list[str], list[str]] | None:
    """A command put off for a while, as (command, span): "in 20 minutes turn off the
    light strip", "switch off the geyser in fifteen minutes" (Home Assistant's HassStartTimer
    with a ``conversation_command``); None when the words say no such thing."""
    if len(words) > 3 and words[0] in ("in", "after"):
        end = _span(words, 1)
        rest = words[end + (end < len(words) and words[end] in ("then", "please")):]
        while len(rest) > 1 and rest[0] in BEFORE_REQUEST:
            rest = rest[1:]           # "in twenty minutes, would you switch off the blanket"
        if end > 1 and len(rest) > 1:
            return rest, words[1:end]
    for i in range(len(words) - 2, 1, -1):
        if words[i] in ("in", "after") and _span(words, i + 1) == len(words):
            return words[:i], words[i + 1:]
    return None


# the verbs of an announcement ("announce that ...", "tell everyone ...")
ANNOUNCING = frozenset(("announce", "broadcast", "tell", "say"))
_TO_ALL = (("to", "the", "whole", "house"), ("to", "the", "house"), ("to", "everyone"),
           ("to", "everybody"), ("everywhere",),
           ("on", "all", "the", "speakers"), ("on", "the", "speakers"), ("that",),
           ("a", "message", "saying"), ("a", "message", "that"), ("saying",))


_EVERYONE = frozenset(("everyone", "everybody", "all"))


def announcing(words: list[str]) -> bool:
    """A request that begins as an announcement: "announce ...", "broadcast ...", "tell
    everyone ...", "let everybody know ..." (not "tell me ...")."""
    lead = [w for w in words if w not in BEFORE_REQUEST]
    return lead[:1] in (["announce"], ["broadcast"]) or \
        lead[:1] == ["tell"] and bool(lead[1:2]) and lead[1] in _EVERYONE or \
        lead[:1] == ["let"] and "know" in lead[2:4] and bool(_EVERYONE & set(lead[1:3]))


# whom "tell" (and "let ... know") tells; in "broadcast everybody come for dinner" the
# message calls them
_TO_WHOM = (("everyone",), ("everybody",))


def announced(words: list[str]) -> str:
    """What an announcement says: the words after "broadcast"/"announce"/"tell everyone"/
    "let everyone know" and who it is for ("announce that dinner is ready" -> "dinner is
    ready"); "" if none."""
    at = next((i for i, w in enumerate(words) if w in ANNOUNCING), None)
    let = next((i for i, w in enumerate(words) if w == "let"), None)
    if at is None and let is not None and "know" in words[let + 2:let + 4]:
        at = words.index("know", let + 2)
    if at is None:
        return ""
    rest = words[at + 1:]
    leads = _TO_ALL + (_TO_WHOM if words[at] in ("tell", "know") else ())
    cut = True
    while cut:
        cut = False
        for lead in leads:
            if tuple(rest[:len(lead)]) == lead and len(rest) > len(lead):
                rest, cut = rest[len(lead):], True
    return " ".join(rest)


# where a device is: "the lamp, in the bedroom"
_LOCATIVE = frozenset(("in", "on", "at", "from", "of", "inside", "outside", "upstairs",
                       "downstairs", "around", "across", "throughout", "within", "near", "by"))
# someone said between a device and a room: a remark of its own ("... nobody's using ...")
_SOMEONE = frozenset(("i", "im", "we", "were", "he", "hes", "she", "shes", "they", "theyre",
                      "nobody", "nobodys", "everyone", "everyones", "somebody", "someone",
                      "its", "theres"))


# and a reason or a time said there ("close the roof blinds before the conservatory cooks")
_WHEN = frozenset(("before", "because", "while", "until", "since", "so", "after", "cos", "when"))


def remarked(words: list[str], device: Match, place: Match, clauses: set[int],
             known: frozenset[str]) -> bool:
    """A room or floor said after the device in a remark, not as where the device is: in a
    clause of its own (``clauses``: the indices of words that begin one) that does not begin
    with "in", "on", ... ("set the speaker to ten percent, megan's asleep in the spare room"),
    or after someone or a word the model never saw ("unlock the walkout door owen's friends
    are coming in through the basement"); not "is the fan heater still on in the shed"."""
    if place.start < device.end:
        return False
    between = words[device.end:place.start]
    broken = [i for i in clauses if device.end <= i <= place.start]
    if broken and words[max(broken)] not in _LOCATIVE:
        return True
    if [w for w in between if w not in DETERMINERS][-1:] in (["to"], ["into"], ["onto"]):
        return True      # where it leads ("open the french doors to the backyard")
    return any(w in _SOMEONE | _WHEN or w not in known and not said_number(w) for w in between)


def particle(masked: list[str]) -> str:
    """The word right after a leading "turn", "switch" or "flip" ("turn off ..." -> "off")."""
    words = [w for w in masked if w not in ("please",)]
    k = next((i for i, w in enumerate(words) if w in ("turn", "switch", "flip")), None)
    return words[k + 1] if k is not None and k + 1 < len(words) and \
        leading_word(words) == words[k] else ""


def halfway(masked: list[str]) -> bool:
    """ "halfway", "half way", "half open": a cover's position of 50."""
    return "halfway" in masked or any(a == "half" and b in ("way", "open", "closed", "up", "down")
                                      for a, b in zip(masked, masked[1:], strict=False))


def run_on(m: Match, found: list[Match], words: list[str]) -> bool:
    """An area that begins the next sentence, heard without its full stop ("turn on the
    dehumidifier the cellar smells damp again"): right after a device's name and "the",
    and followed by a word that is no device's."""
    return m.slot == "area" and m.start >= 2 and words[m.start - 1] == "the" and \
        any(n.slot == "name" and n.end == m.start - 1 for n in found) and \
        m.end < len(words) and words[m.end] not in DEVICE_WORDS | {"one", "ones"} and \
        not any(n.start == m.end for n in found)


def all_said(masked: list[str]) -> bool:
    """Every device of the kind is asked for: "all the lights", "the whole house" (not "the
    whole light", a misheard "hall light")."""
    for i, w in enumerate(masked):
        if w in ("whole", "entire"):
            if masked[i + 1:i + 2] and masked[i + 1] in LIGHT_WORDS and \
                    not masked[i + 1].endswith("s"):
                continue
            return True
        if w in _ALL_WORDS:
            return True
    return False


def put_on_player(masked: list[str]) -> bool:
    """Something put on a media player ("put bluey on the tv", "put on some jazz on the
    speaker"): words between "put [on]" and "on <the player>" that name no device."""
    if leading_word(masked) != "put":
        return False
    k = masked.index("put") + 1
    k += k < len(masked) and masked[k] == "on"
    end = next((i for i in range(k, len(masked)) if masked[i] == "on"), None)
    if end is None or "@media_player" not in masked[end:]:
        return False
    return any(w not in DETERMINERS and not w.startswith("@") for w in masked[k:end])


def placed(masked: list[str], i: int) -> bool:
    """The "on" at ``i`` says where, not which way: "shut the gate on the driveway" (not
    "turn on the lights")."""
    before, after = masked[i - 1] if i else "", masked[i + 1:i + 3]
    if after[:1] in (["the"], ["my"], ["our"]):
        after = after[1:]
    return bool(before) and before not in COMMAND_VERBS and before not in ("it", "them") and \
        after[:1] in (["@area"], ["@floor"])


def follows(masked: list[str], words: list[str]) -> bool:
    """``words`` are said in ``masked``, one after the other."""
    n = len(words)
    return any(masked[i:i + n] == words for i in range(len(masked) - n + 1))


def addressed(words: list[str], found: list[Match]) -> list[str]:
    """A command passed on to the device it names ("tell rosie to start cleaning", "have the
    mower start", "ask hamish to clean the kitchen") as said to it: "rosie start cleaning";
    else ``words``."""
    k = lead_at(words, BEFORE_REQUEST)
    if k >= len(words) or words[k] not in ("tell", "ask", "get", "have"):
        return words
    named = next((m for m in found if m.slot == "name" and m.start in (k + 1, k + 2)), None)
    if named is None or named.start == k + 2 and words[k + 1] not in DETERMINERS or \
            named.end >= len(words) - 1:
        return words
    rest = words[named.end:]
    if rest[0] == "to" and words[k] in ("tell", "ask", "get"):
        rest = rest[1:]
    elif words[k] != "have" or rest[0] not in COMMAND_VERBS | {"go"}:
        return words
    return [*words[:k], *words[named.start:named.end], *rest]


def not_the_verb(words: list[str], found: list[Match]) -> list[Match]:
    """``found`` without a one-word area or name said where the request's verb is ("close
    the bay blinds" in a home whose stairwell is the Close)."""
    lead = next((i for i, w in enumerate(words) if w not in BEFORE_REQUEST), -1)
    return [m for m in found if not (m.start == lead and m.end == lead + 1 and
                                     words[lead] in COMMAND_VERBS and len(words) > lead + 1)]


def named_once(found: list[Match]) -> list[Match]:
    """``found`` with a name said twice kept only where it is said last ("add wifi bill to
    bills": the first "bill" is the item's; "play cbc radio one on the radio")."""
    names = [m.value for m in found if m.slot == "name"]
    if len(names) == len(set(names)):
        return found
    last = {m.value: m.start for m in found if m.slot == "name"}
    return [m for m in found if m.slot != "name" or m.start == last[m.value]]


def left_as_is(masked: list[str]) -> bool:
    """"leave the big light on", "keep the fan running", "leave the blind as it is": nothing
    to do."""
    first = next((w for w in masked if w not in BEFORE_REQUEST and w != "no"), "")
    return first in ("leave", "keep") and (masked[-1] in AS_IT_IS or
                                           masked[-3:] in (["as", "it", "is"],
                                                           ["as", "they", "are"]))


_EVERY = frozenset(("all", "every", "everything"))
_LOCKED_THINGS = frozenset(("door", "doors", "locks", "everything"))


def every_lock(masked: list[str]) -> str:
    """"lock all the doors", "kindly unlock every door", "lock everything up for the
    night": every lock of the home (or of the room said), HassTurnOn to lock and
    HassTurnOff to unlock, as Home Assistant's lock domain takes them; "" when the words say
    no such thing (a device named, no "all", a question, someone's habit)."""
    lead = lead_at(masked, BEFORE_REQUEST)
    if lead == len(masked) or masked[lead] not in ("lock", "unlock"):
        return ""
    rest = set(masked[lead + 1:])
    if not rest & _EVERY or not rest & _LOCKED_THINGS or "@name" in rest:
        return ""
    return "HassTurnOn" if masked[lead] == "lock" else "HassTurnOff"
