"""`python -m orchestrator` and the `orchestrator` console script.

`orchestrator mcp …` goes straight to the workflow server's own entry (`orchestrator.workflow.cli`), so
the workflow server does not pay for importing the service's command line; everything else is
`orchestrator.cli`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["mcp"] and not {"-h", "--help"} & set(args[1:]):
        from orchestrator.workflow.cli import main as mcp_main

        return mcp_main(args[1:])
    from orchestrator.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
