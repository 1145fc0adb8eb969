"""A well-behaved runtime preparation provider for the harness tests."""
