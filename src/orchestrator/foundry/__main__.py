"""``python -m orchestrator.foundry SUITE_DIR [options]``: the same as ``orchestrator bench``."""

import sys

from orchestrator.foundry.cli import main

sys.exit(main(sys.argv[1:]))
