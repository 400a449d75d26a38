"""The words the home understanding's rules read: device kinds said outside the home's
names, which way a request goes, what takes a request back, and how a recognizer mishears
commands (``model.HomeModel`` applies them; the classifier never sees these rules)."""
from __future__ import annotations

import re
from typing import Any

from ..numbers import NUMBER_WORDS

# device words of covers and of lights, outside the home's names (those are masked)
COVER_WORDS = frozenset(("shade", "shades", "blind", "blinds", "curtain", "curtains", "awning",
                         "awnings", "shutter", "shutters", "drapes", "window", "windows"))
LIGHT_WORDS = frozenset(("light", "lights", "lamp", "lamps", "bulb", "bulbs", "lighting",
                         "@light"))
CLIMATE_WORDS = frozenset(("temperature", "temp", "heat", "heating", "thermostat", "degrees",
                           "ac", "cooling", "aircon", "conditioning", "conditioner", "heater"))
KELVIN_WORDS = frozenset(("kelvin", "k", "white", "daylight"))
RUNNING = frozenset(("running", "going"))
# which way a cover goes (Home Assistant: open is HassTurnOn, close HassTurnOff)
OPENING = frozenset(("open", "up", "out", "extend", "raise", "lift"))
CLOSING = frozenset(("close", "shut", "down", "retract", "lower", "drop"))
# the state a verb leaves ("did I lock ...": locked), also how a recognizer writes a
# question's last word ("is the gate lock")
STATE_OF_VERB = {"unlock": "unlocked", "lock": "locked", "close": "closed", "shut": "closed"}
NEGATIONS = frozenset(("dont", "not", "never", "cant", "wont", "doesnt", "didnt", "shouldnt",
                       "no", "wouldnt", "mustnt", "aint", "neednt"))
# (the last ones: "i wouldn't open the vent today", "you needn't bother putting it on")
# said of the past: a statement about the home, not a request of it ("the front door was
# unlocked all night", "the timer went off ages ago")
# ("were" is not among them: it is also how "we're" is written without its apostrophe)
PAST = frozenset(("was", "yesterday", "ago", "earlier", "already", "went", "rang", "rung",
                  "been"))      # ("the fairy lights have been on since christmas")
# the verbs a negation before them takes back ("don't turn off", "do not open")
COMMAND_VERBS = frozenset(("turn", "switch", "open", "close", "shut", "lock", "unlock", "start",
                           "stop", "set", "put", "play", "pause", "add", "remove", "cancel",
                           "dim", "change", "make", "raise", "lower", "kill", "run", "do",
                           "skip", "mute", "unmute", "resume", "unpause", "brighten", "bother",
                           "mow", "vacuum", "hoover", "clean", "drop"))


# words before the request that say nothing of it ("so um close the skylight")
FILLERS = frozenset(("so", "um", "uh", "er", "erm", "ok", "okay", "hey", "oh", "well", "right",
                     "now", "and", "like", "hmm", "alright", "nah", "yo", "abeg", "biko"))
# a particle ending a sentence in other Englishes that says nothing of the request ("never
# mind o": Nigerian English; "off the fan lah": Singaporean); not a title's ("play ooh la
# la") nor a message's ("tell everyone sik fan la")
_PARTICLES = frozenset(("o", "oo", "ooo", "la", "lah", "leh"))
_SAYING = frozenset(("play", "tell", "announce", "broadcast", "say"))
_OR_NOT = re.compile(r"^((?:can|could|would|will)\b.*\w)[\s,]+or\s+not(\W*)$", re.I | re.S)
_FINAL_WORD = re.compile(r"^(.*\w)[\s,]+([A-Za-z]+)(\W*)$", re.S)


# "oh is it", "is it? shame man": a listener's "really?", no question of the home
_BACKCHANNEL = re.compile(r"^(?:(?:oh|ag|ah|aw|yoh|ok|okay|wow|really)\W+)*is\s+it\b\W*"
                          r"(?:(?:really|shame|man|hey|ne|nè|eh)\b\W*)*$", re.I)


def backchannel(text: str) -> bool:
    return bool(_BACKCHANNEL.match(text.strip()))


def without_particle(text: str) -> str:
    """``text`` without a final discourse particle (its end punctuation kept), and without
    the "or not" that ends a request asked as a question ("can play some p ramlee songs or
    not": the songs)."""
    m = _OR_NOT.match(text.strip())
    if m and len(m.group(1).split()) > 2:
        text = m.group(1) + m.group(2)
    m = _FINAL_WORD.match(text.strip())
    if not m or m.group(2).lower() not in _PARTICLES:
        return text
    before = re.sub(r"[^\w\s]", "", m.group(1).lower()).split()
    if len(before) < 2 or before[0] in _SAYING or before[-1] in _PARTICLES:
        return text
    return m.group(1) + m.group(3)


# and what a polite request says before its verb ("um, could you just add ...")
BEFORE_REQUEST = FILLERS | {"please", "can", "could", "would", "you", "will", "just", "kindly"}


def leading_word(masked: list[str]) -> str:
    """The first word of a request after its fillers ("so um close ..." -> "close")."""
    return next((w for w in masked if w not in FILLERS), "")


def lead_at(words: list[str], skip: frozenset[str] | set[str] = FILLERS) -> int:
    """Where a request begins after the words ``skip`` says nothing of it (its fillers, or
    ``BEFORE_REQUEST``: "um could you just ..."); ``len(words)`` if it never does."""
    return next((i for i, w in enumerate(words) if w not in skip), len(words))


# "close all the blinds except the blackout blind": no intent says "all but one": asked back
_EXCEPT = (("except",), ("apart", "from"), ("other", "than"), ("but", "not"))


def excepted(masked: list[str]) -> bool:
    """All but one: "close all the blinds except the blackout blind" (not "turn on the
    bistro lights but not the hot tub light", where the device asked for is named)."""
    at = next((i for i in range(len(masked)) for e in _EXCEPT
               if tuple(masked[i:i + len(e)]) == e), None)
    if at is None:
        return False
    asked_for = masked[:at]
    return "@name" not in asked_for or bool(set(asked_for) & {"all", "every", "everything"})


def negated(masked: list[str]) -> bool:
    """A negation before a command verb: "don't turn off the lights", "no need to unlock
    the gate", "I'm not going to open it", "please don't touch the thermostat" (not "I
    can't see, turn the lights on")."""
    return any(w in NEGATIONS and (any(v in _NEGATED_VERBS for v in masked[i + 1:i + 5]) or
                                   w in ("dont", "not", "never") and
                                   masked[i + 1:i + 2] in (["on"], ["off"]) or
                                   any(masked[j:j + 2] in (["to", "on"], ["to", "off"])
                                       for j in range(i + 1, i + 4)))
               for i, w in enumerate(masked)) or \
        masked[:2] == ["no", "need"] and masked[2:3] != ["to"] and \
        bool({"on", "off"} & set(masked[2:6]))   # ("don't off the floodlight yet", "abeg
    # do not off the inverter", "no need to on the AC", "no need kettle on, tea made")


def declined(masked: list[str]) -> bool:
    """"no hot tub tonight", "no telly after nine": a thing said not to be had, no verb to
    do anything to it (not "no, turn it off")."""
    lead = lead_at(masked)
    return masked[lead:lead + 1] == ["no"] and lead + 1 < len(masked) and \
        (masked[lead + 1].startswith("@") or masked[lead + 1] in DETERMINERS) and \
        not set(masked) & (COMMAND_VERBS | {"on", "off", "up", "down"})


_WISHES = (["id", "like"], ["i", "would", "like"], ["id", "love"], ["i", "want"],
           ["we", "want"], ["i", "need"], ["we", "need"])


def wished(masked: list[str]) -> bool:
    """The speaker says how they want something: "i'd like the back door unlocked"."""
    lead = lead_at(masked)
    return any(masked[lead:lead + len(w)] == w for w in _WISHES)


def doing_asked(masked: list[str]) -> bool:
    """Someone asked what they are doing ("callum, are you putting the kettle on or what"):
    no question of the home."""
    return any(masked[k:k + 2] == ["are", "you"] and masked[k + 2:k + 3] != [] and
               masked[k + 2].endswith("ing") for k in (0, 1))


def own_doing(words: list[str]) -> bool:
    """The speaker says what they will do themselves: "I'll switch the geyser off just
    now", "we will close the blinds later" (not "I'll have the lights on, please")."""
    k = 1 if words[:1] == ["ill"] else 2 if words[:2] in (["i", "will"], ["we", "will"]) else 0
    return bool(k) and any(w in COMMAND_VERBS for w in words[k:k + 2])


# and the verbs that say to leave a device as it is
_NEGATED_VERBS = COMMAND_VERBS | {"touch", "mess", "fiddle", "change", "adjust", "cut",
                                  "chuck", "stick", "bung", "pop", "throw", "whack",
                                  "bother"} | {
    "turns", "switches", "shuts", "closes", "opens", "locks", "puts", "sets"}  # "she never turns"


# a statement ended as a question ("front door locked?", "the fan is off now, yeah?"), but
# not a polite request ("can you turn the lights on?")
TAGS = frozenset({("right",), ("yeah",), ("yes",), ("innit",), ("correct",)} | {
    (aux, who) for aux in ("is", "isnt", "are", "arent", "have", "havent", "has", "hasnt", "did",
                           "didnt", "was", "wasnt", "do", "dont", "aint")
    for who in ("it", "they", "i", "we", "you", "he", "she")} | {
    (aux, who, "not") for aux in ("is", "are", "have", "has", "did", "was", "do")
    for who in ("it", "they", "i", "we", "you")})      # ("..., is it not")
_ASKING = frozenset(("can", "could", "would", "will", "please", "may", "might", "cant", "wont",
                     "lets", "why"))


# the states a question asks of a device ("is it still running", "..., aren't they?")
STATES = frozenset(("on", "off", "open", "closed", "shut", "locked", "unlocked", "up", "down",
                    "running", "going", "playing"))
# "I wonder if the porch light is on" asks; "I wonder if you could turn it on" requests
_WONDER = re.compile(r"\b(?:wonder|wondering|not sure|unsure)\s+(?:if|whether)\b"
                     r"(?!\s+(?:you|u)\s+(?:could|can|would|will|might)\b|\s+youd\b)")


def asked(text: str, words: list[str]) -> bool:
    """``text`` asks (it ends in a question mark or a tag, or wonders "if ...") rather than
    requests."""
    if not words or words[0] in _ASKING or "please" in words:
        return False
    if words[0] not in COMMAND_VERBS and any(
            a == "still" and b in STATES for a, b in zip(words, words[1:], strict=False)):
        return True                # "hot tub jets still running" (its "?" not heard)
    said = words[:-1] if words[-1] == "ah" else words     # (Hong Kong's question "ah")
    if not _ASKING & set(words[:3]) and (said[-2:] == ["or", "not"] or len(said) < len(words)
                                         and said[-1:] and said[-1] in STATES):
        return True                # "water heater on or not ah", "blackout curtain open ah"
    return text.rstrip().endswith("?") and len(words) > 1 or \
        any(tuple(words[-len(tag):]) == tag for tag in TAGS) or \
        bool(_WONDER.search(" ".join(words)))


# a clause that takes its device out of the request ("close the roller door, not the
# shade", "turn the lamp off, the fan can stay on", "pause the music, the timer's fine",
# "..., don't touch the timer"), and words that join a command to its reason ("lock the cat
# flap because the fox was in the kitchen": the command first; "it's hot in the den so put
# the fan on": the command after); a recognizer ends the first clause with a full stop as
# often as a comma ("Turn the lamp off. The fan can stay on.")
_SPARED = re.compile(r"[,;.!]\s*(?:but\s+|and\s+)?(?:not\b|leave\b|keep\b|no\s+need\s+to\b|"
                     r"don'?t\s+(?:bother|touch|need\s+to)\b)[^,;.!]*[.!]?$|"
                     r"[,;.!][^,;.!]*\b(?:can|should|may)\s+(?:stay|wait|carry\s+on|continue|"
                     r"keep\s+(?:going|playing|running|on))"
                     r"\b[^,;.!]*[.!]?$|"
                     r"[,;.!][^,;.!]*(?:'s|\s+is|\s+are)\s+(?:fine|ok|okay|alright)\b[^,;.!]*[.!]?$|"
                     r"[,;.!]\s*(?:the|my|our)\s+[^,;.!]*?\s+no\s+need\b[^,;.!]*[.!]?$|"
                     r"[,;.!]\s*(?:the\s+|my\s+|our\s+)?[^,;.!]*?\s+(?:stays?|remains?)\s+"
                     r"(?:on|off|open|closed|lit)\b[^,;.!]*[.!]?$|"
                     r"[,;.!]\s*(?:but\s+|and\s+)?let\s+(?:the|my|our)\s+[^,;.!]*?\b(?:keep\s+"
                     r"(?:running|going|playing|on)|stay(?:\s+on)?)\b[^,;.!]*[.!]?$|"
                     r"\s+but\s+(?:leave|keep|not\s+(?:the|my|our|any))\s+[^,;.!]*[.!]?$|"
                     r"(?<=\w)\s+not\s+(?:the|my|our)\s+\w+(?:\s+\w+)?[.!]?$",
                     re.I)      # (Singapore's ", the main door no need"; last: "... not the timer")
_REASON_AFTER = re.compile(r"\s+(?:because|cause|cos|since(?!\s+(?:(?:mon|tues|wednes|thurs|fri|"
                           r"satur|sun)day|yesterday|last|this|then|christmas|easter|\d)))"
                           r"\s+.*$|"     # (not "since monday": since when, not why)
                           r"\s+while\s+(?:we|i|you|he|she|they)(?:'re|'m|\s+are|\s+am)?\s.*$|"
                           r"\s+so\s+(?:that\s+)?(?:the(?:\s+\w+){1,2}|we|i|you|he|she|they|it)\s+"
                           r"(?:can|could|will|won'?t|doesn'?t|don'?t|isn'?t|gets?)\s.*$",
                           re.I)       # ("... ten percent so the cat can get in")
# hesitations before a request and thanks after it ("um yeah can you uh open the gate cheers")
_HESITATED = re.compile(r"^(?:(?:um+|uh+|er+|erm|yeah|yep)[,.]?\s+|(?:excuse|pardon)\s+me[,.]\s+)+|"
                        r"[,.]?\s+(?:cheers|thanks|thank\s+you|ta|eh|na|lah|abeg)(?:\s+mate)?[.!?]*$|"
                        r",\s*yeah[.!]*$|"
                        r"(?:,\s*|(?<=please)\s+)(?:my\s+)?(?:dear|love|luv|pet|darling|duck|hun|"
                        r"honey|sweetheart|sweetie|pal|buddy|bro|sir|madam|ma'?am)[.!?]*$",
                        re.I)          # (the tags of India, Singapore and Nigeria: "na",
# ...; and whom it is said to: "..., dear")
# a hesitation inside a request ("add, er, some barley sugars to the shopping list")
_HESITATION_IN = re.compile(r"(?<=\w)(?:,\s*|\s+)(?:er+|erm+|um+|uh+)(?:\s*,\s*|\s+)(?=\w)", re.I)
_REASON_BEFORE = re.compile(r"^.*?\s+so\s+(?=(?:please\s+|can\s+you\s+|could\s+you\s+)?"
                            r"(?:turn|switch|put|set|open|close|shut|lock|unlock|start|stop|"
                            r"play|pause|dim|make|raise|lower)\b)", re.I)
_SPARED_BEFORE = re.compile(r"^(?:please\s+)?(?:leave|keep)\s+[^,;]*?\s+"
                            r"(?:on|off|open|closed|alone|as\s+(?:it|they)\s+(?:is|are))"
                            r"\s*(?:,\s*(?:and|but)?|and|but)\s+|"
                            r"^(?:please\s+)?leave\s+(?:the|my|our)\s+[^,;]*?\s*(?:,\s*)?"
                            r"(?:and|but)\s+(?=(?:turn|switch|put|open|close|shut|lock)\b)|"
                            r"^(?:please\s+)?leave\s+(?:the|my|our)\s+[^,;]*?\s+(?:make\s+you\s+)"
                            r"(?=(?:on|off|turn|switch|open|close|shut)\s)|"   # (Nigerian "please")
                            r"^(?:no,?\s+)?not\s+(?:the|my|our)\s+[^,;.]*[,;.]\s*|"
                            r"^(?:no,?\s+)?not\s+(?:the|my|our)\s+[^,;.]*?\s+(?=(?:just|only)\s)",
                            re.I)


# the long way round to a request: "I wonder if you could ...", "would you be so kind as to"
_POLITE = re.compile(r"^(?:(?:i\s+)?(?:was\s+)?(?:just\s+)?wonder(?:ing)?\s+if\s+(?:you|ye|u)"
                     r"(?:'d|\s+could|\s+would|\s+might|\s+can)|would\s+you\s+be\s+so\s+kind\s+"
                     r"as\s+to|do\s+you\s+think\s+you\s+(?:could|can)|i'?d\s+be\s+grateful\s+if\s+"
                     r"you(?:'d|\s+could|\s+would)|i\s+(?:want|need)\s+you\s+to|"
                     r"make\s+you(?=\s+(?:on|off|set|put|turn|switch|open|close|add|play|"
                     r"lock|unlock|start|stop|pause|cancel)\b))[,]?\s+"   # ("make you set ...")
                     r"(?:please\s+|just\s+)?", re.I)


# "would you mind adding lefse to the list", "do ya mind turning the fan off": the verb
_MIND = re.compile(r"^(?:(?:would|could|will|do)\s+)?(?:you|ya|ye|u)\s+mind\s+"
                   r"(?P<verb>[a-z]+ing)\b",
                   re.I)
_GERUNDS = {"adding": "add", "turning": "turn", "switching": "switch", "putting": "put",
            "setting": "set", "opening": "open", "closing": "close", "shutting": "shut",
            "locking": "lock", "unlocking": "unlock", "starting": "start", "stopping": "stop",
            "playing": "play", "pausing": "pause", "resuming": "resume", "removing": "remove",
            "dimming": "dim", "checking": "check", "making": "make", "cancelling": "cancel",
            "canceling": "cancel", "muting": "mute", "unmuting": "unmute", "skipping": "skip",
            "raising": "raise", "lowering": "lower", "running": "run", "killing": "kill",
            "popping": "pop", "sticking": "stick", "taking": "take", "getting": "get"}


def _minded(text: str) -> str:
    """``text`` with "would you mind <verb>ing" said as the command ("add lefse to ...")."""
    said = text.strip()
    m = _MIND.match(said)
    verb = m.group("verb").lower() if m else ""
    return _GERUNDS[verb] + said[m.end():] if m and verb in _GERUNDS else text


# a device spared after the command, no comma heard ("close the kitchen window leave the
# back door")
_NOT_BEFORE_LEAVE = frozenset(("i", "we", "you", "they", "he", "she", "did", "to", "not",
                               "dont", "please", "should", "will", "can", "could", "would"))
_LEFT_AFTER = re.compile(r"\s+(?:and\s+|but\s+)?leave\s+(?:the|my|our)\s+[^,;.!]*[.!]?$", re.I)
# a device left as it is, then what to do to it ("leave the telly on but mute it")
_LEFT_BUT = re.compile(r"^(?:please\s+)?(?:leave|keep)\s+(?P<obj>(?:the|my|our)\s+[^,;]*?)\s+"
                       r"(?:on|off|open|closed|running|going)\s*,?\s*(?:and|but)\s+"
                       r"(?P<rest>.*?)\b(?:it|them)\b(?P<after>.*)$", re.I)


# "set a timer four twenty minutes": "for" heard as "four" before the timer's own number
_NUMBER_SAID = "|".join(sorted(w for w in NUMBER_WORDS if w.isalpha()))
_FOUR_FOR = re.compile(rf"\b(timer|alarm)\s+(?:four|fore)\s+(?=(?:\d+|{_NUMBER_SAID})\b)",
                       re.IGNORECASE)
# "nap timer, forty five minutes": a timer named first, then how long, after a pause
_TIMER_PAUSE = re.compile(rf"^((?:set |start )?(?:an? |the |my )?(?:[a-z']+ ){{1,3}}"
                          rf"(?:timer|alarm))\s*,\s+(?=(?:for\s+)?(?:\d+|an?|half|{_NUMBER_SAID})"
                          r"\b)", re.IGNORECASE)


# what a typist shortens: "pls", and "2" for "to" before a list ("add milk 2 shopping")
_PLEASE_TYPED = re.compile(r"\b(?:pls|plz|plse)\b", re.IGNORECASE)
_TO_TYPED = re.compile(r"(?<=[a-z])\s+2\s+(?=(?:the\s+|my\s+|our\s+)?(?:shopping\b|"
                       r"[a-z]+\s+list\b|list\b))", re.IGNORECASE)
# a dropped g written as said ("is the well pump runnin'", "fixin' to")
_G_DROPPED = re.compile(r"\b([a-z]{2,}?)in'(?=[\s,.!?;]|$)", re.IGNORECASE)
# "like" before a number, meaning about ("put it on like 20", "heat to like seventy")
_LIKE_NUMBER = re.compile(rf"\b(on|to|at|around|about)\s+like\s+(?=(?:\d+|{_NUMBER_SAID})\b)",
                          re.IGNORECASE)


# Jamaican English spelled as said ("tun off di light inna di kitchen", "pon di list")
_PATOIS = {"di": "the", "pon": "on", "inna": "in", "tek": "take", "tun": "turn"}
_PATOIS_SAID = re.compile(r"\b(?:di(?!\s+ba\b)|inna|tek|tun)\b(?=\s+\w)|"
                          r"\bpon\b(?=\s+(?:di|the|mi|it)\b)", re.IGNORECASE)   # (not "di ba?")


# a number's unit typed short ("2 min 30 sec")
_UNIT_TYPED = re.compile(r"\b(\d+)\s*(min|mins|sec|secs|hr|hrs)\b", re.IGNORECASE)
_UNIT_OF = {"min": "minutes", "mins": "minutes", "sec": "seconds", "secs": "seconds",
            "hr": "hours", "hrs": "hours"}
# a list typed without its "to" ("add bread shopping list")
_LIST_NO_TO = re.compile(r"^(?!.*\b(?:to|on|onto|in|into|for)\s+(?:the\s+|my\s+|our\s+|me\s+|"
                         r"mi\s+|your\s+)?"
                         r"shopping\s+list\s*$)((?:please\s+)?(?:add|put)\s+\S.*?)\s+"
                         r"((?:the\s+|my\s+)?shopping\s+list)\s*$", re.IGNORECASE)


def typed_out(text: str) -> str:
    """``text`` with a typist's "pls" said as "please", "2" as "to" before a list (or no
    "to" at all), units typed short said whole, and Jamaican spellings of "the", "on",
    "in", "take" and "turn" as those words."""
    text = _PATOIS_SAID.sub(lambda m: _PATOIS[m.group(0).lower()], text)
    text = _UNIT_TYPED.sub(lambda m: f"{m.group(1)} {_UNIT_OF[m.group(2).lower()]}", text)
    text = _TO_TYPED.sub(" to ", _PLEASE_TYPED.sub("please", text))
    return _LIST_NO_TO.sub(r"\1 to \2", text)


# "on" and "off" as the verbs themselves (Singapore, Malaysia: "off the lights lah", "can on
# the aircon or not", "the water heater can off already")
_ON_OFF_FIRST = re.compile(r"^((?:please\s+|can\s+|help\s+me\s+|quickly\s+|just\s+|ata\s+|"
                           r"sasa\s+|eh\s+|ebu\s+)*)(on|off)\s+"
                           r"(?=(?:the|all|my|our)\s)(?![^,;.]*\blist\b)", re.IGNORECASE)
_CAN_ON_OFF = re.compile(r"^(?:the\s+)?([a-z][a-z' ]*?)\s+can\s+(on|off)(?:\s+already|\s+now)?"
                         r"(?=\s*(?:[,.!?]|$))", re.IGNORECASE)


# a door "barred" is locked (Quebec's "barrer"); a device "plugged" (in) is on, "unplug" it
# is to turn it off
_LOCAL_WORDS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"\bunbarred\b", re.I), "unlocked"),
    (re.compile(r"\bbarred\b", re.I), "locked"),
    (re.compile(r"^((?:please\s+|can\s+you\s+|could\s+you\s+)*)(un)?bar\s+(?=(?:the|my|our)\s)",
                re.I), lambda m: f"{m.group(1)}{'un' if m.group(2) else ''}lock "),
    (re.compile(r"\bunplugged\b", re.I), "off"),
    (re.compile(r"\bplugged(?:\s+in)?(?=\s*(?:[?,.!]|$|still\b|now\b|right\b))", re.I), "on"),
    (re.compile(r"^((?:please\s+|can\s+you\s+|could\s+you\s+)*)unplug\b", re.I), r"\1turn off"))


def spoken_out(text: str) -> str:
    """``text`` with a dropped g written with an apostrophe put back, "like" before a number
    dropped, "barred" and "plugged" said as "locked" and "on", and "on"/"off" said as a verb
    said with "turn" (for reading a command: a message to broadcast keeps them)."""
    text = _LIKE_NUMBER.sub(r"\1 ", _G_DROPPED.sub(r"\1ing", text))
    if not re.search(r"\blist\b", text, re.I):     # (an item is kept as said)
        for pattern, said in _LOCAL_WORDS:
            text = pattern.sub(said, text)
    first = _ON_OFF_FIRST.match(text)
    if first and not set(re.findall(r"[a-z]+", text[first.end():].lower())) & COMMAND_VERBS:
        return f"{first.group(1)}turn {first.group(2)} {text[first.end():]}"
    can = _CAN_ON_OFF.match(text)
    if can and not set(can.group(1).lower().split()) & (COMMAND_VERBS | {"i", "we", "you"}):
        return f"turn {can.group(2)} the {can.group(1)}{text[can.end():]}"
    return text


# a timer typed in telegraph style ("timer 10 minutes pasta", "timer eggs 8 minute", "timer
# minus 1 minutes", "stop timer eggs")
_DURATION = r"(?:\d+|an?|one|two|three|four|five|ten|fifteen|twenty|thirty|forty|sixty)\s+" \
    r"(?:minutes?|hours?|seconds?)"
_TIMER_TYPED = re.compile(rf"^timer\s+(?:(?P<dur1>{_DURATION})\s+(?P<name1>[a-z]+)|"
                          rf"(?P<name2>[a-z]+)\s+(?P<dur2>{_DURATION}))\s*$", re.IGNORECASE)
_TIMER_BY = re.compile(rf"^timer\s+(?:(?P<name>[a-z]+)\s+)?(?P<way>minus|less|plus|more|add)\s+"
                       rf"(?P<dur>{_DURATION})\s*$", re.IGNORECASE)
_TIMER_NAMED_AFTER = re.compile(r"^(stop|cancel|pause|resume|unpause|restart)\s+timer\s+"
                                r"(?P<name>[a-z]+)\s*$", re.IGNORECASE)
_NOT_A_TIMER_NAME = frozenset(("for", "of", "and", "at", "in", "on", "to", "minus", "less",
                               "plus", "more", "please", "pls", "now", "the", "a", "an", "set",
                               "start", "status", "left", "can", "ok", "okay", "lah", "thanks",
                               "yeah", "yes", "quick", "only", "already", "mate", "bro",
                               "add", "take", "remove", "cancel", "stop", "pause", "resume"))


def _telegraphed(text: str) -> str:
    """A timer request typed telegraph-style said in full ("timer 10 minutes pasta": "set a
    pasta timer for 10 minutes"; "timer eggs less 3 minutes": "take 3 minutes off the eggs
    timer"; "stop timer eggs": "stop the eggs timer"); ``text`` when it is none."""
    said = text.strip()
    m = _TIMER_TYPED.match(said)
    if m:
        name, dur = m["name1"] or m["name2"], m["dur1"] or m["dur2"]
        if len(name) > 2 and name.lower() not in _NOT_A_TIMER_NAME and \
                not said_number(name.lower()):     # (not "timer 20 minutes la")
            return f"set a {name} timer for {dur}"
    m = _TIMER_BY.match(said)
    if m and (m["name"] is None or m["name"].lower() not in _NOT_A_TIMER_NAME):
        timer = f"the {m['name']} timer" if m["name"] else "the timer"
        return f"take {m['dur']} off {timer}" if m["way"].lower() in ("minus", "less") else \
            f"add {m['dur']} to {timer}"
    m = _TIMER_NAMED_AFTER.match(said)
    if m and m["name"].lower() not in _NOT_A_TIMER_NAME:
        return f"{m.group(1)} the {m['name']} timer"
    return text


def timer_heard(text: str) -> str:
    """``text`` with "for" where a recognizer wrote "four" between "timer" and its number, a
    telegraph-style timer said in full (:func:`_telegraphed`), and without the pause between
    a timer named first and how long it runs (not "cancel the timer, two minutes left
    anyway")."""
    text = _telegraphed(_FOUR_FOR.sub(lambda m: f"{m.group(1)} for ", text))
    m = _TIMER_PAUSE.match(text.strip())
    if m and not set(m.group(1).lower().split()) & (COMMAND_VERBS - {"set", "start"}):
        return m.group(1) + " " + text.strip()[m.end():]
    return text


def commanded(text: str) -> str:
    """``text`` without the clause that spares a device or the reason around the command, and
    without the hesitations and the long way round before it and thanks after it."""
    left = _LEFT_BUT.match(text.strip())
    if left:               # "leave the telly on but mute it": mute the telly
        text = f"{left['rest']}{left['obj']}{left['after']}"
    text = _HESITATION_IN.sub(" ", _HESITATED.sub("", text))
    bare = _SPARED_BEFORE.sub("", _SPARED.sub("", _minded(_POLITE.sub("", text))))
    left = _LEFT_AFTER.search(bare)
    at = left.start() if left else 0
    before = re.findall(r"[a-z]+", bare[:at].lower())
    if before and set(before) & COMMAND_VERBS and before[-1] not in _NOT_BEFORE_LEAVE:
        bare = bare[:at]    # "close the kitchen window leave the back door" (not
        # "hang on, did i leave the tilt door open")
    bare = _REASON_AFTER.sub("", bare)
    return _REASON_BEFORE.sub("", bare) or text


# "set the volume to 30, no, 20", "21, no, make it 22": the number said last is meant
_NUMBER = (r"(?:\d+(?:\.\d+)?|(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
           r"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|one|two|three|four|five|"
           r"six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
           r"eighteen|nineteen|a\s+hundred|one\s+hundred|hundred))")
_UNIT = r"\s*(?:percent|%|degrees|minutes?|seconds?|hours?)?"
_RENUMBER = re.compile(rf"^(?P<head>.*?\b)(?P<old>{_NUMBER})(?P<unit>{_UNIT})"
                       r"(?:[,.]|\s*[-\u2013\u2014])?\s+"         # ("seventy- no, sixty eight")
                       r"(?:(?:(?:ay|oh|ah)\s+)?"                # ("..., ay no, 24")
                       r"(?:no(?:\s+wa(?:it|y))?|nah|naw|nope|wait|sorry|i\s+mean|i\s+meant|"
                       r"actually|or\s+rather|on\s+reflection|on\s+second\s+thoughts?)"
                       r"[,.]?\s+)+"                           # ("..., sorry, i mean fifteen")
                       r"(?:make\s+it\s+|at\s+|to\s+)?"       # ("at 20, no, at 21")
                       rf"(?P<new>{_NUMBER})(?P<unit2>{_UNIT})(?:\s+(?:lang|na|lah|la|po))?"
                       r"\s*(?P<after>[,;].*)?[.!]?$",           # ("..., no, 21 lang")
                       re.I)                                    # (", it's bitter": why)


def renumbered(text: str) -> str | None:
    """``text`` with a corrected number put in place of the first, or None."""
    m = _RENUMBER.match(text.strip())
    if m is None:
        return None
    return f"{m['head']}{m['new']}{m['unit'] or m['unit2']}{m['after'] or ''}"


# timer requests, and the media a timer request may really be about
TIMER_INTENTS = frozenset(("HassStartTimer", "HassCancelTimer", "HassIncreaseTimer",
                           "HassDecreaseTimer", "HassPauseTimer", "HassUnpauseTimer",
                           "HassTimerStatus", "HassCancelAllTimers"))
MEDIA_ITEMS = frozenset(("song", "track", "album", "episode", "movie", "film", "podcast",
                         "music", "show", "playlist"))
TOO_LOUD = frozenset(("loud", "noisy"))


# "I love ...", "we turned ...": said about the home, not asked of it
TOLD = frozenset(("love", "like", "hate", "think", "thought", "wonder", "bought", "saw",
                  "turned", "switched", "opened", "closed", "locked", "unlocked", "noticed",
                  "heard", "guess", "believe", "hope", "wish", "installed", "painted",
                  "replaced", "moved", "already", "put", "set", "left", "got", "did", "fixed",
                  "mended", "repaired", "sorted"))


# a reason said as what is not wanted ("..., don't want them to catch cold")
_NOT_WANTED = re.compile(r"^(?:i |we )?(?:dont|do not|didnt) (?:want|wanna|need)\b")


# "we don't need the dehumidifier tonight": said of it, no request to switch it off
_NOT_NEEDED = re.compile(r"^(?:i|we) (?:dont|do not|shant|shall not|wont|will not)(?: be)? "
                         r"need(?:ing)? (?:the|my|our|@)")   # ("i shan't be needing the kettle")


def not_wanted(said: list[str]) -> bool:
    return bool(_NOT_WANTED.match(" ".join(said)))


def told(masked: list[str]) -> bool:
    """A statement about the home, not a request of it: "I love the new chandelier",
    "I turned the heater off", "the front door was unlocked all night", "the grow lights make
    the greenhouse look purple", "the dust extractor filled up", a reminder."""
    said = [w for w in masked if w not in _ADVERBS]          # "i just turned ..."
    first, then = (said + ["", ""])[:2]
    return first in ("i", "we") and then in TOLD or (first, then) == ("remind", "me") or \
        first in ("i", "ill", "im", "we", "well") and bool({"myself", "ourselves"} & set(said)) or \
        bool(_SELF & set(said)) or \
        first not in BEFORE_REQUEST | COMMAND_VERBS and then in _DID_TO or \
        first not in _FORGETFUL and then in ("forgot", "forgets") or \
        bool(PAST.intersection(masked)) or _said_of(masked) or _done_before(masked) or \
        _others_said(masked) or _so_said(said) or _NOT_NEEDED.match(" ".join(said)) is not None or \
        _of_people(said) or \
        any(a in _BUSY and b == "after" and c.endswith("ing")     # "i'm after turning it off"
            for a, b, c in zip(said, said[1:], said[2:], strict=False))


# someone else did it: "ruby turned the night light off herself", "the lamp switched itself off"
_SELF = frozenset(("herself", "himself", "themselves", "itself"))
_DID_TO = frozenset(("turned", "switched", "opened", "closed", "locked", "unlocked"))
# who forgot something and may mean it as a request ("you forgot to lock the shed"; not
# "pawpaw forgot to lock the tackle shed again": said of him)
_FORGETFUL = frozenset(("i", "we", "you", "u", "ya"))
_BUSY = frozenset(("im", "were", "hes", "shes", "theyre", "youre", "i", "we"))


# what someone said should be done ("our kid says we should lock the back door at night";
# not "mum said i get 20 minutes on the xbox, set a timer")
_OUGHT = frozenset(("should", "must", "ought", "need", "have", "shouldnt", "mustnt"))
# "priya left the ranchslider open all arvo": what someone left, said of it
_WHOSE = frozenset(("the", "my", "our", "his", "her", "their", "your"))
# a plan for no time in particular ("we need to sort the bike shed lock out at some point")
_SOMEDAY = re.compile(r"\b(?:at some point|one of these days|someday|some day|eventually)\b")
# what someone likes, said of them ("wilfred likes his blackout shade down in the afternoons"),
# and what anyone always does ("tom always forgets to lock the bike room door")
_PREFERS = frozenset(("likes", "loves", "prefers", "hates", "enjoys"))
_ADVERBS = frozenset(("just", "also", "actually", "literally", "only", "finally", "already",
                      "now", "earlier", "recently"))      # ("i just now switched off ...")
# what a device named first does or did: "the lamp flickered", "the fan makes a noise"
_DOES = frozenset(("says", "said", "make", "makes", "made", "look", "looks", "keeps", "kept",
                   "came", "comes", "went", "goes",
                   "smells", "sounds",
                   "needs", "seems", "got", "broke", "had", "burst", "blew", "died", "fell"))


# people and pets a remark is about ("..., the downstairs neighbours are complaining")
_OTHERS = frozenset(("neighbours", "neighbors", "neighbour", "neighbor", "kids", "kid", "baby",
                     "children", "child", "guests", "guest", "visitors", "dog", "dogs", "cat",
                     "cats", "wife", "husband", "mum", "mom", "dad", "gran", "granny",
                     "grandma", "grandpa", "nan", "twins", "mam", "nana", "ma", "pa", "guy",
                     "abuela", "abuelo", "lola", "lolo", "nonna", "nonno", "oma", "opa",
                     "guys", "tenant", "tenants", "roommate", "flatmate", "housemate",
                     "lodger", "landlord", "landlady"))


_HABITUALLY = frozenset(("always", "never", "usually", "often", "sometimes", "keeps"))


def _others_said(masked: list[str]) -> bool:
    """Someone named first, then what they are or do, places and all ("the downstairs
    neighbours are complaining", "the kids upstairs are asleep")."""
    said = [w for w in masked if w not in ("the", "my", "our") and not w.startswith("@")]
    if said[:1] == ["ah"]:
        said = said[1:]        # "ah ma": grandma, in Malaysian and Singaporean homes
    who = 0 if said[:1] and said[0] in _OTHERS else \
        1 if said[:2] and said[0] in ("downstairs", "upstairs") and said[1] in _OTHERS else None
    if who is None:
        return False
    if said[who + 1:who + 2] and said[who + 1] in _HABITUALLY and \
            said[who + 2:who + 3] and said[who + 2].endswith("s"):
        return True            # "mam always leaves the spotlights on": what she does
    does = who + 1 + int(said[who + 1:who + 2] in (["downstairs"], ["upstairs"], ["next"]))
    if said[does:does + 1] == ["door"]:
        does += 1              # ("the guy next door ...")
    if said[does:does + 1] and said[does].endswith("s") and \
            said[does + 1:does + 2] and said[does + 1] in ("his", "her", "their"):
        return True            # "the guy downstairs plays his music too loud"
    be = next((i for i in range(who + 1, min(who + 3, len(said)))
               if said[i] in ("is", "are", "s", "re", "was", "were", "wants", "needs")), None)
    return be is not None and be + 1 < len(said) and \
        not set(said[be:]) & (COMMAND_VERBS | BEFORE_REQUEST)   # (no request after it)


def _of_people(said: list[str]) -> bool:
    """What someone likes ("wilfred likes his blackout shade down in the afternoons"), always
    does ("tom always forgets to lock the bike room door"), says should be done ("our kid says
    we should lock the back door at night") or left ("priya left the ranchslider open all
    arvo"), and a plan for some day ("... at some point"): said, not asked for."""
    if _SOMEDAY.search(" ".join(said)) or any(
            a == "left" and b in _WHOSE and k > 0 and
            said[k - 1] not in COMMAND_VERBS | BEFORE_REQUEST | DETERMINERS
            for k, (a, b) in enumerate(zip(said, said[1:], strict=False))):
        return True
    if len(said) < 3 or said[0] in COMMAND_VERBS | BEFORE_REQUEST:
        return False
    return any(w in _PREFERS for w in said[1:3]) or \
        said[1] in _HABITUALLY and said[2].endswith("s") or \
        any(a in REPORTED and b in ("we", "you", "i") and c in _OUGHT
            for a, b, c in zip(said, said[1:], said[2:], strict=False))


def _so_said(said: list[str]) -> bool:
    """What something is like, ending the words ("kayla's neon sign is so extra"; not "the
    lights are so bright", "the tv is too loud": a request)."""
    return len(said) > 3 and said[-3] in ("is", "are", "s") and \
        said[-2] in ("so", "really", "very", "super", "pretty", "quite") and \
        said[-1].isalpha() and said[-1] not in _STATED


def _said_of(masked: list[str]) -> bool:
    """A device named first, then what it does or did ("the @name @light flickered", "the
    @area light flickers a bit")."""
    i = 1 if masked[:1] in (["the"], ["my"], ["our"]) else 0
    if not masked[i:i + 1] or not masked[i].startswith("@"):
        return False
    while i < len(masked) and masked[i].startswith("@"):
        i += 1
    if i < len(masked) and masked[i] in DEVICE_WORDS and masked[i - 1] == "@area":
        i += 1                     # a device by its room
    if i < len(masked) and masked[i] in _PARTS:
        i += 1                     # "the front deadbolt battery is running low"
    while masked and masked[-1] in ("now", "again", "though", "anyway", "today"):
        masked = masked[:-1]       # "the kettle's tidy now"
    copula = i < len(masked) and masked[i] in ("s", "is", "are")
    while i < len(masked) and masked[i] in ("s", "is", "are", "has", "just", "already",
                                            "finally"):
        i += 1                     # "the kettle's just boiled"
    verb = masked[i] if i < len(masked) else ""
    if copula and i == len(masked) - 1 and verb.isalpha() and verb not in _STATED:
        return True                # "the compressor's ancient" (not "the tv's too loud")
    if copula and len(verb) > 5 and verb.endswith("ing") and verb not in STATES and \
            verb not in ("getting", "going"):
        return True                # "the yard gate is hanging off its hinges"
    if copula and verb in RUNNING and masked[i + 1:i + 2] in (["low"], ["out"]):
        return True                # "the deadbolt is running low"
    if copula and masked[-1] in _BROKEN:
        return True                # "the courtyard shutter is since monday broken"
    return verb in _DOES or len(verb) > 4 and verb.endswith("ed") and \
        verb not in STATE_OF_VERB.values() and verb not in ("opened",) or \
        verb in _HAPPENS                # "the shed door sticks when it's cold"


# the last word of "the <device>'s X" that asks or asks for something ("the fan's on?")
_STATED = STATES | frozenset(("out", "loud", "quiet", "bright", "dark", "dim", "hot", "cold",
                              "warm", "done", "finished", "ready", "empty", "full"))
_BROKEN = frozenset(("broken", "busted", "jammed", "stuck", "dead", "kaput", "bust"))
# a part of a device, said of ("the doorbell battery is flat")
_PARTS = frozenset(("battery", "batteries", "bulb", "bulbs", "filter", "remote", "motor",
                    "sensor", "hinge", "hinges", "handle", "plug", "cable", "cord"))
# what a device does by itself, said of it
_HAPPENS = frozenset(("sticks", "squeaks", "rattles", "leaks", "beeps", "flickers", "buzzes",
                      "hums", "works", "breaks", "jams", "drips", "clicks", "wobbles", "stinks"))
# a time that has passed: "we put the tree up this afternoon", "ella left the lamp on all night"
_WHEN_PAST = {("this", "morning"), ("this", "afternoon"), ("last", "night"), ("last", "week"),
              ("all", "night"), ("all", "day"), ("all", "afternoon"), ("all", "evening"),
              ("all", "weekend"), ("last", "winter"), ("last", "summer"), ("last", "year"),
              ("last", "month")}
# someone, then what they did: "before we came through"
_PEOPLE = frozenset(("i", "we", "you", "he", "she", "they"))
_DID = frozenset(("came", "got", "went", "left", "did", "had", "forgot", "arrived"))


def _done_before(masked: list[str]) -> bool:
    """Someone did it, then: "ella left the lava lamp on all night" (not "leave ... all
    night", a request), "lock the back door before we came through" (a statement
    misheard: a request says "before we go")."""
    first = masked[0] if masked else ""
    pairs = {tuple(masked[i:i + 2]) for i in range(len(masked))}
    return first not in COMMAND_VERBS and first not in ("please", "can", "could", "leave",
                                                         "keep") and \
        bool(pairs & _WHEN_PAST) or any(
            (a, b) in pairs for a in _PEOPLE for b in _DID)


TURNED = frozenset(("on", "off", "up", "down", "out", "to", "into", "@color"))
NO_ITEM = frozenset(("no", "yes", "it", "this", "that", "them", "one", "off", "on", "some"))
DETERMINERS = frozenset(("the", "a", "an", "my", "our", "all", "every", "this", "that"))
FULL = frozenset(("full", "max", "maximum"))
MEDIA_WORDS = frozenset(("tv", "radio", "music", "speaker", "speakers", "stereo", "volume",
                         "sound", "song"))


def turned_up_or_down(masked: list[str]) -> bool:
    """"turn up the radio", "turn it down", "lower the speaker": turned up or down, not on or
    off."""
    said = set(masked)
    return "turn" in said and bool(said & {"up", "down"}) and not said & {"on", "off"} or \
        leading_word(masked) in ("lower", "raise")          # "lower the speaker"


# a device turned on that has its own start: the vacuum cleans, the mower mows
STARTED = {"vacuum": "HassVacuumStart", "lawn_mower": "HassLawnMowerStartMowing"}
# a speaker correcting the device or room just said
CORRECTIONS = (("i", "mean"), ("i", "meant"), ("no", "wait"), ("sorry",), ("or", "rather"),
               ("no",), ("wait",), ("actually",), ("naw",), ("nah",), ("nope",),
               ("on", "reflection"), ("on", "second", "thought"), ("on", "second", "thoughts"))
# the markers that always correct: what follows them, when it names nothing of the home
# ("turn off the kitchen lights, I mean the pad of a light"), leaves the request unknown
SURE_CORRECTIONS = CORRECTIONS[:3] + (("or", "rather"),)
# a pronoun that points back at a device or area named in an earlier clause
BACK = frozenset(("it", "them", "those"))
# "we're out of olive oil" / "I need to buy eggs": the item a list request then calls "it"
ITEM_SAID = re.compile(
    r"^(?:(?:we|i)\s+|[a-z]+\s+(?=needs\s))?"     # ("rohan needs a new backpack")
    r"(?:(?:were|weve|ive|im|are|have|just|also|almost|nearly)\s+)*"
    r"(?:needs?(?:\s+to\s+(?:buy|get))?|(?:ran|run|running)\s+out\s+of|out\s+of|want|"
    r"(?:should|have\s+to|must|gotta|got\s+to)\s+(?:buy|get)|got|bought|picked\s+up|found)"
    r"\s+(?:some\s+|more\s+|the\s+)?"
    r"(?P<item>.+?)(?:\s+(?:again|too|already|now|today|as\s+well))?$")
MAX_SAID_ITEM = 4
# "the kids want bluey": what a request to put "it" on a player then plays
WANTED_SAID = re.compile(r"^(?:the\s+)?(?:[a-z]+\s+)?(?:want|wants|wanna)\s+"
                         r"(?:to\s+(?:watch|see|hear)\s+)?(?P<item>.+)$")


def named_kinds(said: set[str]) -> tuple[bool, bool]:
    """Whether ``said`` (masked words) names lights, and covers, by their device words or a
    cover's placeholder."""
    return bool(said & LIGHT_WORDS), bool(said & COVER_WORDS or "@cover" in said)


DEVICE_WORDS = LIGHT_WORDS | COVER_WORDS | frozenset(("fan", "fans", "tv", "speaker",
                                                        "speakers", "heater", "door", "doors"))
UP = frozenset(("louder", "up", "raise", "increase", "higher", "crank", "pump", "boost"))
DOWN = frozenset(("quieter", "softer", "down", "lower", "decrease", "reduce", "quiet"))


# How Whisper writes "unpause" and "unlock", words rare in its training text, at the start
# of a command: as the opposite command ("and pause", "I'm pause", "and lock"). Nobody
# starts a request with these.
UN_HEARD = (*((heard, "unpause") for heard in (
                ("and", "pause"), ("im", "pause"), ("i", "m", "pause"), ("um", "pause"),
                ("un", "pause"), ("an", "pause"))),
            *((heard, "unlock") for heard in (("and", "lock"), ("an", "lock"), ("un", "lock"))))


DONE = frozenset(("done", "complete", "completed", "finished", "bought", "purchased"))


_AFTER_REQUEST = frozenset(("please", "thanks", "now", "again"))


def repair_commands(words: list[str]) -> list[str]:
    """``words`` with a misheard leading "unpause" or "unlock", a question's last "locked"
    or "closed", the "as" of "mark ... as done" heard as "is", or the "off" of "turn off"
    written "of", put back."""
    if words[:1] in (["mark"], ["tick"]):
        k = next((i for i in range(1, len(words) - 1)
                  if words[i] == "is" and words[i + 1] in DONE), 0)
        if k:
            words = [*words[:k], "as", *words[k + 1:]]
    k = lead_at(words, BEFORE_REQUEST)
    if words[k:k + 1] in (["turn"], ["switch"]) and words[k + 1:k + 2] == ["of"] and \
            len(words) > k + 2:
        words = [*words[:k + 1], "off", *words[k + 2:]]   # "turn of the reading lamp"
    end = len(words)
    while end > 1 and words[end - 1] in _AFTER_REQUEST:
        end -= 1
    if end > 1 and words[end - 1] == "of":
        words = [*words[:end - 1], "off", *words[end:]]   # "switch the wall lights of"
    for heard, meant in UN_HEARD:
        if tuple(words[:len(heard)]) == heard:
            return [meant, *words[len(heard):]]
    # the "-ed" of a state at the end of a question, lost before the pause ("is the garden
    # gate lock", "is the skylight close"; not a place: "is the light on in the close")
    if len(words) > 2 and words[0] in ("is", "are") and words[-1] in STATE_OF_VERB and \
            words[-2] not in DETERMINERS:
        return [*words[:-1], STATE_OF_VERB[words[-1]]]
    return words


# a word for what the templates say otherwise ("aircon": "air conditioning", "68 fahrenheit":
# "68 degrees", "7 mins": "7 minutes")
_SAID_AS = {"aircon": ("air", "conditioning"), "airconditioning": ("air", "conditioning"),
            "airconditioner": ("air", "conditioner"), "fahrenheit": ("degrees",),
            "celsius": ("degrees",), "centigrade": ("degrees",), "mins": ("minutes",),
            "secs": ("seconds",), "hrs": ("hours",), "aff": ("off",), "oan": ("on",),
            "launch": ("start",), "tis": ("its",), "enable": ("activate",),
            "disable": ("deactivate",)}
# ("aff", "oan": Scots for off and on, "switch the kettle aff"; "'tis": it's)
# a request's verb in two words the model never saw ("fire up the attic fans")
_PHRASAL: dict[tuple[str, ...], tuple[str, ...]] = {("fire", "up"): ("turn", "on")}


# a whole request the model never saw, said as one it did ("play further": go on playing)
_WHOLE_AS: dict[tuple[str, ...], tuple[str, ...]] = {("play", "further"): ("resume",),
                                                     ("play", "on"): ("resume",)}


def said_plainly(words: list[str], names: frozenset[str] = frozenset()) -> list[str]:
    """``words`` with a compound the model never saw said as the words it did ("68 degrees
    fahrenheit": "68 degrees"), but not a word of the home's ``names`` (a thermostat
    called Aircon)."""
    lead = lead_at(words, BEFORE_REQUEST)
    if tuple(words[lead:]) in _WHOLE_AS:
        words = [*words[:lead], *_WHOLE_AS[tuple(words[lead:])]]
    if tuple(words[lead:lead + 2]) in _PHRASAL:     # the request's own verb only
        words = [*words[:lead], *_PHRASAL[tuple(words[lead:lead + 2])], *words[lead + 2:]]
    if not any(w in _SAID_AS and w not in names for w in words):
        return words
    out: list[str] = []
    for w in words:
        plain = (w,) if w in names else _SAID_AS.get(w, (w,))
        if plain == ("degrees",) and out[-1:] == ["degrees"]:
            continue
        out.extend(plain)
    return out


def as_said(value: str, heard: list[str]) -> str:
    """A free text (a list item, a search query) in the words ``heard``, where
    :func:`said_plainly` changed them for the model ("add aircon filter": aircon filter)."""
    words = value.split()
    for said, plain in _SAID_AS.items():
        n = len(plain)
        if said in heard and said not in words:
            for i in range(len(words) - n + 1):
                if tuple(words[i:i + n]) == plain:
                    words[i:i + n] = [said]
                    break
    return " ".join(words)


def number_word(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def said_number(word: str) -> bool:
    """``word`` is a number, in digits or in words ("40", "forty")."""
    return number_word(word) or word in NUMBER_WORDS


# what a request to a robot that names none of them says of its kind ("start the mower",
# "time to hoover": not "start the dishwasher")
MOWING = frozenset(("mower", "mowers", "lawnmower", "mow", "mowing", "lawn", "grass", "cut",
                    "cutting", "robot", "dock", "charger", "shed", "base", "home"))
VACUUMING = frozenset(("vacuum", "vacuuming", "vac", "hoover", "hoovering", "robot", "clean",
                       "cleaning", "cleaner", "roomba", "dock", "charger", "base", "home",
                       "hoovered", "vacuumed", "sweep", "sweeping"))
# what a question about the weather says ("is it just me or does this flat get smaller every
# year" asks none)
WEATHER_SAID = frozenset((
    "weather", "forecast", "rain", "raining", "rainy", "rains", "drizzle", "drizzling", "snow",
    "snowing", "snowy", "sleet", "hail", "storm", "stormy", "thunder", "lightning", "sun",
    "sunny", "sunshine", "cloud", "clouds", "cloudy", "overcast", "fog", "foggy", "mist",
    "misty", "wind", "windy", "breezy", "cold", "colder", "chilly", "freezing", "frost",
    "frosty", "icy", "hot", "hotter", "warm", "warmer", "heat", "humid", "humidity", "muggy",
    "temperature", "temp", "degrees", "outside", "out", "umbrella", "jacket", "coat", "brolly",
    "nice", "wet", "dry", "bright", "grey", "gray", "shower", "showers", "celsius",
    "fahrenheit", "scorcher", "baltic", "parky", "nippy", "sweltering", "boiling", "pouring",
    "bucketing", "spitting", "tomorrow", "today", "tonight", "weekend"))
KIND_WORDS = {"HassLawnMowerStartMowing": MOWING, "HassLawnMowerDock": MOWING,
              "HassVacuumStart": VACUUMING, "HassVacuumReturnToBase": VACUUMING,
              "HassVacuumCleanArea": VACUUMING,          # ("mow the balcony" cleans nothing)
              "HassGetWeather": WEATHER_SAID}
# what says a message is for the whole house (an announcement on its speakers)
TO_EVERYONE = frozenset(("announce", "announcement", "broadcast", "everyone", "everybody",
                         "everywhere", "house", "home", "family", "speakers", "all", "whole"))
# what someone said they did or will do ("..., kwame said he'd turn it off")
REPORTED = frozenset(("said", "says", "told"))
# how a device is left as it is ("leave the big light on", "keep the fan running")
AS_IT_IS = frozenset(("on", "off", "open", "closed", "shut", "alone", "running", "going", "be"))
# "what time <is|does|...> X": the time of X, unless X is "it" (the time now)
ASKS_OF = frozenset(("is", "s", "does", "do", "did", "will", "are", "should", "shall", "can",
                     "would", "was"))
# the words a timer's length is said in, by its slot
UNIT_WORDS = {"hours": frozenset(("hour", "hours", "hr", "hrs")),
              "minutes": frozenset(("minute", "minutes", "min", "mins")),
              "seconds": frozenset(("second", "seconds", "sec", "secs"))}
# what says a number is a light's brightness (where the home also has heating to set)
BRIGHTNESS_SAID = frozenset(("percent", "brightness", "bright", "brighter", "dim", "dimmer",
                             "dimmed", "full", "half"))
# the words for a player ("turn the wireless up": which one, where none is named?)
PLAYER_WORDS = frozenset(("tv", "tvs", "telly", "television", "radio", "wireless", "speaker",
                          "speakers", "stereo", "soundbar", "hifi"))
# a remark after the request, by the speaker ("..., i've just finished a night shift")
REMARKING = frozenset(("i", "im", "ive", "id", "ill", "we", "were", "weve", "its", "thats",
                       "theres", "my"))
# the words for devices that are no lights ("turn on the dehumidifier in the loft", where
# the home has none: not the loft's lights)
NOT_LIGHTS = (DEVICE_WORDS - LIGHT_WORDS) | frozenset((
    "kettle", "dehumidifier", "humidifier", "purifier", "telly", "stereo", "radio", "pump",
    "blower", "sauna", "boiler", "dryer", "blanket", "machine", "maker", "plug", "socket",
    "charger", "oven", "dishwasher", "washer", "heating", "aircon", "ac", "vacuum", "hoover",
    "mower", "sprinkler", "sprinklers", "camera", "alarm", "doorbell", "lock", "gate",
    "heaters", "ventilator"))
