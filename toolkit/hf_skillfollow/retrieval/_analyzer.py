"""A pure-Python reproduction of Lucene's EnglishAnalyzer (as Anserini configures it).

Chain: StandardTokenizer (UAX#29 word boundaries, tokens chopped at 255 chars) ->
EnglishPossessiveFilter -> LowerCaseFilter -> StopFilter (Lucene's 33 English stop words) ->
PorterStemFilter (Lucene's own Porter port, see `_porter`).

The tokenizer follows the UAX#29 rules that matter for English prose, code and maths:
letters and digits join (WB5, WB8-WB10), `_` and other connector punctuation join anything
(WB13a/b), letters join across `'` `’` `.` `:` (WB6/7: "don't", "e.g", "foo:bar"), digits
across `.` `,` `;` `'` (WB11/12: "3.14", "1,000"). Han and Hiragana characters are one token
each, emoji are tokens, everything else separates. Differences from Lucene's generated
scanner are confined to scripts the shipped pools do not use (Hebrew quote rules, Katakana
joining, emoji ZWJ sequences).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from hf_skillfollow.retrieval._porter import porter_stem

MAX_TOKEN_LENGTH = 255

#: org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
ENGLISH_STOP_WORDS: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
})  # fmt: skip

_MID_LETTER = frozenset("\u003a\u00b7\u0387\u05f4\u2027\ufe13\ufe55\uff1a")
_MID_NUM_LET = frozenset("\u002e\u2018\u2019\u2024\ufe52\uff07\uff0e\u0027")
_MID_NUM = frozenset(
    "\u002c\u003b\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
)
_POSSESSIVE_QUOTES = ("'", "\u2019", "\uff07")

# Word-break classes used by the scanner.
_LETTER, _NUMERIC, _EXTEND_NUM_LET, _EXTEND = "L", "N", "X", "E"
_MID_L, _MID_NL, _MID_N = "ML", "MNL", "MN"
_SINGLE, _SE_ASIAN, _KATAKANA, _OTHER = "S", "SA", "K", "O"
_JOINERS = (_LETTER, _NUMERIC, _EXTEND_NUM_LET, _KATAKANA)


# Code-point ranges measured against Lucene 9.9.1's StandardTokenizer (Anserini 1.7.1):
# symbols it emits as one-character tokens (emoji and CJK radicals) ...
_SINGLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2194, 0x2199),
    (0x21A9, 0x21AA),
    (0x231A, 0x231B),
    (0x2328, 0x2328),
    (0x2388, 0x2388),
    (0x23CF, 0x23CF),
    (0x23E9, 0x23F3),
    (0x23F8, 0x23FA),
    (0x25AA, 0x25AB),
    (0x25B6, 0x25B6),
    (0x25C0, 0x25C0),
    (0x25FB, 0x25FE),
    (0x2600, 0x2605),
    (0x2607, 0x2612),
    (0x2614, 0x2685),
    (0x2690, 0x2705),
    (0x2708, 0x2712),
    (0x2714, 0x2714),
    (0x2716, 0x2716),
    (0x271D, 0x271D),
    (0x2721, 0x2721),
    (0x2728, 0x2728),
    (0x2733, 0x2734),
    (0x2744, 0x2744),
    (0x2747, 0x2747),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2763, 0x2767),
    (0x2795, 0x2797),
    (0x27A1, 0x27A1),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2934, 0x2935),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x2E80, 0x2FD5),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3040, 0x309A),
    (0x1F000, 0x1F0FF),
    (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F1E5),
    (0x1F200, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F8FF),
    (0x1F90C, 0x1FAFF),
)
# ... symbols it treats as letters (UAX#29 ALetter although not Unicode letters) ...
_LETTER_RANGES: tuple[tuple[int, int], ...] = (
    (0x02C2, 0x02C5),
    (0x02D2, 0x02D7),
    (0x02DE, 0x02DF),
    (0x02ED, 0x02ED),
    (0x02EF, 0x02FF),
    (0x055B, 0x055C),
    (0x055E, 0x055E),
    (0x05F3, 0x05F3),
    (0x24B6, 0x24E9),
)
# ... and South-East Asian scripts (Thai, Lao, Myanmar, Khmer, Tai), whose runs are one token.
_SE_ASIAN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x1950, 0x19DF),
    (0x1A20, 0x1AAF),
    (0xAA60, 0xAADF),
)
_KATAKANA_RANGES: tuple[tuple[int, int], ...] = (
    (0x309B, 0x309C),
    (0x30A0, 0x30FA),
    (0x30FC, 0x30FF),
    (0x31F0, 0x31FF),
    (0xFF66, 0xFF9F),
)


def _in(cp: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def _non_ascii_class(ch: str, cp: int) -> str:
    if _in(cp, _SINGLE_RANGES) or unicodedata.name(ch, "").startswith("CJK UNIFIED IDEOGRAPH"):
        return _SINGLE
    if _in(cp, _SE_ASIAN_RANGES):
        return _SE_ASIAN if unicodedata.category(ch)[0] in "LM" else _OTHER
    if _in(cp, _KATAKANA_RANGES):
        return _KATAKANA
    if _in(cp, _LETTER_RANGES):
        return _LETTER
    cat = unicodedata.category(ch)
    if cat == "Nd":
        return _NUMERIC
    if cat[0] == "L" or cat == "Nl":
        return _LETTER
    if cat == "Pc":
        return _EXTEND_NUM_LET
    # ZERO WIDTH SPACE is Cf but not Format in UAX#29: it separates.
    if cat in ("Mn", "Mc", "Me") or (cat == "Cf" and ch != "\u200b"):
        return _EXTEND
    return _OTHER


@lru_cache(maxsize=4096)
def _wb_class(ch: str) -> str:
    if ch in _MID_NUM_LET:
        return _MID_NL
    if ch in _MID_LETTER:
        return _MID_L
    if ch in _MID_NUM:
        return _MID_N
    cp = ord(ch)
    if cp >= 0x80:
        return _non_ascii_class(ch, cp)
    if ch.isalpha():
        return _LETTER
    if ch.isdigit():
        return _NUMERIC
    return _EXTEND_NUM_LET if ch == "_" else _OTHER


def _skip_extend(classes: list[str], i: int) -> int:
    # WB4: Extend and Format characters stick to the character before them.
    while i < len(classes) and classes[i] == _EXTEND:
        i += 1
    return i


def _joins(prev: str, cls: str) -> bool:
    """WB5, WB8-WB10, WB13, WB13a/b: may `cls` directly follow `prev` inside a word?"""
    if _EXTEND_NUM_LET in (prev, cls):
        return True
    if prev == _KATAKANA or cls == _KATAKANA:
        return prev == cls
    return True


def _joins_mid(prev: str, mid: str) -> str | None:
    """The class that must follow `prev mid` for WB6/7 or WB11/12 to join, else None."""
    if prev == _LETTER and mid in (_MID_L, _MID_NL):
        return _LETTER
    if prev == _NUMERIC and mid in (_MID_N, _MID_NL):
        return _NUMERIC
    return None


def _word_end(classes: list[str], start: int) -> int:
    """End (exclusive) of the word segment starting at `start` (a joiner class)."""
    prev = classes[start]
    i = _skip_extend(classes, start + 1)
    while i < len(classes):
        cls = classes[i]
        if cls in _JOINERS:
            if not _joins(prev, cls):
                break
            prev, i = cls, _skip_extend(classes, i + 1)
            continue
        need = _joins_mid(prev, cls)
        after = _skip_extend(classes, i + 1)
        if need is None or after >= len(classes) or classes[after] != need:
            break
        prev, i = need, _skip_extend(classes, after + 1)
    return i


def _run_end(classes: list[str], start: int, cls: str) -> int:
    i = start
    while i < len(classes) and classes[i] in (cls, _EXTEND):
        i += 1
    return i


def _chop(token: str) -> list[str]:
    # Lucene splits (does not drop) tokens longer than maxTokenLength.
    return [token[i : i + MAX_TOKEN_LENGTH] for i in range(0, len(token), MAX_TOKEN_LENGTH)]


def standard_tokenize(text: str) -> list[str]:
    """Tokens of `text` as Lucene's StandardTokenizer emits them (case preserved)."""
    classes = [_wb_class(ch) for ch in text]
    tokens: list[str] = []
    i = 0
    while i < len(text):
        cls = classes[i]
        if cls == _SINGLE:
            end = _skip_extend(classes, i + 1)
            tokens.append(text[i:end])
        elif cls == _SE_ASIAN:
            end = _run_end(classes, i, cls)
            tokens.extend(_chop(text[i:end]))
        elif cls in _JOINERS:
            end = _word_end(classes, i)
            # A run of connector punctuation alone ("__") is not a word.
            if any(c in (_LETTER, _NUMERIC, _KATAKANA) for c in classes[i:end]):
                tokens.extend(_chop(text[i:end]))
        else:
            end = i + 1
        i = end
    return tokens


def _strip_possessive(token: str) -> str:
    if len(token) >= 2 and token[-2] in _POSSESSIVE_QUOTES and token[-1] in ("s", "S"):
        return token[:-2]
    return token


def _lower(token: str) -> str:
    # Java lowercases code point by code point: no final-sigma rule, and "İ" becomes "i".
    if token.isascii():
        return token.lower()
    return "".join(ch.lower()[0] for ch in token)


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    return porter_stem(token)


def analyze(text: str) -> list[str]:
    """Terms Lucene's EnglishAnalyzer (porter stemming, default stop set) indexes for `text`."""
    terms: list[str] = []
    for token in standard_tokenize(text):
        term = _lower(_strip_possessive(token))
        if term and term not in ENGLISH_STOP_WORDS:
            terms.append(_stem(term))
    return terms
