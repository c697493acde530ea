import sys

from reportexport.entrypoints.cli import main

sys.exit(main())
