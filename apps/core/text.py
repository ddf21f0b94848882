"""Tokenising, stop words and stemming, as frozen named versions.

A judge or metric that calls itself `heuristic:v1` or `lexical:v1` must score a text the same way
for as long as that label exists, so each one pins a `TextVersion` from here (`TEXT = text.LEXICAL_V1`)
instead of borrowing another module's tokenizer. A version is never edited once a score depends on
it: different tokenising is a new version, and the judge that moves to it changes its label.

The demo bot's retrieval pins a version of its own (`RETRIEVAL_V1`), so tuning how the bot searches
its knowledge base cannot move a judge's verdict (tests/runs/test_text_versions.py proves it).

The versions differ because the texts they read differ, and every existing score depends on them:
- AGENTIC_V1: tool names, arguments and short answers of an agent session (ASCII words, a light
  plural/tense stemmer, a stop list that keeps resource and action words).
- CRITERIA_V1: a V1 answer against its expected answer (apps.runs.judging.answers; the criteria
  and rules judge used it until issue 20) (words with an apostrophe suffix kept whole, one-letter
  words dropped, a stemmer that folds -ation/-ment/-ly).
- LEXICAL_V1: the TRACE metrics over any language (NFKC + casefold, Unicode `\\w+`, 132 English
  stop words, no stemming), as docs/rag.md defines them.
- RETRIEVAL_V1: the demo bot's BM25 search; starts out tokenising as CRITERIA_V1 does, unstemmed.
"""

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TextVersion:
    name: str
    word: re.Pattern[str]
    fold: Callable[[str], str]
    stopwords: frozenset[str]
    stem: Callable[[str], str]
    # Tokens shorter than this are dropped with the stop words.
    min_length: int = 1

    def words(self, text: str) -> list[str]:
        """Every token of the folded text, in order, stop words included, unstemmed."""
        return self.word.findall(self.fold(text))

    def tokens(self, text: str) -> list[str]:
        """The content tokens, in order: words that are neither stop words nor too short, unstemmed."""
        return [w for w in self.words(text) if w not in self.stopwords and len(w) >= self.min_length]


def _unstemmed(word: str) -> str:
    return word


def light_stem(word: str) -> str:
    """Strips one of -ing, -ed, -es, -s, keeping at least three letters ("clusters" → "cluster")."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ed",
    "ally",
    "al",
    "ly",
    "es",
    "s",
    "e",
)


def suffix_stem(word: str) -> str:
    # Enough folding for "monthly"/"month", "accrual"/"accrue", "carries"/"carry" to meet.
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _nfkc_casefold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


AGENTIC_STOPWORDS = frozenset(
    "a an the in on of for to and or with all my our me we is are be it its at by from please can you i what "
    "which did do does last this that their them named called k8s".split()
)

CHAT_STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from has have how i if in is it its me my of on or our "
    "please so than that the their them then there these they this to us was we what when where which who "
    "why will with you your hi hello thanks thank need know tell about".split()
)

ENGLISH_STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once
only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
s t d ll m re ve
""".split()
)

AGENTIC_V1 = TextVersion(
    name="agentic:v1", word=re.compile(r"[a-z0-9]+"), fold=str.lower, stopwords=AGENTIC_STOPWORDS, stem=light_stem
)
CRITERIA_V1 = TextVersion(
    name="criteria:v1",
    word=re.compile(r"[a-z0-9]+(?:['’][a-z]+)?"),
    fold=str.lower,
    stopwords=CHAT_STOPWORDS,
    stem=suffix_stem,
    min_length=2,
)
LEXICAL_V1 = TextVersion(
    name="lexical:v1", word=re.compile(r"\w+"), fold=_nfkc_casefold, stopwords=ENGLISH_STOPWORDS, stem=_unstemmed
)
RETRIEVAL_V1 = replace(CRITERIA_V1, name="retrieval:v1", stem=_unstemmed)
