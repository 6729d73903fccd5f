"""The orders example: an application built with cdc-constructs, not part of the library.

- ``stack.py``: :class:`~reference_app.stack.CdcReferenceStack` (app.py synthesizes it).
- ``handlers/``: its Lambda code (the order-stats projection, the TTL archive, and
  ``orders_schema.py``, the example's names defined once).
- ``oracle.py``: the order-stats view recomputed from the orders table, to check the view.
- ``workload.py``: :class:`~reference_app.workload.OrderWorkload`, reproducible order changes.
- ``demo.py``: ``make local`` (``python -m reference_app``, ``__main__.py``).

The library (``cdc_constructs``, ``cdc_consumer``) imports nothing from here.
"""
