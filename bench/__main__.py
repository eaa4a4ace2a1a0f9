"""`python -m bench`: run the benchmarks and print one table (see bench/run.py)."""

import sys

from bench.run import main

sys.exit(main())
