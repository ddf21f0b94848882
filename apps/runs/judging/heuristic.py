"""The deterministic `heuristic:v1` judge of success criteria and rubric rules.

It judges only what it can check from the transcript and the tool log: tools used or avoided,
hand-offs, knowledge-base look-ups, answers that mention what a criterion names, and measurable
length limits. A criterion or rule it cannot check gets status `skipped` with the reason (and
counts as not passed): it never guesses a verdict. Configure an LLM judge for the rest."""

import re

from apps.core.text import CRITERIA_V1

from .types import JUDGE_HEURISTIC, Transcript, Verdict

# Pinned: heuristic:v1 verdicts depend on exactly this tokenizer, stop list and stemmer. It used to
# be the demo bot's BM25 tokenizer, so tuning the bot's search moved the judge's verdicts.
TEXT = CRITERIA_V1

# Words that describe the evaluation rather than the content the answer should carry.
EVAL_WORDS = frozenset(
    "agent bot assistant response responses answer answers reply replies user employee customer provides provide "
    "provided includes include including mentions mention mentioned explains explain gives give states state "
    "correctly correct accurate accurately clearly clear properly appropriate appropriately relevant information "
    "details detail refers refer asks ask should must not does did question questions request requests "
    "retrieves retrieve searches search looks look up find finds found uses use using kb knowledge base says say "
    "tells tell notes note confirms confirm informs inform offers offer describes describe lists list "
    "acknowledges acknowledge hands hand".split()
)
HANDOFF_WORDS = re.compile(r"\b(hand(s|ed|ing)?[ -]?off|hand(s|ed|ing)? (\w+ ){0,3}(over )?to|transfer(s|red)?|escalat\w*|"
                           r"live agent|human agent|a human|real person)\b", re.I)
KB_WORDS = re.compile(r"\b(knowledge base|kb|handbook|documentation|docs|policy documents?|retriev\w*|search\w*|looks? up)\b", re.I)
# In rule conditions only an action counts as a retrieval check; "the handbook" alone does not.
KB_ACTION = re.compile(r"\b(search\w*|retriev\w*|look(s|ed)? up|consult\w*)\b", re.I)
# A condition with a premise ("when a person is requested", "without any search", "before the
# answer") holds only where the premise applies, or depends on order, which the heuristic judge
# cannot tell from counts; it leaves such conditions unchecked.
CONDITIONAL = re.compile(r"\b(when|whenever|if|unless|in case|without|before|after)\b", re.I)
NEGATION = re.compile(r"\b(not|never|no|without|avoid\w*|doesn't|does not|don't)\b", re.I)
SENTENCE_LIMIT = re.compile(r"\b(?:under|fewer than|less than|at most|no more than|max(?:imum)?(?: of)?)\s+(\d+)\s+sentences?\b", re.I)
WORD_LIMIT = re.compile(r"\b(?:under|fewer than|less than|at most|no more than|max(?:imum)?(?: of)?)\s+(\d+)\s+words?\b", re.I)
QUOTED = re.compile(r"[\"“']([^\"”']{2,60})[\"”']")

# Share of a criterion's content words the answers must contain for the criterion to pass.
COVERAGE_TO_PASS = 0.6


def _content_terms(text: str) -> list[str]:
    seen, terms = set(), []
    for word in TEXT.tokens(text):
        if word in EVAL_WORDS or word.isdigit() and len(word) < 2:
            continue
        if TEXT.stem(word) not in seen:
            seen.add(TEXT.stem(word))
            terms.append(word)
    return terms


def _coverage(terms: list[str], text: str) -> tuple[list[str], list[str]]:
    present = {TEXT.stem(w) for w in TEXT.tokens(text)}
    found = [t for t in terms if TEXT.stem(t) in present]
    return found, [t for t in terms if t not in found]


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def tool_verdicts(*, expected: dict, transcript: Transcript) -> list[Verdict]:
    """should_use_tools / should_not_use_tools, checked against the tool log, reported as criteria."""
    used = transcript.tools_used()
    verdicts = []
    for tool in expected.get("should_use_tools") or []:
        ok = tool in used
        verdicts.append(Verdict.of(
            passed=ok, judge=JUDGE_HEURISTIC,
            reasoning=f"Tool `{tool}` was called {used.count(tool)} time(s)." if ok else
            f"Tool `{tool}` was never called (tools called: {', '.join(sorted(set(used))) or 'none'}).",
        ).for_criterion(f"Uses tool {tool}", kind="should_use_tools"))
    for tool in expected.get("should_not_use_tools") or []:
        ok = tool not in used
        verdicts.append(Verdict.of(
            passed=ok, judge=JUDGE_HEURISTIC,
            reasoning=f"Tool `{tool}` was not called." if ok else f"Tool `{tool}` was called {used.count(tool)} time(s).",
        ).for_criterion(f"Does not use tool {tool}", kind="should_not_use_tools"))
    return verdicts


def judge_criterion(criterion: str, transcript: Transcript) -> Verdict:
    checks_passed, checks_failed = [], []
    negated = bool(NEGATION.search(criterion))

    if HANDOFF_WORDS.search(criterion):
        handed_off = transcript.handed_off
        ok = handed_off != negated
        (checks_passed if ok else checks_failed).append(
            f"hand-off {'happened' if handed_off else 'did not happen'} ({'not ' if negated else ''}expected)")
    elif KB_WORDS.search(criterion):
        lookups = transcript.search_calls()
        hits = [c for c in lookups if c.get("success", True) and c.get("result")]
        ok = bool(hits)
        (checks_passed if ok else checks_failed).append(
            f"{len(lookups)} knowledge-base look-up(s), {len(hits)} with results")

    for tool_name in transcript.tool_names_in(criterion):
        called = tool_name in transcript.tools_used()
        ok = called != negated
        (checks_passed if ok else checks_failed).append(f"tool `{tool_name}` {'called' if called else 'not called'}")

    # Words a structural check above already covered are not asked of the answer as content too.
    content = HANDOFF_WORDS.sub(" ", KB_WORDS.sub(" ", criterion))
    for tool_name in transcript.tool_names_in(criterion):
        content = re.sub(re.escape(tool_name), " ", content, flags=re.I)
    terms = _content_terms(content)
    if terms and not negated:
        found, missing = _coverage(terms, transcript.assistant_text)
        share = len(found) / len(terms)
        line = f"answers mention {len(found)}/{len(terms)} key terms" + (f" (missing: {', '.join(missing)})" if missing else "")
        (checks_passed if share >= COVERAGE_TO_PASS else checks_failed).append(line)

    if not checks_passed and not checks_failed:
        return Verdict.skipped(JUDGE_HEURISTIC, "The heuristic judge finds nothing it can check in this criterion; "
                                                "an LLM judge is needed.")
    total = len(checks_passed) + len(checks_failed)
    reasoning = "; ".join([f"passed: {c}" for c in checks_passed] + [f"failed: {c}" for c in checks_failed]) + "."
    return Verdict.of(passed=not checks_failed, score=len(checks_passed) / total, reasoning=reasoning,
                      judge=JUDGE_HEURISTIC)


def _within(value: int, limit_match: re.Match) -> bool:
    # "under 3" and "fewer/less than 3" exclude the limit; "at most 3", "no more than 3" include it.
    strict = limit_match.group(0).lower().startswith(("under", "fewer", "less"))
    limit = int(limit_match.group(1))
    return value < limit if strict else value <= limit


def _condition_check(condition: str, transcript: Transcript) -> tuple[bool, str] | None:
    """(holds, explanation) for a condition the heuristic judge can measure, else None."""
    replies = transcript.assistant_replies
    if CONDITIONAL.search(condition) and not (SENTENCE_LIMIT.search(condition) or WORD_LIMIT.search(condition)):
        return None
    if match := SENTENCE_LIMIT.search(condition):
        longest = max((len(_sentences(r)) for r in replies), default=0)
        return _within(longest, match), f"longest answer has {longest} sentence(s), limit {match.group(1)}"
    if match := WORD_LIMIT.search(condition):
        longest = max((len(r.split()) for r in replies), default=0)
        return _within(longest, match), f"longest answer has {longest} word(s), limit {match.group(1)}"
    if HANDOFF_WORDS.search(condition):
        negated = bool(NEGATION.search(condition))
        return transcript.handed_off != negated, f"hand-off {'happened' if transcript.handed_off else 'did not happen'}"
    tool_names = transcript.tool_names_in(condition)
    if tool_names:
        negated = bool(NEGATION.search(condition))
        used = transcript.tools_used()
        holds = all((name in used) != negated for name in tool_names)
        return holds, ", ".join(f"`{n}` {'called' if n in used else 'not called'}" for n in tool_names)
    quoted = QUOTED.findall(condition)
    if quoted:
        text = transcript.assistant_text.lower()
        present = [q for q in quoted if q.lower() in text]
        holds = not present if NEGATION.search(condition) else len(present) == len(quoted)
        return holds, f"quoted phrase(s) present: {present or 'none'}"
    if KB_ACTION.search(condition):
        hits = [c for c in transcript.search_calls() if c.get("result")]
        negated = bool(NEGATION.search(condition))
        return bool(hits) != negated, f"{len(hits)} knowledge-base look-up(s) with results"
    return None


def judge_rule(rule: dict, transcript: Transcript) -> Verdict:
    criteria = rule.get("evaluation_criteria") or {}
    checked, unchecked = [], []
    failures = []
    for condition in criteria.get("fail_conditions") or []:
        result = _condition_check(condition, transcript)
        if result is None:
            unchecked.append(condition)
        else:
            checked.append(f"fail condition '{condition}': {'MET' if result[0] else 'not met'} ({result[1]})")
            if result[0]:
                failures.append(condition)
    for condition in criteria.get("pass_conditions") or []:
        result = _condition_check(condition, transcript)
        if result is None:
            unchecked.append(condition)
        else:
            checked.append(f"pass condition '{condition}': {'met' if result[0] else 'NOT met'} ({result[1]})")
            if not result[0]:
                failures.append(condition)
    if not checked:
        return Verdict.skipped(JUDGE_HEURISTIC, "The heuristic judge cannot measure any of this rule's conditions "
                                                f"({len(unchecked)} unchecked); an LLM judge is needed.")
    reasoning = "; ".join(checked)
    if unchecked:
        reasoning += f"; not checked by the heuristic judge: {len(unchecked)} condition(s)"
    return Verdict.of(passed=not failures, score=1.0 - len(failures) / len(checked), reasoning=reasoning + ".",
                      judge=JUDGE_HEURISTIC)
