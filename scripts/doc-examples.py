#!/usr/bin/env python3
"""Regenerate the examples of README.md and docs/*.md from real runs.

    python3 scripts/doc-examples.py [FILE.md ...]     (default: README.md docs/*.md)

An example is a ```console block right after a marker line:

    <!-- example: terminal -->   what a terminal shows: IDMPCTL_FORCE_TTY=1,
                                 COLUMNS=80, NO_COLOR=1 (tables, views)
    <!-- example: script -->     what a script reads: stdout not a terminal
                                 (raw output), NO_COLOR=1

Its lines that start with "$ " are run in order by one bash per file (so a
variable set in one, TOKEN=$(...), is seen by the next), stdout and stderr
together, and the lines after each are replaced by what it printed. Other
lines of the block are dropped. "<!-- setup: COMMAND -->" lines run too,
unseen, where they stand (to make files and state the examples need), and
"<!-- file: NAME -->" before a fenced block writes the block, as shown, to
the file NAME (executable) for the examples after it.

Each file gets a throwaway redis-server of its own, on 127.0.0.1:6379 when
that port is free (so the examples need no --url), else on another port
given as IDMPCTL_URL. "<!-- examples: native -->" in a file picks Redis
8.6.3 (scripts/install-redis.sh's build, $REDIS86_DIR) over the
redis-server on PATH (Debian's 7.0: emulated IDMP). idmpctl is built from
this tree first. Output that depends on the clock (entry IDs, ages) changes
from run to run: review the diff before committing it.
"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"^<!-- example: (terminal|script) -->$")
SETUP = re.compile(r"^<!-- setup: (.*) -->$")
FILE = re.compile(r"^<!-- file: ([A-Za-z0-9._-]+) -->$")
NATIVE = "<!-- examples: native -->"
FENCE = "```console"


def free_port():
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 6379))
        s.close()
        return 6379
    except OSError:
        s.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(binary, workdir):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir, "--logfile", os.path.join(workdir, "redis.log")])
    cli = os.path.join(os.path.dirname(binary), "redis-cli")
    if not os.path.exists(cli):
        cli = "redis-cli"
    for _ in range(200):
        if subprocess.run([cli, "-p", str(port), "PING"], capture_output=True).stdout.strip() == b"PONG":
            return proc, port
        time.sleep(0.05)
    proc.kill()
    sys.exit("doc-examples: %s did not start on port %d" % (binary, port))


def parse(lines):
    """Steps in order: ("setup", cmd) and ("block", start, end, mode, cmds),
    start and end being the indexes of the fence lines."""
    steps, i = [], 0
    while i < len(lines):
        m, s, f = MARK.match(lines[i]), SETUP.match(lines[i]), FILE.match(lines[i])
        if s:
            steps.append(("setup", s.group(1)))
        elif f:
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```") or j >= len(lines):
                sys.exit("line %d: a file marker must be followed by a fenced block" % (i + 1))
            body = "\n".join(lines[i + 2:j]) + "\n"
            steps.append(("setup", "printf '%%s' %s > %s && chmod +x %s" % (shlex.quote(body), f.group(1), f.group(1))))
            i = j
        elif m:
            if i + 1 >= len(lines) or lines[i + 1] != FENCE:
                sys.exit("line %d: an example marker must be followed by %s" % (i + 1, FENCE))
            j = i + 2
            while j < len(lines) and lines[j] != "```":
                j += 1
            cmds = [l[2:] for l in lines[i + 2:j] if l.startswith("$ ")]
            steps.append(("block", i + 1, j, m.group(1), cmds))
            i = j
        i += 1
    return steps


def run(steps, env, workdir):
    """Runs every command in one bash; returns each block command's output."""
    script, n = [], 0
    for st in steps:
        if st[0] == "setup":
            script.append("{ %s\n} </dev/null >/dev/null 2>&1" % st[1])
            continue
        if st[3] == "terminal":
            script.append("export IDMPCTL_FORCE_TTY=1 COLUMNS=80")
        else:
            script.append("unset IDMPCTL_FORCE_TTY COLUMNS")
        for c in st[4]:
            # $? survives the marker: an example may echo it.
            script.append("__rc=$?; printf '\\n@@doc-example %d@@\\n'; (exit $__rc)" % n)
            # A newline before the brace: a command may end in a # comment.
            script.append("{ %s\n} </dev/null 2>&1" % c)
            n += 1
    script.append("printf '\\n@@doc-example %d@@\\n'" % n)
    out = subprocess.run(["bash", "-c", "\n".join(script)], env=env, cwd=workdir,
                         capture_output=True, text=True, timeout=600).stdout
    parts = re.split(r"\n@@doc-example (\d+)@@\n", "\n" + out)
    outputs = {}
    for k in range(1, len(parts) - 2, 2):
        outputs[int(parts[k])] = parts[k + 1]
    return [outputs.get(k, "") for k in range(n)]


def regenerate(path, idmpctl_dir):
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    steps = parse(lines)
    if not any(st[0] == "block" for st in steps):
        return False
    binary = shutil.which("redis-server")
    if NATIVE in text:
        d = os.environ.get("REDIS86_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "idmpctl", "redis-8.6.3")
        binary = os.path.join(d, "bin", "redis-server")
    if not binary or not os.path.exists(binary):
        sys.exit("doc-examples: no redis-server for %s (scripts/install-redis.sh)" % path)
    workdir = tempfile.mkdtemp(prefix="doc-examples-")
    proc, port = start_server(binary, workdir)
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("IDMPCTL_") and k not in ("REDIS_URL", "REDISCLI_AUTH", "CLICOLOR_FORCE")}
        env["PATH"] = idmpctl_dir + os.pathsep + os.path.dirname(binary) + os.pathsep + env.get("PATH", "")
        env["NO_COLOR"] = "1"
        if port != 6379:
            env["IDMPCTL_URL"] = "redis://127.0.0.1:%d/0" % port
        outputs = iter(run(steps, env, workdir))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    new, last = [], 0
    for st in steps:
        if st[0] != "block":
            continue
        _, start, end, _, cmds = st
        new.extend(lines[last:start + 1])
        for c in cmds:
            new.append("$ " + c)
            out = next(outputs).rstrip("\n")
            out = out.replace(workdir, "/tmp/doc")
            if out:
                new.extend(l.rstrip(" ") for l in out.split("\n"))  # tabs kept: raw fields
        last = end
    new.extend(lines[last:])
    if new != lines:
        with open(path, "w") as f:
            f.write("\n".join(new))
        return True
    return False


def main():
    files = sys.argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    bindir = tempfile.mkdtemp(prefix="doc-examples-bin-")
    try:
        subprocess.run(["go", "build", "-o", os.path.join(bindir, "idmpctl"), "."], cwd=ROOT, check=True,
                       env=dict(os.environ, CGO_ENABLED="0"))
        for f in files:
            if regenerate(f, bindir):
                print("doc-examples: %s updated" % os.path.relpath(f, ROOT))
    finally:
        shutil.rmtree(bindir, ignore_errors=True)


if __name__ == "__main__":
    main()
