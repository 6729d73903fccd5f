"""Makes the consumer runtime's contract importable: the names and message shapes the constructs
share with the runtime, redrive and the local pipeline (``cdc_consumer.environment_variables``,
``cdc_consumer.metric_names``, ``cdc_consumer.service_limits`` and the others docs/design.md
lists under "The contract").

An installed wheel ships ``cdc_consumer`` as a top-level package. In a repository checkout it is
``lambda_src/cdc_consumer`` beside this package (found from this file, never the working
directory), which is put on ``sys.path`` when nothing else provides it. Importing
those modules loads neither boto3 nor the rest of the runtime.
"""

from __future__ import annotations

import importlib.util
import sys

from cdc_constructs.assets import lambda_src_dir

if importlib.util.find_spec("cdc_consumer") is None:  # a checkout, run outside pytest
    sys.path.append(str(lambda_src_dir()))
