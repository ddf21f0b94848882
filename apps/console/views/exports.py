"""A run's results as a file: CSV for a spreadsheet, JSON Lines for a script. Streamed: the rows
are read from the database in chunks and written as they come, so a run of 100,000 results is
exported without holding it in memory."""

import json
from collections.abc import Iterable, Iterator

from django.contrib.auth.decorators import login_required
from django.http import Http404, StreamingHttpResponse
from django.views.decorators.http import require_GET

from apps.core.projects.resolution import project_of
from apps.core.spreadsheet import csv_writer, spreadsheet_safe
from apps.runs import services
from apps.runs.result_selectors import EXPORT_COLUMNS, result_export_rows

from .common import found_or_404

# Lines written per chunk of the response: one write per row would make 100,000 tiny chunks.
LINES_PER_CHUNK = 500
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


class _Echo:
    """A file for csv.writer whose write returns the line instead of storing it."""

    def write(self, value: str) -> str:
        return value


def _cell(value) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    # A formula, even after leading spaces, is written as text; CR and LF are quoted (csv_writer).
    return spreadsheet_safe(value)


def _csv_lines(rows: Iterable[dict]) -> Iterator[str]:
    writer = csv_writer(_Echo())
    yield writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        yield writer.writerow([_cell(row[name]) for name in EXPORT_COLUMNS])


def _jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def _chunked(lines: Iterator[str]) -> Iterator[bytes]:
    chunk = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= LINES_PER_CHUNK:
            yield "".join(chunk).encode()
            chunk = []
    if chunk:
        yield "".join(chunk).encode()


@login_required
@require_GET
def run_export(request, run_id, fmt: str):
    if fmt not in CONTENT_TYPES:
        raise Http404(f"No export format {fmt!r}: csv or jsonl")
    run = found_or_404(services.run_recover, run_id=run_id, project=project_of(request))
    rows = result_export_rows(run=run)
    lines = _csv_lines(rows) if fmt == "csv" else _jsonl_lines(rows)
    response = StreamingHttpResponse(_chunked(lines), content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="run-{run.run_id}-results.{fmt}"'
    return response
