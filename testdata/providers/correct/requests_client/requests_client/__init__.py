"""A correct provider that talks to its deployment with the third-party ``requests`` library."""
