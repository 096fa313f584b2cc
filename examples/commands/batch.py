#!/usr/bin/env python3
"""Processes a list of inputs one by one: an mcpq command tool.

Standard library only. After each input it sends mcpq a checkpoint (the
results so far) and a status line on file descriptor 3. When the task is
delivered again after its worker was lost, mcpq hands the last checkpoint
back in $MCPQ_CHECKPOINT and the batch goes on from there: no input is
processed twice. Each result is also appended, as it is made, to
$BATCH_RESULTS_DIR/<task id>.jsonl (default: mcpq-batch in the system's
temporary folder), so a cancelled or stopped batch keeps what it did; on
SIGTERM it finishes the line it is writing and exits.

Arguments come from the JSON file $MCPQ_ARGS: "items" (a list of strings)
and "delay" (seconds per item, default 0.5).
"""

import hashlib
import json
import os
import signal
import sys
import tempfile
import time


stopping = False


def on_term(signum, frame):
    global stopping
    stopping = True


def main():
    signal.signal(signal.SIGTERM, on_term)
    with open(os.environ["MCPQ_ARGS"], encoding="utf-8") as f:
        args = json.load(f)
    items = args["items"]
    delay = float(args.get("delay", 0.5))
    try:
        status = os.fdopen(int(os.environ.get("MCPQ_STATUS_FD", "3")), "w", buffering=1)
    except OSError:
        status = sys.stderr

    done = []
    resumed_from = 0
    cp = os.environ.get("MCPQ_CHECKPOINT", "")
    if cp and os.path.exists(cp):
        with open(cp, encoding="utf-8") as f:
            done = json.load(f)["done"]
        resumed_from = len(done)

    results_dir = os.environ.get("BATCH_RESULTS_DIR") or os.path.join(tempfile.gettempdir(), "mcpq-batch")
    os.makedirs(results_dir, exist_ok=True)
    task = os.environ.get("MCPQ_TASK_ID", "local")
    with open(os.path.join(results_dir, task + ".jsonl"), "a", encoding="utf-8") as partial:
        for i in range(len(done), len(items)):
            if stopping:
                print(f"stopped after {len(done)} of {len(items)} items", file=sys.stderr)
                sys.exit(143)
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and not stopping:
                time.sleep(min(0.05, max(0, deadline - time.monotonic())))
            if stopping:
                continue
            item = items[i]
            result = {"item": item, "sha256": hashlib.sha256(item.encode()).hexdigest()[:16],
                      "attempt": os.environ.get("MCPQ_ATTEMPT", "")}
            done.append(result)
            partial.write(json.dumps(result) + "\n")
            partial.flush()
            status.write(json.dumps({"checkpoint": {"done": done}}) + "\n")
            status.write(json.dumps({"status": f"item {len(done)}/{len(items)}"}) + "\n")
            status.flush()
    if stopping:
        print(f"stopped after {len(done)} of {len(items)} items", file=sys.stderr)
        sys.exit(143)
    json.dump({"results": done, "resumed_from": resumed_from}, sys.stdout)


if __name__ == "__main__":
    main()
