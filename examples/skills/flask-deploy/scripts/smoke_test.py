"""Check a freshly deployed instance: python smoke_test.py https://host"""

import json
import sys
import urllib.request


def check(url: str) -> None:
    with urllib.request.urlopen(f"{url}/livez", timeout=10) as response:
        body = json.load(response)
    if body.get("status") != "ok":
        raise SystemExit(f"/livez answered {body!r}")
    with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
        if response.status != 200:
            raise SystemExit(f"/readyz answered {response.status}")
    print("smoke test passed")


if __name__ == "__main__":
    check(sys.argv[1].rstrip("/"))
