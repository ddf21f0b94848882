"""The deterministic `heuristic:v1` judge of success criteria and rubric rules: the offline judge.

It answers only what it can check mechanically, and says in its reasoning which check it made:
- a tool used or not used (the tool log), a hand-off to a person (or none);
- a knowledge-base look-up, when the criterion asks for a look-up and nothing more;
- key terms listed in double quotes, present in an assistant reply (not negated in their clause,
  not only inside a quote of the user's words, not in a reply that refuses), or absent;
- length limits (sentences, words) and format (a bulleted or numbered list, a link, ending with a
  question).
A criterion is a shape or several joined by "and"; anything else, even partly, is `skipped` with a
reasoning that starts "needs an LLM judge": checking one part of it would pass it by proxy. A
rubric rule passes only when every one of its conditions is checked and holds; a checked condition
that breaks it fails it; otherwise it is skipped. docs/offline-judge.md lists the shapes."""

import re
from dataclasses import dataclass

from .types import JUDGE_HEURISTIC, Transcript, Verdict

NEEDS_LLM = "needs an LLM judge"


@dataclass(frozen=True)
class Check:
    """A shape the judge recognised and checked: whether it holds, and what it looked at."""

    holds: bool
    what: str


@dataclass(frozen=True)
class Unchecked:
    """Text the judge cannot reduce to a check, and why."""

    why: str


# -- Parsing a criterion or condition -------------------------------------------------------------------------------

QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|‘([^’]+)’|(?<![\w\'])\'([^\']+)\'(?![\w\'])')
TERM = r"\x01\d+\x02"
TERM_LIST = rf"(?P<terms>{TERM}(?:\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+){TERM})*)"
SUBJECT = re.compile(
    r"^(?:the\s+)?(?:agent|bot|assistant|chatbot|response|answer|reply|model)(?:'s\s+(?:answer|reply|"
    r"response))?\s+|^(?:it|they)\s+"
)
MODAL = r"(?:should\s+|must\s+|always\s+)?"
NEG = (
    r"(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|never|should\s+not|shouldn't|must\s+not|mustn't|"
    r"will\s+not|won't|is\s+not|isn't)"
)
NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
NUMBER = r"(?P<n>\d+|" + "|".join(NUMBER_WORDS) + r")"

TOOL_VERB = r"(?:uses?|calls?|invokes?|runs?|triggers?|(?:makes?\s+)?(?:a\s+)?calls?\s+to)"
TOOL = r"(?:the\s+)?(?:tool\s+)?(?P<tool>.+?)(?:\s+tool)?"
TOOL_SHAPES = [
    (True, re.compile(rf"^{MODAL}{TOOL_VERB}\s+{TOOL}(?:\s+at\s+least\s+once)?$")),
    (True, re.compile(rf"^{TOOL}\s+is\s+(?:called|used|invoked)$")),
    (False, re.compile(rf"^{NEG}\s+(?:use|call|invoke|run|trigger)s?\s+{TOOL}$")),
    (False, re.compile(rf"^{TOOL}\s+is\s+(?:not|never)\s+(?:called|used|invoked)$")),
]

HANDOFF_OBJECT = r"(?:(?:the\s+)?(?:conversation|chat|employee|user|customer|caller|request)\s+|it\s+|them\s+)?"
HANDOFF_TARGET = (
    r"(?:to\s+(?:a\s+|an\s+|the\s+)?(?:live\s+(?:agent|person|chat)|human(?:\s+agent)?|real\s+person|"
    r"person|representative|colleague|support\s+agent|live\s+support))"
)
HANDOFF_ACT = (
    rf"(?:hands?\s+{HANDOFF_OBJECT}(?:off|over)(?:\s+{HANDOFF_TARGET})?|"
    rf"hands?\s+{HANDOFF_OBJECT}{HANDOFF_TARGET}|"
    rf"(?:transfers?|escalates?)\s+{HANDOFF_OBJECT}{HANDOFF_TARGET}|escalates?)"
)
HANDOFF_SHAPES = [
    (True, re.compile(rf"^{MODAL}{HANDOFF_ACT}$")),
    (True, re.compile(r"^(?:a\s+)?hand\s+off\s+(?:happens|occurs|takes\s+place)$")),
    (False, re.compile(rf"^{NEG}\s+{HANDOFF_ACT}$")),
]

TERM_VERB = (
    r"(?:mentions?|says?|states?|includes?|contains?|gives?|tells\s+(?:the\s+)?(?:user|employee|customer)|"
    r"answers?\s+with|replies\s+with|uses?)"
)
TERM_NOUN = r"(?:(?:the\s+)?(?:key\s+)?(?:words?|phrases?|terms?|figures?|numbers?)\s+)?"
TERM_SHAPES = [
    (True, re.compile(rf"^{MODAL}{TERM_VERB}\s+{TERM_NOUN}{TERM_LIST}$")),
    (False, re.compile(rf"^{NEG}\s+(?:mention|say|state|include|contain|use|give)s?\s+{TERM_NOUN}{TERM_LIST}$")),
]

KB = r"(?:the\s+)?(?:knowledge[\s-]*base|kb|handbook|documentation|docs)"
LOOKUP_VERB = r"(?:searches|search|looks?\s+up|consults?|queries|query|checks?)"
LOOKUP_SHAPES = [
    # (expect a look-up, where the listed terms must be: None, "arguments" or "result")
    (True, None, re.compile(rf"^{MODAL}{LOOKUP_VERB}\s+{KB}$|^{MODAL}looks?\s+(?:it\s+|something\s+)?up\s+in\s+{KB}$")),
    (True, "result", re.compile(rf"^{MODAL}retrieves?\s+(?:results\s+|(?:a\s+)?passages?\s+)?from\s+{KB}$")),
    (True, "arguments", re.compile(rf"^{MODAL}{LOOKUP_VERB}\s+{KB}\s+for\s+{TERM_LIST}$")),
    (True, "result", re.compile(rf"^{MODAL}retrieves?\s+{TERM_LIST}\s+from\s+{KB}$")),
    (False, None, re.compile(rf"^{NEG}\s+(?:search(?:es)?|looks?\s+up|consults?|query|queries|checks?)\s+{KB}$")),
]

LIMIT_OPS = {
    "under": "<",
    "fewer than": "<",
    "less than": "<",
    "at most": "<=",
    "no more than": "<=",
    "a maximum of": "<=",
    "maximum of": "<=",
    "max": "<=",
    "at least": ">=",
    "no fewer than": ">=",
    "no less than": ">=",
    "more than": ">",
    "exactly": "==",
}
LIMIT_OP = r"(?P<op>" + "|".join(sorted((re.escape(op) for op in LIMIT_OPS), key=len, reverse=True)) + ")"
LENGTH_VERB = (
    r"(?:answers?|replies|reply|responds?|is|are|has|have|stays?|"
    r"keeps?\s+(?:it|each\s+reply|answers|replies)|uses?|contains?|is\s+written)"
)
LENGTH_SHAPES = [
    re.compile(
        rf"^{MODAL}{LENGTH_VERB}\s+(?:in\s+|within\s+|to\s+)?{LIMIT_OP}\s+{NUMBER}\s+(?P<unit>sentences?|words?)"
        r"(?:\s+long|\s+each|\s+per\s+reply)?$"
    ),
    re.compile(rf"^{MODAL}{LENGTH_VERB}\s+in\s+(?P<single>one|a\s+single)\s+(?P<unit>sentence)$"),
]

LIST_KIND = r"(?P<kind>bulleted|bullet(?:-?\s*point)?|numbered)"
FORMAT_SHAPES = [
    (
        "list",
        True,
        re.compile(
            rf"^{MODAL}(?:uses?|gives?|includes?|contains?|answers?\s+(?:with|in)|formats?\s+"
            rf"(?:it|the\s+answer)\s+as)\s+(?:a\s+)?{LIST_KIND}\s+list$"
        ),
    ),
    ("list", True, re.compile(rf"^{MODAL}(?:uses?|answers?\s+(?:with|in))\s+(?P<kind>bullet)\s+points$")),
    ("list", False, re.compile(rf"^{NEG}\s+(?:use|give|include|contain)\s+(?:a\s+|any\s+)?{LIST_KIND}\s+lists?$")),
    (
        "link",
        True,
        re.compile(
            rf"^{MODAL}(?:includes?|contains?|gives?|provides?|shares?|has)\s+"
            r"(?:a|an|at\s+least\s+one)\s+(?:link|url|hyperlink|web\s+address)$"
        ),
    ),
    (
        "link",
        False,
        re.compile(
            rf"^{NEG}\s+(?:include|contain|give|provide|share|have)\s+(?:a|an|any)\s+"
            r"(?:links?|urls?|hyperlinks?|web\s+address(?:es)?)$"
        ),
    ),
    (
        "question",
        True,
        re.compile(
            rf"^{MODAL}ends?\s+(?:its\s+(?:last\s+)?(?:reply|answer)\s+)?with\s+a\s+"
            r"(?:(?:follow-up|clarifying)\s+)?question$"
        ),
    ),
]

SPLIT = re.compile(r"\s*;\s*|\s*,?\s+and\s+(?:then\s+)?|\s*,\s+then\s+")
FACT_LIKE = re.compile(r"\d|\$|%")
LINK = re.compile(r"https?://\S+|\bwww\.\S+|\[[^\]]+\]\([^)\s]+\)", re.I)


def _normalise(text: str) -> str:
    text = text.replace("\u00a0", " ").replace("`", "").replace("’", "'").strip()
    text = re.sub(r"\bhand-off\b|\bhandoff\b", "hand off", text, flags=re.I)
    text = re.sub(r"\bhands-off\b", "hands off", text, flags=re.I)
    return re.sub(r"\s+", " ", text)


def _template(text: str) -> tuple[str, list[str]]:
    """The text in lower case with each quoted term replaced by a placeholder, and the terms."""
    terms: list[str] = []

    def hold(match: re.Match) -> str:
        terms.append(next(g for g in match.groups() if g is not None).strip())
        return f"\x01{len(terms) - 1}\x02"

    held = QUOTED.sub(hold, _normalise(text))
    return re.sub(r"[.!]+$", "", held.lower()).strip(), terms


def _parts(template: str) -> list[str]:
    """A template split into the parts joined by "and" or ";", a list of terms kept whole."""
    parts: list[str] = []
    for piece in SPLIT.split(template):
        if parts and (re.match(TERM, piece) or not piece):
            parts[-1] += f" and {piece}"
        else:
            parts.append(piece)
    return parts


def _subjectless(part: str) -> list[str]:
    stripped = SUBJECT.sub("", part, count=1)
    return [part, stripped] if stripped != part else [part]


def _term_list(group: str, terms: list[str]) -> tuple[list[str], bool] | None:
    """(terms, any_of) of a TERM_LIST match; None when "and" and "or" are mixed (ambiguous)."""
    listed = [terms[int(i)] for i in re.findall(r"\x01(\d+)\x02", group)]
    joiners = set(re.findall(r"\b(and|or)\b", re.sub(TERM, " ", group)))
    if joiners == {"and", "or"}:
        return None
    return listed, joiners == {"or"}


# -- Reading the transcript ------------------------------------------------------------------------------------------

NEGATION = re.compile(
    r"\b(?:not|no|never|none|nor|neither|cannot|can't|won't|without|nothing|nobody|"
    r"false|untrue|incorrect|wrong|myth|instead\s+of|rather\s+than|no\s+longer)\b|n't\b|"
    r"\b(?:dont|doesnt|isnt|arent|wont|cant|didnt|wasnt|werent)\b",
    re.I,
)
# Phrases with a negative word that negate nothing in the clause ("no more than 5 days carry over").
NOT_NEGATION = re.compile(r"\b(?:no\s+(?:more|fewer|less|later|earlier)\s+than|not\s+only|no\s+matter)\b", re.I)
# Clauses end at sentence punctuation and at a comma before a contrast ("15 days, not 20"); a term
# after "but" or "whereas" is read from there ("not 20 days but 15 days"), one before it with the
# whole clause ("15 days, but no longer").
CLAUSE_END = re.compile(r"[!?;\n]|\.(?!\d)|:(?!\d)|,(?=\s*(?:not|rather\s+than|instead\s+of)\b)", re.I)
CONTRAST = re.compile(r"\b(?:but|whereas)\b", re.I)
# Words that make a clause other than a statement of the term ("whether you accrue 15 days").
NOT_ASSERTED = re.compile(r"\bwhether\b", re.I)
SENTENCE_END = re.compile(r"[!?;\n]|\.(?!\d)|:(?!\d)")
ATTRIBUTION = re.compile(
    r"\b(?:you\s+asked|you're\s+asking|you\s+are\s+asking|your\s+question|you\s+wrote|you\s+said|"
    r"you\s+mentioned|you\s+want\s+to\s+know|you're\s+wondering|you\s+are\s+wondering|"
    r"you\s+wonder|you'd\s+like\s+to\s+know|you\s+would\s+like\s+to\s+know)\b",
    re.I,
)
REPLY_QUOTE = re.compile(r'"([^"]+)"|“([^”]+)”|«([^»]+)»|(?<![\w\'])\'([^\']+)\'(?![\w\'])')
REFUSAL = re.compile(
    r"\b(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+(?:can\s*not|can't|cannot|unable\s+to|not\s+able\s+to|won't|will\s+not|"
    r"must\s+decline\s+to|am\s+not\s+allowed\s+to|not\s+allowed\s+to|not\s+permitted\s+to)\s+"
    r"(?:help|assist|answer|provide|share|discuss|tell|give|comment|respond|advise|disclose|do\s+that)\b|"
    r"\b(?:i|we)\s+(?:must|have\s+to)\s+decline\b|"
    r"\bi(?:'m|\s+am)\s+(?:sorry|afraid),?\s+(?:but\s+)?(?:i|we)\s+(?:can't|cannot|can\s+not|won't|am\s+unable|"
    r"'m\s+unable|am\s+not\s+able|'m\s+not\s+able)\b|"
    r"\b(?:that's|that\s+is)\s+not\s+something\s+(?:i|we)\s+can\b|"
    r"\bi\s+(?:don't|do\s+not)\s+(?:know|have\s+(?:any\s+)?(?:information|details|access))\b",
    re.I,
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9$%]+(?:'[a-z]+)?", _normalise(text).lower())


def _spans(text: str, boundary: re.Pattern) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in boundary.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _user_quotes(reply: str, user_texts: list[str]) -> list[tuple[int, int]]:
    """Spans of a reply that quote the user: a quotation of the user's words, a sentence that repeats
    a sentence of theirs, and a sentence from "you asked" (or alike) on."""
    user_words = set(_words(" ".join(user_texts)))
    user_flat = " ".join(" ".join(_words(u)) for u in user_texts)
    user_sentences = {
        " ".join(_words(reply_part)) for u in user_texts for reply_part in (u[a:b] for a, b in _spans(u, SENTENCE_END))
    }
    spans = []
    for match in REPLY_QUOTE.finditer(reply):
        words = _words(next(g for g in match.groups() if g is not None))
        if words and (
            " ".join(words) in user_flat or len(words) >= 3 and sum(w in user_words for w in words) >= 0.8 * len(words)
        ):
            spans.append(match.span())
    for start, end in _spans(reply, SENTENCE_END):
        sentence = reply[start:end]
        words = _words(sentence)
        if len(words) >= 3 and " ".join(words) in user_sentences:
            spans.append((start, end))
        elif attribution := ATTRIBUTION.search(sentence):
            spans.append((start + attribution.start(), end))
    return spans


def _term_pattern(term: str) -> re.Pattern:
    term = _normalise(term)
    body = r"\s+".join(re.escape(word) for word in term.split())
    before = r"(?<!\w)(?<!\d[.,])" if term[:1].isdigit() else r"(?<!\w)" if term[:1].isalnum() else ""
    after = r"(?!\w)(?![.,]\d)" if term[-1:].isdigit() else r"(?!\w)" if term[-1:].isalnum() else ""
    return re.compile(before + body + after, re.I)


def _is_negated(clause: str) -> bool:
    return bool(NEGATION.search(NOT_NEGATION.sub(" ", clause)))


def _term_status(term: str, transcript: Transcript) -> tuple[bool, str]:
    """(affirmed, what was found) for one key term across the assistant's replies."""
    pattern = _term_pattern(term)
    user_texts = [m["content"] for m in transcript.messages if m["role"] == "user"]
    negated = quoted = refused = asked = 0
    for n, raw in enumerate(transcript.assistant_replies, 1):
        reply = _normalise(raw)
        matches = list(pattern.finditer(reply))
        if not matches:
            continue
        if REFUSAL.search(reply):
            refused += len(matches)
            continue
        quotes = _user_quotes(reply, user_texts)
        clauses = _spans(reply, CLAUSE_END)
        for match in matches:
            if any(a <= match.start() and match.end() <= b for a, b in quotes):
                quoted += 1
                continue
            start, end = next(((a, b) for a, b in clauses if a <= match.start() < b), (0, len(reply)))
            if reply[end : end + 1] == "?":
                asked += 1
                continue
            start = max([start] + [c.end() for c in CONTRAST.finditer(reply, start, match.start())])
            # The term's own words ("does not cover") negate nothing.
            clause = reply[start : match.start()] + " " + reply[match.end() : end]
            if _is_negated(clause) or NOT_ASSERTED.search(clause):
                negated += 1
                continue
            return True, f'"{term}" affirmed in reply {n}'
    found = [
        f"{k} time(s) {what}"
        for k, what in (
            (negated, "negated (or not asserted) in its clause"),
            (asked, "in a question"),
            (quoted, "inside a quote of the user's words"),
            (refused, "in a reply that refuses"),
        )
        if k
    ]
    return False, f'"{term}" ' + ("found only " + " and ".join(found) if found else "not in any reply")


def _present_anywhere(term: str, transcript: Transcript) -> bool:
    pattern = _term_pattern(term)
    return any(pattern.search(_normalise(reply)) for reply in transcript.assistant_replies)


def _sentences(text: str) -> int:
    """Sentences end at ., ! or ? before a space, and at a line break (a list item is one)."""
    return sum(1 for piece in re.split(r"(?<=[.!?])\s+|\n", text.strip()) if re.search(r"\w", piece))


def _word_count(text: str) -> int:
    return sum(1 for token in text.split() if re.search(r"\w", token))


def _list_lines(text: str, kind: str) -> int:
    marker = r"^\s*\d+[.)]\s+" if kind == "numbered" else r"^\s*[-*•]\s+"
    return len(re.findall(marker, text, re.M))


def _compare(value: int, op: str, limit: int) -> bool:
    return {"<": value < limit, "<=": value <= limit, ">=": value >= limit, ">": value > limit, "==": value == limit}[
        op
    ]


# -- The checks ------------------------------------------------------------------------------------------------------


def _resolve_tool(text: str, terms: list[str], transcript: Transcript) -> str | None:
    """The tool a phrase names: a bot tool by tool_name or display name, or an identifier such as
    `search_kb` (a tool the bot may not have); None for anything else ("the right tool")."""
    text = re.sub(r"\x01(\d+)\x02", lambda m: terms[int(m.group(1))], text).strip().lower()
    for tool in transcript.bot_tools:
        if text in {_normalise(tool["tool_name"]).lower(), _normalise(tool.get("name") or "").lower()}:
            return tool["tool_name"]
    for name in transcript.tools_used():
        if text == _normalise(name).lower():
            return name
    return text if re.fullmatch(r"[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+", text) else None


def _tool_check(part: str, terms: list[str], transcript: Transcript) -> Check | None:
    for expected, shape in TOOL_SHAPES:
        if (match := shape.match(part)) and (tool := _resolve_tool(match.group("tool"), terms, transcript)):
            calls = sum(1 for name in transcript.tools_used() if name.lower() == tool.lower())
            return Check(
                holds=(calls > 0) == expected,
                what=f"tool log: `{tool}` called {calls} time(s) (asked: "
                f"{'at least one call' if expected else 'no call'})",
            )
    return None


def _check_part(part: str, terms: list[str], transcript: Transcript) -> Check | None:
    """The check of one part of a criterion (a shape), or None when it matches no shape."""
    for candidate in _subjectless(part):
        if check := _tool_check(candidate, terms, transcript):
            return check
        for expected, shape in HANDOFF_SHAPES:
            if shape.match(candidate):
                happened = transcript.handed_off
                return Check(
                    holds=happened == expected,
                    what=f"hand-off {'happened' if happened else 'did not happen'} "
                    f"(asked: {'a hand-off' if expected else 'none'})",
                )
        for expected, shape in TERM_SHAPES:
            if (match := shape.match(candidate)) and (listed := _term_list(match.group("terms"), terms)):
                return _terms_check(*listed, expected=expected, transcript=transcript)
        for expected, where, shape in LOOKUP_SHAPES:
            if match := shape.match(candidate):
                listed = _term_list(match.group("terms"), terms) if "terms" in shape.groupindex else ([], False)
                if listed is not None:
                    return _lookup_check(expected, where, listed[0], listed[1], transcript)
        for shape in LENGTH_SHAPES:
            if match := shape.match(candidate):
                return _length_check(match, transcript)
        for kind, expected, shape in FORMAT_SHAPES:
            if match := shape.match(candidate):
                return _format_check(kind, expected, match, transcript)
    return None


def _terms_check(listed: list[str], any_of: bool, *, expected: bool, transcript: Transcript) -> Check:
    if not expected:
        present = [t for t in listed if _present_anywhere(t, transcript)]
        return Check(
            holds=not present,
            what="key terms absent from every reply: "
            + ("yes" if not present else "no, found " + ", ".join(f'"{t}"' for t in present)),
        )
    statuses = [_term_status(t, transcript) for t in listed]
    affirmed = [ok for ok, _ in statuses]
    holds = any(affirmed) if any_of else all(affirmed)
    need = "any of" if any_of and len(listed) > 1 else "every one of"
    return Check(holds=holds, what=f"key terms ({need} {len(listed)}): " + "; ".join(what for _, what in statuses))


def _lookup_check(expected: bool, where: str | None, listed: list[str], any_of: bool, transcript: Transcript) -> Check:
    lookups = transcript.search_calls()
    done = [c for c in lookups if c.get("success", True) is not False]
    with_results = [c for c in done if c.get("result")]
    if not expected:
        return Check(holds=not lookups, what=f"tool log: {len(lookups)} knowledge-base look-up(s) (asked: none)")
    if where is None:
        return Check(
            holds=bool(done),
            what=f"tool log: {len(done)} successful knowledge-base look-up(s) "
            f"({len(with_results)} with results) (asked: at least one)",
        )
    if not listed:
        return Check(
            holds=bool(with_results),
            what=f"tool log: {len(with_results)} knowledge-base look-up(s) with results (asked: at least one)",
        )
    pool = [str(c.get("arguments") if where == "arguments" else c.get("result")) for c in done]
    found = [t for t in listed if any(_term_pattern(t).search(_normalise(text)) for text in pool)]
    holds = bool(found) if any_of else len(found) == len(listed)
    return Check(
        holds=holds,
        what=f"tool log: look-up {'queries' if where == 'arguments' else 'results'} contain "
        f"{len(found)} of {len(listed)} listed term(s)" + (f" ({', '.join(repr(t) for t in found)})" if found else ""),
    )


def _length_check(match: re.Match, transcript: Transcript) -> Check:
    unit = "sentence" if match.group("unit").startswith("sentence") else "word"
    if "single" in match.groupdict() and match.groupdict().get("single"):
        op, limit = "==", 1
    else:
        op, raw = LIMIT_OPS[re.sub(r"\s+", " ", match.group("op"))], match.group("n")
        limit = int(raw) if raw.isdigit() else NUMBER_WORDS[raw]
    replies = _spoken(transcript)
    counts = [(_sentences(r) if unit == "sentence" else _word_count(r)) for r in replies]
    holds = bool(replies) and all(_compare(c, op, limit) for c in counts)
    words = {"<": "under", "<=": "at most", ">=": "at least", ">": "more than", "==": "exactly"}[op]
    return Check(holds=holds, what=f"{unit}s per reply: {counts or 'no reply'} (asked: {words} {limit})")


def _spoken(transcript: Transcript) -> list[str]:
    """The assistant's replies with text (a message that only carries tool calls is not a reply)."""
    return [reply for reply in transcript.assistant_replies if reply and reply.strip()]


def _format_check(kind: str, expected: bool, match: re.Match, transcript: Transcript) -> Check:
    replies = _spoken(transcript)
    if kind == "list":
        list_kind = "numbered" if match.group("kind") == "numbered" else "bulleted"
        having = [n for n, r in enumerate(replies, 1) if _list_lines(r, list_kind) >= 2]
        what = f"replies with a {list_kind} list (2+ items): {having or 'none'}"
    elif kind == "link":
        having = [n for n, r in enumerate(replies, 1) if LINK.search(r)]
        what = f"replies with a link: {having or 'none'}"
    else:
        having = [len(replies)] if replies and replies[-1].rstrip().endswith("?") else []
        what = f"last reply {'ends' if having else 'does not end'} with a question mark"
    return Check(holds=bool(having) == expected, what=what + ("" if expected else " (asked: none)"))


def _why_not(text: str, template: str, terms: list[str], transcript: Transcript) -> str:
    """Why a criterion or condition matched no shape, in words for the reasoning."""
    if re.search(r"\b(?:when|whenever|if|unless|before|after|without|for\s+simple|only\s+if)\b", template):
        return "it has a premise or an order (when, if, before, without…), which the offline judge cannot check"
    if tools := [t for t in transcript.tool_names_in(text)]:
        return f"it names tool {', '.join(f'`{t}`' for t in tools)} but asks more than whether it was called"
    if re.search(r"\b(?:knowledge[\s-]*base|kb|handbook)\b", template):
        return "it asks more than whether a knowledge-base look-up was made"
    if terms:
        return "its quoted terms come with words the offline judge cannot check"
    if FACT_LIKE.search(template):
        return 'its facts are not listed as key terms in double quotes (e.g. Mentions "15 days")'
    return (
        "it matches no shape the offline judge checks: a tool used or not, a hand-off, quoted key terms, "
        "a length or format rule"
    )


def evaluate(text: str, transcript: Transcript) -> Check | Unchecked:
    """A criterion or rule condition checked against the transcript, or why it cannot be."""
    template, terms = _template(text)
    parts = _parts(template)
    checks = [_check_part(part, terms, transcript) for part in parts]
    if all(checks) and checks:
        if len(checks) == 1:
            return checks[0]
        return Check(
            holds=all(c.holds for c in checks),
            what="; ".join(
                f"({n}) {c.what}: {'holds' if c.holds else 'does NOT hold'}" for n, c in enumerate(checks, 1)
            ),
        )
    if any(checks):
        unchecked = [p for p, c in zip(parts, checks, strict=True) if c is None]
        shown = ", ".join(f"'{re.sub(TERM, lambda m: repr_term(m, terms), p)}'" for p in unchecked)
        return Unchecked(f"only part of it is checkable ({shown} is not), and checking one part would be a proxy")
    return Unchecked(_why_not(text, template, terms, transcript))


def repr_term(match: re.Match, terms: list[str]) -> str:
    return f'"{terms[int(match.group(0)[1:-1])]}"'


# -- The judge's API -------------------------------------------------------------------------------------------------


def tool_verdicts(*, expected: dict, transcript: Transcript) -> list[Verdict]:
    """should_use_tools / should_not_use_tools, checked against the tool log, reported as criteria."""
    used = transcript.tools_used()
    verdicts = []
    for tool in expected.get("should_use_tools") or []:
        ok = tool in used
        verdicts.append(
            Verdict.of(
                passed=ok,
                judge=JUDGE_HEURISTIC,
                reasoning=f"Tool `{tool}` was called {used.count(tool)} time(s)."
                if ok
                else f"Tool `{tool}` was never called (tools called: {', '.join(sorted(set(used))) or 'none'}).",
            ).for_criterion(f"Uses tool {tool}", kind="should_use_tools")
        )
    for tool in expected.get("should_not_use_tools") or []:
        ok = tool not in used
        verdicts.append(
            Verdict.of(
                passed=ok,
                judge=JUDGE_HEURISTIC,
                reasoning=f"Tool `{tool}` was not called."
                if ok
                else f"Tool `{tool}` was called {used.count(tool)} time(s).",
            ).for_criterion(f"Does not use tool {tool}", kind="should_not_use_tools")
        )
    return verdicts


def judge_criterion(criterion: str, transcript: Transcript) -> Verdict:
    result = evaluate(criterion, transcript)
    if isinstance(result, Unchecked):
        return Verdict.skipped(JUDGE_HEURISTIC, f"{NEEDS_LLM}: {result.why}.")
    return Verdict.of(
        passed=result.holds,
        judge=JUDGE_HEURISTIC,
        reasoning=f"{'Passed' if result.holds else 'Failed'}. Checked {result.what}.",
    )


def judge_rule(rule: dict, transcript: Transcript) -> Verdict:
    """Fails when a checked fail condition is met or a checked pass condition is not; passes only when
    every condition was checked (a pass resting on an unchecked condition would be a proxy);
    otherwise skipped."""
    criteria = rule.get("evaluation_criteria") or {}
    checked, unchecked, broken = [], [], []
    for kind, conditions in (
        ("fail", criteria.get("fail_conditions") or []),
        ("pass", criteria.get("pass_conditions") or []),
    ):
        for condition in conditions:
            result = evaluate(condition, transcript)
            if isinstance(result, Unchecked):
                unchecked.append(f"{kind} condition '{condition}': {result.why}")
                continue
            breaks = result.holds if kind == "fail" else not result.holds
            state = ("MET" if result.holds else "not met") if kind == "fail" else ("met" if result.holds else "NOT met")
            checked.append(f"{kind} condition '{condition}': {state} ({result.what})")
            if breaks:
                broken.append(condition)
    not_checked = f" Not checked (needs an LLM judge): {'; '.join(unchecked)}." if unchecked else ""
    if broken:
        return Verdict.of(
            passed=False,
            score=1.0 - len(broken) / len(checked),
            judge=JUDGE_HEURISTIC,
            reasoning=f"Failed. Checked {'; '.join(checked)}.{not_checked}",
        )
    if not checked and not unchecked:
        return Verdict.skipped(JUDGE_HEURISTIC, f"{NEEDS_LLM}: the rule has no pass or fail conditions to check.")
    if unchecked:
        held = f" The checked ones hold ({'; '.join(checked)}) but do not decide it alone." if checked else ""
        return Verdict.skipped(
            JUDGE_HEURISTIC,
            f"{NEEDS_LLM}: {len(unchecked)} of its conditions cannot be checked "
            f"mechanically: {'; '.join(unchecked)}.{held}",
        )
    return Verdict.of(passed=True, judge=JUDGE_HEURISTIC, reasoning=f"Passed. Checked {'; '.join(checked)}.")
