#!/usr/bin/env python3
"""search_index: a command tool (docs/tools.md, "Command tools") that
queries an index ingest_site built (index.py): FTS5 ranks the chunks
with bm25 and cuts a snippet around the words found. The query is plain
words (each must occur; "phrase": true wants them in order, together),
never FTS5 syntax, so no query can fail to parse. structuredContent: the
results; the text block lists them. Standard library only.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index import open_index  # noqa: E402


def fts_query(text, phrase):
    words = re.findall(r"\w+", text)
    if not words:
        raise SystemExit("the query %r has no words to search for" % text)
    quoted = ['"%s"' % w for w in words]
    return '"%s"' % " ".join(words) if phrase else " ".join(quoted)


def main():
    with open(os.environ["MCPQ_ARGS"]) as f:
        args = json.load(f)
    db = open_index(args.get("index", "default"), create=False)
    rows = db.execute(
        "SELECT url, title, snippet(chunks, 2, '[', ']', '…', 16), bm25(chunks) FROM chunks "
        "WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?",
        (fts_query(args["query"], args.get("phrase", False)), args.get("limit", 10))).fetchall()
    results = [{"url": u, "title": t, "snippet": s, "score": round(-b, 4)} for u, t, s, b in rows]
    with open(os.environ["MCPQ_STRUCTURED"], "w") as f:
        json.dump({"query": args["query"], "results": results}, f)
    if not results:
        print("No match for %r." % args["query"])
    for n, r in enumerate(results, 1):
        print("%d. %s <%s>\n   %s" % (n, r["title"], r["url"], r["snippet"]))


if __name__ == "__main__":
    main()
