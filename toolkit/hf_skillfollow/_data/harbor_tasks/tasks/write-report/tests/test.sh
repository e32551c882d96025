#!/bin/bash
# Pass: /app/report.json is the team's format: {"kind": "status", "count": 3,
# "files": ["a.txt", "b.txt", "c.txt"]} (keys and order of files as the format says).
python3 - <<'PY'
import json
ok = False
try:
    report = json.load(open("/app/report.json"))
    ok = report == {"kind": "status", "count": 3, "files": ["a.txt", "b.txt", "c.txt"]}
except Exception:
    pass
open("/logs/verifier/reward.txt", "w").write("1\n" if ok else "0\n")
PY
