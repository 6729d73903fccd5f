"""Benchmarks of cdc-constructs against Powertools for AWS Lambda and AWS Solutions Constructs.

Run ``make bench`` (or ``.venv/bin/python -m bench`` from the repository root); see
bench/RESULTS.md for the last results. The consumer runtime lives in lambda_src/ (deployed as a
Lambda layer), so it is put on ``sys.path`` here, found from this file, never the working
directory.
"""

import sys
from pathlib import Path

_LAMBDA_SRC = str(Path(__file__).resolve().parent.parent / "lambda_src")
if _LAMBDA_SRC not in sys.path:
    sys.path.append(_LAMBDA_SRC)
