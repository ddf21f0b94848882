"""In-process CPU per request of the per-call ingestion path, without gunicorn or clients.

    .venv/bin/python bench/profile_per_call.py [--traces 200] [--profile] [--top 40] [--db evalsite_bench_profile]

Creates a fresh PostgreSQL database, migrates it, makes an API key, then calls Django's WSGI handler
directly with prepared environs (start, intent, 10 tool calls, complete per trace, Bearer key,
DEBUG off) and prints the CPU (process time) each request cost. CPU rather than wall time because
it does not depend on what else the machine is doing. --profile runs the same under cProfile and
prints the top functions by cumulative and by own time, in ms per request.
"""

import argparse
import cProfile
import io
import pstats
import sys
import time

from harness import add_database_args, create_api_key, database_from_args, django_setup, migrate, server_env
from ingest import per_call_requests


def environ_for(path: str, body: bytes, key: str) -> dict:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_CONNECTION": "keep-alive",
        "HTTP_ACCEPT_ENCODING": "gzip, deflate",
        "HTTP_ACCEPT": "*/*",
        "HTTP_USER_AGENT": "Python-urllib/3.11",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    add_database_args(parser, db="evalsite_bench_profile")
    args = parser.parse_args()

    db = database_from_args(args).create()
    try:
        env = server_env(db.url)
        migrate(env)
        key = create_api_key(env)
        django_setup(env)
        from django.core.wsgi import get_wsgi_application

        app = get_wsgi_application()
        statuses = {}

        def start_response(status, headers, exc_info=None):
            statuses[status] = statuses.get(status, 0) + 1

        def run(requests):
            for path, body, _ in requests:
                for _chunk in app(environ_for(path, body, key), start_response):
                    pass

        run(per_call_requests(5, args.calls, "warm"))
        statuses.clear()
        requests = per_call_requests(args.traces, args.calls, "m")
        n = len(requests)
        # Each request timed on its own: the median per kind shrugs off what other processes on a
        # busy machine do to the caches, which shifts a plain total by 10% from run to run.
        by_kind: dict[str, list[float]] = {}
        clock = time.process_time
        cpu = clock()
        for path, body, _ in requests:
            kind = path.rsplit("/", 1)[-1] if path.count("/") > 4 else "start"
            t0 = clock()
            for _chunk in app(environ_for(path, body, key), start_response):
                pass
            by_kind.setdefault(kind, []).append(clock() - t0)
        cpu = clock() - cpu
        medians = {kind: sorted(v)[len(v) // 2] for kind, v in by_kind.items()}
        mix = sum(medians[kind] * len(v) for kind, v in by_kind.items()) / n
        print(
            f"{n} requests, statuses {statuses}: CPU {1000 * cpu / n:.3f} ms per request (mean), "
            f"{1000 * mix:.3f} ms (per-kind medians weighted by the mix); medians: "
            + ", ".join(f"{kind} {1000 * m:.3f}" for kind, m in medians.items())
        )
        if args.profile:
            requests = per_call_requests(args.traces, args.calls, "p")
            # CPU time, not wall time: waiting for PostgreSQL is not the server's CPU.
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            run(requests)
            profiler.disable()
            for sort in ("cumulative", "tottime"):
                out = io.StringIO()
                stats = pstats.Stats(profiler, stream=out)
                # Per request, in ms.
                stats.total_tt = stats.total_tt / n * 1000
                stats.stats = {
                    k: (cc, nc, tt / n * 1000, ct / n * 1000, callers)
                    for k, (cc, nc, tt, ct, callers) in stats.stats.items()
                }
                stats.sort_stats(sort).print_stats(args.top)
                print(f"---- by {sort}, times in ms per request ----")
                print(out.getvalue())
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            db.drop()


if __name__ == "__main__":
    main()
