import orjson
from rest_framework.renderers import JSONRenderer


class OrjsonRenderer(JSONRenderer):
    """Fast JSON out, with datetimes as ISO 8601 and non-string dict keys allowed."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        try:
            return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
        except orjson.JSONEncodeError:
            # orjson stops at 64-bit integers, but jsonb hands back any number it kept (a stored
            # 1e20 reads as an int). Input validation refuses these now; rows written before it, or
            # by the admin or in-process, still render exactly through the stdlib encoder.
            return super().render(data, accepted_media_type, renderer_context)
