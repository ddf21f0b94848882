"""Test sets as files (JSON, JSONL, CSV) so teams can keep them in git: export renders a version,
import parses a file into items that then go through the normal publish service."""

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from apps.core.errors import InvalidInputError
from apps.core.spreadsheet import csv_dict_writer, from_spreadsheet, spreadsheet_safe

FORMATS = {"json": "application/json", "jsonl": "application/x-ndjson", "csv": "text/csv"}
CSV_COLUMNS = [
    "item_id",
    "type",
    "name",
    "message",
    "persona",
    "initial_message",
    "max_turns",
    "scripted_turns",
    "success_criteria",
    "should_use_tools",
    "should_not_use_tools",
    "expected_outcome",
    "tags",
    "priority",
]
LIST_COLUMNS = {"scripted_turns", "success_criteria", "should_use_tools", "should_not_use_tools", "tags"}
INPUT_COLUMNS = ("message", "persona", "initial_message", "max_turns", "scripted_turns")
EXPECTED_COLUMNS = ("success_criteria", "should_use_tools", "should_not_use_tools", "expected_outcome")


# Cells a spreadsheet would run as a formula are exported with a leading ' and imported without it
# (apps.core.spreadsheet); values holding CR or LF are quoted.


def format_for(name: str | None, content_type: str | None = None) -> str:
    """The file format named by ?format=, else guessed from the Content-Type."""
    if name:
        if name not in FORMATS:
            raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}, got {name!r}")
        return name
    media = (content_type or "").split(";")[0].strip().lower()
    for fmt, media_type in FORMATS.items():
        if media == media_type:
            return fmt
    if media in ("application/jsonl", "application/jsonlines"):
        return "jsonl"
    raise InvalidInputError("Name the file format with ?format=json|jsonl|csv or a matching Content-Type")


def _json_value(value):
    # RFC 3339, as the API writes timestamps: str() would put a space where the "T" belongs.
    return value.isoformat() if isinstance(value, datetime) else str(value)


def export_test_set(data: dict, fmt: str) -> str:
    """`data` is a test set version in the contract's shape."""
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False, default=_json_value) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in data["items"])
    out = io.StringIO()
    writer = csv_dict_writer(out, CSV_COLUMNS)
    writer.writeheader()
    for item in data["items"]:
        row = {
            "item_id": item["item_id"],
            "type": item["type"],
            "name": item["name"],
            "priority": item["priority"],
            "tags": json.dumps(item["tags"], ensure_ascii=False),
        }
        for column in INPUT_COLUMNS:
            value = item["inputs"].get(column)
            if column in LIST_COLUMNS:
                row[column] = json.dumps(value or [], ensure_ascii=False)
            else:
                row[column] = "" if value is None else value
        for column in EXPECTED_COLUMNS:
            value = item["expected"].get(column)
            row[column] = json.dumps(value, ensure_ascii=False) if column in LIST_COLUMNS else value
        writer.writerow({column: spreadsheet_safe(value) for column, value in row.items()})
    return out.getvalue()


@dataclass
class ParsedFile:
    items: list = field(default_factory=list)
    # name, description and agent_id when the file is a whole test set (JSON export).
    meta: dict = field(default_factory=dict)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInputError("The file is not valid UTF-8 text") from None


def _list_cell(value: str, where: str) -> list:
    value = value.strip()
    if not value:
        return []
    if value.startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise InvalidInputError(f"{where}: not a valid JSON list") from None
        if not isinstance(parsed, list):
            raise InvalidInputError(f"{where}: expected a list")
        return parsed
    # Hand-written spreadsheets: one entry per line of the cell.
    return [line.strip() for line in value.splitlines() if line.strip()]


def _csv_items(text: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"type", "name"} <= set(reader.fieldnames):
        raise InvalidInputError(
            f"The CSV needs a header row with at least type and name (columns: {', '.join(CSV_COLUMNS)})"
        )
    unknown = [c for c in reader.fieldnames if c not in CSV_COLUMNS]
    if unknown:
        raise InvalidInputError(f"Unknown CSV columns: {', '.join(unknown)}")
    items = []
    for line_no, row in enumerate(reader, start=2):
        if None in row:
            raise InvalidInputError(f"CSV line {line_no}: more cells than columns")
        values = {k: from_spreadsheet(v or "") for k, v in row.items()}
        inputs, expected = {}, {}
        for column in INPUT_COLUMNS:
            if column not in values:
                continue
            raw = values[column]
            if column in LIST_COLUMNS:
                inputs[column] = _list_cell(raw, f"CSV line {line_no}, {column}")
            elif column == "max_turns":
                if raw.strip():
                    try:
                        inputs[column] = int(raw)
                    except ValueError:
                        raise InvalidInputError(f"CSV line {line_no}, max_turns: not a whole number") from None
            else:
                inputs[column] = raw
        for column in EXPECTED_COLUMNS:
            if column in values:
                raw = values[column]
                expected[column] = _list_cell(raw, f"CSV line {line_no}, {column}") if column in LIST_COLUMNS else raw
        item = {
            "type": values.get("type", ""),
            "name": values.get("name", ""),
            "inputs": inputs,
            "expected": expected,
            "tags": _list_cell(values.get("tags", ""), f"CSV line {line_no}, tags"),
        }
        if values.get("item_id", "").strip():
            item["item_id"] = values["item_id"].strip()
        if values.get("priority", "").strip():
            item["priority"] = values["priority"].strip()
        items.append(item)
    return items


def parse_test_set_file(raw: bytes, fmt: str) -> ParsedFile:
    """Raw items (validated later, with the rest of the test set) from a JSON, JSONL or CSV file."""
    if not raw.strip():
        raise InvalidInputError("The file is empty")
    if fmt == "json":
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InvalidInputError(f"Not valid JSON: {exc}") from None
        if isinstance(doc, list):
            return ParsedFile(items=doc)
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            meta = {k: doc[k] for k in ("name", "description", "agent_id") if k in doc}
            return ParsedFile(items=doc["items"], meta=meta)
        raise InvalidInputError("A JSON test set file is a list of items or an object with an items list")
    if fmt == "jsonl":
        items = []
        for line_no, line in enumerate(_decode(raw).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise InvalidInputError(f"JSONL line {line_no}: not valid JSON ({exc})") from None
        return ParsedFile(items=items)
    if fmt == "csv":
        try:
            return ParsedFile(items=_csv_items(_decode(raw)))
        except csv.Error as exc:
            raise InvalidInputError(f"Not valid CSV: {exc}") from None
    raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}")
