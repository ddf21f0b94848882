"""The contract's TRACE examples and a client call that sends them the way clients do."""

import json

from apps.rag.payload import METRIC_REQUIREMENTS

PARIS = {
    "tests": ["answer_accuracy", "context_recall", "context_utilisation"],
    "question": "What is the capital of France?",
    "contexts": [
        {"id": "ctx1", "text": "Paris is the capital of France."},
        {"id": "ctx2", "text": "Lyon is in France."},
    ],
    "answer": "Paris",
    "ground_truth": "Paris",
    "relevant_context_ids": ["ctx1"],
}
AUSTEN = (
    '{ "tests": ["context_recall"], "question": "Who wrote \'Pride and Prejudice\'?", "contexts": '
    '[{ "id": "c1", "text": "Jane Austen authored Pride and Prejudice." }], "answer": "Jane Austen", '
    '"ground_truth": "Jane Austen", "relevant_context_ids": ["c1"]}'
)
FULL = {**PARIS, "tests": list(METRIC_REQUIREMENTS)}


def post(client, query, path="/trace", **params):
    """POST a TRACE query (a dict is sent as its JSON text, as clients do), with query parameters."""
    suffix = ("?" + "&".join(f"{k}={v}" for k, v in params.items())) if params else ""
    return client.post(path + suffix, {"query": query if isinstance(query, str) else json.dumps(query)}, format="json")
