#!/usr/bin/env python3
"""Adds up JUnit XML reports (lit's and CTest's) into one closing line."""

import sys
import xml.etree.ElementTree as ET


def count(path: str) -> tuple[int, int, int]:
    """Returns (passed, failed, skipped) test cases of one JUnit report."""
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") in (
                "notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main() -> int:
    totals = [0, 0, 0]
    for path in sys.argv[1:]:
        for i, n in enumerate(count(path)):
            totals[i] += n
    passed, failed, skipped = totals
    print(f"titan: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
