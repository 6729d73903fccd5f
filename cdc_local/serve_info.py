"""What serve mode prints: the endpoint, the stack's tables and queues, and for each stream
consumer its stream ARN, its queues and the exact command line that redrives it locally.

Plain lines for stdout, never wrapped (a queue URL or an ARN must survive a pipe or a log file
whole), so they can be copied into a shell as they are.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator, Mapping, Sequence

from cdc_consumer.environment_variables import CONSUMER_NAME_ENV, QUARANTINE_QUEUE_ENV

from cdc_local.event_source_mapping import EventSourceMapping
from cdc_local.routes import route_of
from cdc_local.runner import LocalPipeline

#: The redrive CLI's console script (``python -m cdc_consumer.redrive`` is the same program).
REDRIVE_COMMAND = "cdc-redrive"


def serve_lines(pipeline: LocalPipeline) -> Iterator[str]:
    """The lines serve mode prints once the pipeline has started."""
    resources = pipeline.resources
    assert pipeline.endpoint is not None and resources is not None
    yield f"local endpoint: AWS_ENDPOINT_URL={pipeline.endpoint.url}"
    # What an application pointed at the endpoint needs: boto3 refuses to sign a request
    # without credentials and a region, and moto's account is the one of these fake ones.
    yield "your application's environment: export " + " ".join(
        f"{name}={shlex.quote(value)}" for name, value in pipeline.endpoint.environment().items()
    )
    for logical_id, name in resources.table_names.items():
        yield f"table {logical_id}: {name}"
    for logical_id, url in resources.queue_urls.items():
        yield f"queue {logical_id}: {url}"
    for logical_id, mapping in pipeline.mappings.items():
        yield from _mapping_lines(pipeline, logical_id, mapping)
    yield f"{len(pipeline.mappings)} stream mapping(s) running; Ctrl-C stops"


def _mapping_lines(
    pipeline: LocalPipeline, logical_id: str, mapping: EventSourceMapping
) -> Iterator[str]:
    function = mapping.function
    yield f"mapping {logical_id}: function {function.name} ({function.spec.own_handler})"
    yield f"  stream: {mapping.stream_arn}"
    destination = mapping.destination  # its kind says what it is and how it is redriven
    label = destination.kind.label(destination.target) if destination is not None else None
    if label is not None:
        yield f"  {label}"
    quarantine = function.environment.get(QUARANTINE_QUEUE_ENV)
    if quarantine:
        yield f"  quarantine queue: {quarantine}"
    # Each command names the consumer's mapping or function: a redrive replays one consumer's.
    if destination is not None:
        options = destination.kind.redrive_options(destination.target, function.name)
        if options is not None:
            yield "  redrive the on-failure destination:"
            yield "    " + redrive_command(mapping, *options)
    note = route_of(mapping.stream_arn).quarantine_note
    if quarantine and note is not None:
        yield f"  {note}"
    elif quarantine:
        beside = (
            destination.kind.beside_quarantine(destination.target)
            if destination is not None
            else []
        )
        yield "  redrive the quarantine queue:"
        yield "    " + redrive_command(mapping, ["--queue-url", quarantine, "--quarantine"], beside)


def redrive_environment(mapping: EventSourceMapping) -> dict[str, str]:
    """What the redrive CLI needs to run this mapping's handler in-process against the local
    endpoint: the endpoint's variables, the function's environment, and the runtime layer on
    PYTHONPATH."""
    function = mapping.function
    layers = [str(directory / "python") for directory in function.layer_dirs]
    return {
        **dict(function.endpoint_environment),
        **dict(function.environment),
        **({"PYTHONPATH": os.pathsep.join(layers)} if layers else {}),
    }


def redrive_command(
    mapping: EventSourceMapping, source: list[str], scope: Sequence[str] = ()
) -> str:
    """One shell line: ``env VAR=value ... cdc-redrive <source> --stream-arn ... --handler ...
    <scope>`` (``scope``: the options that name the consumer's mapping or function)."""
    function = mapping.function
    module, _, attribute = function.spec.own_handler.rpartition(".")
    arguments = [
        *source,
        "--stream-arn",
        route_of(mapping.stream_arn).redrive_stream_arn(mapping.stream_arn),
        "--handler",
        f"{module}:{attribute}",
        "--path",
        str(function.spec.asset_dir),
        *scope,
    ]
    consumer = function.environment.get(CONSUMER_NAME_ENV)
    if consumer:
        arguments += ["--consumer-name", consumer]
    for pattern in _patterns(mapping):
        arguments += ["--filter", json.dumps(pattern, separators=(",", ":"))]
    environment = redrive_environment(mapping)
    words = [f"{name}={value}" for name, value in sorted(environment.items())]
    return " ".join(shlex.quote(word) for word in ["env", *words, REDRIVE_COMMAND, *arguments])


def _patterns(mapping: EventSourceMapping) -> list[Mapping[str, object]]:
    return [pattern.pattern for pattern in mapping.settings.filters.patterns]
