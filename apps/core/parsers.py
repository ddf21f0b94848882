import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class OrjsonParser(BaseParser):
    """JSON bodies through orjson: several times faster on batch ingestion than the stdlib, and it
    refuses invalid UTF-8 and runaway nesting instead of raising RecursionError."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return orjson.loads(stream.read())
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
