"""The home understanding the daemon serves: Home Assistant intents without torch or hassil.

A built directory (``build.build_home_model``) holds ``home.json`` (template pins, the
slot filler's tables, wildcard contexts, per-intent confidence thresholds, the lists it was
built with) and ``classifier.npz`` (a ``LinearIntentClassifier`` over hashed n-grams of
entity-masked words). ``HomeModel.parse(text)`` masks the home's areas, floors and entity
names (``lists.HomeLists``), classifies the masked words into an intent and its fixed
slots (``HassTurnOn|light`` -> domain light), fills the other slots (``hass.SlotFiller``:
numbers, percent, colours, colour temperatures, volume steps, timer durations; wildcard
text such as shopping items from the words around them) and says whether the confidence
clears the intent's calibrated threshold (``accepted``). Parsing is pure Python + numpy:
well under a millisecond for a short command.
"""
from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from ..classifier import LinearIntentClassifier
from ..features import feature_names, hash_features
from ..hass import SlotFiller
from ..text import normalize_text
from .free_text import (PARTICLES, WildText, ends_in_list, listed_item, timer_named,
                        timer_named_first)
from .lists import ENTITY_SLOTS, ROOM_WORDS, HomeLists, Match
from .reading import (ANNOUNCING, addressed, all_said, announced, announcing, delayed,
                      every_lock, follows, halfway, left_as_is, named_once, not_the_verb,
                      particle, placed, put_on_player, remarked, run_on, spoken_units)
from ..numbers import NUMBER_WORDS
from .words import (
    ASKS_OF, BACK, BEFORE_REQUEST, BRIGHTNESS_SAID, CLIMATE_WORDS, CLOSING, COMMAND_VERBS,
    CORRECTIONS, COVER_WORDS, DETERMINERS, DEVICE_WORDS, DOWN, FULL, ITEM_SAID,
    KELVIN_WORDS, KIND_WORDS, LIGHT_WORDS, MAX_SAID_ITEM, MEDIA_ITEMS, MEDIA_WORDS, NEGATIONS,
    NOT_LIGHTS, NO_ITEM, OPENING, PLAYER_WORDS, REMARKING, REPORTED, RUNNING, STARTED, STATES,
    STATE_OF_VERB, SURE_CORRECTIONS, TAGS, TIMER_INTENTS, TOO_LOUD, TO_EVERYONE, TURNED, UNIT_WORDS,
    UP, WANTED_SAID, as_said, asked, backchannel, commanded, declined, doing_asked, excepted,
    lead_at, leading_word, named_kinds, negated, not_wanted, number_word, own_doing,
    renumbered, repair_commands, said_number, said_plainly, timer_heard, told, turned_up_or_down,
    spoken_out, typed_out, wished, without_particle)


def split_label(label: str) -> tuple[str, dict[str, str]]:
    """``"HassTurnOn|light"`` -> ``("HassTurnOn", {"domain": "light"})``."""
    intent, _, domain = label.partition("|")
    return intent, ({"domain": domain} if domain else {})


HOME_FILE = "home.json"
CLASSIFIER_FILE = "classifier.npz"
HOME_FORMAT = 2
OTHER = "oos"      # not a home request: the built-in intents answer it


class HomeModelError(ConfigError):
    """A home model directory is missing or unusable."""


@dataclass(frozen=True)
class HomeParse:
    intent: str                     # a Home Assistant intent, or ``oos``
    confidence: float
    slots: dict[str, Any] = field(default_factory=dict)
    accepted: bool = False          # confident enough and complete: act on it
    missing: tuple[str, ...] = ()   # the required slots it lacks (one of them is needed)
    runner_up: str = ""             # the second most likely intent (for asking back)


def features(masked: list[str]):
    words = ["<num>" if number_word(w) else w for w in masked]
    return hash_features(feature_names(words))


def typed(value: str) -> Any:
    """Slot text as Home Assistant gives it: numbers as int/float, other values unchanged."""
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() else number


_PLACEHOLDERS = frozenset(("zzname", "zzarea", "zzfloor"))


class HomeSlotFiller(SlotFiller):
    """``SlotFiller`` that looks for misheard values only when a word is new to the intent
    (the sound-alike search is most of a parse's time, and typed text rarely needs it)."""

    def fill_exact(self, intent: str, text: str) -> tuple[tuple[str, str], ...]:
        """``fill`` without the sound-alike search (exact phrases and numbers only)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.fuzzy = False
        return copy.fill(intent, text)

    def drop_entity_phrases(self) -> None:
        """Forget area, floor and name phrases (the home's lists are matched separately)."""
        for table in self.phrases.values():
            for phrase in list(table):
                kept = Counter({k: c for k, c in table[phrase].items() if k[2] not in ENTITY_SLOTS})
                if kept:
                    table[phrase] = kept
                else:
                    del table[phrase]
        self._index()

    fuzzy = True

    def _fuzzy_hits(self, intent: str, words: list[str], used: list[bool]):
        if not self.fuzzy:
            return iter(())
        vocab = self.vocab.get(intent, set())
        if all(u or w in vocab or w in _PLACEHOLDERS or number_word(w)
               for w, u in zip(words, used, strict=True)):
            return iter(())
        return super()._fuzzy_hits(intent, words, used)


# an intent acts only with one of these slots; without, it is asked back
REQUIRED = {"HassLightSet": ("brightness", "color", "temperature"),
            "HassSetVolume": ("volume_level",), "HassSetVolumeRelative": ("volume_step",),
            "HassSetPosition": ("position",), "HassClimateSetTemperature": ("temperature",),
            "HassFanSetSpeed": ("percentage",), "HassClimateSetFanMode": ("fan_mode",),
            "HassMediaSearchAndPlay": ("search_query",), "HassBroadcast": ("message",),
            "HassIncreaseTimer": ("hours", "minutes", "seconds"),
            "HassDecreaseTimer": ("hours", "minutes", "seconds"),
            "HassStartTimer": ("hours", "minutes", "seconds", "conversation_command"),
            **{i: ("item",) for i in ("HassShoppingListAddItem", "HassShoppingListCompleteItem",
                                      "HassListAddItem", "HassListCompleteItem",
                                      "HassListRemoveItem")}}
# a question is never a command ("did i leave the lights on", "hows the porch light"): it
# is read as the most likely intent that only answers
QUESTION_STARTS = frozenset(("is", "are", "did", "do", "does", "have", "has", "was", "were",
                             "how", "hows", "what", "whats", "which", "where", "wheres", "why",
                             "who", "whos", "tell", "should", "shall"))
# requests about a device or area: with an unknown word and no name or area, asked back
TARGETED = frozenset(("HassTurnOn", "HassTurnOff", "HassLightSet", "HassSetPosition",
                      "HassGetState", "HassVacuumStart", "HassVacuumReturnToBase",
                      "HassLawnMowerStartMowing", "HassLawnMowerDock"))
# the kind of device an intent needs the home to have ("start the curie": no mower here)
NEEDS_DOMAIN = {"HassVacuumStart": "vacuum", "HassVacuumReturnToBase": "vacuum",
                "HassVacuumCleanArea": "vacuum", "HassLawnMowerStartMowing": "lawn_mower",
                "HassLawnMowerDock": "lawn_mower", "HassClimateSetFanMode": "climate",
                "HassFanSetSpeed": "fan"}
# actions on every device of a domain when they name no device, area or floor: Home
# Assistant takes them only with "all" or "everywhere" wording ("turn off all the lights");
# "turn on the lights" needs the speaker's area, which we do not know: asked back
WHOLE_DOMAIN = frozenset(("HassTurnOn", "HassTurnOff", "HassLightSet", "HassSetPosition"))
# what says a volume is meant where no player is named, besides "turn it up/down" (not
# "it's hammering it down")
_LOUDNESS = frozenset(("volume", "sound", "louder", "quieter", "softer", "loud", "quiet",
                       "noisy", "noise", "mute"))
# what says the lights are meant, where no light is named ("it's too dark in the study")
_SEEING = frozenset(("dark", "darker", "see", "gloomy", "pitch", "bright", "brighter"))
# intents whose ``name`` slot is their own (a timer's name), not one of the home's entities
_OWN_NAMES = frozenset(("HassStartTimer", "HassCancelTimer", "HassIncreaseTimer",
                        "HassDecreaseTimer", "HassPauseTimer", "HassUnpauseTimer",
                        "HassTimerStatus", "HassCancelAllTimers"))
# climate's own words, not a light's ("color temperature")
_HEATING = CLIMATE_WORDS - {"temperature", "temp", "degrees"}
# the verbs of a request for something to play or hear ("play gardeners question time")
_TO_PLAY = frozenset(("play", "put", "stream", "listen", "stick", "bung", "pop"))
# what begins the part of a request said instead ("don't open the big one, just the small one")
_INSTEAD = frozenset(("just", "only", "but", "instead"))
# what a media player does, and the devices that are not one: a player's intent on a lamp
# alone is misheard ("Bedside Lamp, Pause." was "bedside lamp off")
_PLAYER_INTENTS = frozenset(("HassMediaPause", "HassMediaUnpause", "HassMediaNext",
                             "HassMediaPrevious", "HassSetVolume", "HassSetVolumeRelative",
                             "HassMediaPlayerMute", "HassMediaPlayerUnmute"))
# the kind of device an intent acts on, for a device named by the kind's own word ("set
# the aircon to 22" in a home whose thermostat is called Aircon)
_DOMAIN_OF = {**NEEDS_DOMAIN, "HassClimateGetTemperature": "climate",
              "HassClimateSetTemperature": "climate",
              **{i: "media_player" for i in _PLAYER_INTENTS}}
# a kind's words, as the last word of a device's name ("Roku TV") and as said ("the telly")
_KIND_NAMES = {**{w: "tv" for w in ("tv", "tvs", "telly", "television")},
               **{w: w for w in ("radio", "speaker", "soundbar", "stereo", "aircon")},
               "airconditioner": "aircon"}
# what follows a device called by its first word alone ("pause the roku", "the roku
# volume", "switch the immersion on")
_AFTER_FIRST = [[], *([w] for w in ("on", "off", "up", "down", "volume", "please", "now",
                                      "locked", "unlocked", "open", "closed"))]


def _aircon(words: list[str]) -> list[str]:
    """``words`` with "air con" (or "air conditioner") said as one word ("the air con fan":
    the aircon's; "set the aircon to 22": the Air Conditioner)."""
    out: list[str] = []
    for w in words:
        if w in ("con", "conditioner", "conditioning") and out[-1:] == ["air"]:
            out[-1] = "aircon"
        else:
            out.append(w)
    return out


def _said_forms(lists: HomeLists) -> tuple[dict[str, tuple[str, ...]],
                                            dict[tuple[str, ...], tuple[str, ...]],
                                            list[tuple[str, ...]]]:
    """The ways the home's names are said short, each pointing at one name only:
    (a first or last word no other name or area has: "the roku", "the decoder"; the name
    with a middle word left out: "the snow mat"; the two-word names, for one more word said
    inside them: "the heated toilet seat"). A short form that ends in a kind's word ("kitchen
    lights") or begins with a place's word is a room's, never a name's."""
    named = [tuple(normalize_text(n).split()) for n in lists.names]
    places = {w for p in (*lists.areas, *lists.floors) for w in normalize_text(p).split()}
    firsts: dict[str, list[tuple[str, ...]]] = {}
    loose: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for words in named:
        if len(words) > 1 and len(words[0]) > 2:
            firsts.setdefault(words[0], []).append(words)
        for k in range(1, len(words) - 1):
            loose.setdefault(words[:k] + words[k + 1:], []).append(words)
    by_word = {w: names[0] for w, names in firsts.items() if len(names) == 1 and w not in places}
    used = Counter(w for words in named for w in set(words))
    for words in named:
        if len(words) > 1 and len(words[-1]) > 3 and used[words[-1]] == 1 and \
                words[-1] not in places:
            by_word.setdefault(words[-1], words)
    short = {said: names[0] for said, names in loose.items()
             if len(names) == 1 and said not in named and said[0] not in places
             and said[-1] not in DEVICE_WORDS}
    twos: list[tuple[str, ...]] = [n for n in named if len(n) == 2 and
                                   n[-1] not in DEVICE_WORDS and n[0] not in places]
    return by_word, short, twos


def _after_name(masked: list[str]) -> str:
    """The word said right after a device's name ("bring the @name @cover in, ...")."""
    if "@name" not in masked:
        return ""
    at = masked.index("@name")
    while at < len(masked) and masked[at].startswith("@"):
        at += 1
    return masked[at] if at < len(masked) else ""


def _a_number_in(words: list[str]) -> bool:
    return any(number_word(w) or w in NUMBER_WORDS for w in words)


def _a_number(words: list[str]) -> bool:
    return bool(words) and (number_word(words[0]) or words[0] in NUMBER_WORDS)


# (not a place or time said around a request: "before my shower", "from the van")
_PLACING = [[w] for w in ("before", "after", "for", "from", "in", "at", "by", "with", "of",
                          "until", "till", "into", "to")]
# what follows an "on"/"off" that is no verb ("on and off", "off to bed", "on for an hour")
_NOT_AFTER_ON = frozenset(("and", "or", "to", "for", "at", "now", "again", "please", "yet"))
# who does something in a clause: a time said there is theirs, no command's
_SUBJECTS = frozenset(("i", "we", "he", "she", "they", "im", "ill", "were", "well", "hes",
                       "shes", "theyre", "theyll", "ive", "weve", "theyve"))
# what is switched, never opened: "open" and "close" say on and off
_SWITCHED = frozenset(("light", "switch", "fan", "climate"))
# the words of an air conditioner (after _aircon), turned on or off by room
_AIRCON_SAID = frozenset(("aircon", "aircons", "ac", "acs", "thermostat", "thermostats"))
_OPEN_CLOSE = frozenset(("open", "close", "shut"))
_OPEN_AS = {"open": "on", "opened": "on", "closed": "off", "shut": "off"}
# a cleaner or mower sent back, and what putting it on does instead
_SENT_BACK = {"HassVacuumReturnToBase": ("vacuum", "HassVacuumStart"),
              "HassLawnMowerDock": ("lawn_mower", "HassLawnMowerStartMowing")}
_BACK_HOME = frozenset(("off", "home", "back", "dock", "base", "charger", "charge", "stop"))
# the state a device is wished in, and the request that puts it there
_WISHED = {"locked": "HassTurnOn", "unlocked": "HassTurnOff", "on": "HassTurnOn",
           "off": "HassTurnOff", "open": "HassTurnOn", "closed": "HassTurnOff"}
# a lock is closed when locked ("is the apartment door closed?" of a lock)
_LOCK_AS = {"open": "unlocked", "opened": "unlocked", "closed": "locked", "shut": "locked"}
# where free text ends and its player or room begins ("jazz [on the] kitchen speaker",
# "texas country [out by the] pool")
_TO_PLACE = frozenset(("on", "in", "at", "through", "by"))
_OWNED = frozenset(("the", "my", "our"))
_OUT_THERE = frozenset(("out", "up", "down", "over"))
# the TV said another way, only to what a player does ("pause the box"; a Fuse Box is no TV)
_PLAYER_SLANG = {"box": "tv"}
# what a kind's word names when said before them ("the tv show": something to watch)
_SHOWN = frozenset(("show", "shows", "series", "programme", "program", "channel", "guide"))
# intents of any domain that a device called by its kind's word may take ("is the tv on")
_ON_OFF_ASKED = frozenset(("HassTurnOn", "HassTurnOff", "HassGetState"))
# (not "thermostat", "the vacuum", "the mower": Home Assistant's own words for whichever the
# room or home has)
_PLAYED = (MEDIA_WORDS - {"volume", "sound"}) | MEDIA_ITEMS | {"@media_player", "telly",
                                                                "television"}
_NOT_PLAYED = LIGHT_WORDS | COVER_WORDS | (CLIMATE_WORDS - {"degrees"}) | {
    "@cover", "@fan", "@lock", "@switch", "@climate", "@vacuum", "fan", "door"}
# a to-do request on the list named "Shopping List" is the shopping list's own (Home
# Assistant's templates have "add milk to the shopping list" both ways)
ON_SHOPPING_LIST = {"HassListAddItem": "HassShoppingListAddItem",
                    "HassListCompleteItem": "HassShoppingListCompleteItem"}
# (and "remove X from the shopping list": Home Assistant's templates say it completes the item)
_ON_SHOPPING_LIST = {**ON_SHOPPING_LIST, "HassListRemoveItem": "HassShoppingListCompleteItem"}
# the words that say what kind of media is asked for
_KINDS_SAID = MEDIA_ITEMS | frozenset(("artist", "artists", "band", "album", "albums", "track",
                                      "tracks", "songs", "playlists", "podcasts", "episodes",
                                      "movies", "films", "shows", "audiobook", "station", "radio",
                                      "channel", "genre", "series", "book"))
# a media class said in another word ("play the song september": a track)
_KIND_SAID_AS = {"track": ("song", "tune"), "artist": ("band", "singer"), "album": ("record",),
                 "tv_show": ("show", "series"), "movie": ("film",)}
# the kind of media said before its name ("the album x")
_CLASS_WORDS = {"playlist": "playlist", "album": "album", "song": "track", "track": "track",
                "podcast": "podcast", "artist": "artist", "movie": "movie", "film": "movie",
                "show": "tv_show", "channel": "channel"}
# what comes before a list's name in a request that puts something on it or takes it off
_TO_LIST = frozenset(("add", "put", "remove", "tick", "cross", "mark", "delete", "take", "check",
                      "stick", "to", "on", "from", "in", "off"))
# the list verbs said after the list ("chores list, remove wash the car"), and what puts the
# list after the item
_LIST_FIRST = {"add": "to", "put": "on", "remove": "from", "delete": "from", "tick": "on",
               "check": "on", "cross": "on"}
# what is said, not done, later ("remind me in 5 minutes", "announce that ... in 5 minutes")
_SAID_LATER = ANNOUNCING | {"remind"}
# a setting said after "on" or "to" ("the fan on low"): more than on
_SETTINGS = frozenset(("low", "medium", "high", "auto", "quiet", "max", "min", "eco"))
# the verbs that bring a cover in, or out ("bring the awning in", "wind it in")
_DRAWING = frozenset(("bring", "pull", "wind", "roll", "draw", "take", "reel"))
# words that begin a question's subject ("any of our doors unlocked")
_QUANTIFIERS = frozenset(("any", "some", "each", "both", "either", "neither", "none", "no",
                          "which", "how", "what"))
# timer actions that, without the word, could as well be the music's ("pause this")
_SAY_TIMER = frozenset(("HassPauseTimer", "HassUnpauseTimer"))
_TIMER_WORDS = frozenset(("timer", "timers", "countdown", "alarm"))
# intents that only answer or do nothing; every other home intent acts on the home
ANSWERS = frozenset(("HassGetState", "HassClimateGetTemperature", "HassTimerStatus",
                     "HassGetWeather", "HassGetCurrentTime", "HassGetCurrentDate",
                     "HassNevermind", "HassRespond"))


def is_action(intent: str) -> bool:
    return intent != OTHER and intent not in ANSWERS


# free text no list can check: a misheard item ("add noke to the shopping list") is done as
# heard unless the recognizer's doubt is asked about
FREE_SLOTS = ("item", "search_query")


def doubted(parse: HomeParse, unsure: frozenset[str]) -> list[str]:
    """The words of an action's free text (``FREE_SLOTS``) the recognizer was unsure of
    (``asr.Transcript.unsure``), in order; [] when there are none."""
    if not unsure or not is_action(parse.intent):
        return []
    return [w for k in FREE_SLOTS for w in str(parse.slots.get(k, "")).split() if w in unsure]


_CLAUSE = re.compile(r"[,;.!?]+\s")        # (a decimal point is no clause boundary)
_IS = re.compile(r"(?<=\w)'s\b")
_STATE_VERBS = frozenset(("open", "close", "shut"))      # "the skylight's shut, right?"
# list verbs a recognizer may end with a comma ("Add, take the bins out to Chores")
_ALONE = frozenset(("add", "mark", "tick", "cross", "put", "remove"))

_PLAIN = {"@name": "zzname", "@area": "zzarea", "@floor": "zzfloor"}


# what begins a list request, whose item may hold a command ("check off lock the shed on chores")
_LIST_VERBS = frozenset(("check", "tick", "mark", "cross", "add", "put"))
# the verbs that begin a command said after a remark with no comma heard ("we're all in for
# the night lock the back door"), and the words before them that make them no new clause
_CLAUSE_VERBS = frozenset(("turn", "switch", "open", "close", "shut", "lock", "unlock", "start",
                           "stop", "set", "play", "pause", "cancel", "dim", "kill", "skip",
                           "mute", "unmute", "resume", "unpause", "mow"))
_NO_CLAUSE_BEFORE = BEFORE_REQUEST | NEGATIONS | frozenset((
    "to", "i", "we", "they", "he", "she", "lets", "ill", "well", "youll", "theyll", "didnt",
    "forgot", "the", "a", "an", "my", "our", "should", "must", "might", "shall", "may", "help",
    "me", "us", "or", "then", "and", "but", "who", "that", "which", "not", "always", "never",
    "usually", "sometimes", "also", "dont", "did", "does", "do", "will", "timer", "alarm",
    "s", "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour",
    "hours",      # (a command after how long: put off, "in 34 minutes pause the music")
    "gonna", "wanna", "gotta", "going", "want", "need", "trying", "tried",
    "already", "just", "finally", "actually", "still"))   # ("my son already lock the ...")
    # (the verb another verb takes: "i was gonna turn on the track lights but whatever")


# a reason said after a command: who, then what they want or do ("..., i want to go out")
_SPEAKERS = frozenset(("i", "we", "im", "were", "ive", "weve"))
_REMARKED = frozenset(("want", "wanna", "need", "have", "got", "gotta", "cant", "am", "are",
                       "just", "think", "dont", "m", "re", "going", "gonna", "off"))
_JOINING = frozenset(("when", "if", "so", "because", "cause", "cos", "as", "and", "but",
                      "that", "until", "till", "before", "after", "while", "where", "or",
                      "than", "what", "which", "once", "since", "unless", "whether"))
_COPULAS = frozenset(("is", "are", "was", "were", "s", "be", "been"))
# who a remark after a command is about ("..., some of us have a lecture at nine")
_PEOPLE_SAID = _SUBJECTS | frozenset(("us", "you", "me", "he", "she", "they", "them", "him",
                                      "her", "some", "everyone", "somebody", "someone"))
# the domains a device may be asked about by the last word of its name, and each one's own
# words (which say the whole kind: "are the locks locked")
_KIND_SAID = {"lock": frozenset(("lock", "locks")), "fan": frozenset(("fan", "fans")),
              "switch": frozenset(("switch", "switches", "plug", "plugs", "socket"))}
# where a device is, said instead of its name ("the lamp by the window")
_BESIDE = frozenset(("by", "near", "over", "above", "under", "beside", "behind"))
_WHICH_ONE = [[w] for w in ("from", "of", "in", "on", "at", "by", "near", "next", "to")]
# a list request's verbs, and what adds to its item instead of correcting it ("..., and eggs")
_ADDING = frozenset(("add", "put", "stick", "pop"))
_MORE_ITEMS = frozenset(("and", "also", "plus", "too", "as", "with"))
_MAKE_THAT = [["make", "that"], ["make", "it"], ["change", "that"], ["change", "it"]]
# the robots a remark names by their kind, which "it" then means ("the hoover is making a
# racket, send it back to base"; not "someone's at the door, pause it")
_ROBOTS = frozenset(("hoover", "vacuum", "roomba", "mower", "robot"))
# what may follow "play the last" when it asks for the track before
# what makes a statement of a device's state ("the blinds are down, aren't they", "the
# tilt door's shut", "we didn't leave the heated floor on, did we")
_STATED = re.compile(r"'s\b|’s\b|\b(?:is|are|was|were|been|be|left|leave|still|stays?|stayed|"
                     r"did|didn'?t|do|don'?t|does|doesn'?t|have|has|had|already|i|we|you|he|"
                     r"she|they|turned|switched|shut|closed|locked|put)\b", re.I)
# a request ending in "open" or "closed" with no question mark ("garage door open")
_ENDS_OPEN_CLOSED = re.compile(r"\b(?:open|closed)[\s.!]*$", re.I)
# what says the track before ("play the previous track", "the last song again")
_BEFORE_SAID = frozenset(("last", "previous", "before", "back", "prior", "earlier"))
_AFTER_LAST = DETERMINERS | _TO_PLACE | MEDIA_ITEMS | frozenset(
    ("item", "one", "please", "now", "again", "here", "there"))
# a question, then another way of asking it ("... still on or did you turn it off")
_OR_ASKED = re.compile(r"^(.*?\S)\s*,?\s+or\s+(?:did|is|are|was|were|have|has|do|does)\s",
                       re.IGNORECASE)
# what begins a clause that says how much of the command before it ("..., say twenty percent")
_HOW_MUCH = frozenset(("say", "about", "around", "maybe", "like", "roughly", "to", "at", "by",
                       "just", "only", "approximately"))


def _unmarked_clause(text: str, inside: frozenset[str] = frozenset()) -> str:
    """``text`` with a comma put where a command begins after a remark that no comma ends
    ("the dog's barking at something out there turn on the flood light"), as a recognizer
    or a hurried typist leaves it; unchanged when it has a clause mark already, asks, or
    has no such command (a verb that is a word of a name with the word before it, in
    ``inside``, is no command: "the bike shed lock")."""
    if _CLAUSE.search(text):
        return text
    raw = text.split()
    said = [normalize_text(t) for t in raw]
    if said and said[0] in COMMAND_VERBS:
        # the command, then why, with no comma heard ("unlock the back door i want to go
        # out and sit on the deck for a while")
        for i in range(3, len(said) - 2):
            if said[i] in _SPEAKERS and said[i + 1] in _REMARKED and \
                    said[i - 1].isalpha() and said[i - 1] not in _JOINING:
                return " ".join(raw[:i]) + ", " + " ".join(raw[i:])
        return text
    described = said[:1] in (["the"], ["my"], ["our"]) and bool(_COPULAS & set(said[1:5]))
    if not said or said[0] in QUESTION_STARTS and not (said[0] == "were" and "'" in raw[0]) or \
            said[0] in _LIST_VERBS or \
            said[0] not in REMARKING and not any("'" in t for t in raw[:3]) and not described:
        return text      # (only after a remark: "we're ...", "the dog's ...", "i ...", "the
        # maxi taxi is here ...")
    for i in range(2, len(raw) - 1):
        if said[i] in _CLAUSE_VERBS and said[i - 1] not in _NO_CLAUSE_BEFORE | _COPULAS and \
                said[i - 1].isalpha() and not said_number(said[i - 1]) and \
                not {said[i - 1], said[i]} <= inside:    # (not inside "the bike shed lock")
            return " ".join(raw[:i]) + ", " + " ".join(raw[i:])
    return text


def _imperative(masked: list[str]) -> bool:
    """Said as a command: a command verb first, or a word and then what it acts on ("crack
    the skylight open"; not "any of our doors unlocked", "the lamp on")."""
    lead = lead_at(masked)
    return lead < len(masked) and masked[lead] not in QUESTION_STARTS and (
        masked[lead] in COMMAND_VERBS | _DRAWING or
        masked[lead + 1:lead + 2] in (["the"], ["my"], ["our"]) and
        masked[lead] not in DETERMINERS | _QUANTIFIERS and
        not masked[lead].startswith("@"))


def _clause_starts(text: str, words: list[str]) -> set[int]:
    """The indices in ``words`` (``text`` normalized) of the words that begin a clause after
    the first; none where the words are no longer the text's, word for word."""
    starts, at = set(), 0
    for clause in _CLAUSE.split(text):
        if at:
            starts.add(at)
        at += len(normalize_text(clause).split())
    return starts if at == len(words) else set()


def plain_text(masked: list[str]) -> str:
    """Masked words as the slot filler reads them (entity names never look like values)."""
    return " ".join(_PLAIN.get(w, w) for w in masked if w in _PLAIN or not w.startswith("@"))


class HomeModel:
    """Loads a built home model directory; ``parse`` is thread-safe (read-only state)."""

    def __init__(self, model_dir: str | Path, lists: HomeLists | None = None) -> None:
        path = Path(model_dir).expanduser()
        try:
            meta = json.loads((path / HOME_FILE).read_text(encoding="utf-8"))
            if meta.get("format") != HOME_FORMAT:
                raise ValueError(f"format {meta.get('format')!r} is not {HOME_FORMAT}")
            self.classifier = LinearIntentClassifier.load(path / CLASSIFIER_FILE)
            self.filler = HomeSlotFiller.from_dict(meta["filler"])
            self.wild = WildText(meta["wild"], meta.get("wild_edges"))
            self.thresholds: dict[str, float] = {k: float(v) for k, v in meta["thresholds"].items()}
            self.default_threshold = float(meta["default_threshold"])
            self.intent_slots = {k: set(v) for k, v in meta["intent_slots"].items()}
            self.label_slots = {k: set(v) for k, v in (meta.get("label_slots") or {}).items()}
            self.vocab = frozenset(meta["vocab"])
            self.pins = dict(meta.get("templates") or {})
            self.report = dict(meta.get("report") or {})
            built = HomeLists.from_dict(meta["lists"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HomeModelError(f"home model {path} is unusable: {exc}",
                                 hint="build it again: edge-runtime models build") from None
        self._use(lists or built)
        self.repair = True             # put back misheard names and "unpause" (spoken input)
        self.path = path
        self._intent_of = [split_label(lab) for lab in self.classifier.labels]
        self._intents = sorted({i for i, _ in self._intent_of})
        self._at = {name: k for k, name in enumerate(self._intents)}
        self._col = np.array([self._at[i] for i, _ in self._intent_of])
        self._is_action = np.array([is_action(i) for i in self._intents])
        self._light_set = np.array([i == "HassLightSet" for i in self._intents])
        self._listed = np.array([REQUIRED.get(i) == ("item",) for i in self._intents])
        colors = self.filler.phrases.get("HassLightSet", {})
        self._colors = frozenset(p for p, rows in colors.items()
                                 if any(slot == "color" for slot, *_ in rows))
        # one-word cover classes as the templates' list names them ("shutters": shutter)
        self._cover_classes = {p: value for p, rows in
                               self.filler.phrases.get("HassGetState", {}).items()
                               for slot, value, *_ in rows
                               if slot == "device_class" and " " not in p}
        # what the repair never replaces: the model's words and rooms people have
        self._known = self.vocab | ROOM_WORDS

    def _use(self, lists: HomeLists) -> None:
        """Serve ``lists``, with its players' names by their words."""
        self.lists = lists
        self._players = {tuple(normalize_text(name).split()): name
                         for name, domain in lists.names.items() if domain == "media_player"}
        self._player_words = frozenset(w for words in self._players for w in words)
        self._name_words = frozenset(w for name in lists.names
                                     for w in normalize_text(name).split())
        # the devices called by their kind's word, last in the name ("the tv": the Roku TV)
        by_kind: dict[tuple[str, str], list[str]] = {}
        for name, domain in lists.names.items():
            said = _aircon(normalize_text(name).split())
            last = said[-1:]
            if last and last[0] in _KIND_NAMES:
                by_kind.setdefault((domain, _KIND_NAMES[last[0]]), []).append(name)
            elif domain == "climate" and "aircon" in said:
                by_kind.setdefault((domain, "aircon"), []).append(name)   # "Aircon Unit"
            elif domain == "media_player" and said[:1] and said[0] in _KIND_NAMES and \
                    said[-1] not in DEVICE_WORDS:
                by_kind.setdefault((domain, _KIND_NAMES[said[0]]), []).append(name)
                # ("the television": the Television Set)
        self._by_kind = {k: names[0] for k, names in by_kind.items() if len(names) == 1}
        self._firsts, self._loose, self._two_words = _said_forms(lists)
        self._two_word_names = frozenset(
            t for name in lists.names if len(t := tuple(normalize_text(name).split())) == 2)

    def _one_player(self, kind_word: str) -> str | None:
        """The home's one media player of the kind ``kind_word`` says ("radio": the Roberts
        Radio), or None (no such word, none or several of that kind)."""
        kind = _KIND_NAMES.get(kind_word)
        return self._by_kind.get(("media_player", kind)) if kind else None

    def _played_on(self, words: list[str]) -> tuple[int, str] | None:
        """Where ``words`` end in "on/in/at [the] <kind word>" naming the home's one player of
        that kind ("... on the tv"): (the index that phrase begins at, the player), or None."""
        if len(words) < 3 or words[-1] not in _KIND_NAMES:
            return None
        at = len(words) - 2 - (words[-2] in _OWNED)
        player = self._one_player(words[-1])
        return (at, player) if words[at] in _TO_PLACE and player else None

    def _loosely_named(self, words: list[str]) -> list[str]:
        """``words`` with a name said with a middle word left out ("snow mat open": the Snow
        Melt Mat) or one more word inside ("the heated toilet seat": the Heated Seat) said
        whole, where those words name nothing of the home as they are."""
        if not self._loose and not self._two_words:
            return words
        covered = {i for m in self.lists.matches(words) if m.slot == "name"
                   for i in range(m.start, m.end)}
        out: list[str] = []
        i = 0
        while i < len(words):
            whole = next((self._loose[said] for n in (3, 2) if i + n <= len(words)
                          and (said := tuple(words[i:i + n])) in self._loose
                          and not covered & set(range(i, i + n))), None)
            if whole is not None:
                out.extend(whole)
                i += len(whole) - 1          # (said with one word fewer)
                continue
            inside = next((n for n in self._two_words
                           if i + 2 < len(words) and tuple(words[i:i + 3:2]) == n
                           and words[i + 1].isalpha()
                           and words[i + 1] not in DETERMINERS | {"and", "or", "of"}
                           and not covered & {i, i + 1, i + 2}), None)
            if inside is not None:
                out.extend(inside)
                i += 3
                continue
            out.append(words[i])
            i += 1
        return out

    def _placed(self, words: list[str]) -> list[str]:
        """``words`` with a device said by where it is ("the lamp by the window": the Window
        Lamp) said by its name, where the home has that two-word name."""
        for i in range(len(words) - 3):
            thing, by = words[i], words[i + 1]
            if by in _BESIDE and words[i + 2] in _OWNED and \
                    (words[i + 3], thing) in self._two_word_names:
                return [*words[:i], words[i + 3], thing, *words[i + 4:]]
        return words

    def _of_said(self, words: list[str]) -> list[str]:
        """``words`` with a device or room said "the X of the Y" (French, Spanish and Hindi
        word order: "the room of the kids", "the fan of the kitchen") said "the Y X", where
        that is a whole name or room of the home and "the X of the Y" is none."""
        for i in range(1, len(words) - 3):
            if words[i + 1] != "of" or words[i + 2] not in _OWNED or not words[i].isalpha():
                continue
            for k in (2, 1):
                said = [*words[i + 3:i + 3 + k], words[i]]
                if len(said) < k + 1:
                    continue
                hit = self.lists.matches(said)
                if len(hit) == 1 and (hit[0].start, hit[0].end) == (0, len(said)) and \
                        not self.lists.matches(words[i:i + 3 + k]):
                    return [*words[:i], *said, *words[i + 3 + k:]]
        return words

    def _first_named(self, words: list[str]) -> list[str]:
        """``words`` with a device called by its name's unseen first (or last) word said whole
        ("pause the roku": the roku tv; "mute the decoder": the dstv decoder), where nothing
        of the home is said there already."""
        hits = [i for i, w in enumerate(words) if w in self._firsts and w not in self.vocab
                and i > 0 and words[i - 1] in _OWNED and (
                    words[i + 1:i + 2] in _AFTER_FIRST or words[i + 1:i + 2] == ["to"] and
                    _a_number(words[i + 2:i + 3]))
                and words[i - 2:i - 1] not in _PLACING]      # ("set the convector to 19")
        if not hits or set(words) & {"list", "timer", "timers"}:
            return words
        covered = {i for m in self.lists.matches(words) for i in range(m.start, m.end)}
        for i in reversed(hits):
            if i not in covered:
                words = [*words[:i], *self._firsts[words[i]], *words[i + 1:]]
        return words

    def _list_first(self, words: list[str]) -> list[str]:
        """A list named before what is done on it, as a note is dictated ("shopping list add
        dehumidifier refill", "on the shopping list please sparkling water"): said the usual
        way round ("add dehumidifier refill to shopping list"); unchanged otherwise."""
        onto = int(words[:1] in (["on"], ["to"], ["onto"]))     # "on the shopping list: x"
        start = onto + int(bool(_OWNED.intersection(words[onto:onto + 1])))
        m = next((m for m in self.lists.matches(words)
                  if m.domain == "todo" and m.start == start), None)
        if m is None:
            return words
        end = m.end + (words[m.end:m.end + 1] == ["list"])
        if onto:
            rest = words[end + (words[end:end + 1] == ["please"]):]
            if rest[:1] and rest[0] in _ADDING and len(rest) > 1:
                rest = rest[1:]            # ("on the shopping list add eggs": eggs)
            return ["put", *rest, "on", *words[onto:end]] if rest else words
        verb = words[end:end + 1]
        if not verb or verb[0] not in _LIST_FIRST or len(words) < end + 2:
            return words
        rest = words[end + 1:]
        if rest[-1:] == ["off"] and len(rest) > 1:
            verb, rest = [*verb, "off"], rest[:-1]     # ("chores list, cross x off")
        return [*verb, *rest, _LIST_FIRST[verb[0]], *words[:end]]

    @staticmethod
    def _in_title(words: list[str], found: list[Match]) -> list[Match]:
        """``found`` without the names said inside what is to be played: before "on/in [the]
        <player>", or after the kind of media ("play the playlist hot tub hits on the sonos
        move": no Hot Tub)."""
        lead = lead_at(words, BEFORE_REQUEST)
        if words[lead:lead + 1] != ["play"]:
            return found
        at = lead + 1 + int(bool(_OWNED.intersection(words[lead + 1:lead + 2])))
        start = at + 1 if words[at:at + 1] and words[at] in _CLASS_WORDS else 0
        end = next((before for m in found if m.domain == "media_player" and
                    (before := m.start - 1 - int(m.start > 1 and words[m.start - 1] in _OWNED))
                    > lead and words[before] in _TO_PLACE),
                   len(words) if start else 0)
        if not end:
            return found
        first = start or lead + 1
        return [m for m in found
                if m.domain == "media_player" or not (first <= m.start and m.end <= end) or
                start and words[m.start - 1 - int(words[m.start - 1] in _OWNED)]
                in _TO_PLACE]    # ("play the song three little birds in surgery two")

    @property
    def intents(self) -> list[str]:
        return [i for i in self._intents if i != OTHER]

    def with_lists(self, lists: HomeLists) -> HomeModel:
        """The same model over another home's lists (no reload of the tables)."""
        other = object.__new__(HomeModel)
        other.__dict__.update(self.__dict__)
        other._use(lists)
        return other

    def threshold(self, intent: str) -> float:
        return self.thresholds.get(intent, self.default_threshold)

    def _classify(self, masked: list[str]) -> tuple[np.ndarray, np.ndarray]:
        probs = self.classifier.probabilities(features(masked))
        per_intent = np.bincount(self._col, probs, len(self._intents))
        return probs, per_intent

    def parse(self, text: str) -> HomeParse:
        """:meth:`_read`, but for a listener's "is it" (no request) and a timer removed
        whole ("remove the timer of ten minutes": the ten-minute timer cancelled, not
        shortened by ten minutes)."""
        if backchannel(text):
            return HomeParse(OTHER, 1.0)
        p = self._read(text)
        if p.intent == "HassDecreaseTimer" and "minutes" in p.slots:
            said = [w for w in normalize_text(text).split() if w not in DETERMINERS]
            if said[:2] in (["remove", "timer"], ["delete", "timer"]) and \
                    said[2:3] in (["of"], ["for"]):
                return replace(p, intent="HassCancelTimer",
                               slots={"start_minutes": p.slots["minutes"]})
        return p

    def _read(self, text: str) -> HomeParse:
        """The intent and slots of ``text``, without a clause that spares a device or the
        reason around the command (``words.commanded``) and with a spoken correction
        applied. A request in clauses ("I'm leaving the office, turn the space heater off")
        is read whole, and its last clause alone (a pronoun there pointing back): the
        command comes last, after what it is about, and the last clause wins when it alone
        is a clear action and the whole is not, or is another request less surely; else a
        first clause that is a command wins over a whole that acts on nothing."""
        bare = commanded(without_particle(timer_heard(typed_out(text))))
        corrected = self._corrected(bare)
        if corrected is None:              # corrected to something not heard: asked back
            return replace(self._parse(bare), accepted=False, missing=("name",))
        text = corrected
        said = normalize_text(text).split()
        if announcing(said):
            # "announce that the all hands starts in five minutes": what it says, now
            whole = self._parse(text)
            if whole.intent == "HassBroadcast":
                return whole
            message = self._message(text)
            return HomeParse("HassBroadcast", whole.confidence,
                             {"message": message} if message else {}, accepted=bool(message),
                             missing=() if message else ("message",), runner_up=whole.intent)
        spoken = spoken_out(text)         # ("is well pump 2 runnin'", "put it on like 20")
        if spoken != text:
            text, said = spoken, normalize_text(spoken).split()
        later = delayed(said)
        put_off = self._put_off(*later) if later else None
        if put_off is not None:
            return put_off
        either = _OR_ASKED.match(text)
        if either and said[:1] and said[0] in QUESTION_STARTS:
            text = either.group(1)      # "is the immersion still on or did you turn it off":
            # the state asked first
        text = _unmarked_clause(text, self._name_words)
        clauses = [c for c in _CLAUSE.split(text) if normalize_text(c).split()]
        if len(clauses) > 2:
            # a remark between two clauses is said aside ("open the blackout curtains, it's
            # gone nine, get up": no position 9)
            instead = normalize_text(clauses[-1]).split()[:1] in (["the"], ["just"], ["only"])
            kept = [c for i, c in enumerate(clauses)
                    if i in (0, len(clauses) - 1) or not self._aside(c) and not (
                        instead and normalize_text(c).split()[:1] == ["not"])]
            # ("close the curtains, not the lounge ones, the ones in the bunk room": the one
            # said instead)
            if len(kept) < len(clauses):
                text, clauses = ", ".join(kept), kept
        if len(clauses) > 1 and normalize_text(clauses[0]) in _ALONE:
            # "Add, take the bins out to Chores": a verb heard with a pause after it
            text = " ".join(clauses)
            clauses = [text]
        if len(clauses) > 1 and tuple(normalize_text(clauses[-1]).split()) in TAGS:
            # a question's tag, as its own clause ("..., aren't they?", "..., have I?")
            asked_so = "?" if clauses[-1].rstrip().endswith("?") else ""
            text = self._tag_asked(" ".join(clauses[:-1]) + asked_so) or text
            clauses = [c for c in _CLAUSE.split(text) if normalize_text(c).split()]
        elif len(clauses) == 1:
            words = normalize_text(text).split()
            tag = next((n for n in (2, 1) if len(words) > n + 2 and
                        tuple(words[-n:]) in TAGS), 0)
            if tag:                # the same, its comma not written ("... still on isn't it")
                text = self._tag_asked(" ".join(words[:-tag]) +
                                       ("?" if text.rstrip().endswith("?") else "")) or text
                clauses = [text]
        text = self._stated_as_wanted(text)
        whole = self._parse(text)
        if len(clauses) < 2:
            return whole
        said_last = normalize_text(clauses[-1]).split()
        if negated(normalize_text(clauses[0]).split()) and said_last[0] not in _INSTEAD and \
                not set(said_last) & COMMAND_VERBS and not self.lists.matches(said_last):
            if whole.accepted and not is_action(whole.intent) and \
                    said_last[0] not in QUESTION_STARTS and not asked(clauses[-1], said_last):
                return replace(whole, accepted=False)   # "no need to on the AC, the weather
                # is cool today": nothing to do, and nothing asked
            return whole           # "don't turn on the spa, it's way too hot for it"
        remark = said_last[0] in REMARKING and not set(said_last) & COMMAND_VERBS
        # (where the speaker goes is said, not asked: "..., we're off to bed")
        stated = told(said_last) or remark and ["off", "to"] in (
            said_last[i:i + 2] for i in range(len(said_last))) or \
            told(HomeLists.mask(said_last, self.lists.matches(said_last))) or \
            not_wanted(said_last) or said_last[:2] == ["want", "to"] or said_last[0] == "wanna" \
            or said_last[1 + (said_last[:1] == ["the"]):][:2] in (["want", "to"], ["wants", "to"])
        # ("..., the kettle's boiled", "..., don't want ...", "on the tv, want to catch the
        # news": why, its subject left out; "mowbot go home, kids want to play football")
        contracted = "'" in clauses[-1].split()[0]      # "we're ...", not "were ..."
        if (stated or set(said_last) & REPORTED or remark) and \
                (said_last[0] not in QUESTION_STARTS or contracted) and \
                not asked(clauses[-1], said_last):
            # "is the console still on, kwame said he'd turn it off"; a remark ("..., i've
            # just finished a night shift") where it says nothing the request takes: the
            # whole is no request, or the same one with no other kind of slot
            rest = self._parse(" ".join(clauses[:-1]))
            if rest.accepted and (not remark or stated or not whole.accepted or
                                  rest.intent == whole.intent and
                                  set(whole.slots) <= set(rest.slots) or
                                  rest.intent != whole.intent and
                                  rest.confidence > whole.confidence or
                                  _a_number_in(said_last) and is_action(rest.intent) and
                                  not _a_number_in(normalize_text(" ".join(clauses[:-1]))
                                                   .split())):
                return rest    # (a number in the remark is the remark's: "aircon on please,
                # it's thirty five degrees outside"; a remark that makes the whole another,
                # less sure request is no part of it: "make the rgb strip purple, i'm going
                # live on twitch")
            if stated and not rest.accepted and rest.intent == whole.intent:
                return rest    # "the kettle's tidy now, we fixed it": a statement does not
                # make a request of what was not one
        bid = said_last[1:] if said_last[:1] in (["and"], ["but"]) else said_last
        if bid[:1] in (["dont"], ["never"]) and bid[1:2] and bid[1] not in COMMAND_VERBS and \
                not self.lists.matches(bid):
            rest = self._parse(" ".join(clauses[:-1]))
            if rest.accepted:
                return rest    # "how's my timer doing, and don't sugarcoat it": how to
                # answer, no request of its own (nor of "it")
        elided = self._elided(clauses[0], clauses[-1]) if len(clauses) == 2 else None
        last = self._parse(elided or self._referred(clauses[:-1], clauses[-1]))
        asks = normalize_text(clauses[-1]).split()
        if len(asks) > 2 and asks[0] in QUESTION_STARTS and last.accepted and \
                not is_action(last.intent) and set(last.slots) & {*ENTITY_SLOTS, "state"}:
            return last      # "I can't remember if I switched it off, is it still on"
        named_before = self.lists.matches(normalize_text(" ".join(clauses[:-1])).split())
        if named_before and last.accepted and not set(last.slots) & set(ENTITY_SLOTS) \
                and REQUIRED.get(last.intent) != ("item",):
            # "Soundbar, volume 35": the device said first is the command's; "Bedside Lamp,
            # Pause." does not pause whatever plays
            return whole
        said_first = normalize_text(clauses[0]).split()
        if len(clauses) == 2 and leading_word(said_first) in COMMAND_VERBS and \
                said_last[0] not in QUESTION_STARTS and \
                not set(said_last) & COMMAND_VERBS and set(said_last) & {"is", "are", "s"}:
            first = self._parse(clauses[0])
            if first.accepted and is_action(first.intent):
                return first   # "mute the decoder, these adverts are too loud": the command
                # said first, then why (its "too loud" no request of its own)
        if len(clauses) == 2 and leading_word(said_first) in COMMAND_VERBS and \
                len(said_last) > 3 and not set(said_last) & COMMAND_VERBS and \
                set(said_last) & _PEOPLE_SAID and _a_number_in(said_last) and \
                not _a_number_in(said_first) and not self.lists.matches(said_last):
            first = self._parse(clauses[0])
            if first.accepted and first.intent == whole.intent:
                return first   # "turn down the bedside speaker, kirsty some of us have a
                # lecture at nine": the number is the remark's
        if last.accepted and is_action(last.intent) and (
                not whole.accepted or last.intent == whole.intent
                or last.confidence > whole.confidence) and not (
                whole.accepted and whole.intent == last.intent and
                set(whole.slots) - set(last.slots) - set(ENTITY_SLOTS) and
                set(whole.slots) > set(last.slots) and
                leading_word(said_last) not in COMMAND_VERBS):
            # (not "timer for 2 minutes, 30 seconds": the whole says more of the same; but
            # "the call is booked for an hour, set a timer for 55 minutes": the request's)
            return last
        if whole.accepted and (
                leading_word(said_last) in COMMAND_VERBS and is_action(last.intent) and
                not is_action(whole.intent) and not asked(text, normalize_text(text).split()) or
                leading_word(said_last) in COMMAND_VERBS | _DRAWING and
                is_action(last.intent) and is_action(whole.intent) and
                whole.intent != last.intent or
                _imperative(said_last) and whole.intent == "HassGetState" and
                not asked(text, normalize_text(text).split())):
            return last    # "everyone's gone home, set the roomba off": the command said last
            # is another request than the whole: its own reading, asked back when unsure ("it's
            # steamy in here, crack the skylight open" is no question whether it is open)
        said = normalize_text(clauses[0]).split()
        if said and said[0] in COMMAND_VERBS and whole.accepted and is_action(whole.intent) and \
                "name" not in whole.slots and not set(said_last) & COMMAND_VERBS:
            first = self._parse(clauses[0])
            if first.accepted and first.intent == whole.intent and "name" in first.slots:
                return first   # "open the front gate, the bakkie is outside": the gate named
        if not (whole.accepted and is_action(whole.intent)) and \
                not asked(text, normalize_text(text).split()):
            # "close the drapes, the sun is on the screen": the command, then its reason
            # (a first clause that is a command: it begins with the verb)
            # (or that names a device, then which way: "roller blinds down, the sun's ...")
            first = self._parse(clauses[0])
            if said and (said[0] in COMMAND_VERBS | {"keep"} or
                         said[-1] in TURNED | OPENING | CLOSING) \
                    and first.accepted and is_action(first.intent) and \
                    not (said_last[0] in _HOW_MUCH and _a_number_in(said_last)):
                return first   # (not "open the blind a small bit, say twenty percent": how
                # far is said last)
        if said and said[0] in QUESTION_STARTS and not is_action(whole.intent) and \
                not asked(clauses[-1], normalize_text(clauses[-1]).split()):
            # "what's the date, i need it for the school form": the question, then why
            first = self._parse(clauses[0])
            if first.accepted and not is_action(first.intent) and \
                    first.confidence > whole.confidence:
                return first
        return whole

    def _aside(self, clause: str) -> bool:
        """A remark that names and commands nothing ("it's gone nine", "I'm off now")."""
        words = normalize_text(clause).split()
        return bool(words) and words[0] in REMARKING and not set(words) & COMMAND_VERBS and \
            not self.lists.matches(words)

    def _put_off(self, command: list[str], span: list[str]) -> HomeParse | None:
        """A command put off for ``span`` ("in 20 minutes turn off the light strip"): a
        timer that carries it (Home Assistant's ``conversation_command``), when the command
        alone is an action done on its own and the span is a timer's; else None."""
        if command[0] in _SAID_LATER:
            return None    # ("announce that we're leaving in five minutes": what it says)
        named = {i for m in self.lists.matches(command) for i in range(m.start, m.end)}
        if {w for i, w in enumerate(command) if i not in named} & _SUBJECTS:
            return None    # ("open the globe pendant, we eat in five minutes": when they
            # eat; "i'm in the metro, i arrive in twenty minutes": no command at all; but
            # "the well pump" is a name, not "we'll")
        now = self._parse(" ".join(command))
        # a command said with its verb is carried as said even when it is not understood
        # now ("in 30 minutes turn off the sprinklers" was a plain timer): it is read again
        # when the timer rings, and announced as not done if still not understood ("on"/"off"
        # said as the verb: "in one hour off the bedroom aircon")
        carried = now.accepted or leading_word(command) in COMMAND_VERBS | {"on", "off", "unplug"}
        if not (carried and is_action(now.intent)) or now.intent in TIMER_INTENTS or \
                now.intent == "HassBroadcast" or REQUIRED.get(now.intent) == ("item",):
            return None
        timer = self._parse("set a timer for " + " ".join(span))
        lasts = {k: v for k, v in timer.slots.items() if k in ("hours", "minutes", "seconds")}
        if timer.intent != "HassStartTimer" or not timer.accepted or not lasts:
            return None
        return HomeParse("HassStartTimer", min(now.confidence, timer.confidence),
                         {**lasts, "conversation_command": " ".join(command)}, accepted=True,
                         runner_up=now.intent)

    @staticmethod
    def _message(text: str) -> str:
        """What an announcement in ``text`` says (``reading.announced``), as typed when the
        words are word for word ("we're leaving", not "were leaving"); "" if nothing."""
        said = normalize_text(text).split()
        message = announced(said)
        typed = text.split()
        if message and len(typed) == len(said):
            message = " ".join(typed[len(said) - len(message.split()):]).rstrip(".!?,;") or message
        return message

    def _stated_as_wanted(self, text: str) -> str:
        """A device and "open" or "closed", typed with no article and no question mark
        ("garage door open"): the state wanted, said as the command ("open the garage door"); else
        ``text``."""
        if not _ENDS_OPEN_CLOSED.search(text) or "'" in text or "’" in text:
            return text    # (most requests: no further work)
        words = normalize_text(text).split()
        if len(words) < 2 or words[-1] not in ("open", "closed") or words[0] in DETERMINERS:
            return text    # (not "the garage door closed": what it did; nor "garage door's
            # closed, eh?")
        named = words[:-1]
        found = self.lists.matches(named)
        if len(found) != 1 or found[0].slot != "name" or \
                (found[0].start, found[0].end) != (0, len(named)):
            return text
        return f"{'open' if words[-1] == 'open' else 'close'} the {' '.join(named)}"

    def _tag_asked(self, said: str) -> str | None:
        """A statement asked by its tag ("the pleated blinds are down, aren't they?", "I
        think I've left the immersion on, have I?"), as the question it is ("is the pleated
        blinds down"); without its tag when it says no "is" ("front room lights off innit":
        a command); None when it names no device or area and state, or commands ("turn
        it on, yeah?", "okay, I'll put the kettle on, yeah")."""
        words = normalize_text(said).split()
        found = [m for m in self.lists.matches(words) if m.slot in ENTITY_SLOTS]
        state = next((w for w in reversed(words) if w in STATES - {"on", "off"}), None) or \
            next((w for w in reversed(words) if w in STATES), None)   # ("closed off": closed)
        if not found or state is None or set(words) & (COMMAND_VERBS - _STATE_VERBS) and \
                not (words[0] in COMMAND_VERBS and not said.rstrip().endswith("?")):
            return None
        if not said.rstrip().endswith("?") and (
                words[0] in COMMAND_VERBS or state in ("on", "off", "open") and
                not _STATED.search(said)):
            return said    # "front room lights off innit": a command with a tag, no statement
        m = found[0]
        return " ".join(["is", "the", *words[m.start:m.end], state])

    def _described(self, text: str) -> bool:
        """"the compressor's ancient", read "the compressor is ancient": said of it
        (``words.told``), where the plain words read a name in the plural."""
        if "'s" not in text:
            return False
        words = normalize_text(_IS.sub(" is", text)).split()
        return told(HomeLists.mask(words, self.lists.matches(words)))

    def _elided(self, first: str, last: str) -> str | None:
        """A last clause that names a device but not what to do, after a command on another
        one ("don't turn off the floor lamp, just the bookshelf lights"): the first clause's
        command on it ("turn off the bookshelf lights"); None when that is not so."""
        head_words = normalize_text(first).split()
        tail_words = self._first_named(normalize_text(last).split())   # ("just the sconces")
        if not tail_words or set(tail_words) & (COMMAND_VERBS | TURNED) or \
                not (NEGATIONS & set(head_words) or tail_words[0] in ("just", "only")):
            return None
        said, meant = self.lists.matches(head_words), self.lists.matches(tail_words)
        if said and not meant and "one" in tail_words:
            # "..., just the small one": the small garage door, after the big garage door
            at = tail_words.index("one")
            kind = head_words[said[0].start + 1:said[0].end]
            tail_words = [*tail_words[:at], *kind, *tail_words[at + 1:]]
            meant = self.lists.matches(tail_words) if kind else []
        if not said or not meant:
            return None
        verb = [w for w in head_words[:said[0].start] if w not in NEGATIONS and w != "do"]
        if leading_word(verb) not in COMMAND_VERBS:
            return None
        return " ".join([*verb, *tail_words[meant[0].start:meant[0].end],
                         *head_words[said[0].end:]])

    def _corrected(self, text: str) -> str | None:
        """``text`` with a spoken self-correction applied: "turn off the desk lamp, I mean
        the desk fan" -> "turn off the desk fan", "set the volume to 30, no, 20" -> "set the
        volume to 20", "make the lights orange, no, pink" -> "... pink"; unchanged when it
        has none; None when it corrects a device or area to words that name none ("..., I
        mean the pad of a light")."""
        fixed = renumbered(text)
        if fixed is not None:
            return fixed
        clauses = [c for c in _CLAUSE.split(text) if normalize_text(c).split()]
        last = normalize_text(clauses[-1]).split() if clauses else []
        if len(clauses) > 1 and len(last) > 2 and last[-2:] in (["i", "mean"], ["i", "meant"]):
            # "make it 73 in the bedroom, on the bedroom thermostat i mean": said after
            text = ", ".join([*clauses[:-1], "i mean " + " ".join(last[:-2])])
        words = normalize_text(text).split()
        for k in range(1, len(words)):
            marker = next((m for m in CORRECTIONS if tuple(words[k:k + len(m)]) == m), None)
            if marker is None:
                continue
            before, after = words[:k], words[k + len(marker):]
            while (more := next((m for m in CORRECTIONS
                                 if tuple(after[:len(m)]) == m), None)) is not None:
                after = after[len(more):]    # "no, sorry, ...", "sorry i mean ..."
            if before and before[-1] in self._colors and after and len(after) <= 3 and \
                    after[-1] in self._colors:
                return " ".join([*before[:-1], after[-1]])   # "... orange, no, pink"
            said, meant = self.lists.matches(before), self.lists.matches(after)
            if said and after[-1:] == ["one"] and \
                    all(c.slot in ("area", "floor") for c in meant):
                # "open the left garage door, no, the right one": the right garage door
                m = said[-1]
                kind = before[m.start + 1:m.end]
                other = [*after[:-1], *kind]
                if kind and any(c.slot == "name" for c in self.lists.matches(other)):
                    after, meant = other, self.lists.matches(other)   # ("..., i meant the
                    # sleepout one": the Sleepout Heat Pump, not the Sleepout's lights)
            if said and meant and leading_word(after) in COMMAND_VERBS:
                return " ".join(after)     # "open the garage door, no sorry, unlock the barn door"
            if said and meant:
                m, c = said[-1], meant[0]
                end = max((p.end for p in meant[1:] if p.slot in ("area", "floor")), default=c.end)
                # ("..., sorry i mean the cabinet light in the kitchen": in the kitchen too)
                while c.slot in ("area", "floor") and end < len(after) and \
                        after[end] in DEVICE_WORDS:
                    end += 1       # ("..., no wait, the attic fans": the attic's fans)
                return " ".join([*before[:m.start], *after[c.start:end], *before[m.end:]])
            plain = [w for w in after if w not in DETERMINERS]
            if not meant and 1 <= len(plain) <= 4 and after[0] not in _MORE_ITEMS and \
                    leading_word(before) in _ADDING:
                item = self._added_item(before)
                instead = after[2:] if after[:2] in _MAKE_THAT else after
                if item and instead:   # "add oat milk to the shopping list, naw, semi
                    # skimmed milk", "..., no, make that sausage rolls"
                    return " ".join([*before[:item[0]], *instead, *before[item[1]:]])
            t = before.index("timer") if "timer" in before else 0
            if not meant and 2 <= len(plain) <= 4 and plain[-1] == "timer" and t > 0 and \
                    before[t - 1] not in DETERMINERS:
                named = t    # "add ten minutes to the roast timer, sorry, the scones timer"
                while named > 0 and before[named - 1] not in DETERMINERS | {"to", "on", "for"}:
                    named -= 1
                return " ".join([*before[:named], *plain[:-1], *before[t:]])
            if said and not meant and 1 <= len(plain) <= 3 and plain[-1] in _TIMER_WORDS:
                m = said[-1]         # "pause the telly, no, the (tattie) timer": the timer
                return " ".join([*before[:m.start], *after, *before[m.end:]])
            if said and marker in SURE_CORRECTIONS and any(w not in DETERMINERS for w in after):
                return None
        return text

    def _one_so_called(self, domain: str, masked: list[str]) -> str | None:
        """The one device of ``domain`` whose name ends in a word said after "the" (not the
        domain's own words: "the gate" for the lock Main Gate), if only one such device; never
        what "all the" says ("are all the doors locked": every lock, not the Storm Doors)."""
        said = {masked[i] for i in range(1, len(masked)) if masked[i - 1] in _OWNED and
                masked[i].isalpha() and masked[i] not in _KIND_SAID[domain] and
                masked[i + 1:i + 2] not in _WHICH_ONE      # (not "the door from the garage")
                and masked[max(0, i - 2):i - 1] not in (["all"], ["both"])}
        ones = [n for n, d in self.lists.names.items()
                if d == domain and (normalize_text(n).split() or [""])[-1] in said]
        return ones[0] if len(ones) == 1 else None

    def _fans_so_called(self, masked: list[str]) -> list[str]:
        """The home's fans whose names say the word said right before "fan" ("the ceiling
        fan": Bedroom Ceiling Fan); none when no such word is said."""
        said = {masked[i - 1] for i in range(1, len(masked)) if masked[i] in ("fan", "fans")
                and masked[i - 1].isalpha() and masked[i - 1] not in DETERMINERS | {"speed"}}
        return [n for n, d in self.lists.names.items() if d == "fan" and any(
            a in said and b == "fan" for a, b in itertools.pairwise(normalize_text(n).split()))]

    def _added_item(self, words: list[str]) -> tuple[int, int] | None:
        """Where in ``words`` (a request to add to a list) the item is said: [start, end)."""
        p = self._parse(" ".join(words))
        if p.intent not in ("HassShoppingListAddItem", "HassListAddItem") or not p.accepted:
            return None
        item = normalize_text(str(p.slots.get("item", ""))).split()
        return next(((i, i + len(item)) for i in range(len(words) - len(item) + 1)
                     if item and words[i:i + len(item)] == item), None)

    def _bare_item(self, clause: str) -> str:
        """A clause that only names a thing ("rotisserie chicken, costco list cross it off"):
        the thing, for a list request's "it"; "" for anything more (a verb, a name of the
        home, a remark: "the windbreak's packed")."""
        words = normalize_text(clause).split()
        if not words or len(words) > MAX_SAID_ITEM or words[0] in REMARKING | BACK or \
                "'" in clause or any(w.endswith("ed") for w in words) or \
                set(words) & (COMMAND_VERBS | STATES | NEGATIONS) or self.lists.matches(words):
            return ""
        return " ".join(words)

    def _referred(self, before: list[str], clause: str) -> str:
        """``clause`` with a pronoun that points back ("it", "them") replaced by what the
        clauses ``before`` it name: the item needed, for a list ("we need olive oil, put
        it on the shopping list"), else the last device or area ("the soundbar is too
        loud, turn it down" -> "turn the soundbar down"); and a room said before for
        devices the clause names by kind alone ("it's dark in the den, turn the lights
        on" -> "... lights on in the den"); unchanged when there is none."""
        words = normalize_text(clause).split()
        # (a pronoun that begins the clause is its subject: "it rained all night"; one after
        # "on"/"in" in a clause with no verb of ours is a place: "window get water on it")
        at = next((i for i, w in enumerate(words) if w in BACK and i > 0 and not (
            words[i - 1] in _TO_PLACE | {"onto", "into", "over", "under"} and
            not set(words) & COMMAND_VERBS)), None)
        found_here = self.lists.matches(self._first_named(words))   # (or by its last word)
        # "we need olive oil, put it on the shopping list": the item, said before
        said = ITEM_SAID.match(normalize_text(before[-1]))
        item = said["item"] if said else self._bare_item(before[-1])
        if at is not None and item and len(item.split()) <= MAX_SAID_ITEM and (
                "list" in words or any(m.domain == "todo" for m in found_here)):
            return " ".join([*words[:at], item, *words[at + 1:]])
        wanted = WANTED_SAID.match(normalize_text(before[-1]))
        if at is not None and wanted and len(wanted["item"].split()) <= MAX_SAID_ITEM and \
                leading_word([w for w in words if w not in BEFORE_REQUEST]) in ("put", "play") \
                and any(m.domain == "media_player" for m in found_here):
            # "the kids want bluey, can you put it on the tv": bluey, on the tv
            return " ".join([*words[:at], wanted["item"], *words[at + 1:]])
        earlier = normalize_text(" ".join(before)).split()
        there = next((i for i in range(1, len(words)) if words[i] == "there" and
                      words[i - 1] in ("in", "into")), None)
        if there is not None and not any(m.slot in ("area", "floor") for m in found_here):
            # "the boot room smells damp, switch the dehumidifier on in there": that room
            areas = [m for m in self.lists.matches(earlier) if m.slot == "area"]
            if areas:
                return " ".join([*words[:there], "the",
                                 *earlier[areas[-1].start:areas[-1].end], *words[there + 1:]])
        if found_here:
            return clause
        if at is None:
            # "it's too dark in the kitchen, turn the lights on": the room said before
            areas = [m for m in self.lists.matches(earlier) if m.slot == "area"]
            if not areas or not DEVICE_WORDS.intersection(words):
                return clause
            return " ".join([*words, "in", "the", *earlier[areas[-1].start:areas[-1].end]])
        found = self.lists.matches(earlier)
        if not found and set(earlier) & _TIMER_WORDS and not set(words) & _TIMER_WORDS:
            # "..., stop it": the timer, by its name when it had one ("never mind the curry
            # timer, cancel it")
            t = next(i for i, w in enumerate(earlier) if w in _TIMER_WORDS)
            name = earlier[t - 1:t] if t > 1 and earlier[t - 2] in DETERMINERS and \
                earlier[t - 1].isalpha() and earlier[t - 1] not in DETERMINERS else []
            return " ".join([*words[:at], "the", *name, "timer", *words[at + 1:]])
        if not found:
            kind = next((w for i, w in enumerate(earlier) if i > 0 and w in _ROBOTS and
                         earlier[i - 1] in _OWNED), None)
            if kind:       # "the hoover is making an infernal racket, would you send it back
                return " ".join([*words[:at], "the", kind, *words[at + 1:]])   # to base"
            return clause
        m = found[-1]
        kinds = [w for w in earlier[:m.start] if w in DEVICE_WORDS]
        device = next((f for f in reversed(found[:-1]) if f.slot == "name"), None)
        if m.slot == "area" and device is not None:
            # "the bamboo fan out on the lanai, turn it on": that fan, there
            return " ".join([*words[:at], "the", *earlier[device.start:device.end], "in", "the",
                             *earlier[m.start:m.end], *words[at + 1:]])
        if m.slot == "area" and kinds:
            # "I'm after leaving the light on in the parlour, would you turn it off": the
            # light in the parlour, not the parlour
            return " ".join([*words[:at], "the", kinds[-1], "in", "the",
                             *earlier[m.start:m.end], *words[at + 1:]])
        end = m.end + (m.end < len(earlier) and earlier[m.end] in DEVICE_WORDS)
        start = m.start
        if len(found) > 1 and found[-2].slot == "area" and found[-2].end == m.start:
            start = found[-2].start     # "helper room dehumidifier, help me off it": that one
        return " ".join([*words[:at], "the", *earlier[start:end], *words[at + 1:]])

    def _parse(self, text: str) -> HomeParse:
        words = heard = normalize_text(text).split()
        if not words:
            return HomeParse(OTHER, 1.0)
        words = said_plainly(words, self._name_words)
        if words[0] in ("on", "off") and len(words) > 1 and words[1] not in _NOT_AFTER_ON and \
                not any(m.domain == "todo" and m.start <= 2 for m in self.lists.matches(words)):
            words = ["turn", *words]  # "on the aircon in living room", "off light on balcony"
        if self.repair:
            repaired = self.lists.repair(repair_commands(words), self._known)
            new: list[Match] = []
            if repaired != words:
                before = self.lists.matches(words)
                new = [m for m in self.lists.matches(repaired) if m not in before]
            # ("play fair city on the telly" is no request for the Fairy Lights; "our geyser
            # burst last winter" none for the Braai List: a list is named after a word that
            # puts something on it or takes it off)
            if not (leading_word(words) == "play" and
                    any(m.domain != "media_player" for m in new)) and \
                    not any(m.domain == "todo" and not set(repaired[:m.start]) & _TO_LIST
                            for m in new) and \
                    not any(repaired[m.start - 1:m.start] in (["called"], ["named"])
                            for m in new) and \
                    not (len(repaired) == len(words) and any(
                        a != b and a in STATES for a, b in zip(words, repaired, strict=True))):
                # ("a timer called tea round": no Tea Urn; "is the yale locked": no Yale Lock
                # from "yale locked", the state kept)
                words = repaired
        words = self.lists.reordered(words)
        words = self._first_named(self._list_first(self._loosely_named(
            self._placed(self._of_said(words)))))
        options: list[list[Match]] = [self._in_title(words, named_once(
            not_the_verb(words, self.lists.matches(words))))]
        if (passed := addressed(words, options[0])) is not words:
            words, options = passed, [named_once(not_the_verb(passed, self.lists.matches(passed)))]
            # ("tell rosie to ...")
        reduced = self._in_title(words, not_the_verb(words, self.lists.matches(words,
                                                                            skip=self.vocab)))
        if reduced != options[0] and not any(
                r.slot != "name" and any(o.slot == "name" and o.start <= r.start < o.end
                                         for o in options[0]) for r in reduced):
            options.append(reduced)   # (not "garage" + "door" for the Garage Door: names first)
        # ("tell everyone dinner is ready" is no question; "will it rain tonight" is one)
        announced = words[0] == "tell" and words[1:2] != ["me"] and set(words) & TO_EVERYONE
        question = words[0] in QUESTION_STARTS and not announced or \
            words[:2] in (["will", "it"], ["will", "there"]) or asked(text, words)
        best: tuple | None = None
        for found in options:
            masked = HomeLists.mask(words, found)
            probs, per_intent = self._classify(masked)
            # a question is read as the most likely intent that only answers
            top = int((np.where(self._is_action, -1.0, per_intent) if question
                       else per_intent).argmax())
            # the reading without the everyday-word names ("floor lamp") only when it is
            # another request: the same one would lose the device it names
            if best is None or (per_intent[top] > best[0] and
                                not self._names_kept(best[1], top, best[4])):
                best = (float(per_intent[top]), top, probs, per_intent, found, masked)
        assert best is not None
        confidence, top, probs, per_intent, found, masked = best
        top, confidence = self._fitted(top, confidence, per_intent, masked, question)
        locking = every_lock(masked) if not question else ""
        if locking and "lock" in self.lists.names.values():
            # every lock: a reading of the words, not of the classifier, which has no
            # template for it (it read "lock all the doors" as covers, unsure)
            return HomeParse(locking, 1.0, {**{m.slot: m.value for m in found
                                               if m.slot in ("area", "floor")},
                                            "domain": "lock"}, accepted=True)
        intent = self._intents[top]
        second = self._intents[int(np.argsort(per_intent)[-2])] if len(self._intents) > 1 else ""
        if intent == OTHER:
            return HomeParse(OTHER, confidence, {}, runner_up=second)
        # the fixed slots of the intent's most likely label
        rows = [i for i, (name, _) in enumerate(self._intent_of) if name == intent]
        # not the domain of the other kind of device the request names ("close the light")
        light, cover = named_kinds(set(masked))
        other = "cover" if light and not cover else "light" if cover and not light else ""
        rows = [i for i in rows if self._intent_of[i][1].get("domain") != other] or rows
        _, fixed = self._intent_of[max(rows, key=lambda i: probs[i])]
        label = self.classifier.labels[max(rows, key=lambda i: probs[i])]
        slots = self._slots(intent, label, text, [m for m in found if not run_on(m, found, words)],
                            masked)
        if found is not options[0] and not set(slots) & set(ENTITY_SLOTS):
            # read without the names that are everyday words, but one of them is a device of
            # the kind the intent acts on: that device ("what is the aircon showing": Aircon)
            kin = [m for m in options[0] if m.slot == "name" and m not in found and
                   m.domain == _DOMAIN_OF.get(intent)]
            if len(kin) == 1:
                slots["name"] = kin[0].value
        for m in found:
            if m.slot in ("area", "floor") and m.value == slots.get(m.slot) and \
                    m.end == len(words) and [w for w in words[max(0, m.start - 4):m.start]
                                             if w not in DETERMINERS and
                                             w not in ("to", "go", "use")][-1:] == ["need"]:
                # "pause it i need the bathroom": where the speaker goes, said last (not "i
                # need the kitchen lights on")
                del slots[m.slot]
        device = next((m for m in found if m.slot == "name" and m.value == slots.get("name")),
                      None)
        if device is not None and intent != "HassVacuumCleanArea":   # (a room to clean is no
            places = [m for m in found if m.slot in ("area", "floor") and   # remark)
                      m.value == slots.get(m.slot)]
            starts = _clause_starts(text, words) if places else set()
            for place in places:
                if remarked(words, device, place, starts, self._known):
                    del slots[place.slot]   # "..., megan's asleep in the spare room": not there
        if (intent in _DOMAIN_OF or intent in _ON_OFF_ASKED) and \
                not set(slots) & set(ENTITY_SLOTS) and "here" not in masked:
            # "pause the tv" where the one TV is the Roku TV, "aircon fan on high", "is the tv
            # on" (not "the tv in here": the room's)
            said_as = {**_KIND_NAMES, **_PLAYER_SLANG} if intent in _PLAYER_INTENTS else \
                _KIND_NAMES
            joined = _aircon(masked)
            kinds = {said_as[w] for w, n in zip(joined, [*joined[1:], ""], strict=True)
                     if w in said_as and n not in _SHOWN}     # (not "the tv show")
            domains = [_DOMAIN_OF[intent]] if intent in _DOMAIN_OF else ["media_player", "climate"]
            called = {self._by_kind.get((d, k)) for k in kinds for d in domains} - {None}
            if len(called) == 1:
                slots["name"] = called.pop()
                fixed = {k: v for k, v in fixed.items() if k != "domain"}   # (its own domain)
        lead = lead_at(masked, BEFORE_REQUEST)      # ("can you open the lights in ...")
        verbs = set(masked[:masked.index("@name")] if "@name" in masked else
                    masked[lead:lead + 2]) if intent in ("HassTurnOn", "HassTurnOff") else set()
        if intent in ("HassTurnOn", "HassTurnOff") and "@name" in masked:
            # and the way said right after the name ("buzz the close door open", "humidifier
            # close please")
            verbs |= {_after_name(masked)} & _OPEN_CLOSE
        if intent == "HassTurnOn" and leading_word(masked) == "kill":
            intent = "HassTurnOff"   # "kill the lights on the balcony": "on" says where
        if verbs & _OPEN_CLOSE and \
                self.lists.names.get(str(slots.get("name"))) == "lock":
            # a lock opened is unlocked ("open the key safe", "buzz open the building door";
            # Home Assistant's TurnOn locks it)
            intent = "HassTurnOff" if "open" in verbs else "HassTurnOn"
        if slots.get("device_class") == "door" and \
                normalize_text(str(slots.get("area", ""))) == "garage" and any(
                    w == "garage" and n in ("door", "doors")
                    for w, n in zip(words, words[1:], strict=False)):
            # "open the garage door": Home Assistant's class of its own (garage), not the
            # doors of an area called Garage
            del slots["area"]
            slots["device_class"] = "garage"
        if intent in ("HassTurnOn", "HassTurnOff") and set(slots) & {"area", "floor"} and \
                "name" not in slots and fixed.get("domain") in (None, "light", "cover") and \
                not set(masked) & (LIGHT_WORDS | COVER_WORDS) and \
                set(_aircon(masked)) & _AIRCON_SAID and \
                "climate" in self.lists.names.values():
            fixed = {k: v for k, v in fixed.items() if k != "domain"}
            slots.pop("device_class", None)
            called = {n for n, d in self.lists.names.items() if d == "climate" and
                      set(_aircon(normalize_text(n).split())) <= set(_aircon(masked))}
            if len(called) == 1:          # the room's own, named so ("Aircon" in each room)
                slots["name"] = called.pop()
            else:
                slots["domain"] = "climate"   # "turn on (open) the aircon in jun wei's room":
                # no light, no cover
        if intent in ("HassTurnOn", "HassTurnOff") and set(slots) & {"area", "floor"} and \
                not {*slots, *fixed} & {"name", "domain", "device_class"} and \
                set(masked) & LIGHT_WORDS:
            slots["domain"] = "light"   # "open the study light for a while": its lights
        kind = slots.get("domain") or fixed.get("domain") or \
            self.lists.names.get(str(slots.get("name")))
        if kind in _SWITCHED and "device_class" not in {**slots, **fixed}:
            # a light opened is on, closed off ("open the lights in the backyard", "are the
            # lights of the kitchen open": said so in French, Hindi and other Englishes)
            if verbs & _OPEN_CLOSE:
                intent = "HassTurnOn" if "open" in verbs else "HassTurnOff"
            if intent == "HassGetState" and slots.get("state") in _OPEN_AS:
                slots["state"] = _OPEN_AS[slots["state"]]
        if intent in _SENT_BACK and kind == _SENT_BACK[intent][0] and \
                ("on" in masked or masked[-1:] == ["go"] or ["to", "work"] in (
                    masked[i:i + 2] for i in range(len(masked)))) and \
                not set(masked) & _BACK_HOME:
            intent = _SENT_BACK[intent][1]   # "put the robot hoover on while we're out",
            # "robot hoover go", "put the ti-robot to work"
        if kind == "lock" and intent == "HassGetState":
            # "is the apartment door closed?", "the flat door is closed off, yes?": locked
            state = str(slots.get("state", ""))
            if state in ("on", "off"):
                state = next((w for w in masked if w in _LOCK_AS), state)
            if state in _LOCK_AS:
                slots["state"] = _LOCK_AS[state]
        if intent == "HassGetState" and not question and "name" in slots and \
                slots.get("state") in _WISHED and wished(masked):
            intent = _WISHED[slots.pop("state")]     # "i'd like the back door unlocked"
            fixed = {}
        if intent in _OWN_NAMES and found and not set(slots) & {"name", "area", "floor"}:
            # "set a laundry timer": a timer named like one of the home's areas or devices
            # (where the intent takes no area: "cancel the kitchen timer" is the kitchen's)
            named = self._slots(intent, label, text, [], words).get("name")
            if named:
                slots["name"] = named
        step = slots.get("volume_step")
        if intent == "HassSetVolumeRelative" and isinstance(step, (int, float)) and \
                "by" not in masked and not set(masked) & (UP | DOWN):
            intent = "HassSetVolume"             # "volume 40 percent": a level, not a step
            slots.pop("volume_step")
            slots["volume_level"] = abs(step)    # a level has no direction
        query = str(slots.get("search_query", "")).split()
        player = self._players.get(tuple(query[int(query[0] in DETERMINERS):])) \
            if intent == "HassMediaSearchAndPlay" and query else None
        if intent == "HassMediaSearchAndPlay" and player is None and \
                len(query) - int(query[:1] != [] and query[0] in DETERMINERS) == 1:
            # "put on the radio": the home's one radio (the Roberts Radio), not a search
            player = self._one_player(query[-1])
        if intent == "HassMediaSearchAndPlay" and (
                player and "name" not in slots or
                not query and "name" in slots and leading_word(masked) == "put"):
            # "put on the radio (in the kitchen)": that player, on
            slots = {"name": player or slots["name"],
                     **{k: v for k, v in slots.items() if k in ("area", "floor")}}
            intent = "HassTurnOn"
        lead = lead_at(masked, BEFORE_REQUEST)
        if intent == "HassTurnOn" and masked[lead:lead + 1] == ["start"] and \
                masked[-2:] == ["back", "up"] and \
                self.lists.names.get(str(slots.get("name"))) == "media_player":
            intent = "HassMediaUnpause"   # "start the kitchen speaker back up": resumed
        if intent == "HassTurnOn" and masked[lead:lead + 1] == ["put"] and \
                self.lists.names.get(str(slots.get("name"))) == "media_player":
            # "put radio four on the wireless": something to play, on that player ("can you
            # put bluey on the tv" too)
            at = masked.index("@media_player") - 1 if "@media_player" in masked else 0
            end = at - 1 - (at > 1 and masked[at - 1] in _OWNED)
            said = masked[lead + 1:end] if end > lead + 1 and masked[end] == "on" else []
            if said and not set(said) & (BACK | {"this", "that", "these", "those"}) and \
                    not any(w.startswith("@") for w in said):
                intent = "HassMediaSearchAndPlay"
                slots = {"name": slots["name"], "search_query": " ".join(said)}
        if intent == "HassTurnOn" and masked[lead:lead + 1] == ["kill"] and \
                "off" not in masked and any(w == "on" and n in _OWNED | {"@area", "@floor"}
                                            for w, n in itertools.pairwise(masked)):
            intent = "HassTurnOff"               # "kill the lights on the porch": off, there
        if intent in ("HassCancelTimer", "HassCancelAllTimers") and \
                masked[lead:lead + 1] in (["check"], ["show"], ["list"]):
            intent = "HassTimerStatus"           # "check my timers": how long is left
            slots = {k: v for k, v in slots.items() if k in ("name", "area")}
        if intent == "HassCancelTimer" and "all" in masked and \
                set(masked[masked.index("all"):]) & _TIMER_WORDS and not found:
            intent, slots = "HassCancelAllTimers", {}   # "all the timer, cancel"
        command = str(slots.get("conversation_command", ""))
        if command and set(masked) & _TIMER_WORDS and len(command.split()) < len(words) and \
                leading_word(command.split()) not in COMMAND_VERBS | {"on", "off"} and \
                not ((now := self._parse(command)).accepted and is_action(now.intent)):
            del slots["conversation_command"]   # "load-shedding starts in 25 minutes, set a
            # timer": what happens then, no command put off (without "timer" said, no timer)
        if REQUIRED.get(intent) == ("item",):
            # "put lock the barn door on the chores list", as said (not as repaired), and
            # "add set up the tv in the playroom to chores" whole
            item = listed_item(heard if len(heard) == len(words) else words, found)
            if item:
                slots["item"] = item
        if intent in _ON_SHOPPING_LIST and str(slots.get("name", "")).casefold() == "shopping list":
            intent = _ON_SHOPPING_LIST[intent]    # "stick it on the shopping list"
            del slots["name"]
        for key in ("volume_level", "brightness", "position"):
            level = slots.get(key)
            if isinstance(level, (int, float)) and not 0 <= level <= 100:
                del slots[key]            # asked back: a percentage ("brightness 4000")
        slots.update(fixed)
        if intent in _ON_OFF_ASKED and slots.get("domain") in _KIND_SAID and \
                not set(slots) & {"name", "area", "floor", "device_class"}:
            one = self._one_so_called(str(slots["domain"]), masked)
            if one:          # "is the gate locked?" where the one lock called so is Main Gate
                slots = {**{k: v for k, v in slots.items() if k != "domain"}, "name": one}
        need = REQUIRED.get(intent, ())
        missing = need if need and not any(k in slots for k in need) else ()
        # an action on no device or area, with a word never seen: a misheard name? asked back
        if not missing and intent in TARGETED and not found and \
                any(w not in self.vocab and not number_word(w) for w in masked):
            missing = ("name",)
        if not missing and intent in ("HassTurnOn", "HassTurnOff") and \
                "domain" in slots and "name" not in slots and \
                not set(masked) & DEVICE_WORDS and leading_word(masked) in _TO_PLAY and any(
                    w not in self.vocab and not number_word(w) for w in masked):
            missing = ("name",)      # "put on the proclaimers in the front room": no lights
            # ("put on jimmy buffett out on the lanai": no fan either)
        if not missing and intent in TARGETED and "name" not in slots and any(
                masked[i] == "@area" and masked[i + 2] in ("on", "off") and
                masked[i + 1] not in self.vocab and not masked[i + 1].startswith("@")
                for i in range(len(masked) - 2)):
            missing = ("name",)      # "shower room van on": the fan, misheard? asked back
        if not missing and intent == "HassLightSet" and "brightness" in slots and \
                "name" not in slots and not light and not set(masked) & BRIGHTNESS_SAID and \
                "climate" in self.lists.names.values():
            missing = ("name",)      # "set the guest room to 64": the lights, or its heating?
        if not missing and intent in NEEDS_DOMAIN and \
                NEEDS_DOMAIN[intent] not in self.lists.names.values():
            missing = ("name",)      # no such device in this home
        if not missing and intent == "HassMediaPrevious" and leading_word(masked) == "play" and \
                "last" in masked and [w for w in masked[masked.index("last") + 1:]
                                      if not w.startswith("@") and w not in _AFTER_LAST]:
            missing = ("name",)      # "play last christmas in the kitchen": a title, not the
            # track before ("play the last item in the porch" is)
        if not missing and intent == "HassMediaPrevious" and leading_word(masked) == "play" and \
                not set(masked) & _BEFORE_SAID and any(
                    w in ("track", "song") and [x for x in masked[i + 1:]
                                                if x not in _AFTER_LAST | {"before"}]
                    for i, w in enumerate(masked)):
            missing = ("name",)      # "play the track we'll meet again": its title, not the
            # track before
        if not missing and intent not in TIMER_INTENTS and "name" in slots and \
                _after_name(masked) in _TIMER_WORDS:
            missing = ("name",)      # "scrap the hot tub timer": the timer, not the hot tub
        if not missing and "name" in slots and slots.get("domain") == "light" and \
                self.lists.names.get(str(slots["name"])) not in (None, "light") and \
                not set(masked) & LIGHT_WORDS:
            del slots["domain"]      # "put that heater thing on in the bathroom": the Heater,
            # no light (a domain no word said)
        if not missing and intent == "HassFanSetSpeed" and \
                not set(slots) & {"name", "area", "floor"}:
            fans = self._fans_so_called(masked)
            if len(fans) == 1:       # "set the ceiling fan to 75 percent": the Bedroom Ceiling
                slots["name"] = fans[0]      # Fan ("fan speed to 51": the fans here)
            elif fans:
                missing = ("name",)
        if not missing and self.lists.names and "name" not in slots and \
                slots.get("domain") and slots["domain"] not in self.lists.names.values():
            missing = ("name",)      # "turn on the ceiling fan in the bedroom": no fan here
        if not missing and intent in _PLAYER_INTENTS | {"HassMediaSearchAndPlay"} and \
                not set(slots) & set(ENTITY_SLOTS) and self._unknown_player(masked):
            missing = ("name",)      # "turn the wireless up": which player?
        if not missing and any(m.slot == "floor" for m in found) and \
                "floor" not in self.intent_slots.get(intent, ()):
            missing = ("name",)      # "what's the temperature upstairs": which thermostat?
        if not missing and intent == "HassGetState" and any(
                m.domain == "todo" for m in found if m.value == slots.get("name")):
            missing = ("name",)      # "is bunnings open on sunday": not a device
        if not missing and slots.get("domain") == "cover" and \
                not set(slots) & {"name", "device_class"} and not set(masked) & COVER_WORDS:
            missing = ("name",)      # "open the skylight in the bunk room": no such cover
        if not missing and slots.get("domain") == "light" and "name" not in slots and \
                set(_aircon(masked)) & (NOT_LIGHTS | _HEATING | COVER_WORDS) and \
                not set(masked) & (LIGHT_WORDS | _SEEING):
            missing = ("name",)      # "turn on the dehumidifier in the loft", "the air con
            # in ethan's room": no such here (not the room's lights)
        if not missing and intent in KIND_WORDS and "name" not in slots and \
                not set(masked) & KIND_WORDS[intent]:
            missing = ("name",)      # "start the dishwasher": not the mower
        # every light of the house from "turn on the lights"? only when it says so
        if not missing and intent in WHOLE_DOMAIN and "domain" in slots and \
                not set(slots) & set(ENTITY_SLOTS) and not all_said(masked):
            missing = ("name",)
        # "switch it off": what is "it"? (said before, or nowhere)
        if not missing and intent in WHOLE_DOMAIN and \
                not set(slots) & {*ENTITY_SLOTS, "domain", "device_class"}:
            missing = ("name",)
        if not missing and intent in ("HassTurnOn", "HassTurnOff") and any(
                w in ("on", "to") and (said_number(n) or n in _SETTINGS)
                for w, n in zip(masked, masked[1:], strict=False)):
            missing = ("name",)      # "put the aircon on eighteen", "the air conditioner fan
            # on low": a setting, not just on
        if not missing and intent in ("HassTurnOn", "HassTurnOff") and any(
                w == "get" and n in DETERMINERS | {"@name"}
                for w, n in zip(masked, masked[1:], strict=False)) and \
                not set(masked) & (TURNED | RUNNING):
            missing = ("name",)      # "get the lights": on, or off? (each, where it is said)
        if not missing and intent == "HassGetState" and not question and "please" in masked:
            missing = ("name",)      # "pocket door closed please": asked of it, not about it
        if not missing and intent == "HassGetState" and not question and _imperative(masked):
            missing = ("name",)      # "wind the awning in", "crack the skylight open": a
            # command (a verb, then what it acts on), not a question
        if not missing and intent == "HassTurnOff" and "out" in masked and "off" not in masked \
                and "name" not in slots and not set(masked) & (DEVICE_WORDS | COMMAND_VERBS):
            missing = ("name",)      # "Dad is still out in the yard": someone out, no light
        if not missing and intent == "HassGetWeather" and not question and \
                (masked[:1] == ["its"] or masked[:2] == ["it", "is"]):
            missing = ("name",)      # "it's nithering out there today": said, not asked
        if not missing and intent in ("HassCancelTimer", "HassCancelAllTimers") and \
                len([w for w in masked if w not in DETERMINERS | _TIMER_WORDS]) == 0:
            missing = ("timer",)       # "all", "timer": no word says to cancel anything
        if not missing and intent in _SAY_TIMER and not set(masked) & _TIMER_WORDS:
            missing = ("timer",)       # "pause this": the music, or a timer?
        for key in FREE_SLOTS:
            if key in slots:
                slots[key] = as_said(str(slots[key]), heard)
        return HomeParse(intent, confidence, slots,
                         accepted=confidence >= self.threshold(intent) and not missing
                         and not ((told(masked) or self._described(text)) and
                                  not (question and not is_action(intent)))
                         and not self._elsewhere(intent, masked) and not left_as_is(masked)
                         and not (is_action(intent) and (excepted(masked) or own_doing(masked)
                                                         or declined(masked)))
                         and not doing_asked(masked)
                         and not (intent == "HassGetState" and not question and negated(masked))
                         and not _SUBJECTS & set(str(slots.get("conversation_command", "")).split())
                         and not (is_action(intent) and (question or self._unsaid(intent, masked))),
                         missing=missing, runner_up=second)

    @staticmethod
    def _elsewhere(intent: str, masked: list[str]) -> bool:
        """A timer request about the music ("how long is left on this song"), a temperature
        request about curtains or a lamp ("check the curtains in the lounge"), the time of
        something else ("what time does the shop close"), a message to someone, not an
        announcement."""
        said = set(masked)
        if intent in ("HassClimateGetTemperature", "HassClimateSetTemperature") and \
                any(named_kinds(said)) and not said & CLIMATE_WORDS:
            return True
        if intent == "HassBroadcast" and not said & TO_EVERYONE:
            return True            # "text maya that dinner's ready": a message to one person
        if intent == "HassGetWeather" and said & {"thermostat", "@climate"}:
            return True            # "what's the thermostat say": the room's, not the weather
        if intent in ("HassGetCurrentTime", "HassGetWeather") and \
                leading_word(masked) in _TO_PLAY:
            return True            # "play gardeners question time", "the shipping forecast"
        if intent == "HassGetCurrentTime" and any(
                masked[i:i + 2] == ["what", "time"] and masked[i + 2] in ASKS_OF
                and masked[i + 3] not in ("it", "now") for i in range(len(masked) - 3)):
            return True            # "what time is high tide", "what time do we check out"
        return intent in TIMER_INTENTS and bool(MEDIA_ITEMS.intersection(masked)) and \
            not _TIMER_WORDS.intersection(masked)

    def _unsaid(self, intent: str, masked: list[str]) -> bool:
        """What to do is not asked, said, or heard: a negation ("don't turn it off"), a
        reading against the words on/off, "turn" with no way to turn ("turn the floor lamp
        paint": on? pink?), a name alone ("hanging bulb"), or a verb the model never saw
        before what it acts on ("ose the laundry timer": pause? close?)."""
        first, then = masked[0], masked[1] if len(masked) > 1 else ""
        if negated(masked):
            return True            # "don't turn off the lights"
        if intent in ("HassTurnOn", "HassTurnOff") and first == "add":
            return True            # "add the porch lights on": a list's verb (misheard "are")
        said = set(masked)
        turned_on = any(w == "on" and not placed(masked, i) for i, w in enumerate(masked))
        if intent == "HassTurnOn" and "off" in said and not turned_on or \
                intent == "HassTurnOff" and turned_on and "off" not in said:
            return True            # the reading says the opposite of the words
        if intent == "HassTurnOn" and leading_word(masked) in ("the", "it", "its") and \
                not said & (COMMAND_VERBS | OPENING | _SEEING) and all(
                w != "on" or masked[i + 1:i + 2] == ["@name"] or masked[i + 1:i + 3] in
                (["the", "@name"], ["my", "@name"]) for i, w in enumerate(masked)) and \
                "on" in said:
            return True            # "the sun's right on the telly": where, not on
        if intent in ("HassTurnOn", "HassTurnOff") and "turn" in masked and \
                not TURNED.intersection(masked):
            return True            # "turn the floor lamp paint"
        if intent in ("HassTurnOn", "HassTurnOff") and leading_word(masked) in ("set", "change") \
                and not TURNED.intersection(masked):
            return True            # "set the star projector, w": to what?
        if intent in _PLAYER_INTENTS and not said & _PLAYED and said & _NOT_PLAYED:
            return True            # "bedside lamp, pause", "the nursery lights, sound to 10"
        if intent in ("HassTurnOn", "HassTurnOff") and "@name" not in said and \
                not said & (LIGHT_WORDS | TURNED | COMMAND_VERBS | _SEEING):
            return True            # "it's freezing in the sunroom": the lights? the heat?
        if intent in ("HassTurnOn", "HassTurnOff") and len(masked) <= 4 and \
                not said & (TURNED | COMMAND_VERBS | OPENING | CLOSING | _SEEING) and \
                any(w not in self.vocab and not w.startswith("@") for w in masked):
            return True            # "dehumidifier, awn": on? off? (misheard)
        if intent == "HassSetVolumeRelative" and not said & (_PLAYED | _LOUDNESS) and \
                not turned_up_or_down(masked):
            return True            # "it's hammering it down": not the volume
        return all(w.startswith("@") for w in masked) or not (
            first in self.vocab or first.startswith("@") or number_word(first)) and (
            then in DETERMINERS or then.startswith("@"))

    def _fitted(self, top: int, confidence: float, per_intent: np.ndarray, masked: list[str],
                question: bool = False) -> tuple[int, float]:
        """The intent (and its confidence) that fits what the request names, where the
        classifier's best reading does not: a light setting on no light, a cover opened to
        a number, a media player turned up, a cover moved to no position, a vacuum or mower
        turned on."""
        intent, said = self._intents[top], set(masked)
        if not self._listed[top] and ends_in_list(masked):
            # "put lock the barn door on the chores list": an item that sounds like a command
            top = int(np.where(self._listed, per_intent, -1.0).argmax())
            return top, float(per_intent[top])
        if intent == "HassGetState" and not question and leading_word(masked) in COMMAND_VERBS:
            # "lock all the doors", "so um close the skylight": a command, not a question
            top = int(np.where(self._is_action, per_intent, -1.0).argmax())
            return top, float(per_intent[top])
        light, cover = named_kinds(said)
        cover = cover and not light
        number = any(said_number(w) and w != "one" for w in masked) or halfway(masked)
        if intent == "HassLightSet" and not light and (
                cover or said & CLIMATE_WORDS and not said & KELVIN_WORDS):
            # "set the shades to 40 percent", "make the bedroom temperature 20": no light
            top = int(np.where(self._light_set, -1.0, per_intent).argmax())
            return top, float(per_intent[top])
        # the same request read two ways: the confidence is that of either reading
        if intent in ("HassTurnOn", "HassTurnOff") and cover and number:
            moved = "HassSetPosition"          # "raise the blinds to 60": a position
        elif intent in ("HassTurnOn", "HassTurnOff") and cover and not number and \
                bool(said & OPENING) != bool(said & CLOSING):
            # "roll out the awning", "put the blinds down": the words say which way
            moved = "HassTurnOn" if said & OPENING else "HassTurnOff"
        elif intent in ("HassTurnOn", "HassTurnOff") and cover and not number and any(
                follows(masked, [verb, "back"]) for verb in ("pull", "draw", "roll")):
            moved = "HassTurnOn"               # "pull back the lace curtains": open
        elif intent in ("HassTurnOn", "HassTurnOff") and cover and not number and \
                leading_word(masked) in _DRAWING | {"put"} and (
                    [w for w in masked if w not in ("please", "now")][-1:] == ["in"] or
                    _after_name(masked) == "in"):
            moved = "HassTurnOff"              # "bring (put) the awning in": closed
        elif intent == "HassTurnOn" and not cover and follows(masked, ["put", "out"]) and (
                light or "@light" in said):
            moved = "HassTurnOff"              # "put out the big light": off
        elif intent == "HassTurnOn" and not cover and leading_word(masked) == "make" and \
                [w for w in masked if w not in ("please", "now")][-1:] == ["out"]:
            moved = "HassTurnOff"              # "make the ceiling fan out": off
        elif intent == "HassTurnOn" and "@media_player" in said and put_on_player(masked):
            moved = "HassMediaSearchAndPlay"   # "put bluey on the tv": a show, not on
        elif intent == "HassTurnOn" and not cover and not said & _KINDS_SAID and \
                self._colored(masked):
            moved = "HassLightSet"             # "turn the railing strip on the balcony blue"
        elif intent == "HassTurnOn" and light and said & {"close", "shut"}:
            moved = "HassTurnOff"              # "close the light": off (not a cover)
        elif intent in ("HassTurnOn", "HassTurnOff") and turned_up_or_down(masked) and (
                "@media_player" in said or said & MEDIA_WORDS):
            moved = "HassSetVolumeRelative"    # "turn up the radio": louder, not on
        elif intent in ("HassTurnOn", "HassTurnOff") and particle(masked) in ("on", "off") and \
                intent != ("HassTurnOn" if particle(masked) == "on" else "HassTurnOff"):
            # "turn off the lights on the roof terrace": the verb's own word says which
            moved = "HassTurnOn" if particle(masked) == "on" else "HassTurnOff"
        elif intent in ("HassSetVolume", "HassSetVolumeRelative") and number and \
                said & (CLIMATE_WORDS | {"air"}) and not said & _PLAYED:
            moved = "HassClimateSetTemperature"   # "turn the aircon to 26", "turn the air
            # down to seventy six": no player
        elif intent == "HassSetPosition" and said & CLIMATE_WORDS and not cover:
            moved = "HassClimateSetTemperature"   # "lower the thermostat to 18"
        elif intent == "HassSetPosition" and not number:
            moved = max(("HassTurnOn", "HassTurnOff"), key=lambda i: per_intent[self._at[i]])
        elif intent == "HassTurnOn" or leading_word(masked) == "set" and "off" in said:
            # a vacuum turned on, or set off ("set hamish off"): it cleans
            moved = next((STARTED[d] for d in STARTED if f"@{d}" in said), intent)
        else:
            return top, confidence
        if moved == intent or moved not in self._intents:
            return top, confidence
        new = self._at[moved]
        return new, float(per_intent[top] + per_intent[new])

    def _unknown_player(self, masked: list[str]) -> bool:
        """A kind of player said that no player of the home is called ("turn the wireless
        up" where they are the Telly and the Radio; not "pause the tv" with a Kitchen TV,
        nor "the tv show")."""
        called = self._player_words
        return bool(called) and any(
            w in PLAYER_WORDS and w.rstrip("s") not in called and w not in called and
            masked[i + 1:i + 2] not in (["show"], ["shows"], ["series"], ["channel"])
            for i, w in enumerate(masked))

    def _colored(self, masked: list[str]) -> bool:
        """A colour asked for: said last ("turn the strip on the balcony blue") or after "to"
        or "in" (not "it's pitch black in here")."""
        said = [w for w in masked if w not in ("please", "thanks", "now")]
        return any(w in self._colors and (i == len(said) - 1 or said[i - 1] in ("to", "in"))
                   and said[i - 1:i] != ["pitch"] for i, w in enumerate(said))

    def _names_kept(self, top: int, other: int, found: list[Match]) -> bool:
        """Whether the reading with the home's names (top intent ``top``) is kept over one
        without them (``other``): the same request, on a device (entity names are its), or
        an item for one of the home's lists (``found`` names it) that is not its shopping list."""
        intent = self._intents[top]
        if ON_SHOPPING_LIST.get(intent) == self._intents[other] and any(
                m.domain == "todo" and m.value.casefold() != "shopping list" for m in found):
            return True      # "add milk to the before we leave list": that list's, not shopping
        if self._listed[top] and not self._listed[other] and any(m.domain == "todo"
                                                                 for m in found):
            return True      # "delete turn off the spa pool from the before we go list"
        return other == top and "name" in self.intent_slots.get(intent, ()) and \
            intent not in _OWN_NAMES

    def _cut_at_target(self, slots: dict, key: str, allowed: set[str]) -> None:
        """A free text that runs on into where it goes ("frozen on the tv for the kids"):
        cut before "on/in/at [the] <a name or area of the home>", which fills its slot; an
        item, only before its list ("set up the tv in the playroom" is the whole item)."""
        words = str(slots[key]).split()
        for m in self.lists.matches(words):
            if key == "item" and m.domain != "todo":
                continue
            at = m.start - (m.start > 0 and words[m.start - 1] in _OWNED)
            if at > 1 and words[at - 1] in _TO_PLACE:
                cut = at - 1 - (at > 2 and words[at - 2] in _OUT_THERE)  # "out by the pool"
                slots[key] = " ".join(words[:cut])
                if m.slot in allowed and m.slot not in slots:
                    slots[m.slot] = m.value
                return
        played = self._played_on(words) if key == "search_query" else None
        if played and "name" in allowed and "name" not in slots:
            # "play poldark on the tv": the home's one TV, when it has one
            slots[key] = " ".join(words[:played[0]])
            slots["name"] = played[1]

    def _slots(self, intent: str, label: str, text: str, found: list[Match],
               masked: list[str]) -> dict:
        allowed = self.intent_slots.get(intent, set())
        slots: dict[str, Any] = {}
        if intent in self.filler.intents:
            plain = plain_text(spoken_units(masked))
            filled = self.filler.fill_exact(intent, plain)
            need = REQUIRED.get(intent, ())
            if need and not any(k in dict(filled) for k in need):
                filled = self.filler.fill(intent, plain)       # misheard values too
            # only slots the label was trained with: no cover's device class ("at the door")
            # in a request about the lights
            fits = self.label_slots.get(label, allowed)
            slots.update((k, typed(v)) for k, v in filled if k not in ENTITY_SLOTS and k in fits)
            if slots.get("media_class") == "tv show":
                slots["media_class"] = "tv_show"   # Home Assistant's value ("[tv] show")
        if intent == "HassSetVolumeRelative":
            said, step = set(masked), slots.get("volume_step")
            up, down = bool(said & UP), bool(said & DOWN)
            if "too" in said:            # "the tv is too quiet": up; "too loud": down
                up, down = bool(said & DOWN), bool(said & (UP | TOO_LOUD))
            if step is None and up != down:
                slots["volume_step"] = "up" if up else "down"
            elif isinstance(step, (int, float)) and up != down:
                slots["volume_step"] = abs(step) if up else -abs(step)   # the words' direction
        said = set(masked)
        if intent == "HassGetState" and "state" in allowed and "state" not in slots:
            # "is the tower fan running", "did I remember to lock the back door"
            cover = named_kinds(said)[1]
            state = "on" if said & RUNNING else next(
                (v for k, v in STATE_OF_VERB.items() if k in said), None) or (
                cover and ("closed" if "down" in said else "open" if said & {"up", "out"}
                           else None))
            if state:
                slots["state"] = state
        if intent == "HassGetState" and label.endswith("|cover") and \
                not set(slots) & {"device_class", "name"}:
            kind = next((self._cover_classes[w] for w in masked if w in self._cover_classes), None)
            if kind:
                slots["device_class"] = kind     # "are all the shutters down"
        if intent == "HassClimateSetFanMode" and "mode" in masked[:-1]:
            at = masked.index("mode") + 1
            after, then = masked[at], masked[at + 1:at + 2]
            if after.isalpha() and after not in _TO_PLACE | DETERMINERS | {"to", "of", "for",
                                                                         "please", "is"} and \
                    (not then or then[0] in _TO_PLACE | {"please"}):
                slots["fan_mode"] = after            # "fan mode quiet on the heat pump"
        if intent == "HassClimateSetFanMode" and slots.get("fan_mode") in ("on", "to") and \
                masked[-1].isalpha() and masked[-1] not in ("on", "off", "please", "now") and \
                masked[-2:-1] in (["on"], ["to"]):
            slots["fan_mode"] = masked[-1]           # "put the heat pump fan on quiet"
        if intent == "HassSetPosition" and "position" not in slots and halfway(masked):
            slots["position"] = 50               # "open the awning halfway"
        if intent == "HassLightSet" and not set(slots) & {"brightness", "color", "temperature"} \
                and said & (FULL | {"half"}) and "brightness" in said:
            slots["brightness"] = 50 if "half" in said else 100   # "full brightness", "half"
        listed = REQUIRED.get(intent) == ("item",)
        for m in found:
            # (a list request names its list: "add clean the pond filter to chores" is not
            # about the Pond Lights)
            if m.slot in allowed and m.slot not in slots and not (
                    listed and m.slot == "name" and m.domain != "todo") and not (
                    intent in TIMER_INTENTS and m.slot == "name" and m.domain):
                # (a timer is no device: "hold the whitening timer, she needs a rinse" does
                # not pause the Air Con the rinse was heard as)
                slots[m.slot] = m.value
        slots.update(self.wild.extract(label, masked, have=slots))
        for key in FREE_SLOTS:
            if key in slots:
                self._cut_at_target(slots, key, allowed)
        query = str(slots.get("search_query", "")).split()
        if "media_class" in slots and (not said & _KINDS_SAID or query[1:2] == ["of"] and
                                       not said & _KINDS_SAID - {query[0]}):
            del slots["media_class"]   # "play drake": no kind said ("drake" is not "track");
            # "play songs of praise": the kind's word begins a title
        kind = str(slots.get("media_class", ""))
        if kind and len(query) > 1 and query[int(query[0] in DETERMINERS)] in \
                _KIND_SAID_AS.get(kind, ()):
            kind = query[int(query[0] in DETERMINERS)]   # "the song september": track, said so
        for lead in ([query[0], kind] if query[:1] and query[0] in DETERMINERS else [], [kind]):
            if kind and lead and len(query) > len(lead) and query[:len(lead)] == lead:
                slots["search_query"] = " ".join(query[len(lead):])   # "my playlist x": x
                break
        else:
            if kind and len(query) > 1 and query[-1] == kind:
                # "my dinner party playlist", "the road trip playlist"
                start = int(len(query) > 2 and query[0] in DETERMINERS)
                slots["search_query"] = " ".join(query[start:-1])
        query = str(slots.get("search_query", "")).split()
        if slots.get("media_class") == "track" and len(query) > 1 and \
                query[-1] in ("songs", "tracks", "tunes"):
            del slots["media_class"]       # "play old hindi songs": what kind, not one track
        at = int(query[:1] != [] and query[0] in DETERMINERS)
        if len(query) > at + 1 and query[at] in _CLASS_WORDS and "media_class" in allowed \
                and "media_class" not in slots:
            # "put on the playlist national day songs": a playlist, called so
            slots["media_class"] = _CLASS_WORDS[query[at]]
            slots["search_query"] = " ".join(query[at + 1:])
            query = query[at + 1:]
        if len(query) > 1 and query[-1] in PARTICLES and follows(masked, [*query, "on"]):
            slots["search_query"] = " ".join(query[:-1])   # "put on classic rock out on ..."
        played = self._played_on(masked) if intent == "HassMediaSearchAndPlay" and \
            not set(slots) & set(ENTITY_SLOTS) and query[-1:] != masked[-1:] else None
        if played:
            slots["name"] = played[1]  # "play the podcast desert island discs on the radio"
        if intent in TIMER_INTENTS and "timer" in masked and any(
                masked[i:i + 2] in (["a", "minute"], ["a", "second"], ["a", "sec"])
                for i in range(masked.index("timer"), len(masked))):
            # "hold the bread timer a minute": a while, not the timer of one minute
            for key in ("start_minutes", "start_seconds"):
                slots.pop(key, None)
        name = str(slots.get("name", "")).split()
        if intent in TIMER_INTENTS and not found and set(name) & DETERMINERS:
            # "how long until the cookie timer goes off": the cookie timer
            at = max(i for i, w in enumerate(name) if w in DETERMINERS)
            if name[at + 1:]:
                slots["name"] = " ".join(name[at + 1:])
            else:
                del slots["name"]
        if intent in TIMER_INTENTS:
            spoken = set(spoken_units(masked))      # ("a quarter of an hour": 15 minutes)
            for key, units in UNIT_WORDS.items():
                for k in (key, f"start_{key}"):
                    if k in slots and not spoken & units and not (
                            key != "hours" and said & {"half", "divided"}):   # ("1/2 hour")
                        del slots[k]     # "it needs 35 minutes, ... 35 minutes": no hours
        if intent in TIMER_INTENTS and intent != "HassStartTimer" and "name" not in slots \
                and "name" in allowed:
            named = timer_named(masked)      # "pause the timer for the bread"
            if named:
                slots["name"] = named
        if intent == "HassStartTimer" and "name" not in slots:
            call = next((i for i in range(len(masked) - 2) if masked[i] in ("call", "name") and
                         masked[i + 1] == "it"), None)
            called = masked[call + 2:] if call is not None else []
            if called and not any(w.startswith("@") for w in called):
                slots["name"] = " ".join(called)     # "... 15 minutes and call it laundry"
        if intent == "HassStartTimer" and "name" not in slots:
            at = next((i + 1 for i, w in enumerate(masked) if w in ("named", "called") or
                       w == "name" and masked[i - 2:i] == ["with", "the"]), 0)
            end = next((j for j in range(at, len(masked)) if masked[j] in ("for", "and", "please")
                        or said_number(masked[j])), len(masked))
            if at and 0 < end - at <= 3 and not any(w.startswith("@") for w in masked[at:end]):
                slots["name"] = " ".join(masked[at:end])   # "a timer named marinade for 30 ...",
                # "... with the name washing"
        if intent in TIMER_INTENTS and "name" not in slots and "name" in allowed and not found:
            named = timer_named_first(masked)     # "bread timer 40 minutes"
            if named:
                slots["name"] = named
        if intent == "HassBroadcast" and not slots.get("message"):
            message = self._message(text)
            if message:
                slots["message"] = message
        item = str(slots.get("item", "")).split()
        if len(item) == 1 and (said_number(item[0]) or item[0] in NO_ITEM):
            del slots["item"]      # "check no off the list", "check off 10": misheard
        if "search_query" in slots and all(w in DETERMINERS
                                           for w in str(slots["search_query"]).split()):
            del slots["search_query"]   # "play the album": which? (asked back)
        return slots
