import sys

from reportexport.cli import main

sys.exit(main())
