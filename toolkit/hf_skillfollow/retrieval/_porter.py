"""Lucene's `PorterStemmer`, ported line for line.

Snowball's "porter" (PyStemmer) is not a drop-in: Lucene's Java port keeps the reference C
version's departures ("logi" -> "log", "bli" -> "ble") and undoubles every final double
consonant except l/s/z ("grokking" -> "grok"). Measured against Anserini's analyzer on 176k
words, Snowball disagrees on hundreds of them; this port on none (tests/test_retrieval_parity.py).
"""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


class _Word:
    """Mutable state of one stemming pass; names (b, j, k, k0) follow the Java original."""

    __slots__ = ("b", "j", "k")

    def __init__(self, word: str) -> None:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0

    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in _VOWELS:
            return False
        if ch == "y":
            return True if i == 0 else not self.cons(i - 1)
        return True

    def m(self) -> int:
        """Number of consonant-vowel sequences in b[0..j]."""
        n, i, j = 0, 0, self.j
        while True:
            if i > j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def doublec(self, j: int) -> bool:
        return j >= 1 and self.b[j] == self.b[j - 1] and self.cons(j)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in ("w", "x", "y")

    def ends(self, s: str) -> bool:
        o = self.k - len(s) + 1
        if o < 0 or "".join(self.b[o : self.k + 1]) != s:
            return False
        self.j = self.k - len(s)
        return True

    def setto(self, s: str) -> None:
        o = self.j + 1
        self.b[o:] = list(s)
        self.k = self.j + len(s)

    def r(self, s: str) -> None:
        if self.m() > 0:
            self.setto(s)

    def text(self) -> str:
        return "".join(self.b[: self.k + 1])


def _step1(w: _Word) -> None:
    # plurals, then -eed / -ed / -ing
    if w.b[w.k] == "s":
        if w.ends("sses"):
            w.k -= 2
        elif w.ends("ies"):
            w.setto("i")
        elif w.b[w.k - 1] != "s":
            w.k -= 1
    if w.ends("eed"):
        if w.m() > 0:
            w.k -= 1
    elif (w.ends("ed") or w.ends("ing")) and w.vowel_in_stem():
        w.k = w.j
        if w.ends("at"):
            w.setto("ate")
        elif w.ends("bl"):
            w.setto("ble")
        elif w.ends("iz"):
            w.setto("ize")
        elif w.doublec(w.k):
            ch = w.b[w.k]
            w.k -= 1
            if ch in ("l", "s", "z"):
                w.k += 1
        elif w.m() == 1 and w.cvc(w.k):
            w.setto("e")


def _step2(w: _Word) -> None:
    # terminal y -> i when the stem has another vowel
    if w.ends("y") and w.vowel_in_stem():
        w.b[w.k] = "i"


def _first_match(w: _Word, rules: tuple[tuple[str, str], ...]) -> None:
    for suffix, replacement in rules:
        if w.ends(suffix):
            w.r(replacement)
            return


_STEP3: dict[str, tuple[tuple[str, str], ...]] = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
    "g": (("logi", "log"),),
}

_STEP4: dict[str, tuple[tuple[str, str], ...]] = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}

_STEP5: dict[str, tuple[str, ...]] = {
    "a": ("al",),
    "c": ("ance", "ence"),
    "e": ("er",),
    "i": ("ic",),
    "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"),
    "s": ("ism",),
    "t": ("ate", "iti"),
    "u": ("ous",),
    "v": ("ive",),
    "z": ("ize",),
}


def _step3(w: _Word) -> None:
    if w.k == 0:
        return
    _first_match(w, _STEP3.get(w.b[w.k - 1], ()))


def _step4(w: _Word) -> None:
    _first_match(w, _STEP4.get(w.b[w.k], ()))


def _step5_matches(w: _Word) -> bool:
    key = w.b[w.k - 1]
    if key == "o":
        if w.ends("ion") and w.j >= 0 and w.b[w.j] in ("s", "t"):
            return True
        return w.ends("ou")
    return any(w.ends(suffix) for suffix in _STEP5.get(key, ()))


def _step5(w: _Word) -> None:
    # -ant, -ence, ... in context <c>vcvc<v>
    if w.k == 0:
        return
    if _step5_matches(w) and w.m() > 1:
        w.k = w.j


def _step6(w: _Word) -> None:
    # final -e, and -ll -> -l, when m() > 1
    w.j = w.k
    if w.b[w.k] == "e":
        a = w.m()
        if a > 1 or (a == 1 and not w.cvc(w.k - 1)):
            w.k -= 1
    if w.b[w.k] == "l" and w.doublec(w.k) and w.m() > 1:
        w.k -= 1


def porter_stem(word: str) -> str:
    """Stem `word` exactly as Lucene's PorterStemmer does (words of <= 2 characters unchanged)."""
    if len(word) <= 2:
        return word
    w = _Word(word)
    for step in (_step1, _step2, _step3, _step4, _step5, _step6):
        step(w)
    return w.text()
