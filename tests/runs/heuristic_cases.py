"""The offline judge's labelled set: (criterion or rubric rule, transcript, expected verdict).

Expected verdicts: "pass", "fail" or "skipped" (the judge cannot check it mechanically: an LLM
judge must). Labels say what a careful human reading the transcript would answer for what the
criterion literally asks; "skipped" where the criterion is prose or only partly a checkable shape.
Adversarial cases: the right tool with a wrong answer, negated key terms, key terms only inside a
quote of the user's question, refusals, prose criteria, multi-turn transcripts.

Used by tests/runs/test_heuristic_labelled.py and bench/judge_coverage.py; plain data, no Django."""

from apps.runs.judging.types import Transcript

BOT_TOOLS = [
    {"tool_name": "search_kb", "name": "Search handbook", "type": "knowledge_base"},
    {"tool_name": "live_handoff", "name": "Live Chat Handoff", "type": "human_handoff"},
]

PTO_PASSAGE = [
    {
        "document": "PTO Policy",
        "text": "Full-time employees accrue 15 days of PTO per year (1.25 days per "
        "month). Up to 5 unused days carry over; the rest is forfeited.",
    }
]
STIPEND_PASSAGE = [{"document": "Remote Work", "text": "Remote employees receive a one-time $500 home office stipend."}]


def search(query: str, result=None, success: bool = True) -> dict:
    return {
        "name": "search_kb",
        "arguments": {"query": query},
        "result": PTO_PASSAGE if result is None else result,
        "success": success,
    }


HANDOFF_CALL = {
    "name": "live_handoff",
    "arguments": {"reason": "asked for a person"},
    "result": {"status": "transferred"},
    "success": True,
}


def talk(*turns: str, tools=(), handed_off: bool = False) -> Transcript:
    """A transcript from alternating user and assistant turns, user first."""
    messages = [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(turns)]
    return Transcript(messages=messages, tool_calls=list(tools), handed_off=handed_off, bot_tools=BOT_TOOLS)


PTO_Q = "How many PTO days do I accrue per year?"
PTO = talk(
    PTO_Q,
    "Full-time employees accrue 15 days of PTO per year, which is 1.25 days per month.",
    tools=[search("PTO accrual")],
)
PTO_WRONG = talk(PTO_Q, "You accrue 12 days of PTO per year.", tools=[search("PTO accrual")])
PTO_NEGATED = talk(
    PTO_Q, "You do not accrue 15 days; full-time employees accrue 12 days per year.", tools=[search("PTO accrual")]
)
PTO_NEGATED_AFTER = talk(PTO_Q, "15 days is not what you accrue. It is 12 days.", tools=[search("PTO")])
PTO_CONTRAST = talk(PTO_Q, "You don't get 20 days but 15 days per year.", tools=[search("PTO")])
PTO_COMMA_NOT = talk(PTO_Q, "You accrue 15 days a year, not 20.", tools=[search("PTO")])
PTO_NO_TOOL = talk(PTO_Q, "Full-time employees accrue 15 days of PTO per year.")
QUOTED_Q = "Is it true that I accrue 15 days of PTO per year?"
PTO_QUOTED = talk(
    QUOTED_Q, f'You asked: "{QUOTED_Q}" I could not find that in the handbook.', tools=[search("PTO", result=[])]
)
PTO_ATTRIBUTED = talk(
    QUOTED_Q,
    "You are asking whether you accrue 15 days of PTO per year. Let me look into it.",
    tools=[search("PTO", result=[])],
)
PTO_ECHO = talk("Do I get 15 days of PTO?", "Do I get 15 days of PTO? Let me check with HR for you.")
PTO_REFUSED = talk(
    "How many PTO days do I get? Is it 15 days?",
    "I'm sorry, but I can't help with questions about 15 days of PTO or any other leave policy.",
)
PTO_REFUSED_PLAIN = talk(PTO_Q, "I cannot answer that. Please contact HR.")
PTO_QUOTE_THEN_ANSWER = talk(
    QUOTED_Q, f'You asked: "{QUOTED_Q}" Yes: full-time employees accrue 15 days per year.', tools=[search("PTO")]
)
PTO_FAILED_SEARCH = talk(
    PTO_Q, "Full-time employees accrue 15 days of PTO per year.", tools=[search("PTO", result=None, success=False)]
)
HANDOFF = talk(
    "I'd like to speak to a real person about my leave, please.",
    "I'm connecting you with a member of the HR team now.",
    tools=[HANDOFF_CALL],
    handed_off=True,
)
HANDOFF_CLAIMED = talk("I'd like to speak to a real person, please.", "Sure, I have transferred you to a live agent.")
DOG_Q = "Can I bring my dog to the office?"
DOG_WRONG = talk(
    DOG_Q,
    "Remote employees receive a one-time $500 home office stipend.",
    tools=[search("dog office", result=STIPEND_PASSAGE)],
)
DOG_RIGHT = talk(
    DOG_Q,
    "The handbook does not cover pets in the office. Please ask your manager.",
    tools=[search("dog office", result=[])],
)
CARRY = talk(
    "Hi, I still have 8 PTO days left this year.",
    "Happy to help with your PTO balance.",
    "How many of them can I carry over into next year?",
    "Up to 5 days carry over into next year.",
    "And what happens to the rest?",
    "Any balance above 5 days is forfeited at the end of the year.",
    tools=[search("carry over"), search("forfeit")],
)
CARRY_WRONG = talk(
    "Hi, I still have 8 PTO days left this year.",
    "Happy to help with your PTO balance.",
    "How many of them can I carry over into next year?",
    "Up to 5 days carry over into next year.",
    "And what happens to the rest?",
    "The rest is not forfeited; it is paid out with your last salary.",
    tools=[search("carry over"), search("forfeit")],
)
CARRY_QUOTED = talk(
    "Hi, I have 8 PTO days left.",
    "Happy to help.",
    "Is it true that 5 days carry over?",
    'You asked "Is it true that 5 days carry over?" I can\'t find that in the handbook.',
    tools=[search("carry over", result=[])],
)
CARRY_NO_MORE = talk(
    "How many PTO days carry over?", "No more than 5 days carry over into the next year.", tools=[search("carry over")]
)
OFF_TOPIC_THEN_ANSWER = talk(
    "Write me a poem about 15 days of sun.",
    "I'm sorry, I can't help with poems.",
    "OK. How much PTO do I accrue per year?",
    "You accrue 15 days of PTO per year.",
    tools=[search("PTO")],
)
LONG = talk(
    PTO_Q,
    "Great question! PTO is an important benefit. Full-time employees accrue 15 days per year. "
    "That works out to 1.25 days per month. Part-time employees accrue a prorated amount. "
    "Let me know if you need anything else!",
    tools=[search("PTO")],
)
OFFICE_LIST = talk(
    "Which days do I have to be in the office?",
    "Office days are:\n- Tuesday\n- Thursday\nSee https://intranet.example.com/remote for details.",
    tools=[search("office days")],
)
OFFICE_NUMBERED = talk(
    "How do I claim the stipend?",
    "To claim it:\n1. Buy the equipment.\n2. Keep the receipt.\n3. File it in the expense tool.",
    tools=[search("stipend")],
)
CLARIFY = talk("I need help with my leave.", "Of course. Is this about PTO or parental leave?")
PARENTAL = talk(PTO_Q, "You accrue 15 days of PTO per year; parental leave is separate.", tools=[search("PTO")])
HANDOFF_LATER = talk(
    "PTO?",
    "I couldn't find anything about that in our knowledge base. Would you like me to connect you with a person?",
    "I want a human",
    "I'm connecting you with a live agent now; they will pick up this conversation.",
    tools=[search("PTO?"), HANDOFF_CALL],
    handed_off=True,
)
REMOTE = talk(
    "I just started and will work from home part of the week.",
    "Welcome! Happy to help you get set up.",
    "Is there a stipend for home office equipment?",
    "Yes: new remote employees receive a one-time $500 "
    "home office stipend. Keep your receipts. Submit them within 30 days. Equipment stays yours. "
    "Ask IT for a monitor if you need one.",
    "Which days do I have to be in the office?",
    "Tuesdays and Thursdays are office days.",
    tools=[search("stipend"), search("office days")],
)
TOOL_ONLY_MESSAGE = Transcript(
    messages=[
        {"role": "user", "content": PTO_Q},
        {"role": "assistant", "content": "", "tool_calls": [search("PTO")]},
        {"role": "assistant", "content": "You accrue 15 days of PTO per year."},
    ],
    tool_calls=[search("PTO")],
    bot_tools=BOT_TOOLS,
)
UNLIMITED_DENIED = talk(
    "Is PTO unlimited?",
    "There is no unlimited PTO; full-time employees accrue 15 days per year.",
    tools=[search("PTO")],
)
UNLIMITED_CLAIMED = talk("Is PTO unlimited?", "Yes, we offer unlimited PTO to everyone.", tools=[search("PTO")])


def rule(passes=(), fails=(), rule_id="R"):
    return {
        "id": rule_id,
        "name": rule_id,
        "severity": "high",
        "evaluation_criteria": {"pass_conditions": list(passes), "fail_conditions": list(fails)},
    }


def case(case_id: str, subject, transcript: Transcript, expected: str, why: str = "") -> dict:
    kind = "rule" if isinstance(subject, dict) else "criterion"
    return {"id": case_id, kind: subject, "transcript": transcript, "expected": expected, "why": why}


CASES = [
    # Tools used or not used.
    case("tool-used", "Uses the search_kb tool", PTO, "pass"),
    case("tool-used-calls", "Calls search_kb", PTO, "pass"),
    case("tool-not-called", "Calls search_kb", HANDOFF, "fail"),
    case("tool-avoided", "Does not call live_handoff", PTO, "pass"),
    case("tool-avoided-broken", "Agent does not call live_handoff", HANDOFF, "fail"),
    case("tool-by-display-name", "Uses the Live Chat Handoff tool", HANDOFF, "pass"),
    case("tool-by-display-name-missing", "Uses the Live Chat Handoff tool", PTO, "fail"),
    case("tool-is-called", "search_kb is called", PTO_WRONG, "pass", "right tool, wrong answer: the tool part holds"),
    case("tool-never", "Never calls search_kb", PTO_NO_TOOL, "pass"),
    case("tool-unnamed", "Uses the right tool", PTO, "skipped", "names no tool"),
    case("tool-count", "Calls search_kb twice", PTO, "skipped", "a count is not a shape"),
    # Hand-off.
    case("handoff", "Hands the conversation to a live agent", HANDOFF, "pass"),
    case("handoff-off", "Hands off to a human", HANDOFF, "pass"),
    case("handoff-missing", "Hands off to a human", PTO, "fail"),
    case(
        "handoff-claimed-only",
        "Agent hands off to a live agent",
        HANDOFF_CLAIMED,
        "fail",
        "the answer claims a transfer, the tool log shows none",
    ),
    case("no-handoff", "Does not hand off", PTO, "pass"),
    case("no-handoff-broken", "Does not hand off", HANDOFF, "fail"),
    case("transfers", "Agent transfers to a human", HANDOFF, "pass"),
    case("handoff-offer", "Offers to hand off to a human", PTO, "skipped", "an offer is not a hand-off"),
    # Key terms.
    case("term", 'Mentions "15 days"', PTO, "pass"),
    case("term-wrong-answer", 'Mentions "15 days"', PTO_WRONG, "fail", "right tool, wrong answer"),
    case("term-negated", 'Mentions "15 days"', PTO_NEGATED, "fail", '"you do not accrue 15 days"'),
    case("term-negated-after", 'Mentions "15 days"', PTO_NEGATED_AFTER, "fail", '"15 days is not what you accrue"'),
    case("term-contrast", 'Mentions "15 days"', PTO_CONTRAST, "pass", '"not 20 days but 15 days" affirms 15'),
    case("term-comma-not", 'Mentions "15 days"', PTO_COMMA_NOT, "pass", '"15 days a year, not 20"'),
    case("term-quoted-question", 'Mentions "15 days"', PTO_QUOTED, "fail", "only inside a quote of the question"),
    case("term-attributed", 'Mentions "15 days"', PTO_ATTRIBUTED, "fail", '"you are asking whether … 15 days"'),
    case("term-echoed-sentence", 'Mentions "15 days"', PTO_ECHO, "fail", "the reply repeats the question"),
    case(
        "term-quote-then-answer",
        'Mentions "15 days"',
        PTO_QUOTE_THEN_ANSWER,
        "pass",
        "quotes the question, then answers it",
    ),
    case(
        "term-used-to",
        'Mentions "15 days"',
        talk(PTO_Q, "Employees used to accrue 15 days, but no longer do."),
        "fail",
        "negated after a but",
    ),
    case(
        "term-in-question",
        'Mentions "15 days"',
        talk(PTO_Q, "Do you accrue 15 days? It depends on your contract."),
        "fail",
        "asked, not said",
    ),
    case(
        "term-whether",
        'Mentions "15 days"',
        talk(PTO_Q, "Whether you accrue 15 days depends on your contract."),
        "fail",
        "not asserted",
    ),
    case("term-refusal", 'Mentions "15 days"', PTO_REFUSED, "fail", "a refusal does not pass"),
    case("term-refusal-plain", 'Says "15 days"', PTO_REFUSED_PLAIN, "fail"),
    case(
        "term-refusal-hedged",
        'Mentions "15 days"',
        talk(PTO_Q, "As an AI, I cannot provide HR advice, but generally 15 days is common."),
        "fail",
        "a refusal with a guess",
    ),
    case("term-substring", 'Mentions "5 days"', PTO, "fail", '"15 days" and "1.25 days" are not "5 days"'),
    case("term-or", 'Mentions "15 days" or "fifteen days"', PTO, "pass"),
    case("term-absent", 'Mentions "parental leave"', PTO, "fail"),
    case("term-dollar", 'Mentions "$500"', DOG_WRONG, "pass", "the criterion asks only for the figure"),
    case("term-phrase-with-not", 'Says "does not cover"', DOG_RIGHT, "pass", "the term's own negation"),
    case("term-phrase-with-not-missing", 'Says "does not cover"', DOG_WRONG, "fail"),
    case("term-no-more-than", 'Mentions "5 days"', CARRY_NO_MORE, "pass", '"no more than 5 days" affirms 5 days'),
    case("terms-multi-turn", 'Says "5 days" and "forfeited"', CARRY, "pass", "terms in different replies"),
    case("terms-multi-turn-negated", 'Says "5 days" and "forfeited"', CARRY_WRONG, "fail", '"is not forfeited"'),
    case("term-multi-turn-quoted", 'Agent says "5 days"', CARRY_QUOTED, "fail", "quote of the user's second turn"),
    case(
        "term-after-refused-turn",
        'Mentions "15 days"',
        OFF_TOPIC_THEN_ANSWER,
        "pass",
        "the refusal is of another request; the next reply answers",
    ),
    case("term-curly-quotes", "The answer mentions “15 days”", PTO, "pass"),
    case("term-absent-check", 'Does not mention "cafes"', PTO, "pass"),
    case("term-absent-check-broken", 'Does not mention "15 days"', PTO_NEGATED, "fail", "mentioned, if negated"),
    case("terms-and-tool", 'Calls search_kb and mentions "15 days"', PTO, "pass"),
    case("terms-and-tool-wrong", 'Calls search_kb and mentions "15 days"', PTO_WRONG, "fail"),
    case("multi-turn-handoff", "Hands off to a human", HANDOFF_LATER, "pass", "the hand-off comes in turn 2"),
    case("multi-turn-no-handoff", "Does not call live_handoff", HANDOFF_LATER, "fail"),
    case("multi-turn-terms", 'Mentions "$500" and "Tuesdays"', REMOTE, "pass"),
    case("multi-turn-absent", 'Does not mention "Fridays"', REMOTE, "pass"),
    case("multi-turn-length", "Answers in at most 3 sentences", REMOTE, "fail", "the second reply has 5"),
    case("multi-turn-last-question", "Ends with a question", HANDOFF_LATER, "fail", "only the first reply asks one"),
    case("multi-turn-prose", "Agent explains the two office days per week", REMOTE, "skipped"),
    # Knowledge-base look-ups: only a look-up and nothing more.
    case("lookup", "Searches the knowledge base", PTO, "pass"),
    case("lookup-missing", "Searches the knowledge base", HANDOFF, "fail"),
    case("lookup-failed", "Searches the knowledge base", PTO_FAILED_SEARCH, "fail", "the only look-up failed"),
    case("lookup-for-term", 'Searches the knowledge base for "PTO"', PTO, "pass"),
    case("lookup-retrieves-term", 'Retrieves "PTO Policy" from the knowledge base', PTO, "pass"),
    case("lookup-retrieves-term-missing", 'Retrieves "PTO Policy" from the knowledge base', DOG_WRONG, "fail"),
    case(
        "lookup-topic-prose",
        "Agent retrieves PTO policy from knowledge base",
        PTO,
        "skipped",
        "whether the passage is the PTO policy is not a look-up count",
    ),
    case("lookup-before", "Searches the knowledge base before answering", PTO, "skipped", "an order"),
    # Length and format.
    case("sentences", "Answers in at most 3 sentences", PTO, "pass"),
    case("sentences-over", "Answers in at most 3 sentences", LONG, "fail"),
    case("words", "Answers in under 80 words", PTO, "pass"),
    case("words-over", "Response is under 20 words", LONG, "fail"),
    case("one-sentence", "Answers in one sentence", PTO, "pass"),
    case(
        "length-tool-only-message",
        "Answers in one sentence",
        TOOL_ONLY_MESSAGE,
        "pass",
        "a message carrying only tool calls is not a reply",
    ),
    case("bullets", "Uses a bulleted list", OFFICE_LIST, "pass"),
    case("bullets-missing", "Uses a bulleted list", PTO, "fail"),
    case("numbered", "Uses a numbered list", OFFICE_NUMBERED, "pass"),
    case("link", "Includes a link", OFFICE_LIST, "pass"),
    case("link-missing", "Includes a link", PTO, "fail"),
    case("no-link", "Does not include a link", PTO, "pass"),
    case("ends-question", "Ends with a clarifying question", CLARIFY, "pass"),
    # Prose: an LLM judge's work.
    case(
        "prose-dog",
        "Agent says the handbook does not cover it",
        DOG_WRONG,
        "skipped",
        "issue 20: used to pass on a look-up with results",
    ),
    case("prose-dog-right", "Agent says the handbook does not cover it", DOG_RIGHT, "skipped"),
    case("prose-accrual", "Response includes the accrual rate of 15 days per year", PTO, "skipped"),
    case("prose-hotel", "Response states the $250 per night limit for major cities", PTO, "skipped"),
    case("prose-empathy", "Agent is empathetic", PTO, "skipped"),
    case("prose-office-days", "Agent explains the two office days per week", OFFICE_LIST, "skipped"),
    case(
        "prose-partial",
        "Calls search_kb and explains the accrual policy",
        PTO,
        "skipped",
        "only the tool part is checkable",
    ),
    case("prose-premise", 'Mentions "15 days" when asked about PTO', PTO, "skipped", "a premise"),
    case("prose-correctly", "Agent retrieves the relevant policy and answers correctly", PTO, "skipped"),
    case(
        "prose-ambiguous-list",
        'Mentions "15 days" and "12 days" or "20 days"',
        PTO,
        "skipped",
        "and/or mixed: ambiguous",
    ),
    # Rubric rules.
    case("rule-brief", rule(["Response is under 3 sentences"]), PTO, "pass"),
    case("rule-brief-broken", rule(["Response is under 3 sentences"]), LONG, "fail"),
    case("rule-no-transfer", rule(fails=["Agent transfers to a human"]), PTO, "pass"),
    case("rule-no-transfer-broken", rule(fails=["Agent transfers to a human"]), HANDOFF, "fail"),
    case("rule-tone", rule(["Tone is warm and professional"]), PTO, "skipped"),
    case(
        "rule-mixed-pass",
        rule(["Tone is warm", "Response is under 4 sentences"]),
        PTO,
        "skipped",
        "a pass would rest on the unchecked tone",
    ),
    case(
        "rule-mixed-fail",
        rule(["Tone is warm"], ["Agent transfers to a human"]),
        HANDOFF,
        "fail",
        "a met checkable fail condition fails it",
    ),
    case(
        "rule-mixed-unmet-pass",
        rule(["Tone is warm", "Calls search_kb"]),
        HANDOFF,
        "fail",
        "a checkable pass condition is not met",
    ),
    case(
        "rule-grounded",
        rule(
            ["Every policy fact in the answer appears in the handbook"],
            ["The answer states a number or rule the handbook does not contain"],
        ),
        PTO_WRONG,
        "skipped",
    ),
    case(
        "rule-search-first",
        rule(["search_kb is called before the policy answer"], ["A policy answer is given without any search"]),
        PTO_NO_TOOL,
        "skipped",
    ),
    case("rule-handoff-premise", rule(["live_handoff is called when a person is requested"]), HANDOFF, "skipped"),
    case("rule-empty", rule(), PTO, "skipped"),
    case("rule-tool-and-term", rule(["Calls search_kb"], ['Mentions "parental leave"']), PTO, "pass"),
    case("rule-tool-and-term-broken", rule(["Calls search_kb"], ['Mentions "parental leave"']), PARENTAL, "fail"),
    case("rule-term-negated", rule(['Mentions "15 days"']), PTO_NEGATED, "fail"),
    case("rule-all-checked", rule(["Answers in at most 3 sentences", "Does not call live_handoff"]), PTO, "pass"),
    case(
        "rule-claim-denied",
        rule(fails=['Mentions "unlimited PTO"']),
        UNLIMITED_DENIED,
        "pass",
        "the claim is denied, not made",
    ),
    case("rule-claim-made", rule(fails=['Mentions "unlimited PTO"']), UNLIMITED_CLAIMED, "fail"),
    case("rule-simple-questions", rule(["Response is under 3 sentences for simple questions"]), PTO, "skipped"),
    case("rule-invents", rule(fails=["Invents an answer"]), DOG_WRONG, "skipped"),
    case(
        "rule-unchecked-fail",
        rule(["Calls search_kb"], ["Invents an answer"]),
        PTO,
        "skipped",
        "the pass would rest on the unchecked fail condition",
    ),
    case("rule-dog", rule(['Says "does not cover"'], ['Mentions "$500"']), DOG_WRONG, "fail"),
    case("rule-dog-right", rule(['Says "does not cover"'], ['Mentions "$500"']), DOG_RIGHT, "pass"),
]


def verdict_of(labelled: dict):
    """The offline judge's verdict on a labelled case."""
    from apps.runs.judging import heuristic

    if "rule" in labelled:
        return heuristic.judge_rule(labelled["rule"], labelled["transcript"])
    return heuristic.judge_criterion(labelled["criterion"], labelled["transcript"])


def answer_of(verdict) -> str:
    """pass, fail or skipped, as the labels say it (an error would be neither: it is reported)."""
    if verdict.status == "skipped":
        return "skipped"
    if verdict.status == "ok":
        return "pass" if verdict.passed else "fail"
    return verdict.status


def figures(cases: list[dict] = CASES) -> dict:
    """The judge over the labelled set: coverage (share of cases it answers, i.e. does not skip),
    accuracy on the cases it answers, false passes (it passes a case labelled fail or skipped),
    and the cases it answers differently from the label."""
    answers = [(labelled, answer_of(verdict_of(labelled))) for labelled in cases]
    answered = [(labelled, got) for labelled, got in answers if got != "skipped"]
    correct = [labelled for labelled, got in answered if got == labelled["expected"]]
    return {
        "cases": len(cases),
        "answered": len(answered),
        "skipped": len(cases) - len(answered),
        "coverage": len(answered) / len(cases) if cases else 0.0,
        "accuracy": len(correct) / len(answered) if answered else 0.0,
        "false_passes": [
            labelled["id"] for labelled, got in answers if got == "pass" and labelled["expected"] != "pass"
        ],
        "wrong": [
            (labelled["id"], labelled["expected"], got) for labelled, got in answers if got != labelled["expected"]
        ],
        "by_label": {
            label: sum(1 for labelled in cases if labelled["expected"] == label)
            for label in ("pass", "fail", "skipped")
        },
    }
