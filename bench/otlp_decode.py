"""What one OTLP export costs the receiver before anything is stored: CPU seconds and peak memory.

    .venv/bin/python bench/otlp_decode.py [--only NAME ...] [--baseline /path/to/other/checkout] [--timeout 180]

(CI's smoke run: --only nested normal members.)

Builds the bodies of issue 21's attacks and two normal exports, then runs each through what the
view does before storage (decode.decompress, decode.parse_request, mapping.export_records, with the
settings' limits) in a fresh child process, one per body, and prints for each: the outcome (spans
mapped and rejected, or the HTTP status it is refused with), the child's CPU seconds for that work,
and its peak RSS (`resource.getrusage`), next to the RSS of the same child before the body was read
(Django and the protobuf modules loaded). A gunicorn worker starts about as large.

--baseline runs the same children against another checkout (e.g. main) for before/after figures;
a child that takes longer than --timeout is reported as such.
"""

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _payloads() -> dict[str, Callable[[], tuple[bytes, str, str]]]:
    """name -> a function building (body, content type, content encoding), so --only builds only those."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from otlp import make_bodies, make_spans  # bench/otlp.py: the normal export of the throughput bench

    protobuf, as_json = "application/x-protobuf", "application/json"
    out: dict[str, Callable[[], tuple[bytes, str, str]]] = {}
    out["empty gzip members, 9.7 MB"] = lambda: (gzip.compress(b"", mtime=0) * 485_000, protobuf, "gzip")

    def attributes_body(spans: int, per_span: int) -> bytes:
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        rng = random.Random(spans)
        for _ in range(spans):
            span = scope.spans.add(
                trace_id=rng.randbytes(16),
                span_id=rng.randbytes(8),
                name="x",
                start_time_unix_nano=1,
                end_time_unix_nano=2,
            )
            span.attributes.extend(KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(per_span))
        return gzip.compress(request.SerializeToString())

    out["3.3M attributes in one span"] = lambda: (attributes_body(1, 3_300_000), protobuf, "gzip")
    out["3.3M attributes over 2,000 spans"] = lambda: (attributes_body(2000, 1650), protobuf, "gzip")

    def many_attributes_json() -> bytes:
        attributes = [{"key": f"k{i}", "value": {"intValue": "1"}} for i in range(1_400_000)]
        span = {"traceId": "cd" * 16, "spanId": "cd" * 8, "name": "x", "attributes": attributes}
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()

    out["1.4M attributes as OTLP JSON"] = lambda: (gzip.compress(many_attributes_json()), as_json, "gzip")
    out["1,000 nested arrays (JSON)"] = lambda: (b'{"resourceSpans": ' + b"[" * 1000 + b"]" * 1000 + b"}", as_json, "")

    def json_values_bomb() -> bytes:
        result = "[" + "{}," * 20_000_000 + "{}]"
        span = {
            "traceId": "ab" * 16,
            "spanId": "ab" * 8,
            "name": "execute_tool",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.call.result", "value": {"stringValue": result}},
            ],
        }
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()

    out["60 MB of JSON values in a tool result"] = lambda: (gzip.compress(json_values_bomb()), as_json, "gzip")
    out["normal export: 512 spans"] = lambda: (
        gzip.compress(make_bodies(make_spans(47, 10, seed=1), 512)[0]),
        protobuf,
        "gzip",
    )
    out["large export: 19,800 spans"] = lambda: (
        gzip.compress(make_bodies(make_spans(1800, 10, seed=2), 19_800)[0]),
        protobuf,
        "gzip",
    )
    return out


def child(path: str, content_type: str, encoding: str) -> None:
    """Runs in the checkout given by the current directory: what OtlpTracesView does before storage."""
    import time

    from harness import peak_rss_mb as peak_mb

    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    import django

    django.setup()
    from django.conf import settings

    from apps.traces.ingestion.otlp import decode, mapping

    body = Path(path).read_bytes()
    before = peak_mb()
    cpu = time.process_time()
    limits = {"limit": settings.EVALSITE_OTLP_MAX_DECOMPRESSED_BYTES}
    if hasattr(settings, "EVALSITE_OTLP_MAX_GZIP_MEMBERS"):
        limits["max_members"] = settings.EVALSITE_OTLP_MAX_GZIP_MEMBERS
    try:
        raw = decode.decompress(body, encoding, **limits)
        if hasattr(settings, "EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST"):
            export = decode.parse_request(
                raw,
                decode.encoding_of(content_type),
                max_json_objects=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST,
            )
        else:
            export = decode.parse_request(raw, decode.encoding_of(content_type))
        del raw
        if hasattr(settings, "EVALSITE_OTLP_MAX_SPANS_PER_REQUEST"):
            records, rejected, _ = mapping.export_records(
                export,
                max_spans=settings.EVALSITE_OTLP_MAX_SPANS_PER_REQUEST,
                max_attributes=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_REQUEST,
                max_attributes_per_span=settings.EVALSITE_OTLP_MAX_ATTRIBUTES_PER_SPAN,
            )
            rejected = sum(rejected.by_reason.values())
        else:
            records, rejected, _ = mapping.export_records(export)
        outcome = f"200: {len(records)} spans mapped, {rejected} rejected"
    except decode.BodyError as exc:
        outcome = f"{exc.status}: {exc.message[:60]}"
    except Exception as exc:  # what the view would answer 413 (ExportTooLarge) or 500 (anything else)
        status = 413 if type(exc).__name__ == "ExportTooLarge" else 500
        outcome = f"{status}: {type(exc).__name__}: {str(exc)[:50]}"
    print(
        json.dumps({"cpu": time.process_time() - cpu, "rss_before": before, "rss_peak": peak_mb(), "outcome": outcome})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="names (substrings) of the bodies to run")
    parser.add_argument("--baseline", help="another checkout to run the same bodies against, first")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--make", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.make:
        # Built in a process of their own: a child forked from a parent holding them would report the
        # parent's size as its own peak (ru_maxrss survives exec).
        index = []
        for n, (name, build) in enumerate(_payloads().items()):
            if args.only and not any(part in name for part in args.only):
                continue
            body, content_type, encoding = build()
            (Path(args.make) / str(n)).write_bytes(body)
            index.append([name, str(Path(args.make) / str(n)), content_type, encoding])
        (Path(args.make) / "index.json").write_text(json.dumps(index))
        return
    checkouts = [("baseline", Path(args.baseline).resolve())] if args.baseline else []
    checkouts.append(("this", ROOT))
    env = {**os.environ, "SECRET_KEY": "bench", "DEBUG": "0"}
    env.pop("DATABASE_URL", None)  # nothing is stored: the default SQLite settings load fastest
    print(f"{'body':40} {'size':>9} {'checkout':9} {'CPU s':>7} {'RSS MB':>15}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--make",
                tmp,
                *(["--only", *args.only] if args.only else []),
            ],
            check=True,
            env=env,
        )
        for name, path, content_type, encoding in json.loads((Path(tmp) / "index.json").read_text()):
            size = Path(path).stat().st_size
            for label, checkout in checkouts:
                try:
                    done = subprocess.run(
                        [sys.executable, str(Path(__file__).resolve()), "--child", str(path), content_type, encoding],
                        cwd=checkout,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=args.timeout,
                    )
                    result = json.loads(done.stdout.strip().splitlines()[-1])
                    rss = f"{result['rss_before']:.0f} -> {result['rss_peak']:.0f}"
                    line = f"{result['cpu']:7.2f} {rss:>15}  {result['outcome']}"
                except subprocess.TimeoutExpired:
                    line = f"{'>' + str(int(args.timeout)):>7} {'':>15}  still running after {args.timeout:.0f} s"
                except (IndexError, json.JSONDecodeError):
                    line = f"child failed: {done.stderr.strip().splitlines()[-1:]}"
                print(f"{name:40} {size / 1e6:8.2f}M {label:9} {line}", flush=True)


if __name__ == "__main__":
    main()
