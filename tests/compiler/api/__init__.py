"""The whole pipeline through the user-facing API (sourcegrad/api/): grad / vjp / jvp forms, parameter trees, errors, the call fast path, the caches, and the regression tests that run end to end."""
