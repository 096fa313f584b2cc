#!/usr/bin/env python3
"""ocr_pages: a command tool (docs/tools.md, "Command tools") that runs
Tesseract OCR on each page of a batch: page images, or PDFs whose pages
pdftoppm renders first.

Each page is metered usage ({"usage": OCR_UNITS_PER_PAGE} after the page, so a
priced tool charges per page done and a cancelled batch settles the pages
it finished) and one progress report. A page's words go to the task's
scratch folder as they are done, and the checkpoint lists the finished
pages every OCR_CHECKPOINT_EVERY pages, so a takeover goes on where the
lost worker stopped. structuredContent: text and word confidences per page;
the full text is also a file (a resource for large batches). Standard
library only.
"""
import json
import os
import subprocess
import sys

status = os.fdopen(int(os.environ.get("MCPQ_STATUS_FD", "3")), "w", buffering=1)


def send(**line):
    status.write(json.dumps(line) + "\n")


def pages_of(sources, scratch):
    """The page images of the batch, in order (PDFs rendered once)."""
    pages = []
    for n, src in enumerate(sources):
        if not src.lower().endswith(".pdf"):
            pages.append(src)
            continue
        prefix = os.path.join(scratch, "pdf%03d" % n)
        rendered = sorted(p for p in os.listdir(scratch) if p.startswith("pdf%03d-" % n))
        if not rendered:
            subprocess.run(["pdftoppm", "-r", "200", "-png", src, prefix], check=True)
            rendered = sorted(p for p in os.listdir(scratch) if p.startswith("pdf%03d-" % n))
        pages += [os.path.join(scratch, p) for p in rendered]
    return pages


def ocr(image, lang):
    """Words and confidences of one page (Tesseract's TSV)."""
    env = dict(os.environ, OMP_THREAD_LIMIT=os.environ.get("OCR_THREADS", "1"))
    tsv = subprocess.run(["tesseract", image, "-", "-l", lang, "tsv"], check=True, capture_output=True,
                         text=True, env=env).stdout
    words, lines, key = [], [], None
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5" or not cols[11].strip():
            continue
        line = tuple(cols[1:5])
        if line != key:
            lines.append([])
            key = line
        lines[-1].append(cols[11])
        words.append({"word": cols[11], "confidence": round(float(cols[10]), 1)})
    return {"text": "\n".join(" ".join(l) for l in lines), "words": words}


def main():
    with open(os.environ["MCPQ_ARGS"]) as f:
        args = json.load(f)
    scratch = os.environ["MCPQ_SCRATCH"]
    lang = args.get("language", "eng")
    every = max(1, int(os.environ.get("OCR_CHECKPOINT_EVERY", "5")))
    pages = pages_of(args["pages"], scratch)
    done = set()
    if os.path.exists(os.environ.get("MCPQ_CHECKPOINT", "")):
        with open(os.environ["MCPQ_CHECKPOINT"]) as f:
            done = {i for i in json.load(f).get("pages", [])
                    if os.path.exists(os.path.join(scratch, "page%05d.json" % i))}
    for i, image in enumerate(pages):
        if i in done:
            continue
        result = ocr(image, lang)
        tmp = os.path.join(scratch, "page%05d.tmp" % i)
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, os.path.join(scratch, "page%05d.json" % i))
        done.add(i)
        # An audit log of pages recognised, if asked for (the tests count it).
        if os.environ.get("OCR_AUDIT_LOG"):
            with open(os.environ["OCR_AUDIT_LOG"], "a") as log:
                log.write("%s %d\n" % (os.environ["MCPQ_TASK_ID"], i))
        send(usage=int(os.environ.get("OCR_UNITS_PER_PAGE", "1")))
        # The checkpoint first: lines apply in order, so once the progress
        # shows, the pages it counts are saved.
        if len(done) % every == 0 or len(done) == len(pages):
            send(checkpoint={"pages": sorted(done)})
        send(progress=len(done), total=len(pages), message="OCR page %d of %d" % (len(done), len(pages)))
    results = []
    for i in range(len(pages)):
        with open(os.path.join(scratch, "page%05d.json" % i)) as f:
            r = json.load(f)
        confs = [w["confidence"] for w in r["words"]]
        results.append({"page": i + 1, "text": r["text"], "words": r["words"],
                        "meanConfidence": round(sum(confs) / len(confs), 1) if confs else 0})
    with open(os.environ["MCPQ_STRUCTURED"], "w") as f:
        json.dump({"pages": results, "pageCount": len(pages), "language": lang}, f)
    full = "\n\f\n".join(r["text"] for r in results)
    with open(os.path.join(os.environ["MCPQ_OUTPUT"], "text.txt"), "w") as f:
        f.write(full + "\n")


if __name__ == "__main__":
    sys.exit(main())
