"""The words every judgement is stored and read with. One JudgeStatus for run verdicts, agentic and
RAG metrics and human reviews alike; what a status alone cannot say goes in a short `reason` code."""

from django.db import models


class SubjectKind(models.TextChoices):
    """What a score is about. `subject_id` is that model's primary key."""

    RUN_RESULT = "run_result", "Run result"  # runs.EvaluationResult
    TRACE = "trace", "Trace"  # traces.AgentTrace
    AGENTIC_EVALUATION = "agentic_evaluation", "Agentic evaluation"  # agentic.AgentEvaluation
    RAG_EVALUATION = "rag_evaluation", "RAG evaluation"  # rag.TraceEvaluation


class ScoreSource(models.TextChoices):
    """Who judged: an LLM judge, deterministic code (the heuristic judge, Ragas' string metrics,
    a tool-use check) or a person."""

    LLM = "llm", "LLM judge"
    CODE = "code", "Code"
    HUMAN = "human", "Human"


class JudgeStatus(models.TextChoices):
    """ok: a verdict was given (passed and/or value set). skipped: the judge cannot assess it (the
    reason says why). error: the judge failed. A skipped verdict neither passes nor fails; an errored
    one cannot confirm success."""

    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"


class ScoreKind(models.TextChoices):
    """Which family `key` belongs to inside one subject: a run result is judged on criteria (their
    text is the key), rubric rules (the rule's id), and, for V1 questions, correctness."""

    CRITERION = "criterion"
    RULE = "rule"
    CORRECTNESS = "correctness"
    METRIC = "metric"  # an agentic or RAG metric; the key is its name


class Reason(models.TextChoices):
    """Short codes beside a status, so that every status the old stores had maps without loss.
    Empty for a plain ok / error."""

    NONE = "", "—"
    NEEDS_LLM_JUDGE = "needs_llm_judge", "needs an LLM judge"
    MISSING = "missing", "input missing"  # a RAG metric whose sample lacked a field it needs
    UNSUPPORTED = "unsupported", "unsupported"  # a RAG metric this build cannot run
    NOT_RUN = "not_run", "not run"  # complete, but another RAG metric was missing and partial mode was off
    JUDGE_ERROR = "judge_error", "judge error"
