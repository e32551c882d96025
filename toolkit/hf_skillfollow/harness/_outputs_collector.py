"""Collects the files an agent left in its outputs folder, for the judge; grades nothing.

This file is copied verbatim into every skill-eval Harbor task as ``tests/collect.py``
(`harness/_evals_tasks.py`) and run there by ``tests/test.sh`` after the agent has finished:
``python3 /tests/collect.py /app/outputs /logs/verifier``. Standard library only (it runs
with the environment's ``python3``). It writes ``outputs.json`` (each regular file's name,
size and text, or ``null`` text for a binary one; what it left out and why) and the reward
``0``: the verdict is the blinded judge's, given after the trial on the host
(`harness/_judged.py`), never in the environment.

Bounded: at most `MAX_FILES` files of at most `MAX_FILE_BYTES` each and `MAX_TOTAL` together,
folders `MAX_DEPTH` deep, `MAX_ENTRIES` entries looked at; symbolic links are never followed
(named as left out), nor anything that is not a regular file. A name that is not UTF-8 is shown
with its bytes escaped (``\\xff``), so it cannot stop the JSON from being written; the result
files replace whatever the agent left at their paths (written beside, then renamed: never
through a link, never half-written).
"""

import json
import os
import stat
import sys
import tempfile

MAX_FILES = 32
MAX_FILE_BYTES = 64 * 1024
MAX_TOTAL = 256 * 1024
MAX_DEPTH = 8
MAX_ENTRIES = 10_000
MAX_NAME = 240


def _read(path, size):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], size + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def shown(name):
    """`name` as UTF-8 text: a byte that is not UTF-8 (a surrogate escape from `os.scandir`)
    written as ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def collect(root):
    found = {"files": [], "left_out": []}
    state = {"total": 0, "entries": 0}

    def leave(name, why):
        if len(found["left_out"]) < MAX_FILES:
            found["left_out"].append({"name": shown(name), "why": why})

    def walk(folder, prefix, depth):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            state["entries"] += 1
            if state["entries"] > MAX_ENTRIES:
                leave(prefix + entry.name, f"more than {MAX_ENTRIES} entries")
                return
            name = prefix + entry.name
            if len(shown(name)) > MAX_NAME:
                leave(shown(name)[:200] + "...", f"a name longer than {MAX_NAME} characters")
            elif entry.is_symlink():
                leave(name, "a symbolic link (not followed)")
            elif entry.is_dir(follow_symlinks=False):
                if depth >= MAX_DEPTH:
                    leave(name + "/", f"folders nested deeper than {MAX_DEPTH}")
                else:
                    walk(entry.path, name + "/", depth + 1)
            elif not entry.is_file(follow_symlinks=False):
                leave(name, "not a regular file")
            else:
                one(entry, name)

    def one(entry, name):
        size = entry.stat(follow_symlinks=False).st_size
        if len(found["files"]) >= MAX_FILES:
            leave(name, f"more than {MAX_FILES} files")
        elif size > MAX_FILE_BYTES:
            leave(name, f"{size} bytes, over the {MAX_FILE_BYTES}-byte limit per file")
        elif state["total"] + size > MAX_TOTAL:
            leave(name, f"the files together exceed {MAX_TOTAL} bytes")
        else:
            try:
                blob = _read(entry.path, size)
            except OSError as exc:
                leave(name, f"cannot be read ({exc.strerror})")
                return
            if blob is None or len(blob) > MAX_FILE_BYTES:
                leave(name, "changed while it was read")
                return
            state["total"] += len(blob)
            try:
                text = None if b"\x00" in blob else blob.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            found["files"].append({"name": shown(name), "bytes": len(blob), "text": text})

    if os.path.islink(root):
        leave(".", "the outputs folder is a symbolic link (not followed)")
    elif os.path.isdir(root):
        walk(root, "", 0)
    return found


def _replace(path, text):
    """Write `text` beside `path`, then rename it over `path`: whatever was there (a link the
    agent planted) is replaced, not written through, and a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".collect.")
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main(argv):
    root, logs = argv[1], argv[2]
    os.makedirs(logs, exist_ok=True)
    found = collect(root)
    _replace(os.path.join(logs, "outputs.json"), json.dumps(found, ensure_ascii=False))
    # a placeholder: the judge's verdict, given on the host, is the result
    _replace(os.path.join(logs, "reward.txt"), "0\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
