#!/bin/bash
# House rules: lowercase ASCII, runs of anything else become one hyphen, no leading or
# trailing hyphen, "&" spelled "and".
if [ "$(tr -d '\n' < /app/slug.txt 2>/dev/null)" = "skills-agents-and-the-art-of-measuring-2026-edition" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
