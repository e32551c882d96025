#!/bin/bash
if [ "$(tr -d ' \n' < /app/count.txt 2>/dev/null)" = "5" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
