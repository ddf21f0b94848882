"""gunicorn settings for `make run` and production: `gunicorn -c evalsite/gunicorn.conf.py evalsite.wsgi`.

Every value comes from the environment with a default that suits this machine size; the table in
docs/configuration.md lists them. Threaded workers because a request mostly waits on the database
(and SQLite serialises writers anyway): threads are cheap, processes are memory.
"""

import os
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


bind = os.environ.get("GUNICORN_BIND", "").strip() or f"127.0.0.1:{_int('PORT', 8001)}"
worker_class = "gthread"
workers = _int("GUNICORN_WORKERS", max(2, os.cpu_count() or 1))
threads = _int("GUNICORN_THREADS", 8)
# Connections the kernel queues before a thread accepts them. runserver's 10 reset connections
# when 64 agents wrote at once; a burst now waits instead (the kernel caps it at somaxconn).
backlog = _int("GUNICORN_BACKLOG", 2048)
# A request thread silent this long gets its worker restarted: above the slowest legitimate request
# (a large synchronous export or TRACE scoring), far below "hung forever".
timeout = _int("GUNICORN_TIMEOUT", 120)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
# Agents and proxies reuse connections between calls.
keepalive = _int("GUNICORN_KEEPALIVE", 5)
# Recycling a worker now and then bounds what a slow leak can grow to; jitter spreads the restarts.
max_requests = _int("GUNICORN_MAX_REQUESTS", 0)
max_requests_jitter = max_requests // 10
# Which proxies' X-Forwarded-* gunicorn believes (Django's SECURE_PROXY_SSL_HEADER is separate).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# Access logs are usually the proxy's job; "-" writes them to stdout.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "").strip() or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")

# gunicorn's control socket defaults to one path in the home directory, which a second server on
# the same machine (another checkout, a benchmark) would fight over; keep it with the instance.
_var_dir = Path(os.environ.get("EVALSITE_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
_var_dir.mkdir(parents=True, exist_ok=True)
control_socket = str(_var_dir / "gunicorn.ctl")


def post_worker_init(worker):
    """Load what the first requests would (evalsite/warmup.py: every view, the URL reverse tables,
    scipy, the project's templates), then freeze the objects loading made (about 300,000) out of
    the garbage collector's sight. Otherwise each full collection walks them all: a 200-300 ms
    pause every few requests that allocate much (a page of 100 results; bench/results.py measured
    it), on every worker."""
    import gc

    from evalsite.warmup import warm

    for name in warm():
        worker.log.warning("template %s does not compile; its page will fail", name)
    gc.freeze()
