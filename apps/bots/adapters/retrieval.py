"""Offline retrieval over a bot's knowledge-base documents: Okapi BM25 over paragraphs.

Deterministic and dependency-free, so the built-in demo bot answers the same way on every
machine, and the openai adapter can execute a bot's knowledge-base search tool without a vector
store."""

import math
import re
from collections import Counter
from dataclasses import dataclass

from apps.core.text import RETRIEVAL_V1

from .base import BotDocument

# The bot's own choice: no judge reads it, so a better search may pick another version freely.
TEXT = RETRIEVAL_V1


@dataclass(frozen=True)
class Passage:
    document: BotDocument
    text: str
    score: float


class PassageIndex:
    k1 = 1.5
    b = 0.75

    def __init__(self, documents: tuple[BotDocument, ...]):
        self.passages: list[tuple[BotDocument, str, Counter]] = []
        for doc in documents:
            for para in (p.strip() for p in re.split(r"\n\s*\n", doc.text)):
                if para:
                    self.passages.append((doc, para, Counter(TEXT.tokens(f"{doc.title} {para}"))))
        self.avg_len = (sum(sum(c.values()) for *_, c in self.passages) / len(self.passages)) if self.passages else 0
        df = Counter(term for *_, counts in self.passages for term in counts)
        n = len(self.passages)
        self.idf = {term: math.log(1 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}

    def search(self, query: str, limit: int = 3) -> list[Passage]:
        terms = set(TEXT.tokens(query))
        scored = []
        for doc, text, counts in self.passages:
            length = sum(counts.values())
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += (
                        self.idf[term]
                        * tf
                        * (self.k1 + 1)
                        / (tf + self.k1 * (1 - self.b + self.b * length / self.avg_len))
                    )
            if score > 0:
                scored.append(Passage(doc, text, round(score, 4)))
        scored.sort(key=lambda p: (-p.score, p.document.title, p.text))
        return scored[:limit]
