"""The words the home understanding's rules read: device kinds said outside the home's
names, which way a request goes, what takes a request back, and how a recognizer mishears
commands (``model.HomeModel`` applies them; the classifier never sees these rules)."""
from __future__ import annotations

import re

# device words of covers and of lights, outside the home's names (those are masked)
COVER_WORDS = frozenset(("shade", "shades", "blind", "blinds", "curtain", "curtains", "awning",
                         "awnings", "shutter", "shutters", "drapes", "window", "windows"))
LIGHT_WORDS = frozenset(("light", "lights", "lamp", "lamps", "bulb", "bulbs", "lighting",
                         "@light"))
CLIMATE_WORDS = frozenset(("temperature", "temp", "heat", "heating", "thermostat", "degrees",
                           "ac", "cooling"))
KELVIN_WORDS = frozenset(("kelvin", "k", "white", "daylight"))
RUNNING = frozenset(("running", "going"))
# which way a cover goes (Home Assistant: open is HassTurnOn, close HassTurnOff)
OPENING = frozenset(("open", "up", "out", "extend", "raise", "lift"))
CLOSING = frozenset(("close", "shut", "down", "retract", "lower"))
STATE_OF_VERB = {"unlock": "unlocked", "lock": "locked", "close": "closed", "shut": "closed"}
NEGATIONS = frozenset(("dont", "not", "never", "cant", "wont", "doesnt", "didnt", "shouldnt"))
# the verbs a negation before them takes back ("don't turn off", "do not open")
COMMAND_VERBS = frozenset(("turn", "switch", "open", "close", "shut", "lock", "unlock", "start",
                           "stop", "set", "put", "play", "pause", "add", "remove", "cancel",
                           "dim", "change", "make", "raise", "lower", "kill", "run", "do"))


def negated(masked: list[str]) -> bool:
    """A negation before a command verb: "don't turn off the lights" (not "I can't see,
    turn the lights on")."""
    return any(w in NEGATIONS and any(v in COMMAND_VERBS for v in masked[i + 1:i + 3])
               for i, w in enumerate(masked))


# "I love ...", "we turned ...": said about the home, not asked of it
TOLD = frozenset(("love", "like", "hate", "think", "thought", "wonder", "bought", "saw",
                  "turned", "switched", "opened", "closed", "locked", "unlocked", "noticed",
                  "heard", "guess", "believe", "hope", "wish", "installed", "painted",
                  "replaced", "moved", "already"))
TURNED = frozenset(("on", "off", "up", "down", "out", "to", "into", "@color"))
NO_ITEM = frozenset(("no", "yes", "it", "this", "that", "them", "one", "off", "on", "some"))
DETERMINERS = frozenset(("the", "a", "an", "my", "our", "all", "every", "this", "that"))
FULL = frozenset(("full", "max", "maximum"))
MEDIA_WORDS = frozenset(("tv", "radio", "music", "speaker", "speakers", "stereo", "volume",
                         "sound", "song"))


def turned_up_or_down(masked: list[str]) -> bool:
    """"turn up the radio", "turn it down": turned up or down, not on or off."""
    said = set(masked)
    return "turn" in said and bool(said & {"up", "down"}) and not said & {"on", "off"}


# a device turned on that has its own start: the vacuum cleans, the mower mows
STARTED = {"vacuum": "HassVacuumStart", "lawn_mower": "HassLawnMowerStartMowing"}
# a speaker correcting the device or room just said
CORRECTIONS = (("i", "mean"), ("i", "meant"), ("no", "wait"), ("sorry",), ("or", "rather"))
# a pronoun that points back at a device or area named in an earlier clause
BACK = frozenset(("it", "them", "those"))
# "we're out of olive oil" / "I need to buy eggs": the item a list request then calls "it"
ITEM_SAID = re.compile(
    r"^(?:(?:we|i)\s+)?(?:(?:were|weve|ive|im|are|have|just|also|almost|nearly)\s+)*"
    r"(?:need(?:\s+to\s+(?:buy|get))?|(?:ran|run|running)\s+out\s+of|out\s+of|want|"
    r"(?:should|have\s+to|must|gotta|got\s+to)\s+(?:buy|get)|got|bought|picked\s+up|found)"
    r"\s+(?:some\s+|more\s+|the\s+)?"
    r"(?P<item>.+)$")
MAX_SAID_ITEM = 4
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
# and the "-ed" of a state at the end of a question, lost before the pause ("is the garden
# gate lock", "is the skylight close")
STATE_HEARD = {"lock": "locked", "unlock": "unlocked", "close": "closed"}


def repair_commands(words: list[str]) -> list[str]:
    """``words`` with a misheard leading "unpause" or "unlock", or a question's last
    "locked" or "closed", put back."""
    for heard, meant in UN_HEARD:
        if tuple(words[:len(heard)]) == heard:
            return [meant, *words[len(heard):]]
    if len(words) > 2 and words[0] in ("is", "are") and words[-1] in STATE_HEARD:
        return [*words[:-1], STATE_HEARD[words[-1]]]
    return words
