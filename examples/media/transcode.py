#!/usr/bin/env python3
"""transcode_video: a command tool (docs/tools.md, "Command tools") that
re-encodes a video with ffmpeg, segment by segment.

Each segment is encoded into the task's scratch folder ($MCPQ_SCRATCH) and
listed in the checkpoint once finished, so a worker lost mid-encode costs
only the segment in flight: the next delivery skips the listed ones. The
finished segments are joined without re-encoding (ffmpeg's concat demuxer),
thumbnails are taken from the result, and the video, the thumbnails and a
summary go to $MCPQ_OUTPUT (mcpq streams large files to the object store
and returns resource_links). structuredContent: duration, size, codec,
bitrate, height. Standard library only.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import safefetch  # noqa: E402

status = os.fdopen(int(os.environ.get("MCPQ_STATUS_FD", "3")), "w", buffering=1)


def send(**line):
    status.write(json.dumps(line) + "\n")


def clock(seconds):
    seconds = int(seconds)
    return "%d:%02d" % (seconds // 60, seconds % 60) if seconds < 3600 else \
        "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-print_format", "json", "-show_format",
                          "-show_streams", "-select_streams", "v:0", path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def local_input(src, scratch):
    """The path of the input: src itself, or for an http(s) URL the file
    it is downloaded to in the scratch folder (once: a takeover finds it).
    The download goes through safefetch: a loopback, private, link-local
    or metadata address the tools file does not allow is refused, on
    redirects too; MEDIA_MAX_INPUT_BYTES bounds its size."""
    if not src.startswith(("http://", "https://")):
        # ffmpeg reads many protocols (tcp:, ftp:, concat:, ...): a name
        # with a scheme that is not http(s) would bypass safefetch.
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", src):
            raise SystemExit("input refused: %s: only http and https URLs, or paths on the worker, are read" % src)
        return "file:" + os.path.abspath(src)
    path = os.path.join(scratch, "input")
    if os.path.exists(path):
        return path
    send(status="downloading the input")
    try:
        safefetch.fetch_to(src, path + ".part", max_bytes=int(os.environ.get("MEDIA_MAX_INPUT_BYTES", str(8 << 30))))
    except safefetch.Refused as e:
        raise SystemExit("input refused: %s" % e)
    except (safefetch.TooLarge, OSError) as e:
        raise SystemExit("input not fetched: %s" % e)
    os.replace(path + ".part", path)
    return path


def on_term(signum, frame):
    # mcpq wrote why it stops us to $MCPQ_STOP before the SIGTERM. On a
    # cancel the task is over: drop the segment in flight (mcpq removes
    # the scratch folder). On a shutdown keep every finished segment: the
    # next delivery resumes from them.
    reason = ""
    try:
        with open(os.environ["MCPQ_STOP"]) as f:
            reason = f.read().strip()
    except OSError:
        pass
    for name in os.listdir(scratch):
        if name.endswith(".part.mp4") or reason == "cancel":
            try:
                os.remove(os.path.join(scratch, name))
            except OSError:
                pass
    sys.exit(143)


def encode(src, dst, start, length, args, encoder, done_before, total, seg):
    """Encodes [start, start+length) of src to dst, reporting progress."""
    part = dst[:-4] + ".part.mp4"
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-ss", "%.3f" % start, "-t", "%.3f" % length,
           "-i", src, "-vf", "scale=-2:%d" % args["height"], "-c:v", encoder, "-an",
           "-progress", "pipe:1", "-nostats"]
    if encoder == "libx264":
        cmd += ["-preset", os.environ.get("MEDIA_X264_PRESET", "veryfast")]
    cmd.append(part)
    began = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    last = 0.0
    for line in proc.stdout:
        key, _, value = line.strip().partition("=")
        if key == "out_time_us" and value.isdigit():
            at = done_before + int(value) / 1e6
            if time.monotonic() - last > 0.5:
                last = time.monotonic()
                speed = (int(value) / 1e6) / max(time.monotonic() - began, 1e-3)
                send(progress=round(at, 2), total=round(total, 2),
                     message="Encoded %s of %s, %.1fx (segment %d of %d)" % (clock(at), clock(total), speed, seg[0], seg[1]))
    if proc.wait() != 0:
        raise SystemExit("ffmpeg failed on the segment at %.1fs (exit %d)" % (start, proc.returncode))
    os.replace(part, dst)


def main():
    global scratch
    with open(os.environ["MCPQ_ARGS"]) as f:
        args = json.load(f)
    scratch = os.environ["MCPQ_SCRATCH"]
    out = os.environ["MCPQ_OUTPUT"]
    signal.signal(signal.SIGTERM, on_term)
    codec = args.get("codec", "h264")
    encoder = os.environ.get("MEDIA_ENCODER_" + codec.upper(), {"h264": "libx264", "mpeg4": "mpeg4"}[codec])
    src = local_input(args["input"], scratch)
    send(status="probing " + os.path.basename(args["input"]))
    duration = float(probe(src)["format"]["duration"])
    start = float(args.get("start", 0))
    end = min(float(args.get("end", duration)), duration)
    if end <= start:
        raise SystemExit("the clip is empty: start %.1f, end %.1f, duration %.1f" % (start, end, duration))
    seglen = float(os.environ.get("MEDIA_SEGMENT_SECONDS", "10"))
    total = end - start
    cuts = []
    t = start
    while t < end - 1e-3:
        cuts.append((t, min(seglen, end - t)))
        t += seglen
    done = []
    if os.path.exists(os.environ.get("MCPQ_CHECKPOINT", "")):
        with open(os.environ["MCPQ_CHECKPOINT"]) as f:
            done = [i for i in json.load(f).get("segments", [])
                    if os.path.exists(os.path.join(scratch, "seg%05d.mp4" % i))]
    for i, (t, length) in enumerate(cuts):
        if i in done:
            continue
        encode(src, os.path.join(scratch, "seg%05d.mp4" % i), t, length, args, encoder, t - start, total,
               (i + 1, len(cuts)))
        done.append(i)
        # An audit log of segments encoded, if asked for (the tests count it).
        if os.environ.get("MEDIA_AUDIT_LOG"):
            with open(os.environ["MEDIA_AUDIT_LOG"], "a") as log:
                log.write("%s %d\n" % (os.environ["MCPQ_TASK_ID"], i))
        send(checkpoint={"segments": sorted(done)})
        send(status="Finished segment %d of %d" % (len(done), len(cuts)))
    send(status="joining %d segments" % len(cuts))
    listing = os.path.join(scratch, "segments.txt")
    with open(listing, "w") as f:
        for i in range(len(cuts)):
            f.write("file '%s'\n" % os.path.join(scratch, "seg%05d.mp4" % i))
    video = os.path.join(out, "video.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", listing,
                    "-c", "copy", "-movflags", "+faststart", video], check=True)
    info = probe(video)
    stream, fmt = info["streams"][0], info["format"]
    thumbs = int(args.get("thumbnails", 3))
    dur = float(fmt["duration"])
    for k in range(thumbs):
        at = dur * (k + 0.5) / thumbs
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-ss", "%.3f" % at, "-i", video,
                        "-frames:v", "1", "-vf", "scale=-2:180", os.path.join(out, "thumb%02d.jpg" % (k + 1))],
                       check=True)
    structured = {"duration": round(dur, 3), "size": int(fmt["size"]), "codec": stream["codec_name"],
                  "bitrate": int(fmt.get("bit_rate", 0)), "height": int(stream["height"]),
                  "width": int(stream["width"]), "segments": len(cuts), "thumbnails": thumbs}
    with open(os.environ["MCPQ_STRUCTURED"], "w") as f:
        json.dump(structured, f)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("Transcoded %s of %s to %s %dp (%d segments, %.0f kb/s), %d thumbnails.\n" % (
            clock(dur), os.path.basename(args["input"]), structured["codec"], structured["height"], len(cuts),
            structured["bitrate"] / 1000, thumbs))


if __name__ == "__main__":
    main()
