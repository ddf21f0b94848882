"""Worker settings for integration tests whose run has an LLM judge. tests.settings drops OPENAI_* so
a developer's real server never leaks into tests; these tests name their fake judge explicitly."""

import os

from tests.settings import *  # noqa: F403

OPENAI_BASE_URL = os.environ["EVALSITE_TEST_OPENAI_BASE_URL"]
OPENAI_API_KEY = "test-key"
EVALSITE_LLM_BACKOFF_SECONDS = 0.01
