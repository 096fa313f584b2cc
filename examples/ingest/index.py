"""The search index of examples/ingest: one SQLite file per index name in
$INGEST_INDEX_DIR, with an FTS5 table of chunks and a table of pages (what
a re-crawl compares against). Standard library only."""
import os
import re
import sqlite3

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
  url TEXT PRIMARY KEY, title TEXT, etag TEXT, last_modified TEXT, hash TEXT,
  links TEXT, chunks INTEGER, indexed_at REAL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(
  url UNINDEXED, title, body, tokenize = 'porter unicode61');
"""


def path_of(name):
    """The file of index name ($INGEST_INDEX_DIR: a folder every worker
    of the queue mounts)."""
    if not NAME.match(name):
        raise SystemExit("index %r: 1 to 64 of a-z 0-9 _ -, starting with a letter or digit" % name)
    folder = os.environ.get("INGEST_INDEX_DIR", "")
    if not folder:
        raise SystemExit("INGEST_INDEX_DIR is not set in the worker's environment (the folder of the indexes)")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name + ".sqlite")


def open_index(name, create=True):
    path = path_of(name)
    if not create and not os.path.exists(path):
        raise SystemExit("no index %r: ingest_site builds it" % name)
    db = sqlite3.connect(path, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    if create:
        db.executescript(SCHEMA)
    return db
