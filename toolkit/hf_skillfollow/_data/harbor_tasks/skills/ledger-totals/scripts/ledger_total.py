#!/usr/bin/env python3
"""Print the total of one column of a CSV file in the ledger's number format."""

import csv
import sys
from decimal import Decimal, InvalidOperation


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: ledger_total.py FILE.csv COLUMN", file=sys.stderr)
        return 2
    path, column = sys.argv[1], sys.argv[2]
    total = Decimal(0)
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if column not in (reader.fieldnames or []):
            print(f"no column {column!r} in {path}", file=sys.stderr)
            return 1
        for number, row in enumerate(reader, 2):
            try:
                total += Decimal(row[column].strip())
            except InvalidOperation:
                print(f"{path}:{number}: {row[column]!r} is not a number", file=sys.stderr)
                return 1
    print(f"{total:,.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
