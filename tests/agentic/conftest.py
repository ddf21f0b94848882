import pytest

from apps.traces.demo import load_demo_traces


@pytest.fixture
def demo_traces(db):
    load_demo_traces()
