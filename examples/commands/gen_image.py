#!/usr/bin/env python3
"""Renders an image from a prompt, one frame at a time: an mcpq command tool.

Standard library only. It stands in for a model on a GPU node: each frame
takes a while (--delay, or "delay" in the arguments), progress goes to
mcpq on file descriptor 3 after every frame, and the last frame is written
as a PNG into the output folder, which mcpq returns as image content.

    python3 gen_image.py --frames 8 -- "a red fox"

Arguments mcpq passes (tools.yaml): --frames N and the prompt as argv
items; the optional ones (size, delay, fail_at_frame) are read from the
JSON file $MCPQ_ARGS. Outside mcpq, progress goes to stderr and the PNG to
./out.
"""

import argparse
import hashlib
import json
import os
import struct
import sys
import time
import zlib


def status_stream():
    """The protocol descriptor (docs/tools.md, "Command tools")."""
    fd = int(os.environ.get("MCPQ_STATUS_FD", "3"))
    try:
        return os.fdopen(fd, "w", buffering=1)
    except OSError:
        return sys.stderr


def report(stream, **line):
    stream.write(json.dumps(line) + "\n")
    stream.flush()


def png(width, height, rows):
    """PNG bytes of an 8-bit RGB image; rows are bytes of 3*width."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + r for r in rows)  # filter type 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def render(prompt, frame, size):
    """A colour field derived from the prompt, shifted by the frame."""
    seed = hashlib.sha256(prompt.encode()).digest()
    r0, g0, b0 = seed[0], seed[1], seed[2]
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            row += bytes(((r0 + x * 4 + frame * 8) % 256, (g0 + y * 4) % 256, (b0 + (x ^ y) + frame) % 256))
        rows.append(bytes(row))
    return png(size, size, rows)


def main():
    parser = argparse.ArgumentParser(description="Render an image from a prompt.")
    parser.add_argument("--frames", type=int, required=True)
    parser.add_argument("prompt")
    opts = parser.parse_args()
    args = {}
    if os.environ.get("MCPQ_ARGS"):
        with open(os.environ["MCPQ_ARGS"], encoding="utf-8") as f:
            args = json.load(f)
    size = int(args.get("size", 64))
    delay = float(args.get("delay", 0.2))
    fail_at = int(args.get("fail_at_frame", 0))
    out = os.environ.get("MCPQ_OUTPUT", "out")
    os.makedirs(out, exist_ok=True)
    status = status_stream()
    image = b""
    for frame in range(1, opts.frames + 1):
        if frame == fail_at:
            raise RuntimeError(f"the model failed at frame {frame} (fail_at_frame)")
        time.sleep(delay)
        image = render(opts.prompt, frame, size)
        report(status, progress=frame, total=opts.frames, message=f"frame {frame}/{opts.frames}")
    with open(os.path.join(out, "image.png"), "wb") as f:
        f.write(image)
    with open(os.path.join(out, "caption.txt"), "w", encoding="utf-8") as f:
        f.write(f"{opts.prompt} ({opts.frames} frames, {size}x{size})")


if __name__ == "__main__":
    main()
