import orjson
from rest_framework.renderers import JSONRenderer


class OrjsonRenderer(JSONRenderer):
    """Fast JSON out, with datetimes as ISO 8601 and non-string dict keys allowed."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
