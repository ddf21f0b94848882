"""apps/core/api/negotiation.py: the shortcut for JSON clients answers exactly what DRF's negotiation does."""

import pytest
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from apps.core.api.negotiation import ApiContentNegotiation
from apps.core.api.renderers import OrjsonRenderer

URL = "/api/v1/metrics/trace/none"


def _request(accept=None, query=""):
    extra = {} if accept is None else {"HTTP_ACCEPT": accept}
    return Request(APIRequestFactory().get(URL + query, **extra))


@pytest.mark.parametrize("renderers", [[OrjsonRenderer()], [OrjsonRenderer(), BrowsableAPIRenderer()]])
@pytest.mark.parametrize(
    "accept,query",
    [
        (None, ""),
        ("*/*", ""),
        ("application/json", ""),
        ("", ""),
        ("application/json; indent=4", ""),
        ("text/html", ""),
        ("text/html,*/*;q=0.8", ""),
        ("*/*", "?format=json"),
    ],
)
def test_same_answer_as_drf(accept, query, renderers):
    def outcome(negotiation):
        try:
            renderer, media_type = negotiation.select_renderer(_request(accept, query), renderers)
        except NotAcceptable:
            return "406"
        return type(renderer), media_type

    assert outcome(ApiContentNegotiation()) == outcome(DefaultContentNegotiation())


def test_unacceptable_is_still_406(api):
    assert api.get(URL, HTTP_ACCEPT="text/csv").status_code == 406
    assert api.get(URL, HTTP_ACCEPT="").status_code == 406
    assert api.get(URL, HTTP_ACCEPT="*/*").status_code == 404
