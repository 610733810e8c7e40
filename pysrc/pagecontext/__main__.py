"""`python -m pagecontext`: the command line in cli.py."""

from pagecontext.cli import main

raise SystemExit(main())
