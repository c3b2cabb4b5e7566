"""``ffigraph-cache`` / ``python -m ffigraph.cache``: look at and tidy the compile cache.

  list                     one line per entry: key, size, age, and whether it is sound
  info                     location, number of entries, total size
  clear                    remove every entry
  purge --older-than DAYS  remove entries older than DAYS (and damaged ones, and stale build folders)
"""
from __future__ import annotations

import argparse
import sys
import time

from ffigraph.linkers.c import cache


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%.1f %s" % (n, unit) if unit != "B" else "%d B" % n
        n /= 1024.0


def cmd_list(args, out):
    now = time.time()
    for key, path, size, created, sound in cache.list_entries():
        out.write("%s  %10s  %6.1f days  %s\n" % (key[:16], _size(size), (now - created) / 86400,
                                                  "ok" if sound else "DAMAGED"))
    return 0


def cmd_info(args, out):
    entries = cache.list_entries()
    out.write("location: %s\nentries: %d\ntotal size: %s\n"
              % (cache.root(), len(entries), _size(sum(e[2] for e in entries))))
    damaged = sum(1 for e in entries if not e[4])
    if damaged:
        out.write("damaged entries: %d (run 'purge --older-than 0' or 'clear')\n" % damaged)
    return 0


def cmd_clear(args, out):
    out.write("removed %d entries from %s\n" % (cache.clear(), cache.root()))
    return 0


def cmd_purge(args, out):
    if args.older_than < 0:
        out.write("--older-than must be >= 0\n")
        return 2
    out.write("removed %d entries older than %g days from %s\n"
              % (cache.purge(args.older_than), args.older_than, cache.root()))
    return 0


def main(argv=None, out=None):
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="ffigraph-cache", description="Inspect and tidy ffigraph's compile cache.")
    sub = parser.add_subparsers(dest="command")
    sub.required = True
    sub.add_parser("list", help="list entries").set_defaults(fn=cmd_list)
    sub.add_parser("info", help="location, count and size").set_defaults(fn=cmd_info)
    sub.add_parser("clear", help="remove every entry").set_defaults(fn=cmd_clear)
    purge = sub.add_parser("purge", help="remove old entries")
    purge.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    purge.set_defaults(fn=cmd_purge)
    args = parser.parse_args(argv)
    return args.fn(args, out)


if __name__ == "__main__":
    sys.exit(main())
