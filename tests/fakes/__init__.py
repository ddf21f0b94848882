from http.server import ThreadingHTTPServer


class BusyHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server whose listen backlog takes a run's burst of new connections (a
    benchmark opens up to concurrency x per-item limit at once). The standard library's backlog of
    5 overflows then, and the clients see refused connections and retry after a back-off: time the
    fake adds, not the code under test."""

    request_queue_size = 256
    daemon_threads = True
