"""Run a synthesized cdc-constructs stack on this machine, with no AWS account.

The local pipeline starts moto's server on 127.0.0.1, creates the stack's resources there and
runs each DynamoDB-stream event source mapping with its synthesized settings.
"""

from cdc_local.endpoint import LocalEndpoint

__all__ = ["LocalEndpoint"]
