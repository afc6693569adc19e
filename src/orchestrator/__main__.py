"""`python -m orchestrator` is the `orchestrator` command."""

import sys

from orchestrator.cli import main

sys.exit(main())
