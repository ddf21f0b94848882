"""CSV that a spreadsheet opens safely, for every CSV evalsite writes (a run's results, a test set).

CSV injection (OWASP): a cell whose text starts with = + - @ runs as a formula, and spreadsheets trim
leading spaces before deciding, so " =cmd|…" runs too. Such a cell is written with a leading ' (read
as "text"); a value that itself starts with ' before what would need one gets one more, so
`from_spreadsheet` gives back exactly what was exported.

A CR or LF inside a value must be quoted, or a reader that splits lines on either sees a new line
starting with what follows it. Python's csv module quotes only the characters of its line
terminator, so `csv_writer` ends lines with CRLF (RFC 4180): both are then quoted."""

import csv

_FORMULA_CHARS = ("=", "+", "-", "@")
# A leading tab or CR is refused too: some spreadsheets treat either as the start of a cell.
_CONTROL_STARTS = ("\t", "\r")
LINE_TERMINATOR = "\r\n"


def _needs_guard(value: str) -> bool:
    if value.startswith(_CONTROL_STARTS) or value.lstrip().startswith(_FORMULA_CHARS):
        return True
    # A value already starting with ' before text that needs one: one more, or import would take it off.
    return value.startswith("'") and (_needs_guard(value[1:]) or value[1:].startswith("'"))


def spreadsheet_safe(value):
    """`value` as a cell: text a spreadsheet would run as a formula gets a leading '."""
    if isinstance(value, str) and _needs_guard(value):
        return "'" + value
    return value


def from_spreadsheet(cell: str) -> str:
    """The inverse of spreadsheet_safe, for a cell read back from an exported file."""
    if cell.startswith("'") and (_needs_guard(cell[1:]) or cell[1:].startswith("'")):
        return cell[1:]
    return cell


def csv_writer(file, **kwargs):
    return csv.writer(file, lineterminator=LINE_TERMINATOR, **kwargs)


def csv_dict_writer(file, fieldnames, **kwargs):
    return csv.DictWriter(file, fieldnames=fieldnames, lineterminator=LINE_TERMINATOR, **kwargs)
