"""A module shipped in a test Lambda layer (python/ directory)."""

WHO = "probe"
