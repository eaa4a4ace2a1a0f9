"""`python -m cli`: the `workspace-api` program."""

import sys

from cli import main

sys.exit(main())
