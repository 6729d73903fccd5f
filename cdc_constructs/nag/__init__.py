"""A cdk-nag rule pack that audits any CDK app's stream consumers.

``CdcChecks`` checks every Lambda event source mapping and EventBridge Pipe that reads a
DynamoDB or Kinesis stream for finite retries, a record age below the stream's retention,
bisect, an on-failure destination, ReportBatchItemFailures, TRIM_HORIZON, filters that fit the
stream view, and an IteratorAge alarm; and every state machine running the backfill handler
for a failed-execution alarm, a bounded Map and a paced segment function::

    from aws_cdk import App, Validations
    from cdc_constructs.nag import CdcChecks

    app = App()
    ...  # your stacks
    Validations.of(app).add_plugins(CdcChecks())
    app.synth()
"""

from cdc_constructs.nag.requirement import require_cdk_nag_3

require_cdk_nag_3()  # before anything imports cdk_nag: one clear error instead of a traceback

from cdc_constructs.nag.backfill_rules import BACKFILL_RULES  # noqa: E402
from cdc_constructs.nag.checks import PLUGIN_NAME, CdcChecks  # noqa: E402
from cdc_constructs.nag.exceptions import CdcChecksError  # noqa: E402
from cdc_constructs.nag.rules import RULES, CdcRule  # noqa: E402

__all__ = ["BACKFILL_RULES", "PLUGIN_NAME", "RULES", "CdcChecks", "CdcChecksError", "CdcRule"]
