from rest_framework.pagination import LimitOffsetPagination


class LimitOffset(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
