"""`python -m tools.docs`: write the reference pages; `--check` only says which differ."""

from __future__ import annotations

import argparse
import sys

from tools.docs.reference import REPO_ROOT, stale_pages, write_pages


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a page differs"
    )
    args = parser.parse_args()
    if args.check:
        stale = stale_pages(REPO_ROOT)
        for path in stale:
            print(f"{path} differs from what the code generates", file=sys.stderr)
        return 1 if stale else 0
    for path in write_pages(REPO_ROOT):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
