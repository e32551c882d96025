#!/bin/bash
# Pass: /app/total.txt holds exactly the ledger's format of the total (two decimals,
# thousands separated by commas): 1,234.50
if [ "$(tr -d '\n' < /app/total.txt 2>/dev/null)" = "1,234.50" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
