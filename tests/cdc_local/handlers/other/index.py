"""A second test handler, also `index.handler`: proves functions do not share modules."""

import os

from tests.cdc_local import recorder

WHO = "other"


def handler(event, context):
    recorder.record(WHO, event, context, dict(os.environ))
