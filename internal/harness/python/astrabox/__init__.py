"""astrabox: the Python surface of the astrabox platform's runtime preparation seam.

Provider authors import the types from :mod:`astrabox.seams`. The ``_harness`` subpackage is the
conformance kit's private runner; it is not part of the public API.
"""

__all__ = ["seams"]
