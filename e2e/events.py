#!/usr/bin/python3
"""The agents' events (`--log-format json`: one JSON object a line), judged by their fields.

e2e/run holds every front-end to the same events this way, not by regexes over text lines:

  events.py has    LOG [!] COND...           exit 0 when one event meets every COND (with !: none does)
  events.py count  LOG COND...               the number of events that meet every COND
  events.py get    LOG FIELD COND...         FIELD of the first event that meets every COND (exit 1: none)
  events.py before LOG COND... -- COND...    exit 0 when the first event of the first set comes
                                             before the first event of the second

COND is FIELD=VALUE (the field's value is exactly VALUE), FIELD~REGEX (it matches REGEX, Python's
re.search) or *~REGEX (some field's value does). LOG "-" is standard input. Lines that are not a
JSON object (a runtime's own message on stderr, a shell's) are not events and are skipped; an
event line that is not valid JSON is an error (exit 2): the agents promise JSON.
"""

import json
import re
import sys


def events(path):
    f = sys.stdin if path == "-" else open(path, errors="replace")
    with f:
        for n, line in enumerate(f, 1):
            if not line.startswith("{"):
                continue
            try:
                e = json.loads(line)
            except ValueError as err:
                sys.exit(f"events.py: {path}:{n}: not JSON ({err}): {line.strip()[:200]}")
            if isinstance(e, dict):
                yield e


def parse(conds):
    out = []
    for c in conds:
        m = re.match(r"([^=~]+)([=~])(.*)\Z", c, re.S)
        if not m:
            sys.exit(f"events.py: a condition is FIELD=VALUE or FIELD~REGEX, not {c!r}")
        field, op, value = m.groups()
        out.append((field, op, value if op == "=" else re.compile(value)))
    return out


def meets(e, conds):
    for field, op, want in conds:
        if field == "*" and op == "~":
            if not any(want.search(str(v)) for v in e.values()):
                return False
            continue
        if field not in e:
            return False
        v = str(e[field])
        if (op == "=" and v != want) or (op == "~" and not want.search(v)):
            return False
    return True


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, path, rest = argv[0], argv[1], argv[2:]
    if cmd == "has":
        neg = rest[:1] == ["!"]
        conds = parse(rest[neg:])
        hit = any(meets(e, conds) for e in events(path))
        return 0 if hit != neg else 1
    if cmd == "count":
        conds = parse(rest)
        print(sum(1 for e in events(path) if meets(e, conds)))
        return 0
    if cmd == "get":
        field, conds = rest[0], parse(rest[1:])
        for e in events(path):
            if meets(e, conds) and field in e:
                print(e[field])
                return 0
        return 1
    if cmd == "before":
        if "--" not in rest:
            sys.exit("events.py before LOG COND... -- COND...")
        i = rest.index("--")
        first, second = parse(rest[:i]), parse(rest[i + 1 :])
        for e in events(path):
            if meets(e, first):
                return 0
            if meets(e, second):
                return 1
        return 1
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
