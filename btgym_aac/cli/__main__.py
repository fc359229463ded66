"""`python -m btgym_aac.cli`: the `btgym-aac` command."""
import sys

from btgym_aac.cli import main

if __name__ == '__main__':
    sys.exit(main())
