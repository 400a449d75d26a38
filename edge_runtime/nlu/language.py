"""Is a request in another language than English? (so it is answered, never acted on)

The understanding is English only: a command in French or German would otherwise be read
as whatever English intent its few shared words suggest. ``other_language(text)`` says
which language a request looks like when at least two of its words (and a third of them)
are common words of that language that are not English words (articles, prepositions,
pronouns, the words for on/off/light/please), or when it is written in a script English
does not use; else "".
"""
from __future__ import annotations

import unicodedata

from .text import normalize_text

# frequent words of each language that English does not have (normalized: apostrophes
# dropped, accents kept)
MARKERS: dict[str, frozenset[str]] = {
    "French": frozenset((
        "le", "la", "les", "de", "en", "du", "des", "et", "est", "une", "dans", "pour", "avec",
        "je", "tu", "il", "nous", "vous", "allume", "allumer", "éteins", "eteins", "éteindre",
        "lumière", "lumiere", "lumières", "cuisine", "salon", "chambre", "plaît", "plait",
        "sil", "sur", "mets", "baisse", "monte", "quelle", "quel", "heure", "minuterie",
        "volet", "volets", "ferme", "ouvre", "musique", "chanson", "suivante", "température")),
    "German": frozenset((
        "der", "das", "und", "ist", "ein", "eine", "einen", "bitte", "schalte", "mach",
        "mache", "licht", "lichter", "küche", "kueche", "wohnzimmer", "schlafzimmer", "im",
        "ich", "nicht", "aus", "ein", "auf", "zu", "wie", "spät", "spaet", "ist", "es",
        "lampe", "stelle", "stell", "prozent", "grad", "musik", "lauter", "leiser", "timer",
        "minuten", "für", "fuer", "den", "dem", "mir", "wetter", "heute")),
    "Spanish": frozenset((
        "el", "los", "las", "de", "en", "y", "por", "favor", "enciende", "apaga", "luz", "luces",
        "cocina",
        "que", "una", "del", "sala", "dormitorio", "pon", "sube", "baja", "hora", "es",
        "está", "esta", "minutos", "temporizador", "música", "musica", "tiempo", "hace")),
    "Italian": frozenset((
        "il", "lo", "gli", "della", "delle", "accendi", "spegni", "luce", "luci", "cucina",
        "soggiorno", "camera", "per", "favore", "che", "ore", "sono", "alza", "abbassa")),
    "Dutch": frozenset((
        "het", "een", "zet", "aan", "uit", "lamp", "keuken", "woonkamer", "slaapkamer",
        "alsjeblieft", "graag", "licht", "hoe", "laat", "is", "de", "van", "mijn")),
}
# words that are English too (never counted as a marker)
_ENGLISH = frozenset(("a", "an", "the", "is", "in", "on", "to", "it", "me", "die", "den",
                      "lamp", "timer", "am", "was", "so", "man", "also", "bald", "rot",
                      "camera", "sala", "salon", "volet", "esta", "grad", "per", "dem",
                      "mir", "zu", "es", "aus", "ore", "sono", "lo", "sur", "monte", "ferme"))
_MIN_MARKERS = 2
_MIN_SHARE = 0.34


def _script_is_latin(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    latin = sum("LATIN" in unicodedata.name(ch, "") for ch in letters)
    return not letters or latin >= 0.5 * len(letters)


def other_language(text: str) -> str:
    """The language ``text`` looks written in when it is not English ("" for English, or
    when unsure); "another language" for a script other than Latin."""
    if not _script_is_latin(text):
        return "another language"
    words = normalize_text(text).split()
    if not words:
        return ""
    best, count = "", 0
    for language, markers in MARKERS.items():
        n = sum(w in markers and w not in _ENGLISH for w in words)
        if n > count:
            best, count = language, n
    if count >= _MIN_MARKERS and count >= _MIN_SHARE * len(words):
        return best
    return ""
