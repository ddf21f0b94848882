"""Signals of the scores app."""

from django.dispatch import Signal

# Sent by services.subjects_forget with subject_kind and subject_ids (a list, or a subquery of their
# ids) for subjects deleted in bulk, without Django's per-object post_delete: what names a subject
# by kind + id (a queue item) forgets them in one query.
subjects_deleted = Signal()
