"""``python -m cdc_consumer.redrive``: see :mod:`cdc_consumer.redrive.cli`."""

import sys

from cdc_consumer.redrive.cli import main

sys.exit(main())
