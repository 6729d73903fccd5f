"""A toy change source defined in the tests only, plugged into the library's four sides
(docs/design.md, "Adding a source"): the runtime's and the redrive's routes
(``layer/python/toy_changes.py``, registered by ``toy_plugin``), the construct route
(:mod:`tests.toy_source.construct_route`) and the local pipeline's route
(:mod:`tests.toy_source.local_route`)."""
