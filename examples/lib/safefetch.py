"""safefetch: fetch a caller's http(s) URL without reaching what the caller
must not (docs/tools.md, "Fetching URLs safely"). Standard library only.

A URL a caller hands to a tool could name the worker's own services
(loopback), the fleet's network (private addresses), the cloud's metadata
service (169.254.169.254, link-local) or another tenant's internal host.
Every connection, the first and each redirect's, resolves the host and
refuses it when any of its addresses is not public, unless the address is
in a network the tools file allows (its allowNetworks, which mcpq passes
as $MCPQ_ALLOW_NETWORKS). The check runs on the addresses the socket then
connects to, so a name that resolves differently the second time (DNS
rebinding) gains nothing. The body is bounded in size and the whole fetch
in time. No proxy is used: a proxy would connect on our behalf, unchecked.
"""
import http.client
import ipaddress
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

USER_AGENT = "mcpq-example/1 (+https://github.com/mcpq/mcpq)"


class Refused(Exception):
    """A URL or address the rules do not let us fetch."""


class TooLarge(Exception):
    """A body over the size bound."""


def allowed_networks():
    """The networks of $MCPQ_ALLOW_NETWORKS (comma-separated prefixes)."""
    nets = []
    for item in os.environ.get("MCPQ_ALLOW_NETWORKS", "").split(","):
        if item.strip():
            nets.append(ipaddress.ip_network(item.strip(), strict=False))
    return nets


def kind_of(ip):
    """Why ip is not public ("" when it is)."""
    for name in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(ip, "is_" + name):
            return name.replace("_", "-")
    return "" if ip.is_global else "non-public"


def check_address(host, address, nets=None):
    """Raises Refused when address (of host) is not public and not allowed."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    kind = kind_of(ip)
    if not kind:
        return
    for net in allowed_networks() if nets is None else nets:
        if ip.version == net.version and ip in net:
            return
    raise Refused("%s resolves to %s, a %s address the tools file does not allow (allowNetworks)"
                  % (host, ip, kind))


def guarded_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, *args):
    """socket.create_connection, but only to checked addresses of the host."""
    host, port = address
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    nets = allowed_networks()
    for info in infos:
        check_address(host, info[4][0], nets)
    err = None
    for family, kind, proto, _, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as e:
            sock.close()
            err = e
    raise err or OSError("%s has no address" % host)


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._create_connection = guarded_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._create_connection = guarded_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPSConnection, req)


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = 5

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise Refused("redirect to %s: only http and https are fetched" % newurl)
        rule = getattr(req, "allow_redirect", None)
        if rule is not None and not rule(newurl):
            e = Refused("redirect from %s to %s: not followed (%s)" % (req.full_url, newurl, rule.__doc__))
            e.redirect = True  # the caller's rule, not an address refused
            raise e
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            new.allow_redirect = rule
        return new


_opener = urllib.request.OpenerDirector()
for _h in (urllib.request.ProxyHandler({}), urllib.request.UnknownHandler(), _HTTPHandler(), _HTTPSHandler(),
           urllib.request.HTTPDefaultErrorHandler(), _Redirects(), urllib.request.HTTPErrorProcessor()):
    _opener.add_handler(_h)


class Response:
    """A fetched URL: status, headers, body and the URL after redirects."""

    def __init__(self, status, headers, body, url):
        self.status, self.headers, self.body, self.url = status, headers, body, url


def check_url(url):
    """Raises Refused when url is not http(s) or its host resolves to an
    address that is not allowed (fetch checks again as it connects)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("%s: only http and https URLs are fetched" % url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    nets = allowed_networks()
    for info in socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM):
        check_address(parts.hostname, info[4][0], nets)


def _open(url, headers, timeout, allow_redirect):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("%s: only http and https URLs are fetched" % url)
    req = urllib.request.Request(url, headers=dict({"User-Agent": USER_AGENT}, **(headers or {})))
    req.allow_redirect = allow_redirect
    try:
        return _opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        return e
    except urllib.error.URLError as e:
        if isinstance(e.reason, Refused):
            raise e.reason
        raise


def _copy(resp, url, sink, max_bytes, deadline, timeout):
    """Reads resp's body into sink, bounded in size and time; its size."""
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("%s: not fetched within %.0fs" % (url, timeout))
        chunk = resp.read(64 << 10)
        if not chunk:
            return size
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge("%s: over %d bytes" % (url, max_bytes))
        sink(chunk)


def fetch(url, max_bytes=16 << 20, timeout=30.0, headers=None, allow_redirect=None):
    """GETs url under the rules above; allow_redirect(new_url), when
    given, must be true for a redirect to be followed (its docstring says
    why not). An HTTP error status is a Response too (status 404, ...);
    Refused, TooLarge, TimeoutError and OSError (urllib.error.URLError)
    for what could not be fetched."""
    deadline = time.monotonic() + timeout
    with _open(url, headers, timeout, allow_redirect) as resp:
        chunks = []
        _copy(resp, url, chunks.append, max_bytes, deadline, timeout)
        return Response(resp.status if hasattr(resp, "status") else resp.code, resp.headers, b"".join(chunks),
                        resp.geturl())


def fetch_to(url, path, max_bytes=64 << 30, timeout=3600.0):
    """GETs url into the file path (streamed: never whole in memory) under
    the same rules; an HTTP error status raises OSError. Returns the size."""
    deadline = time.monotonic() + timeout
    with _open(url, None, timeout, None) as resp:
        code = resp.status if hasattr(resp, "status") else resp.code
        if code != 200:
            raise OSError("%s: HTTP %d" % (url, code))
        with open(path, "wb") as f:
            return _copy(resp, url, f.write, max_bytes, deadline, timeout)
