"""Start the test OpenID provider: `python -m tests.oidc.provider.serve PORT DB_PATH REDIRECT_URI
CLIENT_ID CLIENT_SECRET KEY_PEM_PATH`. Migrates its SQLite file, installs the RSA signing key and registers one
confidential client (code flow, RS256, consent asked) for evalsite's redirect URI, then serves on
127.0.0.1:PORT with a threaded WSGI server until killed. Prints "ready" when it accepts requests."""

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def main() -> None:
    port, db_path, redirect_uri, client_id, client_secret, key_path = sys.argv[1:7]
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc.provider.settings"
    os.environ["OIDC_PROVIDER_DB"] = db_path
    os.environ["OIDC_PROVIDER_SITE_URL"] = f"http://127.0.0.1:{port}"

    import django

    django.setup()
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oidc_provider.models import Client, ResponseType, RSAKey

    call_command("migrate", verbosity=0)
    # The tests made this key, so they can sign tokens with it as the provider would (an expired one).
    with open(key_path) as key_file:
        RSAKey.objects.create(key=key_file.read())
    client = Client.objects.create(
        name="evalsite",
        client_type="confidential",
        client_id=client_id,
        client_secret=client_secret,
        jwt_alg="RS256",
        require_consent=True,
        reuse_consent=False,
    )
    client.redirect_uris = [redirect_uri]
    client.save()
    client.response_types.set(ResponseType.objects.filter(value="code"))

    server = make_server(
        "127.0.0.1", int(port), get_wsgi_application(), server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
