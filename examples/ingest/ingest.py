#!/usr/bin/env python3
"""ingest_site: a command tool (docs/tools.md, "Command tools") that crawls
a site breadth-first from a start URL and indexes its text into an SQLite
FTS5 index (index.py) that search_index (search.py) queries.

Limits: the start URL's scheme, host and port only, maxDepth links from
it, maxPages pages, robots.txt. Every fetch goes through safefetch (loopback,
private, link-local and metadata addresses are refused unless the tools
file's allowNetworks lets them through, on each redirect too). HTML text
comes from html.parser, PDF text from pdftotext (poppler-utils). Each page
is written in one transaction: its chunks replace the page's old ones. A
re-crawl sends the ETag and Last-Modified it saw (If-None-Match,
If-Modified-Since) and skips a page that answers 304 or whose text hash is
unchanged. After each page the checkpoint holds the frontier and the
visited set, so a takeover fetches no finished page again; progress reads
"Indexed 12 of ~40 pages". Standard library only.
"""
import hashlib
import html.parser
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.robotparser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import safefetch  # noqa: E402
from index import open_index  # noqa: E402

status = os.fdopen(int(os.environ.get("MCPQ_STATUS_FD", "3")), "w", buffering=1)
MAX_BYTES = int(os.environ.get("INGEST_MAX_PAGE_BYTES", str(16 << 20)))
TIMEOUT = float(os.environ.get("INGEST_FETCH_TIMEOUT", "30"))
CHUNK_WORDS = int(os.environ.get("INGEST_CHUNK_WORDS", "120"))
AGENT = "mcpq-ingest"


def send(**line):
    status.write(json.dumps(line) + "\n")


class Page(html.parser.HTMLParser):
    """The title, visible text and links of an HTML page."""
    SKIP = {"script", "style", "noscript", "template", "svg"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.text, self.links, self.skip, self.in_title = "", [], [], 0, False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "title":
            self.in_title = True
        elif tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        elif tag == "title":
            self.in_title = False

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        elif not self.skip and data.strip():
            self.text.append(data.strip())


def normalise(base, href):
    """The absolute URL of href without its fragment ("" for what is not http)."""
    url = urllib.parse.urldefrag(urllib.parse.urljoin(base, href.strip()))[0]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return ""
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.lower(), parts.path or "/", parts.query, ""))


def origin(url):
    p = urllib.parse.urlsplit(url)
    return p.scheme, p.netloc.lower()


def pdf_text(body, scratch):
    path = os.path.join(scratch, "page.pdf")
    with open(path, "wb") as f:
        f.write(body)
    try:
        out = subprocess.run(["pdftotext", "-enc", "UTF-8", path, "-"], capture_output=True, timeout=TIMEOUT)
    finally:
        os.remove(path)
    if out.returncode != 0:
        raise ValueError("pdftotext: " + out.stderr.decode(errors="replace").strip()[-200:])
    return out.stdout.decode("utf-8", errors="replace")


def extract(resp, scratch):
    """(title, text, links) of a fetched page; ValueError for a type we do not index."""
    ctype = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype == "application/pdf" or resp.body[:5] == b"%PDF-":
        text = pdf_text(resp.body, scratch)
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        return (lines[0] if lines else resp.url), text, []
    if ctype in ("text/html", "application/xhtml+xml", ""):
        charset = resp.headers.get_content_charset() or "utf-8"
        p = Page()
        p.feed(resp.body.decode(charset, errors="replace"))
        return p.title.strip() or resp.url, "\n".join(p.text), p.links
    if ctype.startswith("text/"):
        return resp.url, resp.body.decode(resp.headers.get_content_charset() or "utf-8", errors="replace"), []
    raise ValueError("type " + ctype)


def chunks_of(text):
    words = text.split()
    return [" ".join(words[i:i + CHUNK_WORDS]) for i in range(0, len(words), CHUNK_WORDS)] or [""]


def robots_for(start):
    """The site's robots.txt rules (none when it has none)."""
    rp = urllib.robotparser.RobotFileParser()
    try:
        resp = safefetch.fetch(urllib.parse.urljoin(start, "/robots.txt"), max_bytes=512 << 10, timeout=TIMEOUT)
    except (safefetch.TooLarge, OSError):
        resp = None
    if resp is not None and resp.status == 200:
        rp.parse(resp.body.decode("utf-8", errors="replace").splitlines())
    else:
        rp.parse([])
    return rp


def store(db, url, title, text, links, resp):
    """Writes one page in one transaction: False when its text is unchanged."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    row = db.execute("SELECT hash FROM pages WHERE url = ?", (url,)).fetchone()
    with db:
        if row and row[0] == digest:
            db.execute("UPDATE pages SET etag = ?, last_modified = ?, links = ? WHERE url = ?",
                       (resp.headers.get("ETag"), resp.headers.get("Last-Modified"), json.dumps(links), url))
            return False
        parts = chunks_of(text)
        db.execute("DELETE FROM chunks WHERE url = ?", (url,))
        db.executemany("INSERT INTO chunks (url, title, body) VALUES (?, ?, ?)", [(url, title, c) for c in parts])
        db.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (url, title, resp.headers.get("ETag"), resp.headers.get("Last-Modified"), digest,
                    json.dumps(links), len(parts), time.time()))
    return True


class Crawl:
    """The crawl's state: what the checkpoint holds."""

    def __init__(self, start, saved):
        self.frontier = saved.get("frontier", [[start, 0]])
        self.visited = saved.get("visited", [])
        self.seen = set(self.visited) | {u for u, _ in self.frontier}
        self.stats = saved.get("stats", {"indexed": 0, "unchanged": 0, "chunks": 0, "errors": {}, "skipped": {}})

    def count(self, group, kind):
        self.stats[group][kind] = self.stats[group].get(kind, 0) + 1

    def checkpoint(self):
        send(checkpoint={"frontier": self.frontier, "visited": self.visited, "stats": self.stats})


def same_host(start):
    def rule(url):
        """the crawl stays on the start URL's scheme, host and port"""
        return origin(url) == origin(start)
    return rule


def conditional(db, url):
    row = db.execute("SELECT etag, last_modified FROM pages WHERE url = ?", (url,)).fetchone()
    headers = {}
    if row and row[0]:
        headers["If-None-Match"] = row[0]
    if row and row[1]:
        headers["If-Modified-Since"] = row[1]
    return headers


def visit(db, crawl, url, depth, args, rp, scratch):
    """Fetches and indexes one URL; returns the links to follow."""
    try:
        resp = safefetch.fetch(url, max_bytes=MAX_BYTES, timeout=TIMEOUT, headers=conditional(db, url),
                               allow_redirect=same_host(args["url"]))
    except safefetch.Refused as e:
        if getattr(e, "redirect", False):
            crawl.count("skipped", "redirected off the host")
        else:
            crawl.count("errors", "refused")
            send(status="refused: %s" % e)
        return []
    except safefetch.TooLarge:
        crawl.count("errors", "too large")
        return []
    except OSError:
        crawl.count("errors", "unreachable")
        return []
    if resp.status == 304:
        crawl.stats["unchanged"] += 1
        row = db.execute("SELECT links FROM pages WHERE url = ?", (url,)).fetchone()
        return json.loads(row[0]) if row and row[0] else []
    if resp.status != 200:
        crawl.count("errors", "http %d" % resp.status)
        return []
    try:
        title, text, links = extract(resp, scratch)
    except ValueError as e:
        crawl.count("errors", "unindexed " + str(e).split(":")[0])
        return []
    links = [n for n in (normalise(resp.url, h) for h in links) if n]
    if store(db, url, title, text, links, resp):
        crawl.stats["indexed"] += 1
        crawl.stats["chunks"] += len(chunks_of(text))
    else:
        crawl.stats["unchanged"] += 1
    return links


def follow(crawl, links, depth, args, rp):
    """Adds the links a crawl may take to the frontier."""
    for link in links:
        if link in crawl.seen:
            continue
        crawl.seen.add(link)
        if origin(link) != origin(args["url"]):
            crawl.count("skipped", "off the host")
        elif depth + 1 > args.get("maxDepth", 5):
            crawl.count("skipped", "too deep")
        elif not rp.can_fetch(AGENT, link):
            crawl.count("skipped", "robots.txt")
        else:
            crawl.frontier.append([link, depth + 1])


def on_term(signum, frame):
    # A cancel or a shutdown: the page in flight is not committed (its
    # transaction rolls back as the exception unwinds); the index keeps
    # every page before it, and a shutdown's next delivery resumes from
    # the checkpoint.
    sys.exit(143)


def main():
    signal.signal(signal.SIGTERM, on_term)
    with open(os.environ["MCPQ_ARGS"]) as f:
        args = json.load(f)
    start = normalise(args["url"], "")
    if not start:
        raise SystemExit("url %r: only http and https URLs are crawled" % args["url"])
    args["url"] = start
    scratch = os.environ.get("MCPQ_SCRATCH") or os.environ["MCPQ_OUTPUT"]
    saved = {}
    if os.path.exists(os.environ.get("MCPQ_CHECKPOINT", "")):
        with open(os.environ["MCPQ_CHECKPOINT"]) as f:
            saved = json.load(f)
    crawl = Crawl(start, saved)
    max_pages = args.get("maxPages", 100)
    try:
        safefetch.check_url(start)
    except safefetch.Refused as e:
        raise SystemExit("refused: %s" % e)
    except OSError as e:
        raise SystemExit("%s: %s" % (start, e))
    db = open_index(args.get("index", "default"))
    rp = robots_for(start)
    if not rp.can_fetch(AGENT, start):
        raise SystemExit("refused: robots.txt of %s disallows %s" % (start, start))
    while crawl.frontier and len(crawl.visited) < max_pages:
        url, depth = crawl.frontier.pop(0)
        follow(crawl, visit(db, crawl, url, depth, args, rp, scratch), depth, args, rp)
        crawl.visited.append(url)
        del crawl.frontier[max(0, max_pages - len(crawl.visited)):]
        # The checkpoint first: lines apply in order, so once the progress
        # shows, the pages it counts are saved.
        crawl.checkpoint()
        done = crawl.stats["indexed"] + crawl.stats["unchanged"]
        guess = min(max_pages, len(crawl.visited) + len(crawl.frontier))
        send(progress=len(crawl.visited), total=guess,
             message="Indexed %d of ~%d pages (%d unchanged)" % (done, guess, crawl.stats["unchanged"]))
    pages = db.execute("SELECT count(*) FROM pages").fetchone()[0]
    result = dict(crawl.stats, visited=len(crawl.visited), indexPages=pages, index=args.get("index", "default"))
    with open(os.environ["MCPQ_STRUCTURED"], "w") as f:
        json.dump(result, f)
    errors = ", ".join("%d %s" % (n, k) for k, n in sorted(crawl.stats["errors"].items())) or "no errors"
    print("Crawled %d pages of %s: %d indexed (%d chunks), %d unchanged, %s. The index %r holds %d pages." % (
        len(crawl.visited), start, crawl.stats["indexed"], crawl.stats["chunks"], crawl.stats["unchanged"], errors,
        result["index"], pages))


if __name__ == "__main__":
    main()
